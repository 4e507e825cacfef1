"""The compile-time checks of docs/design/checks.md: one negative test per check, plus positives."""

from __future__ import annotations

import warnings

import pytest
from irb import FILE, Fn, T, orchestrate, program
from kernels import INOUT, OUT, matmul

from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler.api import lower
from pytest_pypto.compiler.capacity import tile_bytes
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import FP8E4M3FN, FP16, FP32, INT32
from pytest_pypto.ir.errors import (
    ArchSupportError,
    BoundsError,
    CapacityError,
    DirectionError,
    PlacementError,
    PyptoWarning,
    UnsupportedFeatureError,
)
from pytest_pypto.ir.types import Direction, TileType

A2A3 = RunConfig(platform="a2a3sim")
A5 = RunConfig(platform="a5sim")


# ------------------------------------------------------------------ capacity (docs/design/checks.md
# §7)


def test_256x256_fp32_acc_fits_a5_only():
    big = matmul(256, 16, 256)
    _, ctx = lower(big, A5)
    assert ctx.kernels["mm"].peak["Acc"] == 256 * 256 * 4
    with pytest.raises(CapacityError) as info:
        lower(big, A2A3)
    err = info.value
    assert "Function 'mm': Acc peak usage is 262144 bytes" in err.message
    assert "over the 131072-byte limit of the 'a2a3' backend" in err.message
    assert err.arch == "a2a3"
    assert (err.file, err.line) == (FILE, 41)  # the matmul that allocated the Acc tile
    assert err.notes == ("live at the peak: acc (Acc [256, 256] FP32, 262144 bytes, line 41)",)
    assert "split N into two 128-column tiles" in err.hint
    assert "target a5 (Acc 256 KiB)" in err.hint


def test_capacity_counts_tiles_live_together_not_one_after_another():
    # Two 96 KiB Vec tiles never live at once fit a2a3's 184 KiB; two at once do not.
    def prog(overlap: bool):
        k = Fn("v", "InCore", 50, x=T(192, 128), y=(T(192, 128), OUT))
        k.let("a", "tile.load", 51, "x", [0, 0], [192, 128])
        k.let("y1", "tile.store", 52, "a", [0, 0], "y")
        k.let("b", "tile.load", 53, "x", [0, 0], [192, 128])
        if overlap:
            k.let("c", "tile.add", 54, "a", "b")
            k.let("y2", "tile.store", 55, "c", [0, 0], "y1")
        else:
            k.let("y2", "tile.store", 55, "b", [0, 0], "y1")
        k.ret("y2", line=56)
        return program(k, orchestrate(k))

    _, ctx = lower(prog(False), A2A3)
    assert ctx.kernels["v"].peak["Vec"] == 192 * 128 * 4
    with pytest.raises(CapacityError) as info:
        lower(prog(True), A2A3)
    # a and b live together (c then reuses a dying operand's buffer): 192 KiB
    assert "Vec peak usage is 196608 bytes" in info.value.message
    assert "188416-byte limit of the 'a2a3' backend" in info.value.message
    assert info.value.line == 53  # the load that made b live next to a
    assert "a (Vec [192, 128] FP32, 98304 bytes, line 51)" in info.value.notes[0]
    assert "target a5 (Vec 240 KiB)" in (info.value.hint or "")  # 192 KiB <= 240 KiB


def test_buffer_used_in_a_loop_lives_over_the_whole_loop():
    k = Fn("lp", "InCore", 60, x=T(128, 64), y=(T(128, 64), OUT))
    k.let("w", "tile.load", 61, "x", [0, 0], [32, 64])
    with k.loop("r", 0, 128, 32, 62, carry=(("o", "y"),), results=("y2",)):
        k.let("t", "tile.load", 63, "x", ["r", 0], [32, 64])
        k.let("s", "tile.add", 64, "t", "w")
        k.let("o2", "tile.store", 65, "s", ["r", 0], "o")
        k.yield_("o2", line=65)
    k.ret("y2", line=66)
    _, ctx = lower(program(k, orchestrate(k)), A2A3)
    bufs = {b.name: b for b in ctx.kernels["lp"].buffers}
    loop_end = max(b.end for b in bufs.values())
    assert bufs["w"].end == loop_end  # last use is mid-loop, but the loop repeats it
    assert ctx.kernels["lp"].peak["Vec"] == 2 * 32 * 64 * 4  # w with t, then w with s (s reuses t)
    offsets = {(b.offset, b.offset + b.nbytes) for b in bufs.values() if b.start <= bufs["s"].start <= b.end}
    assert len(offsets) == 2  # simultaneously live buffers never share bytes


