"""xdist workers elsewhere (``-d --tx popen//chdir=DIR``): kept artifacts come back to
the controller, the cache summary names the caches really used, and path options work
in both spellings (plugin/remote.py)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest
from readme_kit import TWICE_TESTS

from pytest_pypto.plugin import remote
from pytest_pypto.plugin.paths import kept_name

KERNEL_TESTS = TWICE_TESTS
BAD = kept_name("tests/test_k.py::test_bad[a2a3sim]")
GOOD = kept_name("tests/test_k.py::test_good[a2a3sim]")
CACHE_LINE = re.compile(r"^pypto compile cache: .*$", re.M)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_k.py").write_text(KERNEL_TESTS)
    for existing in ("kd", "cc"):  # an existing relative path is what -d trips over
        (pytester.path / existing).mkdir()
    return pytester


def _clean(result: pytest.RunResult) -> str:
    out = result.stdout.str()
    assert "INTERNALERROR" not in out + result.stderr.str(), out + result.stderr.str()
    result.assert_outcomes(passed=1, failed=1)
    return out


def test_path_options_in_both_spellings_under_n2(project: pytest.Pytester) -> None:
    args = ["--pypto-kernels-dir", "kd", "--pypto-cache-dir=cc"]  # one of each spelling
    out = _clean(project.runpytest("-p", "xdist", "-n", "2", "tests", *args))
    kept = project.path / "kd" / BAD
    assert (kept / "kernel_config.json").is_file()
    assert f"artifacts kept in: {kept}" in out
    (line,) = CACHE_LINE.findall(out)
    assert line.endswith(f"({project.path / 'cc'})"), line  # -n: the one shared cache
    assert "artifacts kept by remote workers" not in out  # nothing to ship: same dir


def test_remote_workers_ship_kept_artifacts_to_the_controller(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    there = tmp_path_factory.mktemp("remote")
    result = project.runpytest(
        "-p", "xdist", "-d", "--tx", f"2*popen//chdir={there}", "--rsyncdir", "tests",
        "--pypto-kernels-dir", "kd", "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    out = _clean(result)
    here, worker_side = project.path / "kd" / BAD, there / "kd" / BAD
    files = sorted(p.relative_to(worker_side) for p in worker_side.rglob("*") if p.is_file())
    assert Path("kernel_config.json") in files and Path("arguments/x.npy") in files
    for name in files:  # every file came back, byte for byte
        assert (here / name).read_bytes() == (worker_side / name).read_bytes(), name
    assert not (project.path / "kd" / GOOD).exists()  # a passing test keeps nothing
    assert re.search(
        rf"artifacts kept in: {re.escape(str(worker_side))} on worker gw\d; the controller "
        rf"gets a copy in {re.escape(str(here))} when the session ends",
        out,
    ), out
    section = out.split("pypto artifacts kept by remote workers", 1)[1]
    assert re.search(rf"{re.escape(str(here))}  \(kept by worker gw\d in "
                     rf"{re.escape(str(worker_side))}\)", section), section  # fmt: skip
    (line,) = CACHE_LINE.findall(out)
    assert re.search(rf"\({re.escape(str(there))}/\.pytest_cache/d/pypto-compile on gw\d", line)
    assert str(project.path) not in line, line  # the controller's cache served nobody


def test_remote_save_kernels_ship_every_test(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    there = tmp_path_factory.mktemp("remote")
    result = project.runpytest(
        "-p", "xdist", "-d", "--tx", f"popen//chdir={there}", "--rsyncdir=tests",
        "--pypto-kernels-dir=saved", "--pypto-save-kernels", "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    _clean(result)
    for name in (GOOD, BAD):
        shipped = project.path / "saved" / name / "kernel_config.json"
        assert shipped.read_bytes() == (there / "saved" / name / "kernel_config.json").read_bytes()


def test_join_path_options_rewrites_only_path_flags(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--pypto-kernels-dir", "kd", "-k", "x", "--pypto-seed", "3")
    remote.join_path_options(config)
    args = config.invocation_params.args  # (pytester appends its --basetemp)
    assert args[:5] == ("--pypto-kernels-dir=kd", "-k", "x", "--pypto-seed", "3")
    remote.join_path_options(config)  # idempotent
    assert config.invocation_params.args[0] == "--pypto-kernels-dir=kd"


def _worker_config(rootpath: Path, controller_dir: Path) -> types.SimpleNamespace:
    """What `remote` reads of a worker's config: stash, rootpath, workerinput."""
    return types.SimpleNamespace(
        stash=pytest.Stash(),
        rootpath=rootpath,
        workerinput={"workerid": "gw3", "pypto_kernels_dir": str(controller_dir)},
    )


