"""--pypto-save-kernels on a full disk (issue 26 item 11): kernels that ran right keep
their passing results; the failure to save is said once (the directory and the OS
error, no multi-kilobyte ``shutil.Error``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.compiling import copy_artifact
from ut.harness.test_cache_faults import A2, ADD

TESTS = """
import pytest
from kcases import AddCase

@pytest.mark.parametrize("n", range(3))
def test_ok(pypto_runner, n):
    pypto_runner.check(AddCase())
"""

# The kept artifacts' disk is full: every copy into build_output/ fails (``raising``).
FULL_DISK = """
import errno
import shutil

import pytest

from pytest_pypto.ir import artifact

def _full(real):
    def copy(source, target, *args, **kwargs):
        if "build_output" in str(target):  # the kept artifacts' disk is full
            raise {raising}
        return real(source, target, *args, **kwargs)
    return copy

@pytest.fixture(autouse=True)
def full_disk(monkeypatch):
    monkeypatch.setattr(shutil, "copytree", _full(shutil.copytree))
    monkeypatch.setattr(artifact.ArtifactInMemory, "write", _full(artifact.ArtifactInMemory.write))
"""

ENOSPC = 'OSError(errno.ENOSPC, "No space left on device")'
# What shutil.copytree raises when many files fail: every (src, dst, why) in one message.
MANY = (
    'shutil.Error([(f"/c/k{i}.py", f"/b/k{i}.py", '
    'f"[Errno 28] No space left on device: /b/k{i}.py") for i in range(60)])'
)


@pytest.mark.parametrize("raising", [ENOSPC, MANY], ids=["ENOSPC", "shutil.Error"])
@pytest.mark.parametrize("cache", ["--pypto-cache-dir=cc", "--pypto-no-cache"])
def test_a_full_disk_under_save_kernels_keeps_the_results_and_says_so_once(
    cases: pytest.Pytester, raising: str, cache: str
) -> None:
    cases.makepyfile(test_ok=TESTS)
    cases.makeconftest(FULL_DISK.format(raising=raising))
    result = cases.runpytest("--pypto-save-kernels", cache, "-W", "default")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    lines = [ln for ln in result.outlines if "could not save" in ln]
    assert len(lines) == 1, out
    assert "build_output" in lines[0] and "No space left on device" in lines[0]
    assert len(lines[0].replace(str(cases.path), "")) < 400, lines[0]  # not kilobytes
    assert out.count("No space left on device") == 1, out



def test_kernels_whose_cache_entry_was_deleted_are_saved_from_memory(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "cache")
    compiled = cache.compile(ADD, A2)
    shutil.rmtree(tmp_path / "cache" / cache_key(ADD, A2))
    copy_artifact(compiled, tmp_path / "kept")
    saved = (tmp_path / "kept" / "kernels" / "k.py").read_text()
    assert saved == compiled.memory.text("kernels/k.py")


def test_run_records_that_cannot_be_kept_warn_once_and_keep_the_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under save_kernels every run writes its records (deps.json): a full disk there
    warns once per process and the run's outputs stand."""
    import errno

    import numpy as np

    import pytest_pypto
    from pytest_pypto.config import RunConfig
    from pytest_pypto.runtime import records

    def full(cfg: object, program: str) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records, "new_run_dir", full)
    monkeypatch.setattr(records, "_warned_not_kept", False)
    cfg = RunConfig(platform="a2a3sim", save_kernels=True, save_kernels_dir=str(tmp_path))
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    with pytest.warns(records.RecordsNotKeptWarning, match="No space left on device") as seen:
        for _ in range(2):
            out = np.zeros_like(x)
            pytest_pypto.run(ADD, x, x, out, config=cfg)
            np.testing.assert_array_equal(out, x + x)
    assert len([w for w in seen if w.category is records.RecordsNotKeptWarning]) == 1
