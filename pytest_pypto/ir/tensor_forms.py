# SPDX-License-Identifier: Apache-2.0
"""Tensor-level forms of ops (docs/design/language.md §10, §20 dispatch), derived from the tile
entries.

`pl.add(x, y)` on Tensors inside an InCore function is `tensor.add`: the same op as
`tile.add`, applied to whole tensors and lowered by the compiler
(`compiler/tensor_lowering.py`) into loads, tile ops and stores over tiles that fit
the arch.  So that every fact about an op lives once, the tensor form of a vector
tile op is not a second registry entry but a view derived from the tile entry:

* its parameters are the tile entry's, with tile operands taking Tensors and the
  scratch operands (``tmp``, ``tmp_tile``) left out: the lowering allocates them;
* its type rule runs the tile rule on whole-tensor tiles and turns the result into
  a Tensor of that shape and dtype (errors name the tensor op);
* it is never executed: the lowering replaces it before codegen.

Ops whose tensor form is more than that (matmul's ``a_trans``/``b_trans``/
``out_dtype``; views and element access) are explicit ``tensor.<name>`` registry
entries, and `resolve` prefers them.  Derived forms exist only for tile ops that
compute in Vec (every tile operand accepts Vec and the result is Vec).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_pypto.ir.registry import CallInfo, MemRule, OpRuleError, OpSpec, ParamSpec
from pytest_pypto.ir.types import TensorType, TileType, Type

# Tile operands that are caller-supplied scratch at tile level (PyPTO's convention):
# the tensor form omits them and the lowering allocates them.
SCRATCH_PARAMS = frozenset({"tmp", "tmp_tile"})


def scratch_params(spec: OpSpec) -> tuple[ParamSpec, ...]:
    """The scratch tile parameters of a tile entry."""
    return tuple(p for p in spec.params if p.kind == "tile" and p.name in SCRATCH_PARAMS)


def _operands(spec: OpSpec) -> list[ParamSpec]:
    return [p for p in spec.params if p.kind in ("tile", "tile_or_scalar")
            and p.name not in SCRATCH_PARAMS]


def has_derived_form(spec: OpSpec) -> bool:
    """Whether a tile entry gets a derived tensor form: a Vec compute op on tiles."""
    if spec.level != "tile" or spec.mem.result != "Vec":
        return False
    operands = _operands(spec)
    if not operands or any(p.kind == "tensor" for p in spec.params):
        return False
    return all("Vec" in spec.mem.operands.get(p.name, ("Vec",)) for p in operands)


def resolve(registry: Mapping[str, OpSpec], short: str) -> OpSpec | None:
    """The tensor-level op ``short``: an explicit ``tensor.<short>`` entry, else the form
    derived from ``tile.<short>``, else None."""
    explicit = registry.get(f"tensor.{short}")
    if explicit is not None:
        return explicit
    tile_spec = registry.get(f"tile.{short}")
    if tile_spec is None or not has_derived_form(tile_spec):
        return None
    return derive(tile_spec)


def tile_entry(spec: OpSpec) -> OpSpec | None:
    """The tile entry a derived tensor form was made from (None for explicit entries)."""
    return getattr(spec.type_rule, "tile_spec", None)


_DERIVED: dict[int, tuple[OpSpec, OpSpec]] = {}  # id(tile entry) -> (tile entry, tensor form)


def derive(tile_spec: OpSpec) -> OpSpec:
    """The tensor form of a Vec tile op (see the module docstring), made once per entry."""
    cached = _DERIVED.get(id(tile_spec))
    if cached is not None and cached[0] is tile_spec:
        return cached[1]
    form = _derive(tile_spec)
    _DERIVED[id(tile_spec)] = (tile_spec, form)
    return form


def _derive(tile_spec: OpSpec) -> OpSpec:
    from pytest_pypto.ir.ops._rules import lowered_by_compiler  # lazy: ir.ops imports us

    short = tile_spec.short_name
    name = f"tensor.{short}"
    params = tuple(
        ParamSpec(p.name, "tensor", p.default, p.keyword_only, p.optional, p.aliases)
        if p.kind == "tile" else p
        for p in tile_spec.params if p.name not in SCRATCH_PARAMS
    )
    scalar = tile_spec.scalar_form
    return OpSpec(
        name=name,
        params=params,
        type_rule=_derived_rule(tile_spec, name),
        mem=MemRule(),
        doc=f"Tensor-level {short} inside InCore code: {tile_spec.doc} Lowered to tile ops "
            "over tiles that fit the arch (docs/design/language.md §10).",
        spellings=(name,),
        scalar_form=f"tensor.{scalar.split('.', 1)[1]}" if scalar else None,
        execute=lowered_by_compiler,
        tier=tile_spec.tier,
    )


def tile_view(t: TensorType, what: str, op: str) -> TileType:
    """A tile covering a whole static tensor, with the tensor's valid region and pad (what
    the tile rule is run on, so a tensor op's result keeps the valid region PyPTO's tile
    conversion gives it)."""
    for d, dim in enumerate(t.shape):
        if not isinstance(dim, int):
            raise OpRuleError(
                f"The operator {op} needs static tensor shapes, but '{what}' has the dynamic "
                f"dimension {dim} (dimension {d})",
                "slice a static window first, or use the tile ops with valid_shapes",
            )
    return TileType(tuple(t.shape), t.dtype, valid=t.valid, pad=t.pad)


# A pl.dynamic dim stands in as a distinct large int while the tile rule runs (so
# broadcast and shape checks compare dims by identity) and is put back in the result.
_STAND_IN = 1 << 20


def stand_in_dims(shape: tuple[Any, ...], stand_ins: dict[Any, int]) -> tuple[int, ...]:
    """``shape`` with each dynamic dim replaced by its stand-in (added to ``stand_ins``)."""
    return tuple(d if isinstance(d, int) else stand_ins.setdefault(
        d, _STAND_IN * (len(stand_ins) + 1)) for d in shape)


def restore_dims(shape: tuple[Any, ...], stand_ins: dict[Any, int]) -> tuple[Any, ...] | None:
    """``shape`` with the stand-ins put back; None when a dim was computed from one."""
    back = {v: d for d, v in stand_ins.items()}
    if any(isinstance(d, int) and d >= _STAND_IN and d not in back for d in shape):
        return None  # the rule computed with a stand-in (concat, reshape...)
    return tuple(back.get(d, d) for d in shape)


def unstand(message: str, stand_ins: dict[Any, int]) -> str:
    """An error message with the dynamic dims' names in place of their stand-ins."""
    for dim, value in sorted(stand_ins.items(), key=lambda kv: -kv[1]):
        message = message.replace(str(value), repr(dim))
    return message


