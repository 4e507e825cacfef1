"""Memory-space inference and move insertion (docs/design/language.md §14, docs/design/checks.md §4;
docs/design/arch.md §5)."""

from __future__ import annotations

import pytest
from irb import FILE, Fn, T, orchestrate, program
from kernels import OUT, matmul

from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler.api import compile, lower
from pytest_pypto.compiler.memspace import shortest_path
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import MemorySpaceError

PLATFORMS = ["a2a3sim", "a5sim"]


def _assigns(body):
    return [s for s in body if isinstance(s, n.Assign)]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_matmul_fed_by_loads_goes_ddr_mat_left_right(platform):
    work, ctx = lower(matmul(64, 32, 48), RunConfig(platform=platform))
    body = _assigns(work.functions["mm"].body)
    by_name = {s.targets[0].name: s for s in body}
    # both loads land in Mat (a load cannot reach Left/Right), then one move each
    assert by_name["ta"].value.arg("target_memory") == "Mat"
    assert by_name["tb"].value.arg("target_memory") == "Mat"
    moves = [(m.var, m.src, m.dst, m.inserted) for m in ctx.kernels["mm"].moves]
    assert moves == [("ta", "Mat", "Left", True), ("tb", "Mat", "Right", True)]
    mm = by_name["acc"].value
    assert [a.type.space for _, a in mm.args] == ["Left", "Right"]
    assert mm.type.space == "Acc"
    assert ctx.kernels["mm"].core_type == "aic"


def _matmul_then_vec(explicit_move: bool):
    """c = exp(a @ b): the Acc result must cross to the vector side (Acc -> Vec)."""
    k = Fn("mmexp", "InCore", 30, a=T(32, 32), b=T(32, 32), c=(T(32, 32), OUT))
    k.let("ta", "tile.load", 31, "a", [0, 0], [32, 32], target_memory="Mat")
    k.let("tb", "tile.load", 32, "b", [0, 0], [32, 32], target_memory="Mat")
    k.let("tl", "tile.move", 33, "ta", target_memory="Left")
    k.let("tr", "tile.move", 34, "tb", target_memory="Right")
    k.let("acc", "tile.matmul", 35, "tl", "tr")
    src = "acc"
    if explicit_move:
        k.let("v", "tile.move", 36, "acc", target_memory="Vec")
        src = "v"
    k.let("e", "tile.exp", 37, src)
    k.let("c2", "tile.store", 38, "e", [0, 0], "c")
    k.ret("c2", line=39)
    return program(k, orchestrate(k))


@pytest.mark.parametrize("platform,route", [("a2a3sim", "via GM"), ("a5sim", "direct")])
@pytest.mark.parametrize("explicit", [False, True])
def test_acc_to_vec_is_a_cross_core_transfer_on_both_archs(platform, route, explicit):
    _, ctx = lower(_matmul_then_vec(explicit), RunConfig(platform=platform))
    facts = ctx.kernels["mmexp"]
    assert facts.core_type == "mix"
    crossing = [m for m in facts.moves if (m.src, m.dst) == ("Acc", "Vec")]
    assert len(crossing) == 1
    assert crossing[0].inserted is (not explicit)
    assert crossing[0].route == route
    # the moves inside one side are not cross-core transfers
    assert all(m.route is None for m in facts.moves if m.dst in ("Left", "Right"))


@pytest.mark.parametrize("platform,route", [("a2a3sim", "via GM"), ("a5sim", "direct")])
def test_listing_labels_the_crossing(platform, route, tmp_path):
    compile(_matmul_then_vec(False), RunConfig(platform=platform), output_dir=tmp_path)
    listing = (tmp_path / "kernels" / "mmexp.txt").read_text()
    assert f"Acc -> Vec (inserted, cross-core {route})" in listing
    assert "core type: mix" in listing


