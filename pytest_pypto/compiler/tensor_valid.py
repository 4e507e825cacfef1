# SPDX-License-Identifier: Apache-2.0
"""Tensor valid regions in InCore code, as run-time expressions (for the tensor lowering).

A tensor's valid region lives in its type (`TensorType.valid`: ints, None where a
Scalar decides it).  The loads the lowering emits need it as values, so this pass
walks a kernel once in program order and records, for every narrowed tensor, one
expression per dim: the ints of its type where static, else the Scalars that made
it (`pl.set_validshape(t, r, c)`, a slice's ``valid_shape`` / ``clamp=True`` cut
with min/max, a tensor op's operand, a loop carry).  `window` then gives the valid
extents of one tile-sized window of it, which is what PyPTO's tile conversion
passes to its loads (only the valid region is read; only it is stored).

It also records which tensors hold matmul results: only those may be assembled
into a target of another dtype (PyPTO stores the FP32 accumulator tile straight
into an FP16/BF16 tensor; a vector result needs an explicit pl.cast).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_pypto.compiler.walk import iter_stmts
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import INDEX
from pytest_pypto.ir.errors import ShapeError
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import ScalarType, TensorType

Index = Any  # an int or an integer Scalar Expr


# ------------------------------------------------------------- index arithmetic


def _expr(v: Index, span: n.Span | None) -> n.Expr:
    return n.Const(v, type=ScalarType(INDEX), span=span) if isinstance(v, int) else v


def _const(v: Index) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, n.Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    return None


def combine(op: str, a: Index, b: Index, span: n.Span | None) -> Index:
    """``a op b`` for op in + - min max, folded when both are constants."""
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return {"+": ca + cb, "-": ca - cb, "min": min(ca, cb), "max": max(ca, cb)}[op]
    if op in ("+", "-") and cb == 0:
        return a
    if op == "+" and ca == 0:
        return b
    return n.BinOp(op, _expr(a, span), _expr(b, span), type=ScalarType(INDEX), span=span)


def cut(valid: Index, offset: Index, extent: Index, span: n.Span | None) -> Index:
    """min(extent, max(valid - offset, 0)): a window's valid extent along one dim."""
    return combine("min", extent, combine("max", combine("-", valid, offset, span), 0, span),
                   span)


# ---------------------------------------------------------------- the regions


