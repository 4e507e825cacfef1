"""runtime.heap: the heap thresholds a simulator process runs with.

Each case runs in a fresh interpreter: the thresholds are process-wide and set once."""

from __future__ import annotations

import os
import subprocess
import sys

# Allocate and free a 48 MiB array (above glibc's own largest mmap threshold, 32 MiB,
# below ours) ten times; print the minor page faults those ten cost.
_PROBE = """
import resource, numpy as np
from pytest_pypto.runtime import heap
np._core.multiarray._set_madvise_hugepage(False)  # (4 KiB pages: the counts do not
# depend on how many huge pages the kernel has free)
tuned = heap.tune()
a = np.ones(48 << 18, np.float32); del a
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    a = np.ones(48 << 18, np.float32); del a
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _probe(env_value: str | None) -> tuple[str, int]:
    env = dict(os.environ)
    env.pop("PYPTO_HEAP_TUNE", None)
    if env_value is not None:
        env["PYPTO_HEAP_TUNE"] = env_value
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0], int(out[1])


def test_a_tuned_process_reuses_the_pages_of_a_freed_large_temporary():
    tuned, faults = _probe(None)
    untuned_flag, untuned_faults = _probe("0")
    assert (tuned, untuned_flag) == ("True", "False")
    # untuned: every 48 MiB array is a fresh mapping, faulted in page by page
    assert untuned_faults > 1000
    assert faults < untuned_faults / 20


def test_the_env_switch_turns_tuning_off_and_tune_answers_the_same_every_call():
    code = ("from pytest_pypto.runtime import heap; "
            "print(heap.tune(), heap.tune())")
    env = {**os.environ, "PYPTO_HEAP_TUNE": "off"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_simulator_worker_tunes_the_heap_when_it_is_made():
    code = ("from pytest_pypto.runtime import heap; from pytest_pypto.runtime.worker import Worker; "
            "before = dict(heap._state); Worker('a2a3sim'); print(before, heap._state)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items()
                                          if k != "PYPTO_HEAP_TUNE"}).stdout
    assert out.split() == ["{}", "{'tuned':", "True}"]