def _vec_to(space_chain, line=40):
    k = Fn("mv", "InCore", 20, x=T(32, 32), y=(T(32, 32), OUT))
    k.let("t", "tile.load", 21, "x", [0, 0], [32, 32], target_memory="Vec")
    prev = "t"
    for i, space in enumerate(space_chain):
        k.let(f"m{i}", "tile.move", line + i, prev, target_memory=space)
        prev = f"m{i}"
    k.let("y2", "tile.store", 21, "t", [0, 0], "y")
    k.ret("y2", line=22)
    return program(k, orchestrate(k))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_illegal_move_vec_to_left_names_a_legal_route(platform):
    cfg = RunConfig(platform=platform)
    arch = spec(cfg.arch).name
    with pytest.raises(MemorySpaceError) as info:
        lower(_vec_to(["Left"], line=44), cfg)
    err = info.value
    assert "tile.move has no path from Vec to Left" in err.message
    assert f"'{arch}'" in err.message
    assert "legal moves from Vec: Mat (cross-core transfer)" in err.message
    assert err.hint == "move to pl.Mem.Mat first"
    assert (err.file, err.line) == (FILE, 44)
    assert err.arch == arch


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vec_to_mat_then_left_compiles_on_both(platform):
    work, ctx = lower(_vec_to(["Mat", "Left"]), RunConfig(platform=platform))
    moves = [(m.src, m.dst, m.inserted) for m in ctx.kernels["mv"].moves]
    assert moves == [("Vec", "Mat", False), ("Mat", "Left", False)]
    assert ctx.kernels["mv"].core_type == "mix"
    route = spec(RunConfig(platform=platform).arch).cross_core_route
    assert ctx.kernels["mv"].moves[0].route == route


@pytest.mark.parametrize("platform", PLATFORMS)
def test_load_into_left_is_rejected(platform):
    k = Fn("ld", "InCore", 20, x=T(32, 32), y=(T(32, 32), OUT))
    k.let("t", "tile.load", 27, "x", [0, 0], [32, 32], target_memory="Left")
    k.let("y2", "tile.store", 28, "t", [0, 0], "y")
    k.ret("y2", line=29)
    with pytest.raises(MemorySpaceError) as info:
        lower(program(k, orchestrate(k)), RunConfig(platform=platform))
    assert "tile.load cannot target Left" in info.value.message
    assert "Vec or Mat" in info.value.message
    assert info.value.line == 27


def test_store_from_a_space_with_no_route_fails():
    k = Fn("st", "InCore", 20, x=T(32, 32), y=(T(32, 32), OUT))
    k.let("t", "tile.load", 21, "x", [0, 0], [32, 32], target_memory="Mat")
    k.let("l", "tile.move", 22, "t", target_memory="Left")
    k.let("y2", "tile.store", 23, "l", [0, 0], "y")
    k.ret("y2", line=24)
    with pytest.raises(MemorySpaceError) as info:
        lower(program(k, orchestrate(k)), RunConfig(platform="a2a3sim"))
    assert "tile.store" in info.value.message and "Vec or Acc" in info.value.message
    assert "got Left" in info.value.message
    assert info.value.line == 23


def test_explicit_target_is_never_overridden():
    k = Fn("keep", "InCore", 20, a=T(32, 32), b=T(32, 32), c=(T(32, 32), OUT))
    k.let("ta", "tile.load", 21, "a", [0, 0], [32, 32], target_memory="Vec")
    k.let("tb", "tile.load", 22, "b", [0, 0], [32, 32])
    k.let("acc", "tile.matmul", 23, "ta", "tb")
    k.let("c2", "tile.store", 24, "acc", [0, 0], "c")
    k.ret("c2", line=25)
    work, ctx = lower(program(k, orchestrate(k)), RunConfig(platform="a2a3sim"))
    loads = [s.value for s in _assigns(work.functions["keep"].body) if s.value.op == "tile.load"]
    assert [ld.arg("target_memory") for ld in loads] == ["Vec", "Mat"]
    moves = [(m.var, m.src, m.dst) for m in ctx.kernels["keep"].moves]
    assert moves == [("ta", "Vec", "Mat"), ("ta", "Mat", "Left"), ("tb", "Mat", "Right")]


@pytest.mark.parametrize(
    "arch,src,targets,expected",
    [
        ("a2a3", "Mat", ("Left",), ["Left"]),
        ("a2a3", "Vec", ("Left",), ["Mat", "Left"]),
        ("a2a3", "Acc", ("Vec",), ["Vec"]),
        ("a2a3", "Left", ("Vec",), None),
        ("a5", "Acc", ("Left",), ["Mat", "Left"]),
        ("a2a3", "Vec", ("Vec", "Acc"), []),
    ],
)
def test_shortest_path_follows_the_arch_table(arch, src, targets, expected):
    assert shortest_path(spec(arch), src, targets) == expected
