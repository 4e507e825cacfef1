# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""The --pypto-timeout deadline and the process-isolating runtime.

`deadline` alone (fires, restores, nests, no-op off the main thread) and on a real
kernel that loops forever (its file:line); `IsolatedRuntime` against an independent
numpy reference and the in-process Worker on both sims, its In/Out contract, and
each way a child can die.  Crashing kernels are compiled DSL kernels whose generated
source (a plain Python file in the artifact) is edited by `_sabotaged` to crash: no
test hook exists in the runtime itself.
"""

from __future__ import annotations

import pickle
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime import isolated
from pytest_pypto.runtime.child import pack_exception, unpack_exception
from pytest_pypto.runtime.isolated import IsolatedRuntime
from pytest_pypto.runtime.protocol import RuntimeFailure, protocol_problems
from pytest_pypto.runtime.timeout import RunTimedOut, deadline
from pytest_pypto.runtime.worker import Worker
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
M, N = 32, 64


@pl.program
class Pipe:  # out = x + y (Out); acc += out (InOut): two kernels, a RAW edge between them
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [M, N]), pl.load(y, [0, 0], [M, N]))  # first of add
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def accumulate(self, s: pl.Tensor[[M, N], pl.FP32],
                   acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.add(pl.load(acc, [0, 0], [M, N]), pl.load(s, [0, 0], [M, N]))
        acc = pl.store(t, [0, 0], acc)
        return acc

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
             acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]]
             ) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, N], pl.FP32]]:
        out = self.add(x, y, out)
        acc = self.accumulate(out, acc)
        return out, acc


@pl.program
class Spin:  # a kernel whose while loop never ends when n > 0
    @pl.function(type=pl.FunctionType.InCore)
    def spin(self, a: pl.Tensor[[M, N], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(a, [0, 0], [M, N])
        i = 0
        while i < n:  # the loop
            t = pl.add(t, t)
            i = i + 0  # its last line
        c = pl.store(t, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.spin(a, n, c)
        return c


def _in_the_loop(span) -> bool:
    """The alarm lands on any line of Spin's loop."""
    return span.file == __file__ and _line_of("# the loop") <= span.line <= _line_of(
        "# its last line")


_line_of = line_finder(__file__)


_COMPILED: dict = {}


def _compiled(program, platform):
    key = (program, platform)
    if key not in _COMPILED:
        _COMPILED[key] = pytest_pypto.compile(program, RunConfig(platform=platform))
    return _COMPILED[key]


def _sabotaged(tmp_path: Path, platform: str, action: str) -> Path:
    """A copy of Pipe's artifact whose kernel 'add' first runs ``action`` (Python source)."""
    art = tmp_path / "sabotaged"
    shutil.copytree(_compiled(Pipe, platform).artifact_dir(), art)
    source = art / "kernels" / "add.py"
    source.write_text(source.read_text() + (
        "\n_generated_make = make\n\n"
        "def make(bind):\n"
        "    kernel = _generated_make(bind)\n"
        "    def sabotaged(*args):\n"
        f"        {action}\n"
        "        return kernel(*args)\n"
        "    return sabotaged\n"
    ))
    return art


def _data(seed=3):
    rng = np.random.default_rng(seed)
    x, y, acc = rng.standard_normal((3, M, N), dtype=np.float32)
    return x, y, np.full((M, N), 9.0, np.float32), acc


@pytest.fixture(scope="module")
def runtime():
    rt = IsolatedRuntime()
    yield rt
    rt.close()


