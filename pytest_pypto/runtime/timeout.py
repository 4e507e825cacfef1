# SPDX-License-Identifier: Apache-2.0
"""`deadline`: fail a kernel run that is still going after ``--pypto-timeout`` seconds.

In-process, on the main thread of the main interpreter, the block runs under a
``SIGALRM`` interval timer whose handler raises `RunTimedOut` (a `RuntimeFailure`,
``runtime-error``)
in the frame that is running when time is up.  When that frame is a generated
kernel, the `Worker` maps it to the user's ``file:line`` like any run-time error
(``runtime/locate.py``), so a kernel looping forever is reported at its loop.

Nesting-safe: an outer timer (another ``deadline``, pytest-timeout's signal method)
keeps its own deadline; the previous handler and the remaining time of the previous
timer are restored when the block ends.  The alarm is delivered between Python
bytecodes, so a single numpy call that never returns is not interrupted; the
process-isolating runtime (``runtime/isolated.py``) kills its child for that.

Elsewhere (a non-main thread, a platform without ``SIGALRM``) ``deadline`` is a
documented no-op: signals can only be handled on the main thread, and a thread
cannot be interrupted safely.  Standard library only.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from pytest_pypto.runtime.protocol import RuntimeFailure

__all__ = ["RunTimedOut", "deadline", "timeout_message"]


class RunTimedOut(RuntimeFailure):
    """A run stopped by its ``--pypto-timeout`` deadline (failure class runtime-error)."""

_HINT = (
    "a loop whose condition never turns false (a `while` or `pl.while_` in a kernel), "
    "or a run that needs longer: raise --pypto-timeout (ini pypto_timeout, env PYPTO_TIMEOUT)"
)


def timeout_message(what: str, seconds: float) -> str:
    """The message of a run stopped by its deadline (shared with the isolated runtime)."""
    return f"{what}: timed out, still running after {seconds:g} s (--pypto-timeout {seconds:g})"


_SLACK = 1e-4  # seconds: an alarm this close to a deadline counts as due


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline(seconds: float | None, what: str, *, runtime: str = "") -> Iterator[None]:
    """Raise `RunTimedOut` inside the block when it runs longer than ``seconds``.

    ``seconds`` None: no limit.  ``what`` names the run in the message (e.g.
    ``"'Add' on a5sim"``); ``runtime`` names the runtime reporting it.  A no-op
    off the main thread (module docstring).
    """
    if seconds is None or not _can_alarm():
        yield
        return
    if not seconds > 0:
        raise ValueError(f"deadline({seconds!r}): must be > 0 seconds")
    start = time.monotonic()
    ours = start + seconds
    previous: Any = signal.getsignal(signal.SIGALRM)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    outer_due = start + outer_delay if outer_delay else None
    outer_fired = False

    def on_alarm(signum: int, frame: Any) -> None:
        nonlocal outer_fired
        now = time.monotonic()
        if now >= ours - _SLACK:
            raise RunTimedOut(timeout_message(what, seconds), runtime=runtime, hint=_HINT)
        if outer_due is not None and not outer_fired and now >= outer_due - _SLACK:
            outer_fired = True  # an outer timer came due first: its owner's alarm
            if callable(previous):
                previous(signum, frame)
        signal.setitimer(signal.ITIMER_REAL, max(ours - time.monotonic(), _SLACK))

    signal.signal(signal.SIGALRM, on_alarm)
    try:
        first = seconds if outer_due is None else min(seconds, outer_delay)
        signal.setitimer(signal.ITIMER_REAL, first)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_due is not None:
            if not outer_fired:
                left = outer_due - time.monotonic()
                signal.setitimer(signal.ITIMER_REAL, max(left, _SLACK), outer_interval)
            elif outer_interval:
                signal.setitimer(signal.ITIMER_REAL, outer_interval, outer_interval)
