"""A pure Out proved fully written is written straight into the caller's array when
that is safe (plain, C-contiguous, sharing memory with no other argument), and staged
otherwise; either way the caller sees the same results, and a failed run never leaves
a partial result in it."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_artifacts import K, T

from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import read_manifest, write_manifest
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.worker import Worker

F = [16, 32]


def _swap(artifact, fully_written: bool = True, platform: str = "a2a3sim"):
    """o gets x's row halves swapped: the kernel reads x again after writing o's top half,
    so an o written in place over x itself would read back its own results."""
    art = artifact(
        entry_args=[T("x", F), T("o", F, direction="Out")],
        kernels=[K("swap", [T("a", F), T("o", F, direction="Out")],
                   "o[:8] = a[8:]\no[8:] = a[:8]")],
        orchestration="""
            o = rt.submit("swap", (x, o), returns=(1,))
            return (o,)
        """,
        platform=platform,
    )
    manifest = read_manifest(art)
    manifest.entry_args[1].fully_written = fully_written
    write_manifest(art, manifest)
    return art


def _swapped(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x[8:], x[:8]])


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_results_land_in_the_callers_array_and_its_memory_is_the_run_root(artifact, rng,
                                                                          platform):
    x = rng.standard_normal(F).astype(np.float32)
    o = np.full(F, 7.0, np.float32)
    run = Worker(platform).run(_swap(artifact, platform=platform), x, o)
    np.testing.assert_array_equal(o, _swapped(x))
    assert run.outputs["o"] is o
    roots = {r.name: r for r in run._roots}
    assert roots["o"].data is o  # written in place: no staged buffer between
    assert np.shares_memory(roots["x"].data, x) and not roots["x"].data.flags.writeable  # In: a read-only view


def test_an_out_that_is_the_in_array_itself_is_staged(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    want = _swapped(x)
    run = Worker("a2a3sim").run(_swap(artifact), x, x)  # o aliases x
    np.testing.assert_array_equal(x, want)
    roots = {r.name: r for r in run._roots}
    assert not np.shares_memory(roots["o"].data, x)


def test_an_out_overlapping_the_in_array_is_staged(artifact, rng):
    base = rng.standard_normal((32, 32)).astype(np.float32)
    x, o = base[:16], base[8:24]  # o's first rows are x's last rows
    want = _swapped(x.copy())
    Worker("a5sim").run(_swap(artifact, platform="a5sim"), x, o)
    np.testing.assert_array_equal(base[8:24], want)


def test_a_strided_out_is_staged_and_only_its_elements_change(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    wide = np.full((16, 64), 3.0, np.float32)
    o = wide[:, ::2]  # not C-contiguous
    Worker("a2a3sim").run(_swap(artifact), x, o)
    np.testing.assert_array_equal(wide[:, ::2], _swapped(x))
    np.testing.assert_array_equal(wide[:, 1::2], 3.0)


def _writes_then_fails(monkeypatch, art, platform: str) -> Worker:
    """A worker whose swap kernel writes o completely, then raises."""
    worker = Worker(platform)
    kernel = worker.prepare(art).loaded.kernels["swap"]
    real = kernel.fn

    def writes_then_fails(a, o):
        real(a, o)
        raise SimulationError("injected failure after the kernel wrote o")

    monkeypatch.setattr(kernel, "fn", writes_then_fails)
    return worker


@pytest.mark.parametrize("uninitialized, check", [
    ("poison", lambda o: np.isnan(o).all()),
    ("zero", lambda o: (o == 0.0).all()),
])
def test_a_failed_run_refills_an_in_place_out(artifact, rng, monkeypatch, uninitialized, check):
    art = _swap(artifact, platform="a5sim")
    worker = _writes_then_fails(monkeypatch, art, "a5sim")
    x = rng.standard_normal(F).astype(np.float32)
    o = np.full(F, 7.0, np.float32)
    with pytest.raises(SimulationError, match="injected failure"):
        worker.run(art, x, o, config=RunConfig(uninitialized=uninitialized))
    assert check(o)


def test_an_out_not_proved_fully_written_is_untouched_by_a_failed_run(artifact, rng,
                                                                    monkeypatch):
    art = _swap(artifact, fully_written=False)
    worker = _writes_then_fails(monkeypatch, art, "a2a3sim")
    o = np.full(F, 7.0, np.float32)
    with pytest.raises(SimulationError, match="injected failure"):
        worker.run(art, rng.standard_normal(F).astype(np.float32), o)
    np.testing.assert_array_equal(o, 7.0)
