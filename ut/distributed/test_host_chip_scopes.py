"""Chip scopes written inline in a host orchestrator (docs/design/distributed.md §2):
each ``with pl.at(level=pl.Level.CHIP)`` becomes a chip orchestration dispatched in
its place, round-robin over the ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.ir.errors import ParserTypeError
from ut.helpers import line_of

M = 32
T = pl.Tensor[[M, M], pl.FP32]


@pl.program
class TwoScopes:
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[M, M], pl.FP32], b: pl.Tensor[[M, M], pl.FP32],
             prod: pl.Out[pl.Tensor[[M, M], pl.FP32]],
             res: pl.Out[pl.Tensor[[M, M], pl.FP32]]) -> pl.Tensor[[M, M], pl.FP32]:
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.mul(a, b)
                p = pl.assemble(prod, t, [0, 0])
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.sub(p, a)
                pl.assemble(res, t, [0, 0])
        return p


def _compile(program, devices):
    return ir.compile(program, platform="a2a3sim",
                      distributed_config=DistributedConfig(device_ids=list(devices)))


def test_each_chip_scope_is_a_dispatch_of_its_own_round_robin() -> None:
    compiled = _compile(TwoScopes, [0, 1])
    assert {"host_chip_orch_0", "host_chip_orch_1"} <= set(compiled.program.functions)
    a = torch.full((M, M), 3.0)
    b = torch.arange(M * M, dtype=torch.float32).reshape(M, M)
    prod, res = torch.zeros(M, M), torch.zeros(M, M)
    compiled(a, b, prod, res)
    np.testing.assert_array_equal(prod.numpy(), 3.0 * b.numpy())
    np.testing.assert_array_equal(res.numpy(), 3.0 * b.numpy() - 3.0)  # scope 2 read p
    assert sorted(rank for rank, *_ in compiled.last_run.timings) == [0, 1]


@pl.program
class LocalBetween:
    """A host local written by one scope (InOut) and read by the next."""

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[M, M], pl.FP32], out: pl.Out[pl.Tensor[[M, M], pl.FP32]]):
        mid: pl.Tensor[[M, M], pl.FP32] = pl.create_tensor([M, M], dtype=pl.FP32)
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.assemble(mid, pl.add(a, a), [0, 0])
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.assemble(out, pl.add(mid, a), [0, 0])


def test_a_host_tensor_flows_from_one_scope_to_the_next_on_one_rank() -> None:
    out = torch.zeros(M, M)
    _compile(LocalBetween, [0])(torch.full((M, M), 2.0), out)
    np.testing.assert_array_equal(out.numpy(), np.full((M, M), 6.0))


def test_a_scope_reading_an_undeclared_host_name_is_an_error_at_its_line() -> None:
    with pytest.raises(ParserTypeError, match="reads 'mid', whose type the host") as info:

        @pl.program
        class Untyped:
            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, a: pl.Tensor[[M, M], pl.FP32],
                     out: pl.Out[pl.Tensor[[M, M], pl.FP32]]):
                mid = pl.create_tensor([M, M], dtype=pl.FP32)
                with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):  # untyped-scope
                    with pl.at(level=pl.Level.CORE_GROUP):
                        pl.assemble(out, pl.add(mid, a), [0, 0])

    assert f":{line_of(Path(__file__), 'untyped-scope')}" in str(info.value)


def test_a_value_read_after_a_scope_must_land_in_a_host_tensor() -> None:
    with pytest.raises(ParserTypeError, match="reads 't' after the chip scope"):

        @pl.program
        class Escapes:
            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, a: pl.Tensor[[M, M], pl.FP32]):
                with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
                    with pl.at(level=pl.Level.CORE_GROUP):
                        t = pl.add(a, a)
                return t