def test_ship_respects_the_limit_and_receive_stays_inside(tmp_path: Path) -> None:
    worker, controller = tmp_path / "w", tmp_path / "c"
    small, big = worker / "build_output" / "small", worker / "build_output" / "big"
    (small / "sub").mkdir(parents=True)
    (small / "sub" / "a.txt").write_bytes(b"abc")
    big.mkdir()
    (big / "blob").write_bytes(b"x" * 100)
    config = _worker_config(worker, controller / "build_output")
    assert remote.controller_kernels_dir(config) == controller / "build_output"
    remote.note_kept(config, small)
    remote.note_kept(config, big)
    remote.note_kept(config, small)  # noted twice, shipped once
    payload = remote.ship(config, limit=50)
    assert payload["files"] == {"small/sub/a.txt": b"abc"}
    assert payload["dirs"] == ["small"]
    assert payload["left"] == [(str(big.resolve()), 100)]
    payload["files"]["../escaped"] = b"no"  # a hostile payload cannot write outside
    ctrl = types.SimpleNamespace(stash=pytest.Stash(), rootpath=controller)
    shipment = remote.receive(ctrl, "gw3", payload)
    assert (controller / "build_output" / "small" / "sub" / "a.txt").read_bytes() == b"abc"
    assert not (controller / "escaped").exists()
    lines = remote.summary_lines(ctrl, [shipment])
    assert lines[0] == (
        f"{controller / 'build_output' / 'small'}  (kept by worker gw3 in "
        f"{worker.resolve() / 'build_output'}/small)"
    )
    assert lines[1] == (
        f"{big.resolve()} on worker gw3: left there (0.0 MiB, over the 64 MiB a worker ships back)"
    )


def test_a_worker_in_the_controllers_directory_ships_nothing(tmp_path: Path) -> None:
    config = _worker_config(tmp_path, tmp_path / "build_output")
    remote.note_kept(config, tmp_path / "build_output" / "x")
    assert remote.controller_kernels_dir(config) is None
    assert remote.ship(config) is None


def test_remote_workers_take_a_test_path_argument(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 26 item 16: ``-d --tx popen//chdir=DIR --rsyncdir X <path>`` with a relative
    path (and a node id) runs on the worker instead of an xdist INTERNALERROR."""
    there = tmp_path_factory.mktemp("remote")
    result = project.runpytest_subprocess(
        "-p", "xdist", "-d", "--tx", f"popen//chdir={there}", "--rsyncdir", "tests",
        "tests/test_k.py", "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    _clean(result)
    result = project.runpytest_subprocess(
        "-p", "xdist", "-d", "--tx", f"popen//chdir={there}", "--rsyncdir", "tests",
        "tests/test_k.py::test_good", "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


def test_a_test_path_outside_every_rsync_root_is_a_usage_error(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    (project.path / "other").mkdir()
    (project.path / "other" / "test_o.py").write_text("def test_o():\n    pass\n")
    there = tmp_path_factory.mktemp("remote")
    result = project.runpytest_subprocess(
        "-p", "xdist", "-d", "--tx", f"popen//chdir={there}", "--rsyncdir", "tests",
        "other/test_o.py", "-W", "ignore::DeprecationWarning",
    )  # fmt: skip
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
    assert "INTERNALERROR" not in result.stdout.str() + err
    assert "'other/test_o.py'" in err and "--rsyncdir" in err, err
    assert str(project.path / "tests") in err, err  # names the rsync roots it has
