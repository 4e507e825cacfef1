"""tile.cast: dtype conversion with a rounding mode, legalized per arch (docs/design/numerics.md
§4).

The compiler fills the static ``chain`` attr with the arch's chain of native hops
(`ir.casts.cast_chain`); the simulator rounds once per hop.  Cast is an ``execute``
op because the numerics depend on the source dtype, not only on widened values.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.arch import ARCH_CHOICES, spec
from pytest_pypto.ir.apply import QUIET_FLOATS, place
from pytest_pypto.ir.casts import CAST_MODES, cast_chain, mode_name, run_chain
from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.ir.ops._rules import tile
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import widen


def _target(info: CallInfo):
    dst = info.values.get("target_type")
    if dst is None or not hasattr(dst, "bits"):
        raise OpTypeError(f"The operator {info.op} requires a target dtype, but got {dst!r}",
                          "e.g. pl.cast(x, pl.FP32)")
    return dst


def _cast_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    dst = _target(info)
    if src.dtype.name == dst.name:
        raise OpTypeError(
            f"The operator {info.op} requires a target dtype different from the source dtype, "
            f"but got {src.dtype.name} to {dst.name}",
            f"drop the pl.cast: the tile is already {dst.name}",
        )
    try:
        mode_name(info.values.get("mode", "round"))
    except ValueError:
        raise OpTypeError(
            f"The operator {info.op} requires mode to be one of {', '.join(CAST_MODES)} (or 0-6), "
            f"but got {info.values.get('mode')!r}"
        ) from None
    if dst.storage is None:
        raise OpTypeError(
            f"The operator {info.op} cannot produce {dst.name}: the bundled toolchain has no "
            "numeric format for it"
        )
    return TileType(src.shape, dst, valid=src.valid, pad=src.pad)


def _cast_arch(arch: Any, info: CallInfo) -> None:
    src = tile(info, "tile").dtype.name
    dst = _target(info).name
    if cast_chain(arch, src, dst) is None:
        via = _exact_bridge(arch, src, dst)
        if via:
            hint = (f"cast in two steps, the first exact for every {src} value: "
                    f"pl.cast(pl.cast(x, pl.{via}), pl.{dst})")
        else:
            hint = "cast through another dtype the arch converts natively"
        others = [a for a in ARCH_CHOICES if a != arch.name and cast_chain(spec(a), src, dst)]
        if others:
            hint += ", or target " + " or ".join(others)
        raise OpArchError(
            f"pl.cast from {src} to {dst} has no chain of native conversions on the "
            f"'{arch.name}' backend",
            hint,
        )


CAST_OP = "tile.cast"  # the name the compiler's arch check dispatches on
_SIGNIFICAND_EXPONENT = {"FP32": (24, 8), "FP16": (11, 5), "BF16": (8, 8)}


def _exact_bridge(arch: Any, src: str, dst: str) -> str | None:
    """A float the arch converts ``src`` to natively, holding every ``src`` value exactly,
    from which ``dst`` is reachable: the explicit two-step route when legalization
    refuses the pair (a2a3 INT16 -> INT32 through FP32).  None when there is none."""

    s = dtype_by_name(src)
    for via in arch.native_casts.get(src, ()):
        fmt = _SIGNIFICAND_EXPONENT.get(via)
        if fmt is None or cast_chain(arch, via, dst) is None:
            continue
        if s.is_int:
            exact = fmt[0] >= (s.bits if s.kind == "uint" else s.bits - 1)
        else:
            own = _SIGNIFICAND_EXPONENT.get(src, (0, 0))
            exact = fmt[0] >= own[0] and fmt[1] >= own[1]
        if exact:
            return via
    return None


def resolve_chain(src: str, dst: str, chain: Any = None, arch: Any = None) -> list[str]:
    """The hops to run: the compiled chain, else the arch's chain, else a direct conversion."""
    if chain:
        return [str(c) for c in chain]
    if arch is not None:
        found = cast_chain(spec(arch) if isinstance(arch, str) else arch, src, dst)
        if found is None:
            raise ValueError(f"no chain of native casts from {src} to {dst} on {arch}")
        return found
    return [src, dst]


def _cast_execute(src, *, target_type, mode="round", chain=None, arch=None, out=None, **_):
    if (out is not None and chain is not None and len(chain) == 2 and mode == "round"
            and QUIET_FLOATS.get()):
        # Fast path (a compiled float -> float cast of a fully valid tile, inside a run that
        # silences float errors already): `convert_hop`'s one rounding without its errstate.
        first, last = chain
        have = src.dtype
        if (first == have.name and last == target_type.name and have.is_float
                and target_type.is_float and src.valid == src.data.shape):
            data = src.data
            if data.dtype.itemsize >= 4:
                return place(data.astype(target_type.np), out, (src,))
            # a narrower float widens exactly into a fresh float32 array
            wide = widen(data, have)
            return place(wide.astype(target_type.np, copy=False), out, (src,))
    hops = resolve_chain(src.dtype.name, target_type.name, chain, arch)
    result = run_chain(src.valid_view(), hops, mode_name(mode))
    out = out or TileType(src.shape, target_type, src.space, pad=src.pad)
    return place(result, out, (src,))


def _widening_reads(types: Any, result: Any) -> tuple[str, ...]:
    """A widening cast's write cursor outruns its read cursor: its source stays live."""
    src = types.get("tile")
    if isinstance(src, TileType) and isinstance(result, TileType):
        return ("tile",) if result.dtype.bits > src.dtype.bits else ()
    return ()


register(OpSpec(
    name=CAST_OP,
    wide_safe=True,
    reads_while_writing=_widening_reads,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("target_type", "dtype"),
        ParamSpec("mode", "literal", default="round"),
        ParamSpec("chain", "literal", default=None, keyword_only=True),
    ),
    type_rule=_cast_type,
    mem=MemRule(operands={"tile": ("Vec",)}, result="Vec"),
    arch_rule=_cast_arch,
    execute=_cast_execute,
    batchable=True,
    spellings=("cast",),
    doc="Convert a tile to another dtype over its valid region. float->int applies mode "
        "(none/rint/round/floor/ceil/trunc/odd, default round) and clamps with a warning; "
        "other pairs round to nearest even or wrap; non-native pairs run as the arch's chain "
        "of native hops, one rounding per hop.",
))