# -- deadline ---------------------------------------------------------------------------


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_deadline_fires_in_the_block_and_restores_handler_and_timer():
    def mine(signum, frame):
        raise AssertionError("the previous handler must not run")

    old = signal.signal(signal.SIGALRM, mine)
    try:
        start = time.monotonic()
        with pytest.raises(RunTimedOut) as info, deadline(0.1, "'K' on a5sim", runtime="sim"):
            _busy(5)
        assert 0.09 < time.monotonic() - start < 2
        assert info.value.failure_class == "runtime-error" and info.value.runtime == "sim"
        assert info.value.message == (
            "'K' on a5sim: timed out, still running after 0.1 s (--pypto-timeout 0.1)")
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        with deadline(0.5, "quick"):
            pass  # a block that ends in time raises nothing
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, old)


def test_an_inner_deadline_gives_back_the_rest_of_the_outer_one():
    with deadline(5, "outer"):
        with pytest.raises(RunTimedOut, match="inner: timed out"), deadline(0.05, "inner"):
            _busy(5)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 4 < left <= 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_outer_deadline_fires_inside_a_longer_inner_one():
    with pytest.raises(RunTimedOut, match="outer: timed out"), deadline(0.1, "outer"):
        with deadline(5, "inner"):
            _busy(5)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_deadline_is_a_no_op_off_the_main_thread_and_without_seconds():
    done = []

    def work():
        with deadline(0.01, "threaded"):
            time.sleep(0.1)
        done.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert done == [True]
    with deadline(None, "unlimited"):
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with pytest.raises(ValueError, match="must be > 0"), deadline(0, "zero"):
        pass


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_looping_forever_times_out_at_its_loop_in_process(platform):
    a = np.ones((M, N), np.float32)
    c = np.full((M, N), 5.0, np.float32)
    cfg = RunConfig(platform=platform)
    compiled = _compiled(Spin, platform)  # compiled before the clock starts
    with pytest.raises(RunTimedOut) as info, deadline(0.3, f"'Spin' on {platform}"):
        Worker(platform).run(compiled, a, 1, c, config=cfg)
    assert _in_the_loop(info.value.span), info.value.span
    assert "timed out, still running after 0.3 s" in str(info.value)
    assert (c == 5.0).all()  # a failed run writes nothing


# -- the isolated runtime -----------------------------------------------------------------


def test_the_isolated_runtime_conforms_to_the_protocol(runtime):
    assert protocol_problems(runtime) == []
    assert runtime.name == "isolated" and runtime.platforms == ("a2a3sim", "a5sim")
    assert runtime.version == pytest_pypto.__version__


@pytest.mark.parametrize("platform", PLATFORMS)
def test_isolated_matches_numpy_and_the_in_process_worker(runtime, platform):
    x, y, out, acc = _data()
    x0, y0, acc0 = x.copy(), y.copy(), acc.copy()
    run = runtime.execute(_compiled(Pipe, platform), (x, y, out, acc),
                          config=RunConfig(platform=platform))
    want = x0 + y0
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(acc, acc0 + want)
    np.testing.assert_array_equal(x, x0)  # In never written
    np.testing.assert_array_equal(y, y0)
    assert run.platform == platform
    assert run.outputs["out"] is out and run.outputs["acc"] is acc and run["acc"] is acc
    assert run.returns[0] is out and run.returns[1] is acc
    assert [t["kernel"] for t in run.tasks] == ["add", "accumulate"]
    assert run.deps()["tasks"] == run.tasks and run.deps_path().is_file()
    assert run.child_pid != __import__("os").getpid()

    same = [a.copy() for a in _data()]
    here = Worker(platform).run(_compiled(Pipe, platform), *same,
                                config=RunConfig(platform=platform))
    np.testing.assert_array_equal(same[2], out)
    np.testing.assert_array_equal(same[3], acc)
    assert [(t["kernel"], t["deps"]) for t in here.tasks] == [
        (t["kernel"], t["deps"]) for t in run.tasks]


