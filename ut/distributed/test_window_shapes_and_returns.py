"""A window bound to a parameter of another shape, and chip functions returning several
tensors to the host (docs/design/distributed.md §3, §2), against numpy references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.ir.errors import SimulationError

N = 32
NR = pl.dynamic("NR")


def _compile(program, ranks: int, platform: str):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


def _swap_program(window_elems: int):
    @pl.program
    class Swap:
        @pl.function(type=pl.FunctionType.InCore)
        def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                 sig: pld.DistributedTensor[[1, 1], pl.INT32],
                 peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, N], pl.FP32]:
            pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], w)
            pld.system.notify(target=sig, peer=peer, offsets=[0, 0], value=1,
                              op=pld.NotifyOp.AtomicAdd)
            pld.system.wait(signal=sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
            got = pld.tile.remote_load(w, peer=peer, offsets=[0, 0], shape=[1, N])
            return pl.store(got, [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                 sig: pld.DistributedTensor[[1, 1], pl.INT32],
                 peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, N], pl.FP32]:
            return self.step(x, y, w, sig, peer)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
                 y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
            buf = pld.alloc_window_buffer(window_elems * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
            for r in pl.range(2):
                w = pld.window(buf, [window_elems], dtype=pl.FP32)  # flat: 1-D
                sig = pld.window(sig_buf, [1], dtype=pl.INT32)
                self.chip(x[r], y[r], w, sig, 1 - r, device=r)
            return y

    return Swap


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_flat_window_binds_to_a_2d_parameter_of_as_many_elements(platform) -> None:
    x = torch.arange(2 * N, dtype=torch.float32).reshape(2, 1, N)
    y = torch.zeros(2, 1, N)
    _compile(_swap_program(N), 2, platform)(x, y)
    np.testing.assert_array_equal(y.numpy(), x.numpy()[::-1])


def test_a_window_of_another_element_count_is_still_refused() -> None:
    x = torch.zeros(2, 1, N)
    with pytest.raises(SimulationError, match="parameter 'w'"):
        _compile(_swap_program(N // 2), 2, "a2a3sim")(x, torch.zeros(2, 1, N))


@pl.program
class SumDiff:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[8, N], pl.FP32], b: pl.Tensor[[8, N], pl.FP32],
          s: pl.Out[pl.Tensor[[8, N], pl.FP32]], d: pl.Out[pl.Tensor[[8, N], pl.FP32]]
          ) -> tuple[pl.Tensor[[8, N], pl.FP32], pl.Tensor[[8, N], pl.FP32]]:
        ta = pl.load(a, [0, 0], [8, N])
        tb = pl.load(b, [0, 0], [8, N])
        d = pl.store(pl.sub(ta, tb), [0, 0], d)
        s = pl.store(pl.add(ta, tb), [0, 0], s)
        return s, d

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[8, N], pl.FP32], b: pl.Tensor[[8, N], pl.FP32],
             s: pl.Out[pl.Tensor[[8, N], pl.FP32]], d: pl.Out[pl.Tensor[[8, N], pl.FP32]]
             ) -> tuple[pl.Tensor[[8, N], pl.FP32], pl.Tensor[[8, N], pl.FP32]]:
        s, d = self.k(a, b, s, d)
        return s, d

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[8, N], pl.FP32], b: pl.Tensor[[8, N], pl.FP32],
             s: pl.Out[pl.Tensor[[8, N], pl.FP32]], d: pl.Out[pl.Tensor[[8, N], pl.FP32]]
             ) -> tuple[pl.Tensor[[8, N], pl.FP32], pl.Tensor[[8, N], pl.FP32]]:
        got_s, got_d = self.chip(a, b, s, d)
        assert got_s is s and got_d is d  # the host gets back the buffers it passed
        return got_s, got_d


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_chip_function_returning_two_tensors_unpacks_on_the_host(platform) -> None:
    a = torch.randn(8, N)
    b = torch.randn(8, N)
    s = torch.zeros(8, N)
    d = torch.zeros(8, N)
    _compile(SumDiff, 1, platform)(a, b, s, d)
    np.testing.assert_allclose(s.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), a.numpy() - b.numpy(), rtol=1e-6)
