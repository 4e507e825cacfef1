# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`with pl.cluster():` (docs/design/language.md §14a): parse rules with their lines, the
AIC + AIV pair folded into one Group task, and runs on both sims against numpy."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import (
    CompileError,
    InvalidOperationError,
    ParserSyntaxError,
    PlacementError,
    SimulationError,
)
from pytest_pypto.ir.nodes import Assign, FuncCall

PLATFORMS = ("a2a3sim", "a5sim")
D = 16
SLOT = D * D * 4


def _run(program, platform, *arrays):
    config = RunConfig(platform=platform)
    return pytest_pypto.run(pytest_pypto.compile(program, config), *arrays, config=config)


_PAIR = '''import pytest_pypto.language as pl
D, SLOT, LAUNCH = {D}, {SLOT}, {launch}
def build():
    @pl.program
    class Pair:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                 out: pl.Out[pl.Tensor[[D * LAUNCH, D], pl.FP32]]):
            peer = pl.import_peer_buffer(name="c2v", peer_func="vec")
            pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=peer)
            left = pl.move(pl.load(a, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                           target_memory=pl.Mem.Left)
            right = pl.move(pl.load(b, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                            target_memory=pl.Mem.Right)
            pl.tpush_to_aiv(pl.matmul(left, right), split=0)

        @pl.function(type=pl.FunctionType.AIV)
        def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                out: pl.Out[pl.Tensor[[D * LAUNCH, D], pl.FP32]]
                ) -> pl.Tensor[[D * LAUNCH, D], pl.FP32]:
            buf = pl.reserve_buffer(name="c2v", size=SLOT * 2, base=0x1000)
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=buf)
            p: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)
            row = pl.tile.get_block_idx() * D
            out = pl.store(pl.add(p, 1.0), [row, 0], out)
            pl.tfree_to_aic(p)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                 out: pl.Out[pl.Tensor[[D * LAUNCH, D], pl.FP32]]
                 ) -> pl.Tensor[[D * LAUNCH, D], pl.FP32]:
{body}
            return out
    return Pair
'''


def _load(tmp_path, text: str, stem: str):
    path = tmp_path / f"{stem}.py"
    path.write_text(text)
    name = f"_{stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[name]


def _pair_program(tmp_path, body: str, launch: int = 1):
    """The cube sends a @ b to the vector kernel, which stores (a @ b) + 1 into its block's
    rows of `out`; the orchestration's body is ``body``."""
    text = _PAIR.format(D=D, SLOT=SLOT, launch=launch, body=textwrap.indent(body, " " * 12))
    return _load(tmp_path, text, "pair_mod")


PAIR = "with pl.cluster():\n    self.cube(a, b, out)\n    out = self.vec(a, b, out)"


@pytest.fixture
def ab() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261203)
    return (rng.standard_normal((D, D)).astype(np.float32),
            rng.standard_normal((D, D)).astype(np.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_cluster_runs_its_aic_and_aiv_kernels_as_one_group_task(tmp_path, platform, ab):
    a, b = ab
    out = np.zeros((D, D), np.float32)
    program = _pair_program(tmp_path, PAIR)
    run = _run(program, platform, a, b, out)
    np.testing.assert_allclose(out, a @ b + 1.0, rtol=1e-5, atol=1e-5)
    (task,) = run.tasks
    assert (task["kernel"], task["core_type"]) == ("main_cluster_0", "mix")
    group = program.functions["main_cluster_0"]
    assert group.kind == "Group"
    assert [s.value.callee for s in group.body if isinstance(getattr(s, "value", None), FuncCall)
            ] == ["vec"]  # the cube's call has no result: an ExprStmt


def test_name_hint_names_the_group(tmp_path):
    program = _pair_program(tmp_path, PAIR.replace("pl.cluster()", 'pl.cluster(name_hint="qk_pair")'))
    assert program.functions["qk_pair"].kind == "Group"
    (call,) = [s.value for s in program.functions["main"].body
               if isinstance(s, Assign) and isinstance(s.value, FuncCall)]
    assert call.callee == "qk_pair"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_spmd_launch_inside_a_cluster_launches_the_group_per_block(tmp_path, platform, ab):
    a, b = ab
    out = np.zeros((3 * D, D), np.float32)
    body = ("with pl.cluster():\n    with pl.spmd(3):\n        self.cube(a, b, out)\n"
            "        out = self.vec(a, b, out)")
    run = _run(_pair_program(tmp_path, body, launch=3), platform, a, b, out)
    np.testing.assert_allclose(out, np.vstack([a @ b + 1.0] * 3), rtol=1e-5, atol=1e-5)
    assert [t["kernel"] for t in run.tasks] == ["main_cluster_0"] * 3


@pytest.mark.parametrize("platform", PLATFORMS)
def test_without_the_cluster_the_pair_is_two_tasks_and_the_pipe_has_no_peer(platform, ab):
    a, b = ab

    @pl.program
    class Apart:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32]):
            peer = pl.import_peer_buffer(name="c2v", peer_func="vec")
            pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=peer)
            left = pl.move(pl.load(a, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                           target_memory=pl.Mem.Left)
            right = pl.move(pl.load(b, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                            target_memory=pl.Mem.Right)
            pl.tpush_to_aiv(pl.matmul(left, right), split=0)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32]):
            self.cube(a, b)

    with pytest.raises((CompileError, SimulationError)):
        _run(Apart, platform, a, b)


