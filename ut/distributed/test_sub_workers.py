"""Host SubWorkers of a multi-chip program (docs/design/distributed.md §8): a Python
task of the host orchestrator, run after the chip work it reads, bound by callbacks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.compat.pypto.runtime.distributed_runner import _tensor_from_continuous
from pytest_pypto.ir.errors import ParserSyntaxError, SimulationError
from ut.helpers import line_of

D = 16
SEEN: list[float] = []  # a module name a SubWorker body must not see


@pl.program
class ScaleThenCheck:
    """chip: s = 3 * x; SubWorker: total = s + x (on the host, after the chip)."""

    @pl.function(type=pl.FunctionType.InCore)
    def triple(self, x: pl.Tensor[[D, D], pl.FP32],
               s: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        t = pl.load(x, [0, 0], [D, D])
        return pl.store(pl.add(pl.add(t, t), t), [0, 0], s)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[D, D], pl.FP32],
             s: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.triple(x, s)
        return out

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def combine(s: pl.Tensor[[D, D], pl.FP32], x: pl.Tensor[[D, D], pl.FP32],
                total: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        total[:] = torch.add(s, x)
        return total

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[D, D], pl.FP32],
             total: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        s: pl.Tensor[[D, D], pl.FP32] = pl.create_tensor([D, D], dtype=pl.FP32)
        s2 = self.chip(x, s)
        out = self.combine(s2, x, total)
        return out


def _compile(program, devices=(0,)):
    return ir.compile(program, platform="a2a3sim",
                      distributed_config=DistributedConfig(device_ids=list(devices),
                                                           num_sub_workers=1))


def test_a_sub_worker_runs_after_the_chip_and_writes_its_out_argument() -> None:
    x = torch.arange(D * D, dtype=torch.float32).reshape(D, D)
    total = torch.zeros(D, D)
    _compile(ScaleThenCheck)(x, total)
    np.testing.assert_array_equal(total.numpy(), 4 * x.numpy())


def test_a_return_style_call_allocates_the_out_tensor() -> None:
    x = torch.full((D, D), 2.0)
    total = _compile(ScaleThenCheck)(x)
    assert isinstance(total, torch.Tensor) and total.shape == (D, D)
    np.testing.assert_array_equal(total.numpy(), np.full((D, D), 8.0))


def test_a_callback_replaces_the_body_and_sees_the_arguments_memory() -> None:
    compiled = _compile(ScaleThenCheck)
    calls = []

    def mine(args):
        s, x, total = (_tensor_from_continuous(a) for a in args)
        calls.append(float(s[0, 0]))
        total.fill_(-1.0)

    x = torch.full((D, D), 5.0)
    total = torch.zeros(D, D)
    with compiled.prepare(callbacks={"combine": mine}) as rt:
        rt(x, total)
    assert calls == [15.0]  # the chip's result was there when the task ran
    assert total[3, 4].item() == -1.0  # the write landed in the caller's tensor


def test_sub_worker_overrides_is_a_deprecated_alias_of_callbacks() -> None:
    compiled = _compile(ScaleThenCheck)
    seen = []
    with pytest.warns(DeprecationWarning, match="callbacks"):
        rt = compiled.prepare(sub_worker_overrides={"combine": lambda args: seen.append(1)})
    with rt:
        rt(torch.ones(D, D), torch.zeros(D, D))
    assert seen == [1]


def test_a_callback_naming_no_sub_worker_is_refused_at_prepare() -> None:
    with pytest.raises(ValueError, match=r"\['nope'\] are not sub-workers.*\['combine'\]"):
        _compile(ScaleThenCheck).prepare(callbacks={"nope": lambda args: None})


def test_a_callback_must_take_one_argument() -> None:
    with pytest.raises(TypeError, match="must take one positional argument"):
        _compile(ScaleThenCheck).prepare(callbacks={"combine": lambda: None})


@pl.program
class Abstract:
    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[D, D], pl.FP32],
             y: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[D, D], pl.FP32],
             y: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.copy(x, y)
        return out

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def sample(y: pl.Tensor[[D, D], pl.FP32]):
        """Bound at run time."""
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[D, D], pl.FP32], y: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        self.chip(x, y)
        self.sample(y)


def test_an_abstract_sub_worker_must_be_bound() -> None:
    compiled = _compile(Abstract)
    with pytest.raises(ValueError, match=r"\['sample'\] have no body"):
        compiled.prepare()
    with pytest.raises(ValueError, match=r"\['sample'\] have no body"):
        compiled(torch.ones(D, D), torch.zeros(D, D))  # a one-shot call binds nothing
    got = []
    with compiled.prepare(callbacks={"sample": lambda a: got.append(
            _tensor_from_continuous(a[0]).sum().item())}) as rt:
        rt(torch.ones(D, D), torch.zeros(D, D))
    assert got == [float(D * D)]


@pl.program
class SeesModule:
    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[D, D], pl.FP32],
             y: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[D, D], pl.FP32],
             y: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.copy(x, y)
        return out

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def record(y: pl.Tensor[[D, D], pl.FP32]):
        SEEN.append(float(y[0, 0]))

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[D, D], pl.FP32], y: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        self.chip(x, y)
        self.record(y)


def test_a_sub_worker_body_sees_only_torch_and_its_arguments() -> None:
    with pytest.raises(SimulationError, match="'record': name 'SEEN' is not defined"):
        _compile(SeesModule)(torch.ones(D, D), torch.zeros(D, D))
    assert SEEN == []


def test_a_sub_worker_declaring_self_is_a_parse_error() -> None:
    with pytest.raises(ParserSyntaxError, match="must not declare 'self'") as info:

        @pl.program
        class WithSelf:
            @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
            def task(self, y: pl.Tensor[[D, D], pl.FP32]):  # self-task
                pass

            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, y: pl.Tensor[[D, D], pl.FP32]):
                self.task(y)

    assert f":{line_of(Path(__file__), 'self-task')}" in str(info.value)
