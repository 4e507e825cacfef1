"""Cast chains (docs/design/arch.md §6) and cast numerics per mode (docs/design/numerics.md §4)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from ophelpers import info, tt, tv

from pytest_pypto.arch import spec
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.casts import cast_chain
from pytest_pypto.ir.errors import PyptoWarning
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpTypeError

CAST = REGISTRY["tile.cast"]


@pytest.mark.parametrize("arch,src,dst,chain", [
    ("a5", "INT32", "FP16", ["INT32", "FP32", "FP16"]),
    ("a2a3", "FP16", "BF16", ["FP16", "FP32", "BF16"]),
    ("a5", "FP16", "BF16", ["FP16", "FP32", "BF16"]),
    ("a2a3", "FP32", "INT8", ["FP32", "FP16", "INT8"]),
    ("a5", "FP4", "FP8E4M3FN", ["FP4", "BF16", "FP32", "FP8E4M3FN"]),
    ("a2a3", "FP8E4M3FN", "INT32", None),
    ("a2a3", "INT32", "FP16", ["INT32", "FP16"]),
    ("a5", "FP32", "FP16", ["FP32", "FP16"]),
    # PyPTO's legalization never passes an intermediate narrower than the destination:
    ("a2a3", "INT16", "INT32", None),  # FP16 / FP32 hold fewer bits than INT32's 31
    ("a2a3", "INT8", "FP32", None),  # only FP16 follows INT8, and FP16 narrows FP32
    ("a5", "INT8", "FP32", None),
    ("a5", "FP8E4M3FN", "INT32", None),  # FP32's 24-bit significand < 31 bits
    ("a5", "FP8E4M3FN", "INT16", ["FP8E4M3FN", "FP32", "INT16"]),
    ("a5", "BF16", "INT16", ["BF16", "FP32", "INT16"]),  # float->float beats the FP16 route
    ("a5", "INT16", "UINT16", ["INT16", "UINT32", "UINT16"]),
    ("a5", "INT8", "FP8E4M3FN", ["INT8", "FP16", "FP32", "FP8E4M3FN"]),
    ("a2a3", "INT64", "INT16", ["INT64", "FP32", "INT16"]),
])
def test_arch_md_cast_chains(arch, src, dst, chain):
    assert cast_chain(spec(arch), src, dst) == chain


def test_every_native_pair_is_a_one_hop_chain(arch):
    for src, tos in arch.native_casts.items():
        for dst in tos:
            assert cast_chain(arch, src, dst) == [src, dst]


VALUES = [2.5, -2.5, 3.5, -0.5, 0.5, 1.4999999, -1.5, 7.0]
EXPECTED = {  # hand-computed per docs/design/numerics.md §4
    "none": [2, -2, 3, 0, 0, 1, -1, 7],
    "rint": [2, -2, 4, 0, 0, 1, -2, 7],
    "round": [3, -3, 4, -1, 1, 1, -2, 7],
    "floor": [2, -3, 3, -1, 0, 1, -2, 7],
    "ceil": [3, -2, 4, 0, 1, 2, -1, 7],
    "trunc": [2, -2, 3, 0, 0, 1, -1, 7],
    "odd": [3, -3, 3, -1, 1, 1, -1, 7],  # ties go to the odd neighbour
}


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_float_to_int_modes(mode):
    out = apply(CAST, tv([VALUES], D.FP32), target_type=D.INT32, mode=mode)
    assert out.data.tolist() == [EXPECTED[mode]]


def test_modes_by_number():
    names = ["none", "rint", "round", "floor", "ceil", "trunc", "odd"]
    for i, name in enumerate(names):
        out = apply(CAST, tv([VALUES], D.FP32), target_type=D.INT32, mode=i)
        assert out.data.tolist() == [EXPECTED[name]]


def test_nan_and_out_of_range_clamp_with_a_warning():
    with pytest.warns(PyptoWarning, match="clamped"):
        out = apply(CAST, tv([[math.nan, 1e6, -1e6, 100.0]], D.FP32), target_type=D.INT8)
    assert out.data.tolist() == [[0, 127, -128, 100]]


def test_chain_rounds_once_per_hop():
    # a2a3 FP32->INT8 runs FP32->FP16->INT8: 2.4998 rounds to 2.5 in FP16, then half away
    # from zero gives 3, where a direct conversion would give 2.
    x = tv([[2.4998, 300.0]], D.FP32)
    with pytest.warns(PyptoWarning):
        chained = apply(CAST, x, target_type=D.INT8, arch=spec("a2a3"))
    assert chained.data.tolist() == [[3, 127]]
    direct = apply(CAST, tv([[2.4998]], D.FP32), target_type=D.INT8)
    assert direct.data.tolist() == [[2]]
    explicit = apply(CAST, tv([[2.4998]], D.FP32), target_type=D.INT8,
                     chain=("FP32", "FP16", "INT8"))
    assert explicit.data.tolist() == [[3]]


def test_float_narrowing_is_rne_whatever_the_mode():
    x = np.array([[1.0 + 2**-8, 1.0 + 3 * 2**-8, np.finfo(np.float32).max, 70000.0]],
                 dtype=np.float32)
    bf = apply(CAST, tv(x[:, :3], D.FP32), target_type=D.BF16, mode="floor")
    assert bf.data.dtype == ml_dtypes.bfloat16
    assert bf.data.astype(np.float32).tolist() == [[1.0, 1.015625, np.inf]]
    h = apply(CAST, tv(x[:, 3:], D.FP32), target_type=D.FP16)
    assert h.data.tolist() == [[np.inf]]


def test_int_to_int_wraps_and_int_to_float_rounds():
    assert apply(CAST, tv([[300, -129]], D.INT32), target_type=D.INT8,
                 chain=("INT32", "INT8")).data.tolist() == [[44, 127]]
    h = apply(CAST, tv([[2049, 4097]], D.INT32), target_type=D.FP16)
    assert h.data.tolist() == [[2048.0, 4096.0]]


def test_cast_keeps_valid_and_poisons_the_rest():
    out = apply(CAST, tv(np.ones((2, 4)), D.FP32, valid=(1, 3)), target_type=D.INT16,
                out=tt((2, 4), D.INT16))
    assert out.valid == (1, 3)
    assert out.data[0, :3].tolist() == [1, 1, 1]
    assert (out.data[1] == -0x5A5B).all() and out.data[0, 3] == -0x5A5B


def test_same_dtype_cast_is_an_error():
    with pytest.raises(OpTypeError) as e:
        CAST.type_rule(info("tile.cast", {"tile": tt((4, 4), D.FP32)}, {"target_type": D.FP32}))
    assert "tile.cast" in e.value.message and "FP32 to FP32" in e.value.message


def test_unknown_mode_is_an_error():
    with pytest.raises(OpTypeError, match="mode .* but got 'nearest'"):
        CAST.type_rule(info("tile.cast", {"tile": tt((4, 4), D.FP32)},
                            {"target_type": D.FP16, "mode": "nearest"}))


def test_unreachable_pair_is_an_arch_error(arch):
    call = info("tile.cast", {"tile": tt((4, 4), D.FP8E4M3FN)}, {"target_type": D.INT32}, arch)
    with pytest.raises(OpArchError) as e:
        CAST.arch_rule(arch, call)
    assert e.value.message == ("pl.cast from FP8E4M3FN to INT32 has no chain of native "
                               f"conversions on the '{arch.name}' backend")


def test_int16_to_int32_on_a2a3_is_refused_with_the_exact_route_in_the_hint():
    """a2a3 has no INT16 -> INT32 instruction; a chain through FP16 would change 53,248 of
    the 65,536 values, so (as PyPTO) the pair is refused, and the hint names the exact
    two-step route and the arch that converts natively."""
    a2a3 = spec("a2a3")
    call = info("tile.cast", {"tile": tt((4, 4), D.INT16)}, {"target_type": D.INT32}, a2a3)
    with pytest.raises(OpArchError) as e:
        CAST.arch_rule(a2a3, call)
    assert "INT16 to INT32" in e.value.message and "'a2a3'" in e.value.message
    assert "pl.cast(pl.cast(x, pl.FP32), pl.INT32)" in e.value.hint
    assert e.value.hint.endswith("or target a5")
    CAST.arch_rule(spec("a5"), info("tile.cast", {"tile": tt((4, 4), D.INT16)},
                                    {"target_type": D.INT32}, spec("a5")))


def test_unreachable_pair_hint_names_only_archs_that_can_cast():
    """a2a3 cannot reach FP32 -> FP8E4M3FN but a5 can (docs/design/arch.md §6), so the hint offers
    a5;
    nothing converts to UINT64 on either arch, so no arch is offered."""
    a2a3 = spec("a2a3")
    reachable = info("tile.cast", {"tile": tt((4, 4), D.FP32)}, {"target_type": D.FP8E4M3FN}, a2a3)
    with pytest.raises(OpArchError) as e:
        CAST.arch_rule(a2a3, reachable)
    assert e.value.hint.endswith("or target a5")
    for arch in (spec("a2a3"), spec("a5")):
        nowhere = info("tile.cast", {"tile": tt((4, 4), D.FP32)}, {"target_type": D.UINT64}, arch)
        with pytest.raises(OpArchError) as e:
            CAST.arch_rule(arch, nowhere)
        assert "target" not in e.value.hint
