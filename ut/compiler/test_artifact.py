"""The artifact: layout, determinism, pass dumps, manifest, generated code semantics."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from irb import Fn, T, const, orchestrate, program
from kernels import OUT, axpy, matmul

import pytest_pypto
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import PASSES, compile
from pytest_pypto.compiler.codegen import PREAMBLE_HELPERS, Emitter
from pytest_pypto.compiler.listing import render_program
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.artifact import read_manifest
from pytest_pypto.ir.dtypes import FP32, INDEX  # noqa: F401
from pytest_pypto.ir.types import ScalarType


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_program_and_arch_give_byte_identical_artifacts(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    compile(axpy(), RunConfig(platform="a2a3sim"), output_dir=a)
    compile(axpy(), RunConfig(platform="a2a3sim"), output_dir=b)
    fa, fb = _files(a), _files(b)
    assert set(fa) == {
        "kernel_config.json", "kernels/axpy.py", "kernels/axpy.txt",
        "orchestration.py", "orchestration.txt", "debug/run.py",
    }
    assert fa == fb


def test_dump_passes_writes_one_file_per_pass(tmp_path):
    compile(axpy(), RunConfig(platform="a5sim", dump_passes=True), output_dir=tmp_path)
    dumped = sorted(p.name for p in (tmp_path / "passes").iterdir())
    assert dumped == [f"{i:02d}_{p.name}.txt" for i, p in enumerate(PASSES, start=1)]
    assert "tile.load" in (tmp_path / "passes" / dumped[-1]).read_text()


def test_compile_never_mutates_the_users_program(tmp_path):
    prog = matmul(32, 32, 32)
    before = render_program(prog)
    snapshot = copy.deepcopy(prog)
    compile(prog, RunConfig(platform="a2a3sim"), output_dir=tmp_path)
    assert render_program(prog) == before
    assert len(prog.functions["mm"].body) == len(snapshot.functions["mm"].body)  # no moves added


@pytest.mark.parametrize("platform,sim_backend", [("a2a3sim", "numpy-functional"), ("a5", None)])
def test_manifest_records_platform_mode_and_backend(platform, sim_backend, tmp_path):
    compiled = compile(matmul(32, 32, 32), RunConfig(platform=platform), output_dir=tmp_path)
    m = read_manifest(tmp_path)
    assert compiled.manifest == m
    assert (m.platform, m.sim_backend, m.toolchain_version) == (platform, sim_backend, pytest_pypto.__version__)
    assert m.arch == platform.removesuffix("sim")
    assert m.mode == ("sim" if platform.endswith("sim") else "onboard")
    assert m.entry == "main" and m.entry_returns == [2]
    k = m.kernel("mm")
    assert (k.func_id, k.core_type, k.returns) == (0, "aic", [2])
    assert [(a.name, a.direction) for a in k.args] == [("a", "In"), ("b", "In"), ("c", "Out")]
    header = f"platform: {platform}, sim_backend: {sim_backend or 'null'}"
    assert header in (tmp_path / "kernels" / "mm.txt").read_text().splitlines()[0]
    assert header in (tmp_path / "orchestration.txt").read_text().splitlines()[0]
    assert json.loads((tmp_path / "kernel_config.json").read_text())["sim_backend"] == sim_backend


def test_orchestration_listing_has_one_line_per_task(tmp_path):
    compile(axpy(), RunConfig(platform="a2a3sim"), output_dir=tmp_path)
    tasks = [ln for ln in (tmp_path / "orchestration.txt").read_text().splitlines() if ln.strip().startswith("task ")]
    assert tasks == ["  task axpy func_id=0 core=aiv args=(x:In, y:In, alpha:Scalar, out:Out) line 91"]


def test_kernel_listing_has_memory_map_and_cast_chain(tmp_path):
    compile(axpy(), RunConfig(platform="a2a3sim"), output_dir=tmp_path)
    text = (tmp_path / "kernels" / "axpy.txt").read_text()
    assert "core type: aiv" in text
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("xh "))
    assert "Vec" in row and "4096 B" in row and "line 12" in row  # 32*64 FP16
    assert "line 13: xf FP16 -> FP32" in text


def test_generated_kernel_binds_each_op_once(tmp_path):
    compile(axpy(m=256, tm=32), RunConfig(platform="a2a3sim"), output_dir=tmp_path)
    source = (tmp_path / "kernels" / "axpy.py").read_text()
    namespace: dict = {}
    exec(compile_source(source), namespace)
    bound = []
    namespace["make"](lambda op: bound.append(op) or (lambda *a, **k: None))
    assert sorted(bound) == sorted(set(bound))
    assert set(bound) == {"tile.load", "tile.cast", "tile.muls", "tile.add", "tile.store"}
    assert "for r in range(0, 256, 32):" in source


def compile_source(source: str):
    import builtins

    return builtins.compile(source, "<kernel>", "exec")


# ------------------------------------------------------------------ scalar semantics


def _helpers():
    namespace: dict = {}
    exec(PREAMBLE_HELPERS, namespace)
    return namespace


@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000).filter(bool))
def test_int_division_truncates_toward_zero(a, b):
    h = _helpers()
    assert h["_idiv"](a, b) == math.trunc(a / b)
    assert h["_div"](a, b) == math.trunc(a / b)
    assert h["_div"](float(a), b) == a / b


def _binop(op, a, b, dtype):
    return n.BinOp(op, a, b, type=ScalarType(dtype))


@pytest.mark.parametrize(
    "op,a,b,dtype,expected",
    [
        ("/", -7, 2, INDEX, -3),
        ("//", -7, 2, INDEX, -4),
        ("%", -7, 2, INDEX, 1),
        ("/", 7.0, 2.0, FP32, 3.5),
        ("max", 3, 9, INDEX, 9),
        ("<<", 3, 2, INDEX, 12),
    ],
)
def test_emitted_scalar_arithmetic_has_dsl_semantics(op, a, b, dtype, expected):
    e = Emitter()
    code = e.expr(_binop(op, const(a), const(b), dtype))
    assert eval(code, _helpers()) == expected


def test_kernel_with_scalar_offsets_runs(tmp_path):
    # offsets computed from the loop variable: row (3 - i) * 16 reverses the row blocks
    import numpy as np

    from pytest_pypto import run

    k = Fn("sc", "InCore", 10, x=T(64, 16), y=(T(64, 16), OUT))
    with k.loop("i", 0, 4, 1, 11, carry=(("o", "y"),), results=("y2",)):
        k.alias("row", ScalarType(INDEX))
        k.stack[-1].append(n.Assign(
            (n.Var("row", type=ScalarType(INDEX)),),
            _binop("*", _binop("-", const(3), k.v("i"), INDEX), const(16), INDEX),
        ))
        k.let("t", "tile.load", 12, "x", ["row", 0], [16, 16])
        k.let("o2", "tile.store", 13, "t", [_binop("*", k.v("i"), const(16), INDEX), 0], "o")
        k.yield_("o2", line=13)
    k.ret("y2", line=14)
    cfg = RunConfig(platform="a2a3sim")
    compiled = compile(program(k, orchestrate(k)), cfg, output_dir=tmp_path)
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    y = np.zeros_like(x)
    run(compiled, x, y, config=cfg)
    expected = np.concatenate([x[48:64], x[32:48], x[16:32], x[0:16]])
    np.testing.assert_array_equal(y, expected)


def test_compile_rejects_a_non_program_with_a_type_error():
    import pytest

    from pytest_pypto.compiler.api import compile as compile_program

    with pytest.raises(TypeError, match=r"@pl\.program, got NoneType"):
        compile_program(None)


def test_an_entry_returning_a_kernel_result_returns_the_buffer_it_passed():
    """`out = self.k(x, out); return out` returns the entry's own `out` (position 1)."""
    import numpy as np

    import pytest_pypto
    import pytest_pypto.language as pl
    from pytest_pypto import RunConfig

    @pl.program
    class Twice:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 32])
            out = pl.store(pl.add(t, t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            out = self.k(x, out)
            return out

    cfg = RunConfig(platform="a5sim")
    compiled = pytest_pypto.compile(Twice, cfg)
    assert compiled.manifest.entry_returns == [1]
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.zeros_like(x)
    result = pytest_pypto.run(compiled, x, out, config=cfg)
    np.testing.assert_array_equal(result.returns[0], x + x)
