"""A PyPTO-style kernel and cases for the compat tests (our own code, PyPTO's spellings)."""

from __future__ import annotations

import pytest_pypto.compat.pypto.language as pl
import torch

from pytest_pypto.compat.harness import DataType, PTOTestCase, TensorSpec

R, C = 16, 32


@pl.program
class AddProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def add(
        self,
        a: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        c: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C]))
        c = pl.store(t, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        c: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.add(a, b, c)
        return c


class TorchAdd(PTOTestCase):
    """c = a + b with a PyPTO golden: torch calls on torch tensors (dim=, .float())."""

    def __init__(self, *, init_a=torch.randn, off: float = 0.0, **kw) -> None:
        super().__init__(**kw)
        self.init_a = init_a
        self.off = off

    def get_name(self) -> str:
        return "torch_add"

    def define_tensors(self):
        return [
            TensorSpec("a", [R, C], DataType.FP32, init_value=self.init_a),
            TensorSpec("b", [R, C], DataType.FP32),  # no init_value: zeros, as in PyPTO
            TensorSpec("c", [R, C], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return AddProgram

    def compute_expected(self, tensors, params=None):
        assert isinstance(tensors["a"], torch.Tensor), type(tensors["a"])
        total = torch.stack([tensors["a"].float(), tensors["b"]], dim=0).sum(dim=0)
        tensors["c"][:] = total + self.off
