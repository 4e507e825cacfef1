"""PyPTO's distributed runtime surface on simulated cards (docs/design/distributed.md §8):
several programs on one DistributedWorker, host tensors through make_tensor_arg,
device-less dispatches spread over the cards, and a hand-written level-3 orchestration
(simpler's Worker(level=3), TaskArgs, compile_and_assemble)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.compat.pypto.runtime import DistributedWorker
from pytest_pypto.compat.pypto.runtime.device_runner import compile_and_assemble
from pytest_pypto.compat.pypto.runtime.distributed_runner import _tensor_from_continuous
from pytest_pypto.compat.simpler import task_interface as ti
from pytest_pypto.compat.simpler.worker import Worker
from pytest_pypto.compat.simpler_setup import torch_interop

D = 16


def _chip_add(name: str, scale_b: int):
    """out = a + scale_b * b on one card, dispatched without device=."""

    @pl.program
    class Chip:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
              out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
            tb = pl.load(b, [0, 0], [D, D])
            for _ in pl.range(scale_b - 1):
                tb = pl.add(tb, pl.load(b, [0, 0], [D, D]))
            return pl.store(pl.add(pl.load(a, [0, 0], [D, D]), tb), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                 out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
            r = self.k(a, b, out)
            return r

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                 out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
            self.chip(a, b, out)

    Chip.__name__ = name
    return Chip


def _compile(program, devices=(0,), platform="a2a3sim"):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(devices)))


def test_two_programs_share_one_worker_and_its_resident_tensor() -> None:
    write = _compile(_chip_add("Write", 1))   # state = x + x... via b=x, a=x
    read = _compile(_chip_add("Read", 2))     # out = token + 2 * state
    x = torch.full((D, D), 3.0)
    out = torch.zeros(D, D)
    with DistributedWorker([write, read]) as rt:
        with pytest.raises(TypeError, match="ambiguous"):
            rt(x, x, out)
        state = rt.alloc_tensor((D, D), torch.float32)
        rt.run(write, x, x, state)  # state = 6 on card 0, kept by the worker
        for step in range(2):
            rt.run(read, torch.full((D, D), float(step)), state, out)
            np.testing.assert_array_equal(out.numpy(), np.full((D, D), step + 12.0))
        assert len(rt._owned_tensors) == 1
    assert rt._owned_tensors == []
    with pytest.raises(RuntimeError, match="called after close"):
        rt.run(read, x, x, out)


def test_extra_compiled_prepares_several_programs_and_rejects_strangers() -> None:
    a, b, c = (_compile(_chip_add(n, 1)) for n in ("A", "B", "C"))
    out = torch.zeros(D, D)
    with a.prepare(extra_compiled=[b]) as rt:
        rt.run(b, torch.ones(D, D), torch.ones(D, D), out)
        assert out[0, 0].item() == 2.0
        with pytest.raises(ValueError, match="registered when this worker was constructed"):
            rt.run(c, torch.ones(D, D), torch.ones(D, D), out)


def test_programs_on_other_cards_cannot_share_a_worker() -> None:
    a = _compile(_chip_add("A", 1), devices=(0,))
    b = _compile(_chip_add("B", 1), devices=(0, 1))
    with pytest.raises(ValueError, match=r"same device_ids: \[0\] != \[0, 1\]"):
        DistributedWorker([a, b])
    with pytest.raises(ValueError, match="at least one compiled program"):
        DistributedWorker([])


def test_every_host_tensor_of_a_dispatch_goes_through_make_tensor_arg(monkeypatch) -> None:
    compiled = _compile(_chip_add("Seen", 1))
    seen = []
    original = torch_interop.make_tensor_arg

    def record(worker, arg):
        seen.append(arg)
        return original(worker, arg)

    monkeypatch.setattr(torch_interop, "make_tensor_arg", record)
    a, b, out = torch.ones(D, D), torch.full((D, D), 2.0), torch.zeros(D, D)
    with compiled.prepare() as rt:
        w = rt.alloc_tensor((D, D), torch.float32, init=b)
        rt(a, w, out)
    assert [t is a or t is out for t in seen] == [True, True]  # the resident w is not
    assert out[1, 1].item() == 3.0


@pl.program
class TwoDeviceless:
    """Two device-less dispatches: each goes to the next card in turn."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[D, D], pl.FP32],
          out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        return pl.store(pl.load(a, [0, 0], [D, D]), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.k(a, out)
        return r

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[D, D], pl.FP32], w0: pl.Tensor[[D, D], pl.FP32],
             w1: pl.Tensor[[D, D], pl.FP32]):
        self.chip(a, w0)
        self.chip(a, w1)


