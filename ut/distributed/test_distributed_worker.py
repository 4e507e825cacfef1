"""PyPTO's DistributedWorker on simulated cards (docs/design/distributed.md §8): what
prepare() returns, stacked tensors resident per card, their placement rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.compat.pypto.runtime import DistributedWorker, StackedDeviceTensor
from pytest_pypto.ir.errors import SimulationError
from ut.distributed import programs as p

D = 16


def _program(cards: list[int]):
    """Shard i of a [2, D, D] stack is added to a[i] on card ``cards[i]``."""

    @pl.program
    class AddShard:
        @pl.function(type=pl.FunctionType.InCore)
        def add(self, a: pl.Tensor[[D, D], pl.FP32], w: pl.Tensor[[D, D], pl.FP32],
                f: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
            return pl.store(pl.add(pl.load(a, [0, 0], [D, D]), pl.load(w, [0, 0], [D, D])),
                            [0, 0], f)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, a: pl.Tensor[[D, D], pl.FP32], w: pl.Tensor[[D, D], pl.FP32],
                 f: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
            return self.add(a, w, f)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, a: pl.Tensor[[2, D, D], pl.FP32], w: pl.Tensor[[2, D, D], pl.FP32],
                 f: pl.Out[pl.Tensor[[2, D, D], pl.FP32]]):
            for i in range(pld.world_size()):
                self.chip(a[i], w[i], f[i], device=cards[i])

    return ir.compile(AddShard, platform="a2a3sim",
                      distributed_config=DistributedConfig(device_ids=[0, 1]))


@pytest.mark.parametrize("cards", [[0, 1], [1, 0]])
def test_a_stack_uploaded_once_stays_resident_on_its_cards(cards) -> None:
    compiled = _program(cards)
    a = torch.ones(2, D, D)
    f = torch.zeros(2, D, D)
    w = torch.stack([torch.full((D, D), 10.0), torch.full((D, D), 20.0)])
    with compiled.prepare() as rt:
        assert isinstance(rt, DistributedWorker)
        stack = rt.alloc_stacked_tensor(w, worker_ids=cards)
        assert isinstance(stack, StackedDeviceTensor) and stack.worker_ids == tuple(cards)
        w.zero_()  # the cards hold their own copies: the source no longer matters
        for value in (2.0, 7.0):
            a.fill_(value)
            rt(a, stack, f)
            np.testing.assert_array_equal(f[0].numpy(), np.full((D, D), value + 10.0))
            np.testing.assert_array_equal(f[1].numpy(), np.full((D, D), value + 20.0))
        back = torch.zeros(2, D, D)
        rt.copy_stacked_from(stack, back)
        assert back[0, 0, 0].item() == 10.0 and back[1, 0, 0].item() == 20.0
        rt.free_stacked_tensor(stack)
        with pytest.raises(ValueError, match="not a live stacked tensor"):
            rt.copy_stacked_from(stack, back)


def test_a_shard_read_on_another_card_is_an_error() -> None:
    compiled = _program([1, 0])  # shard 0 is consumed on card 1
    with compiled.prepare() as rt:
        stack = rt.alloc_stacked_tensor(torch.zeros(2, D, D))  # shard 0 on card 0
        with pytest.raises(SimulationError, match="argument 2 is resident on card 0"):
            rt(torch.zeros(2, D, D), stack, torch.zeros(2, D, D))


def test_worker_ids_must_name_cards_of_the_program() -> None:
    with _program([0, 1]).prepare() as rt, pytest.raises(ValueError, match="worker id 5"):
        rt.alloc_stacked_tensor(torch.zeros(2, D, D), worker_ids=[0, 5])


@pytest.mark.parametrize(("persistent", "grows"), [(True, 1), (False, 3)])
def test_comm_domain_allocations_are_counted(persistent, grows) -> None:
    compiled = ir.compile(p.ALLREDUCE_SUM, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    x = torch.ones(2, 1, p.N)
    with compiled.prepare(persistent=persistent) as rt:
        before = rt._w._next_alloc_id
        for _ in range(3):
            y = torch.zeros(2, 1, p.N)
            rt(x, y)
            np.testing.assert_array_equal(y.numpy(), np.full((2, 1, p.N), 2.0))
        assert rt._w._next_alloc_id == before + grows


def test_owned_tensors_registration_and_close() -> None:
    compiled = _program([0, 1])
    other = _program([0, 1])
    rt = compiled.prepare()
    w0 = rt.alloc_tensor((D, D), torch.float32, init=torch.full((D, D), 3.0))
    w1 = rt.alloc_tensor((D, D), torch.float32, init=torch.full((D, D), 4.0), worker_id=1)
    assert len(rt._owned_tensors) == 2
    handle = rt.register(compiled)
    assert handle.compiled is compiled
    a = torch.ones(2, D, D)
    f = torch.zeros(2, D, D)
    handle(a, [w0, w1], f)
    np.testing.assert_array_equal(f.numpy()[:, 0, 0], [4.0, 5.0])
    f.zero_()
    rt.run(compiled, a, [w0, w1], f)
    np.testing.assert_array_equal(f.numpy()[:, 0, 0], [4.0, 5.0])
    with pytest.raises(SimulationError, match="argument 2 is resident on card 1"):
        rt(a, [w1, w0], f)  # w1 lives on card 1, the call reads it on card 0
    with pytest.raises(ValueError, match="registered when this worker was constructed"):
        rt.register(other)
    rt.close()
    assert rt._owned_tensors == [] and handle.closed
    with pytest.raises(RuntimeError, match="called after close"):
        rt.register(compiled)
