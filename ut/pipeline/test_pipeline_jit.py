# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`@pl.jit` kernels and `CompiledProgram` calls end to end on both sims (docs/design/language.md
§6).

A call specialises per argument shapes/dtypes (and platform), compiles once per
specialisation (``kernel._cache``), runs in place with torch or numpy arguments and
writes Out/InOut results back into the caller's tensors; the cached `CompiledProgram`
is callable in place or return style.  References are numpy, written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import CompiledProgram

PLATFORMS = ("a2a3sim", "a5sim")
M = pl.dynamic("M")


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        R, C = a.shape
        ta = pl.load(a, [0, 0], [R, C])
        tb = pl.load(b, [0, 0], [R, C])
        pl.store(pl.add(ta, tb), [0, 0], c)
    return c


@pl.jit.incore
def axpb(a: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [32, 32])
    pl.store(pl.add(pl.mul(t, s), 1.0), [0, 0], out)
    return out


@pl.jit.incore
def mul_k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [32, 32])
    tb = pl.load(b, [0, 0], [32, 32])
    pl.store(pl.mul(ta, tb), [0, 0], out)
    return out


@pl.jit
def dag(a: pl.Tensor, f: pl.Out[pl.Tensor]):
    """f = (2a + 1) * (3a + 1): four tasks, two intermediates."""
    d = pl.create_tensor([32, 32], dtype=pl.FP32)
    d = axpb(a, 2.0, d)
    e = pl.create_tensor([32, 32], dtype=pl.FP32)
    e = axpb(a, 3.0, e)
    f = mul_k(d, e, f)
    return f


@pl.jit.incore
def rows_abs(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for r in pl.range(0, x.shape[0], 16):
        t = pl.load(x, [r, 0], [16, 32], valid_shape=[pl.min(16, x.shape[0] - r), 32])
        out = pl.store(pl.abs(t), [r, 0], out)
    return out


@pl.jit
def dyn_abs(x: pl.Tensor[[M, 32], pl.FP32], out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
    out = rows_abs(x, out)
    return out


@pl.jit.inline
def plus(t, v):
    return pl.add(t, v)


@pl.jit.opaque
def accumulate(a: pl.Tensor, acc: pl.InOut[pl.Tensor], times):
    for i in pl.range(times):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [16, 16])
            tc = pl.load(acc, [0, 0], [16, 16])
            pl.store(plus(tc, ta), [0, 0], acc)
    return acc


@pl.jit
def acc_entry(a: pl.Tensor, acc: pl.InOut[pl.Tensor], times: pl.Scalar[pl.INDEX]):
    acc = accumulate(a, acc, times)
    return acc


@pl.jit
def atomic_into(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out, atomic=pl.AtomicType.Add)
    return out


@pytest.fixture(autouse=True)
def _fresh_caches():
    for k in (add_kernel, dag, dyn_abs, acc_entry, atomic_into):
        k._cache.clear()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_numpy_and_torch_arguments_run_in_place(platform):
    cfg = RunConfig(platform=platform)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((32, 64)).astype(np.float32)
    a_before = a.copy()
    c = np.zeros_like(a)
    assert add_kernel(a, b, c, config=cfg) is None  # in place, as PyPTO's calls
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    assert np.array_equal(a, a_before)  # inputs untouched

    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    tc = torch.zeros(32, 64)
    add_kernel(ta, tb, tc, config=cfg)
    assert torch.allclose(tc, ta + tb)
    assert len(add_kernel._cache) == 1  # same shapes, dtypes and platform: one entry


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cache_hits_and_misses_per_specialisation(platform):
    cfg = RunConfig(platform=platform)

    def call(shape, dtype=np.float32, config=cfg):
        a = np.full(shape, 1.5, dtype)
        c = np.zeros(shape, dtype)
        add_kernel(a, a, c, config=config)
        assert np.all(c == dtype(3.0))

    call((16, 16))
    (compiled,) = add_kernel._cache.values()
    assert isinstance(compiled, CompiledProgram) and compiled.platform == platform
    call((16, 16))  # hit: the same CompiledProgram
    assert list(add_kernel._cache.values()) == [compiled]
    call((16, 32))  # another shape: a miss
    call((16, 16), np.float16)  # another dtype: a miss
    assert len(add_kernel._cache) == 3
    other = "a5sim" if platform == "a2a3sim" else "a2a3sim"
    call((16, 16), config=RunConfig(platform=other))  # the platform is in the key
    assert len(add_kernel._cache) == 4
    keys = list(add_kernel._cache)
    assert [k[1] for k in keys] == [platform] * 3 + [other]
    assert [t.shape for t in keys[1][3]] == [(16, 32)] * 3
    assert add_kernel.compile(np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32),
                              np.zeros((16, 16), np.float32), config=cfg) is compiled