@pytest.mark.parametrize(
    "arch,tile,expected",
    [
        ("a2a3", TileType((20, 16), FP32, "Acc"), 32 * 16 * 4),  # M 20 -> 32 rows, 128-aligned
        ("a2a3", TileType((20, 16), INT32, "Acc"), 32 * 16 * 4),
        ("a5", TileType((20, 16), INT32, "Acc"), 2048),  # 16-row alignment on a5
        ("a2a3", TileType((3, 5), FP16, "Vec"), 128),  # 30 bytes -> 128-byte alignment
        ("a2a3", TileType((16, 16), FP16, "Left"), 512),
    ],
)
def test_tile_bytes_follow_the_arch_alignment(arch, tile, expected):
    assert tile_bytes(tile, spec(arch)) == expected


# ------------------------------------------------------------------ bounds (docs/design/checks.md
# §6)


def test_load_past_the_end_over_the_loop_range():
    k = Fn("tail", "InCore", 10, x=T(128, 64), y=(T(128, 64), OUT))
    with k.loop("r", 0, 128, 32, 11, carry=(("o", "y"),), results=("y2",)):
        k.let("t", "tile.load", 22, "x", ["r", 0], [64, 64])
        k.let("o2", "tile.store", 23, "t", ["r", 0], "o")
        k.yield_("o2", line=23)
    k.ret("y2", line=24)
    with pytest.raises(BoundsError) as info:
        lower(program(k, orchestrate(k)), A2A3)
    err = info.value
    assert "tile.load reads past the end of dimension 0: offset 96 + extent 64 > source extent 128" in err.message
    assert "clamp=True" in err.hint
    assert err.line == 22


@pytest.mark.parametrize(
    ("rows", "clamp", "valid_rows"),
    [
        (32, False, 32),  # every window ends inside the 128 rows
        (64, True, None),  # past the end at r=96, but clamped: a runtime-valid row count
    ],
)
def test_in_bounds_loop_passes_and_clamped_load_passes(rows, clamp, valid_rows):
    k = Fn("ok", "InCore", 10, x=T(128, 64), y=(T(128, 64), OUT))
    with k.loop("r", 0, 128, 32, 11, carry=(("o", "y"),), results=("y2",)):
        k.let("t", "tile.load", 22, "x", ["r", 0], [rows, 64], clamp=clamp)
        k.let("o2", "tile.store", 23, "t", ["r", 0], "o")
        k.yield_("o2", line=23)
    k.ret("y2", line=24)
    _, ctx = lower(program(k, orchestrate(k)), A2A3)
    (buf,) = ctx.kernels["ok"].buffers
    assert buf.type.shape == (rows, 64)
    assert buf.type.valid[0] == valid_rows  # None: cut at the source edge at run time
    assert ctx.kernels["ok"].peak == {"Vec": rows * 64 * 4}


# ------------------------------------------------------------------ arch gates
# (docs/design/checks.md §8)


def test_cast_without_native_chain_is_an_arch_error_on_a2a3_only():
    def prog():
        k = Fn("c8", "InCore", 10, x=T(32, 32), y=(T(32, 32, dtype=FP8E4M3FN), OUT))
        k.let("t", "tile.load", 11, "x", [0, 0], [32, 32])
        k.let("c", "tile.cast", 12, "t", FP8E4M3FN)
        k.let("y2", "tile.store", 13, "c", [0, 0], "y")
        k.ret("y2", line=14)
        return program(k, orchestrate(k))

    _, ctx = lower(prog(), A5)
    assert ctx.kernels["c8"].casts == [(12, "c", ("FP32", "FP8E4M3FN"))]
    with pytest.raises(ArchSupportError) as info:
        lower(prog(), A2A3)
    assert "FP32" in info.value.message and "FP8E4M3FN" in info.value.message
    assert "'a2a3'" in info.value.message
    assert info.value.line == 12


def test_cast_chain_is_recorded_for_the_listing():
    k = Fn("c16", "InCore", 10, x=T(32, 32, dtype=INT32), y=(T(32, 32, dtype=FP16), OUT))
    k.let("t", "tile.load", 11, "x", [0, 0], [32, 32])
    k.let("c", "tile.cast", 12, "t", FP16)
    k.let("y2", "tile.store", 13, "c", [0, 0], "y")
    k.ret("y2", line=14)
    work, ctx = lower(program(k, orchestrate(k)), A5)
    # docs/design/arch.md §6: a5 INT32 -> FP16 = INT32 -> FP32 -> FP16
    assert ctx.kernels["c16"].casts == [(12, "c", ("INT32", "FP32", "FP16"))]
    cast = [s.value for s in work.functions["c16"].body if isinstance(s, n.Assign)][1]
    assert tuple(cast.arg("chain")) == ("INT32", "FP32", "FP16")


