"""The memory guard (RunConfig.max_memory, --pypto-max-memory): a run whose simulated
tensors would exceed it stops before allocating, naming the tensor, its size and the
user's line; made tensors count only while alive, since a finished intermediate is
freed (docs/design/runtime.md §4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.harness.context import run_config
from pytest_pypto.harness.settings import Settings, parse_memory
from pytest_pypto.ir.errors import MemoryLimitError
from pytest_pypto.runtime.worker import Worker
from ut.helpers import line_of

R, C, STEPS = 256, 1024, 16  # each intermediate: 1 MiB of FP32
TR = 16  # rows per tile
MiB = 1 << 20


@pl.program
class Chain:
    """out = x + STEPS, one fresh 1 MiB intermediate per step."""

    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[R, C], pl.FP32],
            o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for r in pl.range(0, R, TR):
            o = pl.store(pl.add(pl.load(a, [r, 0], [TR, C]), 1.0), [r, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        first = pl.create_tensor([R, C], dtype=pl.FP32)  # the guarded line
        cur = self.inc(x, first)
        for _ in pl.range(STEPS - 2):
            step = pl.create_tensor([R, C], dtype=pl.FP32)
            cur = self.inc(cur, step)
        out = self.inc(cur, out)
        return out


def _run(limit, platform="a2a3sim"):
    x = np.zeros((R, C), np.float32)
    out = np.empty_like(x)
    compiled = pytest_pypto.compile(Chain, RunConfig(platform=platform))
    Worker(platform).run(compiled, x, out, config=RunConfig(platform=platform, max_memory=limit))
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_finished_intermediates_are_freed_so_a_long_chain_fits_a_small_limit(platform):
    # entry 2 MiB + at most a few live 1 MiB intermediates, though 15 are made in all
    out = _run(6 * MiB, platform)
    np.testing.assert_array_equal(out, np.full((R, C), STEPS, np.float32))


def test_a_made_tensor_over_the_limit_names_itself_its_size_and_the_line():
    with pytest.raises(MemoryLimitError) as info:
        _run(2 * MiB + MiB // 2)  # the entry tensors fit; no 1 MiB intermediate does
    err = info.value
    text = str(err)
    assert "pl.create_tensor 'first' [256, 1024] FP32 needs 1.00 MiB" in text
    assert "2.50 MiB memory limit (--pypto-max-memory)" in text
    assert err.span is not None and err.span.line == line_of(Path(__file__), "the guarded line")
    assert "PYPTO_MAX_MEMORY" in (err.hint or "")


def test_entry_tensors_alone_over_the_limit_name_the_largest():
    with pytest.raises(MemoryLimitError, match=r"entry tensors of this run need 2\.00 MiB.*"
                                               r"largest is '(x|out)' \[256, 1024\] FP32"):
        _run(MiB)


def test_no_limit_by_default_in_the_api():
    assert RunConfig().max_memory is None
    with pytest.raises(ValueError, match="max_memory"):
        RunConfig(max_memory=0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("8GiB", 8 << 30), ("512m", 512 << 20), ("1.5 KiB", 1536), ("4096", 4096), ("off", None)],
)
def test_sizes_parse_in_binary_units(raw, expected):
    assert parse_memory(raw) == expected


@pytest.mark.parametrize("raw", ["", "lots", "-1G", "0", "8XB", "inf"])
def test_bad_sizes_are_refused(raw):
    with pytest.raises(ValueError):
        parse_memory(raw)


def test_auto_is_a_share_of_the_machine_split_over_the_workers(monkeypatch):
    from pytest_pypto.harness import settings

    monkeypatch.setattr(settings, "machine_memory", lambda: 16 << 30)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    assert parse_memory("auto") == (12 << 30) // 4
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert parse_memory("auto") == 12 << 30
    assert run_config(Settings(max_memory=123 << 20), "a5sim").max_memory == 123 << 20
