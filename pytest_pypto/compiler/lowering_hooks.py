# SPDX-License-Identifier: Apache-2.0
"""The per-op lowering table of the tensor lowering, and the helpers its entries share.

An explicit tensor op whose registry entry sets ``lowering_hook`` (`ir.registry.OpSpec`)
is lowered by ``HOOKS[op](lowering, out, call, spec)``: the entry appends loads, tile
ops and stores to ``out`` (all at the user's span, through the lowering's ``emit``) and
returns the variable holding the result.  The entries live in `tensor_hooks` and
`whole_tensor_hooks`; `compiler/tensor_lowering.py` imports both, so the table is
complete whenever the lowering runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_pypto.compiler.capacity import tile_bytes
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import TileType

if TYPE_CHECKING:
    from pytest_pypto.compiler.tensor_lowering import _Lowering

Hook = Callable[["_Lowering", list[n.Stmt], n.Call, OpSpec], Any]
HOOKS: dict[str, Hook] = {}


def hook(*ops: str) -> Callable[[Hook], Hook]:
    """Register the decorated function as the lowering of ``ops`` (one function per op;
    a module imported again re-registers its own functions)."""

    def add(fn: Hook) -> Hook:
        for op in ops:
            prior = HOOKS.get(op)
            if prior is not None and _where(prior) != _where(fn):
                raise ValueError(f"tensor lowering hook of {op!r} registered twice: "
                                 f"{_where(prior)} and {_where(fn)}")
            HOOKS[op] = fn
        return fn

    return add


def _where(fn: Hook) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def nbytes(shape: Sequence[int], dtype: Any, lw: _Lowering, space: str = "Vec") -> int:
    return tile_bytes(TileType(tuple(shape), dtype, space), lw.ctx.arch)


def too_big(lw: _Lowering, op: str, what: str, need: int, hint: str | None = None
            ) -> CapacityError:
    arch = lw.ctx.arch
    return CapacityError(
        f"tensor-level {op}: {what} needs {need} bytes of Vec at once, but the "
        f"'{arch.name}' Vec holds {lw.vec_budget} for it",
        lw.span, arch=arch.name, hint=hint,
    )


def vec_tile(lw: _Lowering, stmts: list[n.Stmt], shape: Sequence[int], dtype: Any,
             base: str = "scratch") -> n.Var:
    return lw.emit(stmts, base, "tile.create", shape=tuple(shape), dtype=dtype,
                   target_memory="Vec")
