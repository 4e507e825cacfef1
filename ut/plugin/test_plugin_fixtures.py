"""Fixtures: pypto_config, pypto_platform, pypto_rng (stable seeds), pypto_device (leases)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_pypto.harness.seeding import make_rng, test_seed


def test_config_and_platform(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pytest_pypto import RunConfig
        from pytest_pypto.arch import parse_platform
        from pytest_pypto.harness.seeding import test_seed

        def test_x(pypto_config, pypto_platform, request):
            assert isinstance(pypto_config, RunConfig)
            assert isinstance(pypto_platform, str)
            assert pypto_config.platform == pypto_platform
            assert (pypto_config.arch, pypto_config.execution_mode) == parse_platform(pypto_platform)
            assert pypto_config.seed == test_seed(41, request.node.nodeid)
            assert pypto_config.device_id is None
            assert ("pypto_seed", pypto_config.seed) in request.node.user_properties
        """
    )
    result = pytester.runpytest("--pypto-arch=all", "--pypto-seed=41", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_x[[]a2a3sim[]] PASSED*", "*test_x[[]a5sim[]] PASSED*"])


def test_getfixturevalue_of_the_cell_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(request):\n    request.getfixturevalue('pypto_platform')\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*must be requested as test arguments*"])
    assert "Traceback" not in result.stdout.str()


def test_seed_is_a_stable_hash() -> None:
    # Pinned: SHA-256 of "0\0ut::t[a5sim]", first 8 bytes, shifted to 63 bits.
    import hashlib

    digest = hashlib.sha256(b"0\x00ut::t[a5sim]").digest()
    assert test_seed(None, "ut::t[a5sim]") == int.from_bytes(digest[:8], "big") >> 1
    assert test_seed(0, "ut::t[a5sim]") == test_seed(None, "ut::t[a5sim]")
    assert test_seed(1, "ut::t[a5sim]") != test_seed(0, "ut::t[a5sim]")
    assert test_seed(0, "ut::t[a2a3sim]") != test_seed(0, "ut::t[a5sim]")
    assert 0 <= test_seed(2**40, "x") < 2**63


def test_make_rng_is_numpy_generator() -> None:
    import numpy as np

    rng = make_rng(5)
    assert isinstance(rng, np.random.Generator)
    assert list(rng.integers(0, 1000, 4)) == list(np.random.default_rng(5).integers(0, 1000, 4))


RNG_TESTS = """
import json, os, pytest

def _dump(request, rng):
    out = os.path.join(os.environ["RNG_OUT"], request.node.name + ".json")
    with open(out, "w") as f:
        json.dump([int(v) for v in rng.integers(0, 2**31, 5)], f)

@pytest.mark.parametrize("i", range(4))
def test_plain(pypto_rng, request, i):
    _dump(request, pypto_rng)

def test_cell(pypto_rng, pypto_platform, request):
    _dump(request, pypto_rng)
"""


def _rng_run(
    pytester: pytest.Pytester, monkeypatch, out: Path, *args: str, subprocess: bool = True
) -> dict[str, list[int]]:
    out.mkdir()
    monkeypatch.setenv("RNG_OUT", str(out))
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("-p", "no:cacheprovider", "--pypto-arch=all", *args)
    assert result.ret == 0, result.stdout.str()
    return {p.stem: json.loads(p.read_text()) for p in sorted(out.iterdir())}


def test_rng_same_numbers_every_run_any_order_any_worker(
    pytester: pytest.Pytester, monkeypatch, tmp_path: Path
) -> None:
    pytester.makepyfile(test_rng=RNG_TESTS)
    ids = [
        "test_rng.py::test_cell[a5sim]",
        "test_rng.py::test_plain[3]",
        "test_rng.py::test_cell[a2a3sim]",
        "test_rng.py::test_plain[0]",
        "test_rng.py::test_plain[2]",
        "test_rng.py::test_plain[1]",
    ]
    # Separate interpreters (different PYTHONHASHSEED: a session of its own, then xdist
    # workers started by a controller in this process), and a reversed order (in this
    # process, whose hash seed is a third one).
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    first = _rng_run(pytester, monkeypatch, tmp_path / "a")
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    reordered = _rng_run(pytester, monkeypatch, tmp_path / "b", *ids, subprocess=False)
    distributed = _rng_run(pytester, monkeypatch, tmp_path / "c", "-n", "2", "-p", "xdist",
                           subprocess=False)
    assert len(first) == 6
    assert first == reordered == distributed
    assert len({tuple(v) for v in first.values()}) == 6  # every test draws its own numbers
    # A different base seed needs no fresh interpreter: this process will do.
    other_base = _rng_run(pytester, monkeypatch, tmp_path / "d", "--pypto-seed=9", subprocess=False)
    assert all(other_base[k] != first[k] for k in first)


def test_device_is_none_on_sim(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "def test_x(pypto_device, pypto_config):\n"
        "    assert pypto_device is None\n    assert pypto_config.device_id is None\n"
    )
    pytester.runpytest("--pypto-arch=all").assert_outcomes(passed=2)


def test_device_is_leased_onboard(
    pytester: pytest.Pytester, fake_npus, fake_runtime, monkeypatch
) -> None:
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "2,3,4")
    locks = Path(os.environ["PYPTO_LOCK_DIR"])  # the test's own (ut/conftest.py)
    pytester.makepyfile(
        f"""
        import fcntl
        import pytest

        LOCKS = {str(locks)!r}

        def test_x(pypto_device, pypto_config):
            assert pypto_device in (3, 4)
            assert pypto_config.device_id == pypto_device
            # The lease is an exclusive lock another process (or handle) cannot take.
            with open(f"{{LOCKS}}/davinci{{pypto_device}}.lock", "a+") as other:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        """
    )
    result = pytester.runpytest("--pypto-mode=onboard", "--pypto-arch=all", "--pypto-device=3-7")
    result.assert_outcomes(passed=2)
    # Released after the test: the locks can be taken again.
    import fcntl

    for dev in (3, 4):
        path = locks / f"davinci{dev}.lock"
        if path.exists():
            with open(path, "a+") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert any((locks / f"davinci{d}.lock").exists() for d in (3, 4))