class ValidRegions:
    """Valid-region expressions of a kernel's narrowed tensors (module docstring)."""

    def __init__(self, fn: n.Function, registry: Mapping[str, OpSpec]) -> None:
        self.fn = fn
        self.registry = registry
        self.exprs: dict[str, tuple[Index, ...]] = {}
        self.matmul_results: set[str] = set()
        for stmt in iter_stmts(fn.body):
            if isinstance(stmt, n.Assign) and len(stmt.targets) == 1:
                self._assign(stmt.targets[0], stmt.value)
            elif isinstance(stmt, n.For):
                for inner, init in stmt.carried:
                    self._alias(inner, init)
                for result, (inner, _) in zip(stmt.results, stmt.carried):
                    self._alias(result, inner)

    # ------------------------------------------------------------------ scan
    def _alias(self, target: n.Var, source: Any) -> None:
        if isinstance(source, n.Var):
            if source.name in self.exprs and _narrowed(target):
                self.exprs[target.name] = self.exprs[source.name]
            if source.name in self.matmul_results:
                self.matmul_results.add(target.name)

    def _assign(self, target: n.Var, value: n.Expr) -> None:
        if isinstance(value, n.Var):
            self._alias(target, value)
            return
        if not isinstance(value, n.Call):
            return
        spec = self.registry.get(value.op)
        if spec is not None and spec.matmul_result:
            self.matmul_results.add(target.name)
        if not _narrowed(target):
            return
        span = value.span
        if value.op == "tensor.set_validshape":
            self.exprs[target.name] = (value.arg("valid_rows"), value.arg("valid_cols"))
        elif value.op == "tensor.slice":
            found = self._slice(target, value, span)
            if found is not None:
                self.exprs[target.name] = found
        elif value.op == "tensor.transpose":
            src = value.arg("tensor")
            if isinstance(src, n.Var) and src.name in self.exprs:
                items = list(self.exprs[src.name])
                a, b = (int(value.arg(k)) % len(items) for k in ("axis1", "axis2"))
                items[a], items[b] = items[b], items[a]
                self.exprs[target.name] = tuple(items)
        elif spec is not None and spec.regroups:
            return  # a reshape regroups the cells: no per-dim expression carries over
        else:
            # A tensor op on narrowed operands keeps their region (maps, scalar forms).
            for _, arg in value.args:
                if isinstance(arg, n.Var) and arg.name in self.exprs and \
                        len(arg.type.shape) == len(target.type.shape):  # type: ignore[union-attr]
                    self.exprs[target.name] = self.exprs[arg.name]
                    return

    def _slice(self, target: n.Var, call: n.Call, span: n.Span | None) -> tuple[Index, ...] | None:
        src = call.arg("tensor")
        if not isinstance(src, n.Var) or not isinstance(src.type, TensorType):
            return None
        shape, offsets = call.arg("shape"), call.arg("offset")
        requested = call.arg("valid_shape") or shape
        clamp = bool(call.arg("clamp"))
        src_t = src.type
        out: list[Index] = []
        for d, (w, o, r) in enumerate(zip(shape, offsets, requested)):
            full = src_t.valid is None or src_t.valid[d] == src_t.shape[d]
            if full and not clamp:
                out.append(r)
                continue
            limit = self._dim_valid(src, d) if not full else src_t.shape[d]
            if limit is None or not isinstance(limit, (int, n.Expr)):
                return None
            out.append(combine("min", r, cut(limit, o, w, span), span))
        drop = {int(a) % len(shape) for a in call.arg("drop_dims") or ()}
        kept = tuple(v for d, v in enumerate(out) if d not in drop)
        return kept or (1,)

    def _dim_valid(self, t: n.Var, d: int) -> Index | None:
        static = t.type.valid_shape[d]  # type: ignore[union-attr]
        if isinstance(static, int):
            return static
        found = self.exprs.get(t.name)
        return found[d] if found is not None else None

    # ------------------------------------------------------------------- use
    def of(self, t: n.Var, span: n.Span | None) -> tuple[Index, ...]:
        """The valid extent of every dim of ``t`` (its shape where it is fully valid)."""
        ttype = t.type
        assert isinstance(ttype, TensorType)
        static = ttype.valid_shape
        if all(isinstance(v, int) for v in static):
            return tuple(static)
        found = self.exprs.get(t.name)
        if found is None:
            raise ShapeError(
                f"the valid region of tensor '{t.name}' is decided at run time by a value "
                "this kernel cannot trace here (through a reshape, transpose or branch)",
                span,
                hint="narrow it with pl.set_validshape(...) or a slice's valid_shape in this "
                "kernel, right before the tensor op",
            )
        return tuple(v if isinstance(v, int) else f for v, f in zip(static, found))

    def window(self, t: n.Var, offsets: Sequence[Index], extents: Sequence[Index],
               span: n.Span | None) -> tuple[Index, ...] | None:
        """The valid extents of the window [offsets, offsets + extents) of ``t``; None when
        ``t`` is fully valid (the load needs no valid_shapes)."""
        ttype = t.type
        if not (isinstance(ttype, TensorType) and ttype.narrowed):
            return None
        valid = self.of(t, span)
        return tuple(
            e if v == s else cut(v, o, e, span)
            for v, s, o, e in zip(valid, ttype.shape, offsets, extents)
        )


def _narrowed(v: n.Var) -> bool:
    return isinstance(v.type, TensorType) and v.type.narrowed
