"""Admission of large cases (harness/admission.py): a large case's peak (inputs, golden)
holds the machine-wide lock, never a small one's; after its golden it stays resident
without the lock, and the next large case's peak overlaps it only when memory allows."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

from pytest_pypto import RunConfig
from pytest_pypto.harness import admission
from pytest_pypto.harness.cases import TensorSpec
from pytest_pypto.harness.runner import Runner
from pytest_pypto.harness.seeding import make_rng
from pytest_pypto.runtime.devices import user_lock_file
from ut.compat.pypto_kit import TorchAdd


@pytest.fixture(autouse=True)
def _own_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(admission, "machine_memory", lambda: 64 << 20)  # a 64 MiB machine


def _held() -> bool:
    fd = user_lock_file(admission.LOCK_NAME)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_declared_bytes_count_every_tensor_spec():
    specs = [TensorSpec("a", [1024, 1024], np.float32), TensorSpec("b", [16], np.int8)]
    assert admission.declared_bytes(specs) == 4 * 1024 * 1024 + 16
    assert admission.declared_bytes([object()]) == 0


def test_the_share_of_the_machine_decides(monkeypatch):
    assert admission.is_large(4 << 20) and not admission.is_large((4 << 20) - 1)
    monkeypatch.setattr(admission, "machine_memory", lambda: None)
    assert not admission.is_large(1 << 40)  # memory unknown: never large


class _Probe(TorchAdd):
    """TorchAdd whose golden records whether the large-case lock is held meanwhile."""

    seen: list = []

    def compute_expected(self, tensors, params=None):
        _Probe.seen.append(_held())
        super().compute_expected(tensors, params)


@pytest.mark.parametrize(("memory", "held"), [(64 << 20, False), (32 << 10, True)])
def test_the_runner_holds_the_lock_around_a_large_case(monkeypatch, memory, held):
    monkeypatch.setattr(admission, "machine_memory", lambda: memory)  # 6 KiB of tensors
    _Probe.seen = []
    result = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1)).run(
        _Probe())
    assert result.passed, result.error
    assert _Probe.seen == [held] and not _held()


def test_a_large_case_holds_the_lock_a_small_one_does_not():
    with admission.large_case(1 << 20) as held:
        assert held is False and not _held()
    with admission.large_case(16 << 20) as held:
        assert held is True and _held()
    assert not _held()  # released after the case


def test_two_large_cases_run_one_after_the_other():
    spans = []

    def case():
        with admission.large_case(16 << 20):
            start = time.monotonic()
            time.sleep(0.2)
            spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=case) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (s1, e1), (s2, e2) = sorted(spans)
    assert s2 >= e1  # the second started only after the first ended


class _GoldenFails(TorchAdd):
    def compute_expected(self, tensors, params=None):
        raise RuntimeError("golden broke")


def test_the_steps_are_called_from_execute_itself():
    """Callers that classify a failure by the step _execute called (the golden, compile,
    dispatch) still see that step with the admission lock around it."""
    runner = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1))
    with pytest.raises(RuntimeError) as info:
        runner._execute(_GoldenFails())
    names = [entry.name for entry in info.traceback]
    assert names[names.index("_execute") + 1] == "_harness_golden"


# Phases (docs/design/runtime.md §4): a large case's inputs and golden (its peak) run under
# the exclusive lock; after its golden it only stays resident, and the next large case's
# peak starts meanwhile when the machine has the memory for it.  Each case below is a real
# process; the fake machine has 64 MiB and a case declares 16 MiB (its peak needs ~48 MiB).

CASE = 16 << 20
PLENTY, SHORT = 1 << 30, 20 << 20  # fake MemAvailable values
FORK = multiprocessing.get_context("fork")


@pytest.fixture
def memory(tmp_path, monkeypatch):
    """The fake MemAvailable every process reads: write a number (or "none") to change it."""
    where = tmp_path / "available"
    where.write_text(str(PLENTY))

    def available():
        text = where.read_text()
        return None if text == "none" else int(text)

    monkeypatch.setattr(admission, "mem_available", available)
    return where


def _note(log, name, event):
    with open(log, "a") as f:
        f.write(f"{name} {event} {time.monotonic()!r}\n")


def _events(log) -> dict:
    found = {}
    if os.path.exists(log):
        for line in open(log).read().splitlines():
            name, event, when = line.split()
            found[(name, event)] = float(when)
    return found


def _case(log, name, nbytes, peak, resident):
    """One case's phases: its peak (inputs, golden) for ``peak`` s, then resident for
    ``resident`` s; each step noted in ``log``."""
    with admission.admitted(nbytes) as admitted:
        _note(log, name, "peak")
        time.sleep(peak)
        _note(log, name, "golden-done")
        admitted.peak_over()
        _note(log, name, "resident")
        time.sleep(resident)
        _note(log, name, "done")


def _start(log, name, nbytes=CASE, peak=0.3, resident=0.2):
    proc = FORK.Process(target=_case, args=(str(log), name, nbytes, peak, resident), daemon=True)
    proc.start()
    return proc


def _wait_for(log, key, timeout=10.0):
    deadline = time.monotonic() + timeout
    while key not in _events(log):
        assert time.monotonic() < deadline, f"{key} never happened: {_events(log)}"
        time.sleep(0.02)


def _finish(*procs, timeout=15.0):
    for proc in procs:
        proc.join(timeout)
        assert proc.exitcode == 0, f"a case process ended with {proc.exitcode}"


def test_two_large_cases_overlap_when_memory_allows(tmp_path, memory):
    log = tmp_path / "log"
    first = _start(log, "A", resident=1.5)
    _wait_for(log, ("A", "peak"))
    second = _start(log, "B")
    _finish(first, second)
    e = _events(log)
    assert e["B", "peak"] >= e["A", "golden-done"]  # never two peaks at once
    assert e["B", "peak"] < e["A", "done"]  # but B's peak while A is still resident


@pytest.mark.parametrize("available", [str(SHORT), "none"])  # too little, or unknown
def test_without_the_memory_the_next_waits_until_the_first_finished(tmp_path, memory, available):
    memory.write_text(available)
    log = tmp_path / "log"
    first = _start(log, "A", resident=1.0)
    _wait_for(log, ("A", "peak"))
    second = _start(log, "B")
    _finish(first, second)
    e = _events(log)
    assert e["B", "peak"] >= e["A", "done"]  # not merely after A's golden


def test_a_waiting_case_starts_once_the_memory_is_there(tmp_path, memory):
    memory.write_text(str(SHORT))
    log = tmp_path / "log"
    first = _start(log, "A", peak=0.1, resident=3.0)
    _wait_for(log, ("A", "resident"))
    second = _start(log, "B", peak=0.1, resident=0.1)
    time.sleep(0.6)
    assert ("B", "peak") not in _events(log)  # waits: A resident, memory short
    memory.write_text(str(PLENTY))
    _wait_for(log, ("B", "done"), timeout=2.0)  # polled, well before A ends
    _finish(first, second)
    e = _events(log)
    assert e["B", "done"] < e["A", "done"]


def test_two_peak_phases_never_overlap(tmp_path, memory):
    log = tmp_path / "log"
    procs = [_start(log, name, peak=0.3, resident=0.3) for name in "ABC"]
    _finish(*procs)
    e = _events(log)
    spans = sorted((e[n, "peak"], e[n, "golden-done"]) for n in "ABC")
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, spans


def test_a_resident_case_whose_process_died_no_longer_counts(tmp_path, memory):
    memory.write_text(str(SHORT))
    log = tmp_path / "log"
    first = _start(log, "A", peak=0.1, resident=60.0)
    _wait_for(log, ("A", "resident"))
    assert admission.residents() == 1
    second = _start(log, "B", peak=0.1, resident=0.1)
    time.sleep(0.6)
    assert ("B", "peak") not in _events(log)  # waits for A
    os.kill(first.pid, signal.SIGKILL)
    first.join(5)
    _wait_for(log, ("B", "done"), timeout=5.0)
    _finish(second)
    assert admission.residents() == 0


def test_a_small_case_never_waits(tmp_path, memory):
    memory.write_text(str(SHORT))
    log = tmp_path / "log"
    with admission.admitted(CASE) as large:  # this process: a large case in its peak
        assert large.large and _held() and admission.residents() == 1
        small = _start(log, "S", nbytes=1 << 20, peak=0.0, resident=0.0)
        _finish(small, timeout=5.0)
    e = _events(log)
    assert ("S", "done") in e


class _PhaseProbe(TorchAdd):
    """TorchAdd noting, in its golden and when its program is asked for (after the golden),
    whether the peak lock is held and how many large cases are resident."""

    seen: list = []

    def compute_expected(self, tensors, params=None):
        _PhaseProbe.seen.append(("golden", _held(), admission.residents()))
        super().compute_expected(tensors, params)

    def get_program(self):
        _PhaseProbe.seen.append(("program", _held(), admission.residents()))
        return super().get_program()


@pytest.mark.parametrize(("machine", "large"), [(64 << 20, False), (32 << 10, True)])
def test_the_runner_ends_the_peak_after_the_golden(monkeypatch, memory, machine, large):
    monkeypatch.setattr(admission, "machine_memory", lambda: machine)  # 6 KiB of tensors
    _PhaseProbe.seen = []
    result = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1)).run(
        _PhaseProbe())
    assert result.passed, result.error
    assert _PhaseProbe.seen == [("golden", large, int(large)), ("program", False, int(large))]
    assert not _held() and admission.residents() == 0


def test_available_memory_is_memavailable_capped_by_a_cgroup(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    600 kB\n")
    assert admission.mem_available(str(meminfo), ()) == 600 * 1024
    limit, used, unlimited = tmp_path / "max", tmp_path / "current", tmp_path / "none"
    limit.write_text(f"{300 * 1024}\n")
    used.write_text(f"{100 * 1024}\n")
    unlimited.write_text("max\n")
    cgroups = [(str(unlimited), str(used)), (str(tmp_path / "absent"), str(used))]
    assert admission.mem_available(str(meminfo), cgroups) == 600 * 1024
    cgroups.append((str(limit), str(used)))  # a container with 200 kB left under its limit
    assert admission.mem_available(str(meminfo), cgroups) == 200 * 1024
    meminfo.write_text("MemTotal:       1000 kB\n")  # an old kernel: no MemAvailable
    assert admission.mem_available(str(meminfo), ()) is None
    assert admission.mem_available(str(tmp_path / "missing"), ()) is None


def test_this_machine_reports_its_available_memory():
    available = admission.mem_available()
    assert available is not None and 0 < available <= os.sysconf("SC_PAGE_SIZE") * os.sysconf(
        "SC_PHYS_PAGES")