def test_outputs_in_starts_pure_outs_with_the_caller_data(runtime):
    """A kernel that reads nothing of its Out still gets the caller's buffer with
    outputs_in; the isolated runtime must send it (not a blank)."""
    x, y, out, acc = _data()
    run = runtime.execute(_compiled(Pipe, "a5sim"), (x, y, out, acc),
                          config=RunConfig(platform="a5sim"), outputs_in=True)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_error_in_the_child_comes_back_as_raised_and_writes_nothing(runtime, platform):
    x, y, out, acc = _data()
    cfg = RunConfig(platform=platform)
    with pytest.raises(SimulationError) as here:
        Worker(platform).run(_compiled(Pipe, platform), x, y, out, config=cfg)
    with pytest.raises(SimulationError) as there:
        runtime.execute(_compiled(Pipe, platform), (x, y, out), config=cfg)
    assert type(there.value) is type(here.value)
    assert there.value.message == here.value.message
    assert there.value.span == here.value.span and there.value.span is not None
    assert there.value.hint == here.value.hint
    pid = runtime.child_pid
    run = runtime.execute(_compiled(Pipe, platform), (x, y, out, acc), config=cfg)
    assert runtime.child_pid == pid  # an ordinary error keeps the child


def test_a_python_exception_in_a_kernel_keeps_its_class_and_the_child(runtime, tmp_path):
    art = _sabotaged(tmp_path, "a2a3sim", "raise ValueError('kernel refused')")
    x, y, out, acc = _data()
    before = acc.copy()
    with pytest.raises(ValueError, match="kernel refused") as info:
        runtime.execute(art, (x, y, out, acc), config=RunConfig(platform="a2a3sim"))
    assert any("child process" in note for note in info.value.__notes__)
    assert (out == 9.0).all() and (acc == before).all()
    pid = runtime.child_pid
    runtime.execute(_compiled(Pipe, "a2a3sim"), (x, y, out, acc),
                    config=RunConfig(platform="a2a3sim"))
    assert runtime.child_pid == pid
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize(
    ("action", "how"),
    [
        ("import os; os._exit(3)", "exited with code 3"),
        ("import os; os.abort()", "killed by signal SIGABRT"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "killed by signal SIGSEGV"),
    ],
    ids=["exit", "abort", "segv"],
)
def test_a_dying_child_fails_the_run_names_the_kernel_and_is_replaced(
    runtime, tmp_path, action, how
):
    art = _sabotaged(tmp_path, "a5sim", action)
    x, y, out, acc = _data()
    before = acc.copy()
    cfg = RunConfig(platform="a5sim")
    runtime.execute(_compiled(Pipe, "a5sim"), (x, y, out, acc.copy()), config=cfg)
    started, pid = runtime.children_started, runtime.child_pid
    with pytest.raises(RuntimeFailure) as info:
        runtime.execute(art, (x, y, out, acc), config=cfg)
    failure = info.value
    assert failure.failure_class == "runtime-error" and failure.runtime == "isolated"
    assert how in failure.message
    assert "while running kernel 'add'" in failure.message
    assert failure.span.file == __file__ and failure.span.line == _line_of("# first of add")
    if "signal" in how:  # the child's Python stack at the signal, from faulthandler
        assert "kernels/add.py" in failure.notes[0] and "in sabotaged" in failure.notes[0]
    assert (acc == before).all()
    run = runtime.execute(_compiled(Pipe, "a5sim"), (x, y, out, acc), config=cfg)
    assert runtime.children_started == started + 1 and runtime.child_pid != pid
    np.testing.assert_array_equal(acc, before + (x + y))