def _stand_in(t: TensorType, stand_ins: dict[Any, int]) -> TensorType:
    return TensorType(stand_in_dims(tuple(t.shape), stand_ins), t.dtype, None, t.pad)


def tile_info(tile_spec: OpSpec, info: CallInfo,
              stand_ins: dict[Any, int] | None = None) -> CallInfo:
    """The CallInfo the tile rule sees for a tensor-level call: whole-tensor tiles, and the
    scratch operands the lowering will allocate (like the first tile operand).
    ``stand_ins`` (filled here): the ints standing in for dynamic dims; without it a
    dynamic dim is an error."""
    types: dict[str, Type | None] = {}
    first: TileType | None = None
    for p in tile_spec.params:
        if p.name in SCRATCH_PARAMS:
            continue
        t = info.types.get(p.name)
        if isinstance(t, TensorType):
            if stand_ins is not None and not t.is_static:
                t = _stand_in(t, stand_ins)
            t = tile_view(t, p.name, info.op)
            first = first or t
        types[p.name] = t
    for p in scratch_params(tile_spec):
        types[p.name] = first if p.required else None
    return CallInfo(op=tile_spec.name, types=types, values=dict(info.values), arch=info.arch,
                    bounds=info.bounds, warnings=info.warnings)


def promote(a: Any, b: Any) -> Any:
    """PyPTO's dtype promotion of two tensor operands: a float beats an int, else the
    wider wins, at equal width a signed int beats an unsigned one, else the first."""
    if a.name == b.name:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    if not a.is_float and a.kind != b.kind:
        return a if a.kind == "int" else b
    return a


def promoted_dtype(spec: OpSpec, types: Mapping[str, Any]) -> Any:
    """The dtype the ``tensor_promotes`` operands of a call meet in (None: no promotion)."""
    dtypes = [types[p].dtype for p in spec.tensor_promotes
              if isinstance(types.get(p), (TensorType, TileType))]
    if len(dtypes) < 2 or all(d.name == dtypes[0].name for d in dtypes):
        return None
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return out


def promotion_casts(spec: OpSpec, operands: Mapping[str, Any]) -> dict[str, Any]:
    """The operands of a call (Exprs by parameter name) to cast, each to the promoted
    dtype (PyPTO's operand promotion; empty without one)."""
    promoted = promoted_dtype(spec, {k: v.type for k, v in operands.items()})
    if promoted is None:
        return {}
    return {k: promoted for k, v in operands.items()
            if k in spec.tensor_promotes and v.type.dtype.name != promoted.name}


def _promoted(tile_spec: OpSpec, info: CallInfo) -> CallInfo:
    """``info`` with the promoted operands retyped to their common dtype."""
    dtype = promoted_dtype(tile_spec, info.types)
    if dtype is None:
        return info
    types = dict(info.types)
    for p in tile_spec.tensor_promotes:
        t = types.get(p)
        if isinstance(t, TensorType) and t.dtype.name != dtype.name:
            types[p] = TensorType(tuple(t.shape), dtype, t.valid, t.pad)
    return CallInfo(op=info.op, types=types, values=info.values, arch=info.arch,
                    bounds=info.bounds, warnings=info.warnings)


def _derived_rule(tile_spec: OpSpec, name: str):
    def rule(info: CallInfo) -> Type | None:
        stand_ins: dict[Any, int] = {}
        if tile_spec.tensor_promotes:
            info = _promoted(tile_spec, info)
        try:
            result = tile_spec.type_rule(tile_info(tile_spec, info, stand_ins))
        except OpRuleError as exc:
            exc.message = exc.message.replace(tile_spec.name, name)
            exc.message = unstand(exc.message, stand_ins)
            exc.args = (exc.message,)
            raise
        if isinstance(result, TileType):
            if not stand_ins:
                return TensorType(tuple(result.shape), result.dtype, result.valid, result.pad)
            shape = restore_dims(tuple(result.shape), stand_ins)
            if shape is None:
                raise OpRuleError(
                    f"The operator {name} needs static tensor shapes for this result, but "
                    f"an operand has the dynamic dimension {next(iter(stand_ins))!r}",
                    "slice a static window first, or use the tile ops with valid_shapes",
                )
            return TensorType(shape, result.dtype, None, result.pad)
        return result

    rule.tile_spec = tile_spec  # type: ignore[attr-defined]
    return rule
