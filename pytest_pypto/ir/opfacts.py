# SPDX-License-Identifier: Apache-2.0
"""Facts about an op read off the code its rules run (for the op reference, ir/opdoc.py).

* `dtype_text`: the dtypes an op accepts, per arch, found by *probing*: the type
  rule, the arch rule and the arch table's `unavailable_ops` run on [16, 16]
  operands of each dtype, so the list is what the compiler accepts.
* `arch_lines`: which archs have the op, and the arch table fields its arch rule
  (and the project functions it calls) reads, with each arch's values.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types as pytypes
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from pytest_pypto.arch import ARCH_SPECS, ArchSpec
from pytest_pypto.ir.dtypes import ALL_DTYPES
from pytest_pypto.ir.registry import STATIC_KINDS, VALUE_KINDS, CallInfo, OpRuleError, OpSpec
from pytest_pypto.ir.types import ScalarType, TensorType, TileType

PROBE_SHAPE = (16, 16)
# ArchSpec fields that only identify the arch: every rule reads them for its messages.
_IDENTITY_FIELDS = frozenset({"name", "backend", "device"})
# ArchSpec methods/properties and the table field each one reads
# ("spaces": the memory spaces the arch has, DDR and the keys of its capacity table).
_ARCH_METHODS = {"has_space": "spaces", "sim_aic": "sim_clusters", "sim_aiv": "sim_clusters"}
# ArchSpec mappings keyed by op family: shown narrowed to the keys the rule's code names.
_PER_FAMILY_FIELDS = frozenset({"vec_op_dtypes"})


# ------------------------------------------------------------------ probing


def _archs() -> list[Any]:
    return list(ARCH_SPECS.values())


def _probe_info(spec: OpSpec, dtype: Any) -> CallInfo | None:
    """A CallInfo with every required operand a [16, 16] value of ``dtype`` in its first
    accepted space, static params at their defaults; None when a param cannot be faked."""

    typed: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for p in spec.params:
        if p.kind in VALUE_KINDS:
            if not p.required or p.optional:
                typed[p.name] = None
            elif p.kind in ("tile", "tile_or_scalar"):
                space = (spec.mem.operands.get(p.name) or ("Vec",))[0]
                typed[p.name] = TileType(PROBE_SHAPE, dtype, space)
            elif p.kind == "tensor":
                typed[p.name] = TensorType(PROBE_SHAPE, dtype)
            elif p.kind == "scalar":
                typed[p.name] = ScalarType(dtype)
            else:
                return None
        elif p.kind in STATIC_KINDS:
            if not p.required:
                d = p.default
                values[p.name] = d.value if isinstance(d, enum.Enum) else d
            elif p.kind == "shape":
                values[p.name] = PROBE_SHAPE
            elif p.kind == "index_list":
                values[p.name] = (0,) * len(PROBE_SHAPE)
            elif p.kind == "dtype":
                values[p.name] = dtype
            else:
                return None
    return CallInfo(op=spec.name, types=typed, values=values)


def _accepts(spec: OpSpec, arch: Any, dtype: Any) -> tuple[bool, Any]:
    info = _probe_info(spec, dtype)
    if info is None or spec.name in arch.unavailable_ops:
        return False, None
    info.arch = arch
    try:
        result = spec.type_rule(info)
        if spec.arch_rule is not None:
            spec.arch_rule(arch, info)
    except OpRuleError:
        return False, None
    except Exception:  # a rule the probe's fake operands do not fit: no claim is made
        return False, None
    return True, result


_PROBED: dict[int, tuple[OpSpec, Any]] = {}  # id(entry) -> (entry, probe result)


def probe(spec: OpSpec) -> tuple[dict[str, tuple[str, ...]], str | None]:
    """Per arch name: the dtypes accepted with every operand of that dtype; and the kind
    of the result (Tile, Tensor, Scalar) when some dtype was accepted."""
    cached = _PROBED.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    found = _runprobe(spec)
    _PROBED[id(spec)] = (spec, found)
    return found


def _runprobe(spec: OpSpec) -> tuple[dict[str, tuple[str, ...]], str | None]:
    accepted: dict[str, tuple[str, ...]] = {}
    result_kind = None
    for arch in _archs():
        names = []
        for dt in ALL_DTYPES:
            if dt.tier >= 3:  # no numpy format: the toolchain refuses them everywhere
                continue
            ok, result = _accepts(spec, arch, dt)
            if ok:
                names.append(dt.name)
                if result is not None and result_kind is None:
                    result_kind = getattr(result, "kind", None)
        accepted[arch.name] = tuple(names)
    return accepted, result_kind


def dtype_text(spec: OpSpec) -> str | None:
    """The probed dtypes, per arch (None when no dtype fits the probe's operands)."""
    accepted, _ = probe(spec)
    if not any(accepted.values()):
        return None
    values = set(accepted.values())
    if len(values) == 1:
        return f"{', '.join(next(iter(values)))} (every arch)"
    return "; ".join(f"{a}: {', '.join(d) if d else 'none'}" for a, d in accepted.items())


# ------------------------------------------------------------------ arch facts


def _functions_reached(fn: Any, depth: int = 3) -> list[Any]:
    """``fn`` and the project functions it calls or closes over, a few levels deep."""
    out: list[Any] = []
    todo = [(fn, depth)]
    while todo:
        f, d = todo.pop()
        while isinstance(f, functools.partial):
            f = f.func
        if not isinstance(f, pytypes.FunctionType) or f in out:
            continue
        out.append(f)
        if d == 0:
            continue
        cells = [c.cell_contents for c in (f.__closure__ or ()) if _cell_filled(c)]
        names = _code_names(f.__code__)
        callees = [f.__globals__.get(n) for n in names] + cells
        todo += [(g, d - 1) for g in callees if isinstance(g, pytypes.FunctionType)
                 and g.__module__.startswith("pytest_pypto.ir")]
    return out


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises ValueError)
    except ValueError:
        return False
    return True


