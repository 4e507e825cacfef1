"""An onboard test whose device lease cannot use its lock dir (issue 26 item 8): a clear
error naming the dir (plugin/devices.py; the checks: runtime/devices.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_an_onboard_test_reports_the_lock_dir_not_a_traceback(
    pytester: pytest.Pytester, fake_npus: Path, fake_runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin's lease: an unusable lock dir fails the onboard test with the message
    naming the dir (not a raw PermissionError traceback from inside the package)."""
    (pytester.path / "afile").write_text("in the way\n")
    locks = pytester.path / "afile" / "locks"
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(locks))
    pytester.makepyfile("def test_x(pypto_device):\n    pass\n")
    result = pytester.runpytest("--pypto-mode=onboard", "--pypto-arch=a5")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert f"device lease: cannot use the lock directory {locks}" in out, out
    assert "devices.py:" not in out, out  # no traceback through the package
