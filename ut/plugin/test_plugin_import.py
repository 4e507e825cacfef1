"""Loading the plugin stays cheap: no numpy, no ml_dtypes, no toolchain modules."""

from __future__ import annotations

import json
import subprocess
import sys

CODE = """
import json, sys
import pytest_pypto.plugin
print(json.dumps(sorted(sys.modules)))
"""


def test_plugin_import_is_light() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], check=True, capture_output=True, text=True
    ).stdout
    modules = set(json.loads(out))
    assert "pytest_pypto.plugin" in modules  # the probe really imported it
    heavy = {
        m
        for m in modules
        if m.split(".")[0] in {"numpy", "ml_dtypes"}
        or m.startswith(("pytest_pypto.compiler", "pytest_pypto.runtime", "pytest_pypto.ir"))
    }
    # The package face installs the default launcher: the stdlib-only seam module and its
    # (namespace) package are the only IR modules it loads.
    assert heavy == {"pytest_pypto.ir", "pytest_pypto.ir.launch"}


def test_plugin_session_without_fixtures_is_light(pytester) -> None:
    """A whole pytest session with the plugin loaded, no pypto fixture used: no numpy."""
    pytester.makepyfile(
        "import sys\n"
        "def test_x():\n"
        "    assert 'numpy' not in sys.modules\n"
        "    assert 'pytest_pypto.compiler' not in sys.modules\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:hypothesispytest", "--pypto-arch=all")
    result.assert_outcomes(passed=1)
