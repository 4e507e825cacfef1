"""torch Out tensors and autograd (issue 26, item 4).

A kernel writes its Out/InOut tensors in place through numpy, which autograd cannot
see.  So a written tensor that requires grad is refused before the run, with an error
naming the argument; any other written torch tensor has its version counter moved, so
a graph that saved it refuses a later backward instead of computing a wrong gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

R, C = 16, 32


@pl.program
class Scale:
    """out = 2 * x; acc += x (an InOut)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], acc: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        a = pl.load(acc, [0, 0], [R, C])
        acc = pl.store(pl.add(a, t), [0, 0], acc)
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], acc: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, acc, out)
        return out


@pl.jit
def double(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [R, C])
        pl.store(pl.add(t, t), [0, 0], out)
    return out


def _args() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.ones(R, C), torch.zeros(R, C), torch.zeros(R, C)


@pytest.mark.parametrize(("position", "name", "direction"), [(2, "out", "Out"),
                                                             (1, "acc", "InOut")])
def test_a_written_tensor_that_requires_grad_is_refused_naming_it(position, name,
                                                                  direction) -> None:
    args = list(_args())
    args[position] = args[position].clone().requires_grad_(True)
    before = [a.detach().clone() for a in args]
    with pytest.raises(ValueError) as info:
        pytest_pypto.run(Scale, *args)
    text = str(info.value)
    assert text.startswith(f"argument '{name}' ({direction}) of 'Scale' is a torch tensor "
                           "that requires grad")
    assert "detach()" in text
    for arg, old in zip(args, before):  # nothing ran: nothing written
        assert torch.equal(arg.detach(), old)


def test_an_input_that_requires_grad_is_read_as_given() -> None:
    x, acc, out = _args()
    x.requires_grad_(True)
    pytest_pypto.run(Scale, x, acc, out)
    assert torch.equal(out, torch.full((R, C), 2.0)) and torch.equal(acc, torch.ones(R, C))


def test_writing_a_tensor_saved_by_a_graph_makes_backward_refuse() -> None:
    x, acc, out = _args()
    w = torch.ones(R, C, requires_grad=True)
    loss = (w * out).sum()  # the graph saves `out` (at its current version)
    version = out._version
    pytest_pypto.run(Scale, x, acc, out)
    assert out._version > version and torch.equal(out, torch.full((R, C), 2.0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_a_written_view_moves_its_base_version_too() -> None:
    x, acc, _ = _args()
    base = torch.zeros(R, 2 * C)
    version = base._version
    pytest_pypto.run(Scale, x, acc, base[:, C:])  # a strided view of base
    assert base._version > version
    assert torch.equal(base[:, C:], torch.full((R, C), 2.0)) and torch.all(base[:, :C] == 0)


def test_jit_and_compiled_program_calls_refuse_it_too() -> None:
    x = torch.ones(R, C)
    out = torch.zeros(R, C, requires_grad=True)
    with pytest.raises(ValueError, match="argument 'out' .Out. of 'double' is a torch tensor"):
        double(x, out, config=RunConfig(platform="a5sim"))
    plain = torch.zeros(R, C)
    version = plain._version
    double(x, plain, config=RunConfig(platform="a5sim"))
    assert plain._version > version and torch.equal(plain, torch.full((R, C), 2.0))


def test_a_detached_tensor_is_written_and_its_version_moves() -> None:
    x, acc, _ = _args()
    leaf = torch.zeros(R, C, requires_grad=True)
    loss = (leaf * leaf).sum()  # saves leaf
    pytest_pypto.run(Scale, x, acc, leaf.detach())  # the documented way: write its data
    assert torch.equal(leaf.detach(), torch.full((R, C), 2.0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_numpy_outputs_are_unaffected() -> None:
    x = np.ones((R, C), np.float32)
    acc, out = np.zeros((R, C), np.float32), np.zeros((R, C), np.float32)
    pytest_pypto.run(Scale, x, acc, out)
    assert np.array_equal(out, np.full((R, C), 2.0, np.float32))