def test_memory_exhaustion_in_the_child_is_a_runtime_error(runtime, tmp_path):
    art = _sabotaged(tmp_path, "a2a3sim", "raise MemoryError()")
    x, y, out, acc = _data()
    with pytest.raises(RuntimeFailure, match="ran out of memory"):
        runtime.execute(art, (x, y, out, acc), config=RunConfig(platform="a2a3sim"))
    assert runtime.child_pid is None  # discarded: the next run starts a fresh child


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_hang_in_the_child_times_out_at_the_loop_and_the_next_run_works(runtime, platform):
    a = np.ones((M, N), np.float32)
    c = np.full((M, N), 5.0, np.float32)
    cfg = RunConfig(platform=platform, timeout=0.3)
    with pytest.raises(RunTimedOut) as info:
        runtime.execute(_compiled(Spin, platform), (a, 1, c), config=cfg)
    assert "timed out, still running after 0.3 s" in info.value.message
    assert _in_the_loop(info.value.span), info.value.span
    assert (c == 5.0).all()
    runtime.execute(_compiled(Spin, platform), (a, 0, c), config=cfg)
    assert (c == 1.0).all()


def test_a_child_stuck_in_native_code_is_killed_after_the_grace(runtime, tmp_path,
                                                                 monkeypatch):
    # SIGALRM blocked: the child's own alarm cannot stop it, as in a C call that never returns
    # (the grace is cut from its generous 2 s: this child never answers, however long)
    monkeypatch.setattr(isolated, "_grace", lambda timeout: 0.3)
    art = _sabotaged(
        tmp_path, "a5sim",
        "import signal, time; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM}); "
        "time.sleep(30)",
    )
    x, y, out, acc = _data()
    start = time.monotonic()
    with pytest.raises(RunTimedOut) as info:
        runtime.execute(art, (x, y, out, acc), config=RunConfig(platform="a5sim", timeout=0.2))
    assert time.monotonic() - start < 5
    assert "timed out after 0.2 s" in info.value.message and "killed" in info.value.message
    assert "while running kernel 'add'" in info.value.message
    assert runtime.child_pid is None


@pytest.mark.parametrize(("compiled_for", "run_on"), [("a5sim", "a2a3sim"), ("a5sim", "a5")])
def test_other_platforms_are_refused_naming_them(runtime, compiled_for, run_on):
    x, y, out, acc = _data()
    with pytest.raises(RuntimeFailure) as info:
        runtime.execute(_compiled(Pipe, compiled_for), (x, y, out, acc),
                        config=RunConfig(platform=run_on))
    assert f"'{run_on}'" in info.value.message and info.value.runtime == "isolated"


def test_warnings_of_the_child_reach_the_caller(runtime, tmp_path):
    art = _sabotaged(tmp_path, "a2a3sim", "import warnings; warnings.warn('from the kernel')")
    x, y, out, acc = _data()
    with pytest.warns(UserWarning, match="from the kernel"):
        runtime.execute(art, (x, y, out, acc), config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x + y)


def test_close_stops_the_child_and_is_idempotent():
    rt = IsolatedRuntime()
    x, y, out, acc = _data()
    rt.execute(_compiled(Pipe, "a2a3sim"), (x, y, out, acc), config=RunConfig(platform="a2a3sim"))
    process = rt._child.process
    rt.close()
    rt.close()
    assert not process.is_alive() and rt.child_pid is None


class _Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("cannot travel")
        self.callback = lambda: None


def test_an_exception_that_cannot_be_pickled_travels_as_text():
    try:
        raise _Unpicklable()
    except _Unpicklable as exc:
        back = unpack_exception(pack_exception(exc))
    assert isinstance(back, RuntimeFailure)
    assert "_Unpicklable in the isolated runtime's child process: cannot travel" in back.message
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(_Unpicklable())  # the premise: this one cannot travel pickled


def test_arguments_that_cannot_travel_are_refused_before_the_child_sees_them(runtime):
    x, y, out, acc = _data()
    runtime.execute(_compiled(Pipe, "a5sim"), (x, y, out, acc), config=RunConfig(platform="a5sim"))
    pid = runtime.child_pid
    with pytest.raises(RuntimeFailure, match="cannot be sent to the isolated child"):
        runtime.execute(_compiled(Pipe, "a5sim"), (x, y, out, lambda: 0),
                        config=RunConfig(platform="a5sim"))
    assert runtime.child_pid == pid