def test_device_less_dispatches_go_round_robin_over_the_cards() -> None:
    compiled = _compile(TwoDeviceless, devices=(0, 1))
    with compiled.prepare() as rt:
        on0 = rt.alloc_tensor((D, D), torch.float32, worker_id=0)
        on1 = rt.alloc_tensor((D, D), torch.float32, worker_id=1)
        rt(torch.ones(D, D), on0, on1)  # first dispatch on card 0, second on card 1
        assert on0[0, 0].item() == 1.0 and on1[0, 0].item() == 1.0
        from pytest_pypto.ir.errors import SimulationError

        with pytest.raises(SimulationError, match="resident on card 1"):
            rt(torch.ones(D, D), on1, on0)


@pl.program
class L2Add:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
          out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [D, D]), pl.load(b, [0, 0], [D, D])),
                        [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.k(a, b, out)
        return r


def test_a_hand_written_level3_orchestration_runs_chip_then_sub_task(tmp_path) -> None:
    ir.compile(L2Add, output_dir=str(tmp_path / "l2"), platform="a2a3sim")
    chip, runtime, config = compile_and_assemble(tmp_path / "l2", platform="a2a3sim")
    assert runtime == "tensormap_and_ringbuffer" and config == {}
    a, b, out = torch.full((D, D), 2.0), torch.full((D, D), 5.0), torch.zeros(D, D)
    seen = []
    w = Worker(level=3, device_ids=[0, 1], num_sub_workers=1, platform="a2a3sim",
               runtime=runtime)
    chip_id = w.register(chip)
    check_id = w.register(lambda args: seen.append(_tensor_from_continuous(args[0]).clone()))
    w.init()
    with pytest.raises(RuntimeError, match="before init"):
        w.register(chip)

    def orch(o, _args, _cfg):
        ta = ti.TaskArgs()
        ta.add_tensor(torch_interop.make_tensor_arg(w, a), ti.TensorArgType.INPUT)
        ta.add_tensor(torch_interop.make_tensor_arg(w, b), ti.TensorArgType.INPUT)
        ta.add_tensor(torch_interop.make_tensor_arg(w, out), ti.TensorArgType.OUTPUT_EXISTING)
        o.submit_next_level(chip_id, ta, ti.CallConfig(), worker=1)
        sub = ti.TaskArgs()
        sub.add_tensor(torch_interop.make_tensor_arg(w, out))
        o.submit_sub(check_id, sub)

    w.run(orch)
    w.close()
    np.testing.assert_array_equal(out.numpy(), np.full((D, D), 7.0))
    assert len(seen) == 1 and seen[0][0, 0].item() == 7.0  # the sub task ran after the chip


def test_level3_refusals(tmp_path) -> None:
    ir.compile(L2Add, output_dir=str(tmp_path / "l2"), platform="a2a3sim")
    chip, _, _ = compile_and_assemble(tmp_path / "l2", platform="a2a3sim")
    w = Worker(level=3, device_ids=[0], num_sub_workers=0, platform="a2a3sim")
    cid = w.register(chip)
    fn = w.register(lambda args: None)
    w.init()
    ta = ti.TaskArgs()
    ta.add_scalar(3)
    with pytest.raises(ValueError, match="before the first scalar"):
        ta.add_tensor(torch_interop.make_tensor_arg(torch.ones(2)))
    with pytest.raises(TypeError, match="takes a Tensor"):
        ti.TaskArgs().add_tensor(torch.ones(2))
    with pytest.raises(ValueError, match=r"worker= naming a chip, 0..0, got 1"):
        w.run(lambda o, a, c: o.submit_next_level(cid, ti.TaskArgs(), None, worker=1))
    with pytest.raises(ValueError, match="no sub-workers"):
        w.run(lambda o, a, c: o.submit_sub(fn, ti.TaskArgs()))
    with pytest.raises(TypeError, match="is a chip callable"):
        w.run(lambda o, a, c: o.submit_sub(cid, ti.TaskArgs()))
    with pytest.raises(FileNotFoundError, match="no compiled chip program"):
        compile_and_assemble(tmp_path / "nothing", platform="a2a3sim")
    t = torch_interop.make_tensor_arg(torch.zeros(3, 4, dtype=torch.float16))
    assert t.dtype is ti.DataType.FLOAT16 and t.shapes == (3, 4) and t.strides == (4, 1)
    with pytest.raises(TypeError, match="takes a torch.Tensor"):
        torch_interop.make_tensor_arg(None, np.zeros(3))
