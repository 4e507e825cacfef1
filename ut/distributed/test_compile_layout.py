"""What a multi-chip compile writes under ``output_dir`` (docs/design/distributed.md §6):
the host orchestrator, each chip orchestration's artifact and one kernel_config.py per
host collective variant, read back as facts about the program."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import torch

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from ut.distributed import programs as p
from ut.helpers import line_of

PROGRAMS = Path(p.__file__)
NR = p.NR  # a global of this module: the host binds it from its arguments' shapes


def _compile(program, ranks: int, output_dir=None):
    return ir.compile(program, platform="a2a3sim", output_dir=output_dir,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


def _config(path: Path) -> dict:
    """The module-level literals of a generated kernel_config.py."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {t.id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) for t in node.targets}


def _builtins(out: Path) -> list[str]:
    return sorted(d.name for d in (out / "next_levels").iterdir()
                  if d.name.startswith("builtin."))


def test_allreduce_sum_variant_states_the_collective(tmp_path) -> None:
    compiled = _compile(p.ALLREDUCE_SUM, 4, tmp_path / "out")
    assert compiled.output_dir == tmp_path / "out"
    assert _builtins(compiled.output_dir) == ["builtin.tensor.allreduce__sum__fp32"]
    cfg = _config(compiled.output_dir / "next_levels" / "builtin.tensor.allreduce__sum__fp32"
                  / "kernel_config.py")
    b = cfg["BUILTIN"]
    assert (b["op"], b["reduce_op"], b["dtype"], b["window_shape"]) == (
        "builtin.tensor.allreduce", "sum", "fp32", [1, p.N])
    assert (b["ranks"], b["device_ids"]) == (4, [0, 1, 2, 3])
    # the host's `else:` branch, two lines below its broadcast
    broadcast = line_of(PROGRAMS, "data = pld.tensor.broadcast(data, sig, root=1)", contains=True)
    assert b["host_lines"] == [broadcast + 2]
    assert cfg["KERNELS"] == []


def test_only_the_collective_the_host_runs_is_written() -> None:
    # the host picks its collective with a Python `if`: the branch not taken writes nothing
    assert _builtins(_compile(p.ALLREDUCE_MAX, 2).output_dir) == [
        "builtin.tensor.allreduce__max__fp32"]
    assert _builtins(_compile(p.BROADCAST, 2).output_dir) == [
        "builtin.tensor.broadcast__root1__fp32"]


def test_chip_orchestrations_are_compiled_there_and_the_run_uses_them() -> None:
    compiled = _compile(p.ALLREDUCE_SUM, 2)
    levels = compiled.output_dir / "next_levels"
    for chip, kernel in (("publish", "publish_step"), ("consume", "consume_step")):
        cfg = _config(levels / chip / "kernel_config.py")
        assert cfg["ORCHESTRATION"]["function_name"] == chip
        assert [k["name"] for k in cfg["KERNELS"]] == [kernel]
    host = (compiled.output_dir / "orchestration" / "host.py").read_text(encoding="utf-8")
    assert "def host(self, x" in host and "pld.tensor.allreduce" in host
    artifacts = dict(compiled._compiled)
    x = torch.randn(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    compiled(x, y)
    assert compiled._compiled == artifacts  # nothing compiled again at run time
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(x.numpy().sum(axis=0), y.shape),
                               rtol=1e-6)


def test_a_host_needing_its_arguments_still_compiles_and_runs() -> None:
    # DynamicRanks sizes its window from NR, bound only by the arguments' shapes
    compiled = _compile(p.DynamicRanks, 2)
    host = (compiled.output_dir / "orchestration" / "host.py").read_text(encoding="utf-8")
    assert "compile-time trace stopped" in host
    assert not (compiled.output_dir / "next_levels").exists()
    x = torch.randn(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    compiled(x, y)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


@pl.program
class SizedByNR:
    """The host sizes its window buffer from NR (bound only by the arguments' shapes)."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy_in(self, x: pl.Tensor[[1, p.N], pl.FP32],
                w: pl.InOut[pld.DistributedTensor[[1, p.N], pl.FP32]]
                ) -> pld.DistributedTensor[[1, p.N], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [1, p.N]), [0, 0], w)

    @pl.function(type=pl.FunctionType.Orchestration)
    def publish(self, x: pl.Tensor[[1, p.N], pl.FP32],
                w: pl.InOut[pld.DistributedTensor[[1, p.N], pl.FP32]]
                ) -> pld.DistributedTensor[[1, p.N], pl.FP32]:
        return self.copy_in(x, w)

    @pl.function(type=pl.FunctionType.InCore)
    def copy_out(self, w: pld.DistributedTensor[[1, p.N], pl.FP32],
                 y: pl.Out[pl.Tensor[[1, p.N], pl.FP32]]) -> pl.Tensor[[1, p.N], pl.FP32]:
        return pl.store(pl.load(w, [0, 0], [1, p.N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def consume(self, w: pld.DistributedTensor[[1, p.N], pl.FP32],
                y: pl.Out[pl.Tensor[[1, p.N], pl.FP32]]) -> pl.Tensor[[1, p.N], pl.FP32]:
        return self.copy_out(w, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, p.N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, p.N], pl.FP32]]) -> pl.Tensor[[NR, 1, p.N], pl.FP32]:
        buf = pld.alloc_window_buffer(NR * p.N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer([NR], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.publish(x[r], pld.window(buf, [1, p.N], dtype=pl.FP32), device=r)
        data = pld.window(buf, [1, p.N], dtype=pl.FP32)
        data = pld.tensor.allreduce(data, pld.window(sig_buf, [NR], dtype=pl.INT32),
                                    op=pld.ReduceOp.Min)
        for r in pl.range(pld.world_size()):
            self.consume(data, y[r], device=r)
        return y


def test_window_sizes_from_dynamic_dims_are_traced() -> None:
    compiled = _compile(SizedByNR, 2)
    assert _builtins(compiled.output_dir) == ["builtin.tensor.allreduce__min__fp32"]
    b = _config(compiled.output_dir / "next_levels" / "builtin.tensor.allreduce__min__fp32"
                / "kernel_config.py")["BUILTIN"]
    assert (b["reduce_op"], b["window_shape"]) == ("min", [1, p.N])
    x = torch.randn(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    compiled(x, y)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(x.numpy().min(axis=0), y.shape))