@pytest.mark.parametrize("platform", PLATFORMS)
def test_incore_dependencies_and_scalars(platform):
    a = np.random.default_rng(2).standard_normal((32, 32)).astype(np.float32)
    f = np.zeros_like(a)
    dag(a, f, config=RunConfig(platform=platform))
    one = np.float32(1)
    want = (a * np.float32(2) + one) * (a * np.float32(3) + one)  # fp32, rounded per op
    np.testing.assert_array_equal(f, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_artifact_serves_every_size_of_a_dynamic_dim(platform):
    cfg = RunConfig(platform=platform)
    for rows in (48, 20):
        x = np.random.default_rng(rows).standard_normal((rows, 32)).astype(np.float32)
        out = np.zeros_like(x)
        dyn_abs(x, out, config=cfg)
        assert np.array_equal(out, np.abs(x))
    assert len(dyn_abs._cache) == 1
    (key,) = dyn_abs._cache
    assert [t.shape for t in key[3]] == [(None, 32), (None, 32)]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_opaque_and_inline_dependencies_with_a_scalar_loop_count(platform):
    a = torch.full((16, 16), 0.5)
    acc = torch.full((16, 16), 1.0)
    acc_entry(a, acc, 3, config=RunConfig(platform=platform))
    assert torch.equal(acc, torch.full((16, 16), 2.5))  # InOut: 1 + 3 * 0.5
    acc_entry(a, acc, 2, config=RunConfig(platform=platform))
    assert torch.equal(acc, torch.full((16, 16), 3.5))
    assert [k[4] for k in acc_entry._cache] == [(("times", 3),), (("times", 2),)]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_out_tensors_start_as_the_callers_data(platform):
    x = np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32)
    out = np.full((16, 16), 1.0, np.float32)
    atomic_into(x, out, config=RunConfig(platform=platform))
    np.testing.assert_allclose(out, 1.0 + x, rtol=1e-6)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compiled_program_calls_in_place_and_return_style(platform):
    cfg = RunConfig(platform=platform)
    a = torch.full((16, 16), 2.0)
    b = torch.full((16, 16), 3.0)
    add_kernel(a, b, torch.zeros(16, 16), config=cfg)
    (compiled,) = add_kernel._cache.values()
    assert compiled.param_names == ["a", "b", "c"]
    assert compiled.output_indices == [2] and compiled.has_return
    assert compiled.output_dir == compiled.artifact_dir()

    c = compiled(a, b, config=cfg)  # return style: c allocated (torch, as the inputs)
    assert isinstance(c, torch.Tensor) and c.shape == (16, 16) and torch.all(c == 5.0)
    c_np = compiled(a.numpy(), b.numpy())  # no config: the artifact's platform
    assert isinstance(c_np, np.ndarray) and np.all(c_np == 5.0)
    inplace = np.zeros((16, 16), np.float32)
    assert compiled(a.numpy(), b.numpy(), inplace, config=cfg) is None
    assert np.all(inplace == 5.0)


def test_compiled_program_argument_errors():
    cfg = RunConfig(platform="a5sim")
    z = np.zeros((16, 16), np.float32)
    add_kernel(z, z, z.copy(), config=cfg)
    (compiled,) = add_kernel._cache.values()
    with pytest.raises(TypeError) as info:
        compiled(z, config=cfg)
    assert str(info.value) == (
        "'add_kernel' expects 3 (in-place) or 2 (return) arguments, got 1. "
        "Parameters: ['a', 'b', 'c']"
    )
    with pytest.raises(TypeError, match="Parameter 'b' of 'add_kernel' is a tensor; got float"):
        compiled(z, 1.0, z, config=cfg)
    with pytest.raises(TypeError, match="config= must be a RunConfig, but got str"):
        add_kernel(z, z, z, config="a5sim")


def test_codegen_only_compiles_without_running():
    z = np.zeros((16, 16), np.float32)
    c = np.full((16, 16), 7.0, np.float32)
    add_kernel(z + 1, z + 1, c, config=RunConfig(platform="a5sim", codegen_only=True))
    assert len(add_kernel._cache) == 1 and np.all(c == 7.0)


@pl.inline
def halve(t):
    return pl.mul(t, 0.5)


@pl.program
class Spliced:
    """InCore -> InCore, an Inline helper and an Opaque loop, all spliced at parse time."""

    @pl.function(type=pl.FunctionType.InCore)
    def exp_k(self, a: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = pl.store(halve(pl.exp(pl.load(a, [0, 0], [16, 16]))), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def outer(self, a: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.exp_k(a, out)
        return out

    @pl.function(type=pl.FunctionType.Opaque)
    def chain(self, a: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.outer(a, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.chain(a, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_spliced_calls_run_on_both_sims(platform):
    import pytest_pypto

    a = np.random.default_rng(4).standard_normal((16, 16)).astype(np.float32)
    out = np.zeros_like(a)
    run = pytest_pypto.run(Spliced, a, out, config=RunConfig(platform=platform))
    np.testing.assert_allclose(out, np.exp(a.astype(np.float64)) * 0.5, rtol=2e-6)
    assert [t["kernel"] for t in run.tasks] == ["outer"]  # one task: the spliced chain