# ------------------------------------------------------------- a cluster of InCore launches

R = 64


@pl.program
class ClusteredLaunch:
    """PyPTO's paged-attention shape: `pl.cluster()` around a `pl.spmd` launch of one
    InCore kernel, which runs as it would without the cluster."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[R, D], pl.FP32], out: pl.Out[pl.Tensor[[R, D], pl.FP32]]
              ) -> pl.Tensor[[R, D], pl.FP32]:
        row = pl.tile.get_block_idx() * D
        return pl.store(pl.mul(pl.load(x, [row, 0], [D, D]), 3.0), [row, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, D], pl.FP32], out: pl.Out[pl.Tensor[[R, D], pl.FP32]]
             ) -> pl.Tensor[[R, D], pl.FP32]:
        with pl.cluster():
            with pl.spmd(core_num=R // D):
                out = self.scale(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_cluster_around_an_incore_launch_runs_it_unchanged(platform):
    x = np.arange(R * D, dtype=np.float32).reshape(R, D)
    out = np.zeros_like(x)
    run = _run(ClusteredLaunch, platform, x, out)
    np.testing.assert_array_equal(out, x * np.float32(3))
    assert [t["kernel"] for t in run.tasks] == ["scale"] * (R // D)


# ------------------------------------------------------------- parse rules


def _parse(tmp_path, src: str, *, kernel_body: str = ""):
    """A program whose orchestration body is ``src``: its first line is line 18."""
    path = tmp_path / "cluster_mod.py"
    extra = kernel_body or "pass"
    path.write_text(f'''import pytest_pypto.language as pl
D = {D}
def build():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[D, D], pl.FP32], o: pl.Out[pl.Tensor[[D, D], pl.FP32]]
              ) -> pl.Tensor[[D, D], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], o)
        @pl.function(type=pl.FunctionType.AIC)
        def c1(self, x: pl.Tensor[[D, D], pl.FP32]):
            {extra}
        @pl.function(type=pl.FunctionType.AIC)
        def c2(self, x: pl.Tensor[[D, D], pl.FP32]):
            pass
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[D, D], pl.FP32], o: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
{textwrap.indent(src, " " * 12)}
            return o
        @pl.function(type=pl.FunctionType.AIC)
        def cr(self, x: pl.Tensor[[D, D], pl.FP32]) -> pl.Tensor[[D, D], pl.FP32]:
            return x
        @pl.function(type=pl.FunctionType.AIV)
        def v(self, y: pl.Tensor[[D, D], pl.FP32]):
            pass
    return P
''')
    return _load(tmp_path, path.read_text(), "cluster_mod")


@pytest.mark.parametrize(("body", "error", "message", "line"), [
    ("with pl.cluster(2):\n    o = self.k(x, o)",
     ParserSyntaxError, "pl.cluster() does not accept positional arguments", 18),
    ("with pl.cluster(core_num=2):\n    o = self.k(x, o)",
     ParserSyntaxError, "pl.cluster() got unexpected keyword argument 'core_num'", 18),
    ("with pl.cluster(name_hint=3):\n    o = self.k(x, o)",
     ParserSyntaxError, "pl.cluster() 'name_hint' argument must be a string literal", 18),
    ("with pl.cluster() as c:\n    o = self.k(x, o)",
     ParserSyntaxError, "`with pl.cluster(...) as ...:` is not supported", 18),
    ("with pl.cluster():\n    with pl.cluster():\n        o = self.k(x, o)",
     ParserSyntaxError, "pl.cluster cannot nest inside another pl.cluster", 19),
    ("with pl.cluster():\n    o = self.k(x, o)\n    with pl.spmd(2) as tid:\n"
     "        o = self.k(x, o)",
     ParserSyntaxError, "`with pl.spmd(...) as tid:` cannot capture a TaskId inside "
     "pl.cluster()", 20),
    ("with pl.cluster():\n    with pl.spmd(2, predicate=(x[0, 0] > 0)):\n"
     "        o = self.k(x, o)",
     ParserSyntaxError, "`pl.spmd(..., predicate=(...))` cannot be nested inside pl.cluster()",
     19),
    ("with pl.cluster():\n    with pl.spmd(2, allow_early_resolve=True):\n"
     "        o = self.k(x, o)",
     ParserSyntaxError, "`pl.spmd(..., allow_early_resolve=True)` cannot be nested inside "
     "pl.cluster()", 19),
    ("with pl.cluster():\n    o, t = pl.submit(self.k, x, o, deps=[None])",
     ParserSyntaxError, "`pl.submit(...)` inside pl.cluster() cannot carry per-task dispatch "
     "metadata (deps)", 19),
    ("with pl.cluster():\n    self.c1(x)\n    self.c2(x)",
     PlacementError, "pl.cluster() body calls two AIC kernels ('c1' and 'c2')", 18),
    ("with pl.cluster():\n    for i in pl.range(2):\n        self.c1(x)",
     PlacementError, "kernel 'c1' is called inside a loop or branch of the pl.cluster() body",
     20),
    ("with pl.cluster():\n    y = self.cr(x)\n    self.v(y)",
     PlacementError, "is returned by 'cr' and passed to 'v' in one pl.cluster()", 20),
])
def test_cluster_mistakes_are_reported_at_their_line(tmp_path, body, error, message, line):
    with pytest.raises(error) as ei:
        _parse(tmp_path, body)
    assert message in ei.value.message
    assert ei.value.line == line


def test_a_cluster_belongs_to_the_orchestration(tmp_path):
    with pytest.raises(InvalidOperationError) as ei:
        _parse(tmp_path, "self.c1(x)",
               kernel_body="with pl.cluster():\n                t = pl.load(x, [0, 0], [D, D])")
    assert "pl.cluster is not supported inside InCore function 'c1'" in ei.value.message
    assert ei.value.line == 12


def test_names_bound_in_a_cluster_are_visible_after_it(tmp_path):
    program = _parse(tmp_path, "with pl.cluster():\n    y = pl.create_tensor([D, D], "
                               "dtype=pl.FP32)\n    y = self.k(x, y)\no = self.k(y, o)")
    calls = [s.value.callee for s in program.functions["main"].body
             if isinstance(s, Assign) and isinstance(s.value, FuncCall)]
    assert calls == ["k", "k"]


@pl.program
class ClusteredRegion:
    """A `pl.at` region inside a cluster is outlined as without it."""

    @pl.function
    def main(self, x: pl.Tensor[[R, D], pl.FP32], y: pl.Out[pl.Tensor[[R, D], pl.FP32]]
             ) -> pl.Tensor[[R, D], pl.FP32]:
        with pl.cluster():
            with pl.at(level=pl.Level.CORE_GROUP):
                y = pl.assemble(y, pl.add(x, x), [0, 0])
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_cluster_around_a_region_outlines_it_as_before(platform):
    x = np.arange(R * D, dtype=np.float32).reshape(R, D)
    y = np.zeros_like(x)
    run = _run(ClusteredRegion, platform, x, y)
    np.testing.assert_array_equal(y, x + x)
    assert [t["kernel"] for t in run.tasks] == ["main_incore_0"]