# ------------------------------------------------------------------ directions
# (docs/design/checks.md §9)


def _copy_kernel(y_dir, ret="y2", line=70):
    k = Fn("cp", "InCore", line, x=T(32, 32), y=(T(32, 32), y_dir))
    k.let("t", "tile.load", line + 1, "x", [0, 0], [32, 32])
    k.let("y2", "tile.store", line + 2, "t", [0, 0], "y")
    k.ret(ret, line=line + 3)
    return k


def test_writing_an_in_parameter():
    k = _copy_kernel(Direction.IN)
    with pytest.raises(DirectionError) as info:
        lower(program(k, orchestrate(k)), A2A3)
    assert "Function 'cp' writes parameter 'y', which is declared In" in info.value.message
    assert "pl.Out" in info.value.hint
    assert info.value.line == 72


def test_entry_in_parameter_passed_to_an_out_slot():
    k = _copy_kernel(OUT)
    main = Fn("main", "Orchestration", 80, x=T(32, 32), y=T(32, 32))  # y is In here
    main.task(["y"], "cp", 81, "x", "y")
    main.ret("y", line=82)
    with pytest.raises(DirectionError) as info:
        lower(program(k, main), A2A3)
    msg = info.value.message
    assert "Argument 'y' passed to self.cp(...) at position 1 is the entry's In parameter" in msg
    assert "'cp' declares that slot Out" in msg
    assert info.value.line == 81


def test_returning_a_non_output():
    k = _copy_kernel(OUT, ret="t")
    with pytest.raises(DirectionError) as info:
        lower(program(k, orchestrate(k)), A2A3)
    assert "returns 't', which is not one of its Out/InOut parameters" in info.value.message


def test_returning_an_in_parameter_itself_is_allowed():
    # PyPTO maps a returned parameter to the call's argument, whatever its direction.
    k = _copy_kernel(OUT, ret="x")
    lower(program(k, orchestrate(k)), A2A3)


def test_reading_a_pure_out_parameter_warns():
    k = Fn("rd", "InCore", 70, y=(T(32, 32), OUT))
    k.let("t", "tile.load", 71, "y", [0, 0], [32, 32])
    k.let("y2", "tile.store", 72, "t", [0, 0], "y")
    k.ret("y2", line=73)
    with pytest.warns(PyptoWarning, match="reads parameter 'y' before writing it"):
        lower(program(k, orchestrate(k)), A2A3)
    k2 = Fn("rd", "InCore", 70, y=(T(32, 32), INOUT))
    k2.let("t", "tile.load", 71, "y", [0, 0], [32, 32])
    k2.let("y2", "tile.store", 72, "t", [0, 0], "y")
    k2.ret("y2", line=73)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyptoWarning)
        lower(program(k2, orchestrate(k2)), A2A3)


# ------------------------------------------------------------------ placement
# (docs/design/checks.md §10) and entry


def test_tile_op_in_orchestration():
    k = _copy_kernel(OUT)
    main = Fn("main", "Orchestration", 80, x=T(32, 32), y=(T(32, 32), OUT))
    main.let("t", "tile.load", 81, "x", [0, 0], [32, 32])
    main.ret("y", line=82)
    with pytest.raises(PlacementError) as info:
        lower(program(k, main), A2A3)
    assert "tile op 'tile.load' is not allowed in Orchestration function 'main'" in info.value.message
    assert info.value.line == 81


def test_entry_must_be_unique():
    k = _copy_kernel(OUT)
    m1, m2 = orchestrate(k, name="main"), orchestrate(k, line=95, name="other")
    with pytest.raises(PlacementError) as info:
        lower(program(k, m1, m2), A2A3)
    assert "'main'" in info.value.message and "'other'" in info.value.message


def test_opaque_entry_is_selected_when_uncalled():
    k = _copy_kernel(OUT)
    main = orchestrate(k)
    main.fn.kind = "Opaque"
    _, ctx = lower(program(k, main), A2A3)
    assert ctx.entry == "main"


@pytest.mark.parametrize("reason", ["explicit task dependencies", "tier 3: explicit task dependencies"])
def test_unsupported_construct_names_tier_and_line(reason):
    k = _copy_kernel(OUT)
    k.fn.unsupported = n.Unsupported("pl.manual_scope", reason, n.Span(FILE, 57, 9))
    with pytest.raises(UnsupportedFeatureError) as info:
        lower(program(k, orchestrate(k)), A2A3)
    err = info.value
    assert isinstance(err, NotImplementedError)
    assert err.message == (
        "pl.manual_scope is not supported by the bundled toolchain "
        "(tier 3: explicit task dependencies)"
    )
    assert err.line == 57
    assert "pypto_onboard" in err.hint