def _code_names(code: pytypes.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _code_names(const)
    return names


def _code_strings(code: pytypes.CodeType) -> set[str]:
    found = {c for c in code.co_consts if isinstance(c, str)}
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            found |= _code_strings(const)
    return found


def arch_fields_read(rule: Callable[..., Any]) -> tuple[list[str], set[str]]:
    """The ArchSpec fields ``rule`` (and what it calls) reads, and the string constants it
    uses (keys into the per-op mappings such as vec_op_dtypes)."""

    field_names = [f.name for f in fields(ArchSpec)]
    read: set[str] = set()
    keys: set[str] = set()
    for f in _functions_reached(rule):
        names = _code_names(f.__code__)
        read |= {n for n in names if n in field_names and n not in _IDENTITY_FIELDS}
        read |= {_ARCH_METHODS[n] for n in names if n in _ARCH_METHODS}
        keys |= _code_strings(f.__code__)
        keys |= {c.cell_contents for c in (f.__closure__ or ())
                 if _cell_filled(c) and isinstance(c.cell_contents, str)}
    return [n for n in [*field_names, "spaces"] if n in read], keys


def _arch_value(arch: Any, name: str) -> Any:
    if name == "spaces":
        return ("DDR", *arch.capacity)
    return getattr(arch, name)


def _fact_value(name: str, value: Any, keys: set[str], op_short: str) -> str:
    """One arch's value of table field ``name``, narrowed to this op where the field is
    keyed by op family (vec_op_dtypes) or lists "op:case" strings (unvalidated_combos)."""
    if isinstance(value, Mapping):
        chosen = dict(value)
        if name in _PER_FAMILY_FIELDS:
            chosen = {k: v for k, v in value.items() if k in keys}
            if not chosen:
                return "no entry for this op (any dtype its type rule admits)"
        return "; ".join(f"{k}: {_fact_value('', v, set(), op_short)}" for k, v in chosen.items())
    if isinstance(value, tuple):
        if value and all(isinstance(v, str) for v in value):
            if any(":" in v for v in value):
                value = tuple(v for v in value if v.split(":", 1)[0] == op_short)
            return ", ".join(value) if value else "none for this op"
        if not value:
            return "none"
        return ", ".join("->".join(v) if isinstance(v, tuple) else str(v) for v in value)
    return str(value)


def arch_lines(spec: OpSpec) -> list[str]:
    """Which archs have the op, and the arch table facts its arch rule reads."""
    archs = _archs()
    missing = [a.name for a in archs if spec.name in a.unavailable_ops]
    have = [a.name for a in archs if a.name not in missing]
    if missing:
        lines = [f"available on {', '.join(have)} only (not on {', '.join(missing)}: "
                 "arch table unavailable_ops)"]
    else:
        lines = [f"available on every arch ({', '.join(have)})"]
    if spec.arch_rule is None:
        return lines
    rule = spec.arch_rule
    where = f"{getattr(rule, '__module__', '?')}.{getattr(rule, '__qualname__', rule)}"
    lines.append(f"arch-specific rule: {where}")
    doc = inspect.getdoc(rule)
    if doc:
        lines.append("  " + " ".join(doc.split()))
    read, keys = arch_fields_read(rule)
    for name in read:
        per_arch = [f"{a.name}: {_fact_value(name, _arch_value(a, name), keys, spec.short_name)}"
                    for a in archs]
        label = "memory spaces" if name == "spaces" else name
        lines.append(f"  reads {label}: " + " | ".join(per_arch))
    return lines
