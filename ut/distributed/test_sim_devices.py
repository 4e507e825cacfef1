"""Simulated devices for multi-chip tests: PyPTO's ``device_ids`` on sim cells
(docs/design/distributed.md §1) and the ``--pypto-devices`` option."""

from __future__ import annotations

import pytest

COMPAT = 'pytest_plugins = ["pytest_pypto.compat"]\n'

IDS_TEST = """
import json, os

def test_ids(device_ids):
    with open(os.environ["IDS_OUT"], "w") as f:
        json.dump(device_ids, f)
"""


def _ids(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> list[int]:
    import json  # lazy: tiny helper

    pytester.makeconftest(COMPAT)
    pytester.makepyfile(test_ids=IDS_TEST)
    out = pytester.path / "ids.json"
    monkeypatch.setenv("IDS_OUT", str(out))
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args)
    result.assert_outcomes(passed=1)
    return json.loads(out.read_text())


def test_sim_session_simulates_eight_devices_by_default(pytester, monkeypatch) -> None:
    assert _ids(pytester, monkeypatch) == list(range(8))


def test_devices_option_sets_how_many(pytester, monkeypatch) -> None:
    assert _ids(pytester, monkeypatch, "--pypto-devices", "3") == [0, 1, 2]


def test_devices_env_mirror(pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_DEVICES", "2")
    assert _ids(pytester, monkeypatch, "--pypto-arch", "all") == [0, 1]


def test_device_list_names_the_simulated_devices(pytester, monkeypatch) -> None:
    assert _ids(pytester, monkeypatch, "--device", "4-6") == [4, 5, 6]


@pytest.mark.parametrize("bad", ["0", "x", "65"])
def test_bad_device_count_is_a_usage_error_naming_option_and_value(pytester, bad) -> None:
    pytester.makeconftest(COMPAT)
    pytester.makepyfile(test_ids=IDS_TEST)
    result = pytester.runpytest_subprocess("--pypto-devices", bad)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--pypto-devices*{bad}*1 to 64*"])
