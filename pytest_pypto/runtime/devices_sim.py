# SPDX-License-Identifier: Apache-2.0
"""Simulated devices of one multi-chip run (docs/design/distributed.md §1, §4).

A `SimCluster` is the ranks of one run: their window buffers (`ir.ranks`) and a
cooperative scheduler.  `SimCluster.run` executes each rank's queued jobs (its
chip-level dispatches, in the order the host issued them) in a thread of its own,
but only one rank runs at a time: a rank runs until its jobs end or it must wait
(`block_until`, a signal wait or a barrier), then hands over to the next rank that
can make progress, in rank order after itself (a seeded order under
``--pypto-shuffle``).  A run is therefore deterministic, and when no rank can make
progress the run stops with a `DeadlockError` naming every waiting rank and what
it waits for, instead of hanging.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pytest_pypto.ir import ranks as rank_state
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.ranks import WindowBuffer
from pytest_pypto.runtime.rank_races import RankRaces

__all__ = ["DeadlockError", "SimCluster", "current_rank"]


class DeadlockError(SimulationError):
    """Every rank still running waits for something no rank will do."""


class _RankView:
    """`ir.ranks.RankContext` of one rank of a cluster (what its ops may ask)."""

    __slots__ = ("cluster", "rank", "nranks", "races")

    def __init__(self, cluster: SimCluster, rank: int) -> None:
        self.cluster = cluster
        self.rank = rank
        self.nranks = cluster.nranks
        self.races = cluster.races  # the cross-rank race detector, None when off

    def block_until(self, pred: Callable[[], bool], what: str, span: Span | None = None) -> None:
        self.cluster.block_until(pred, what, span)

    def rendezvous(self, key: Any, what: str, members: Sequence[int] | None = None) -> None:
        self.cluster.rendezvous(self.rank, key, what, members=members)


def current_rank() -> tuple[SimCluster, int] | None:
    """(cluster, rank) of the rank whose job runs in this thread (None: none)."""
    ctx = rank_state.current()
    return (ctx.cluster, ctx.rank) if isinstance(ctx, _RankView) else None


class _Rank:
    __slots__ = ("rank", "jobs", "state", "pred", "what", "span", "error")

    def __init__(self, rank: int, jobs: list[Callable[[], Any]]) -> None:
        self.rank = rank
        self.jobs = jobs
        self.state = "ready"  # ready | blocked | done
        self.pred: Callable[[], bool] | None = None
        self.what = ""
        self.span: Span | None = None
        self.error: BaseException | None = None


class SimCluster:
    """The simulated devices of one run: ``device_ids[r]`` is rank r's device."""

    def __init__(self, device_ids: Sequence[int], *, shuffle: int | None = None,
                 race_check: bool = False) -> None:
        if not device_ids:
            raise ValueError("a multi-chip run needs at least one device")
        self.device_ids = tuple(device_ids)
        self.nranks = len(self.device_ids)
        self.windows: list[WindowBuffer] = []
        self._rng = random.Random(shuffle) if shuffle is not None else None
        self._cv = threading.Condition()
        self._ranks: dict[int, _Rank] = {}
        self._turn: int | None = None
        self._deadlock: str | None = None
        self._arrivals: dict[Any, list[int]] = {}
        self.races = RankRaces(self.nranks) if race_check else None  # runtime/rank_races.py

    # ---------------------------------------------------------------- memory
    def alloc_window(self, nbytes: int) -> WindowBuffer:
        buf = WindowBuffer(nbytes, self.nranks, len(self.windows))
        self.windows.append(buf)
        return buf

    def close(self) -> None:
        """Release every window buffer of the run."""
        for buf in self.windows:
            buf.release()
        self.windows.clear()

    # ------------------------------------------------------------- execution
    def run(self, jobs: dict[int, list[Callable[[], Any]]]) -> None:
        """Run each rank's jobs in order, ranks taking turns job by job and at their
        waits; re-raise the first error of a rank (a deadlock only when no rank failed
        on its own)."""
        if not jobs:
            return
        if self.races is not None:  # the host waited for everything issued before
            jobs = self.races.begin(jobs)
        self._ranks = {r: _Rank(r, list(js)) for r, js in sorted(jobs.items())}
        self._arrivals = {}
        self._deadlock = None
        threads = [threading.Thread(target=self._body, args=(state,), daemon=True,
                                    name=f"pypto-rank-{state.rank}")
                   for state in self._ranks.values()]
        for t in threads:
            t.start()
        with self._cv:
            self._turn = self._first()
            self._cv.notify_all()
        for t in threads:
            t.join()
        states = list(self._ranks.values())
        self._ranks = {}
        own = [s.error for s in states if s.error is not None
               and not isinstance(s.error, DeadlockError)]
        if own:
            raise own[0]
        stuck = [s for s in states if isinstance(s.error, DeadlockError)]
        if stuck:
            raise _deadlock(stuck, states)
        if self.races is not None:
            self.races.report()

    def _first(self) -> int:
        ranks = list(self._ranks)
        return self._rng.choice(ranks) if self._rng is not None else ranks[0]

    def _body(self, state: _Rank) -> None:
        rank_state.set_current(_RankView(self, state.rank))
        try:
            with self._cv:
                self._cv.wait_for(lambda: self._turn == state.rank)
            for i, job in enumerate(state.jobs):
                if i:
                    self._take_turns(state)
                job()
        except BaseException as exc:  # noqa: BLE001 - handed to run()
            state.error = exc
        finally:
            rank_state.set_current(None)
            with self._cv:
                state.state = "done"
                self._hand_over(state.rank)

    def block_until(self, pred: Callable[[], bool], what: str, span: Span | None = None) -> None:
        """In a rank's job: wait until ``pred()`` holds, letting other ranks run."""
        here = current_rank()
        if here is None or here[0] is not self:
            if not pred():
                raise DeadlockError(f"{what} can never be satisfied: no other rank runs", span)
            return
        state = self._ranks[here[1]]
        if pred():
            return
        with self._cv:
            state.state, state.pred, state.what, state.span = "blocked", pred, what, span
            self._hand_over(state.rank)
            self._cv.wait_for(lambda: self._turn == state.rank or self._deadlock is not None)
            state.state, state.pred = "ready", None
            if self._turn != state.rank:
                raise DeadlockError(what, span)  # located by the worker; run() combines them

    def _take_turns(self, state: _Rank) -> None:
        """Between two dispatches of a rank: the next rank with work runs its next
        dispatch first, so ranks advance dispatch by dispatch in the host's issue order."""
        with self._cv:
            self._hand_over(state.rank)
            self._cv.wait_for(lambda: self._turn == state.rank or self._deadlock is not None)

    def rendezvous(self, rank: int, key: Any, what: str, span: Span | None = None,
                   members: Sequence[int] | None = None) -> None:
        """Rank ``rank`` arrives at its next ``key`` call; wait for every rank (of
        ``members``: a comm domain's ranks) to arrive."""
        counts = self._arrivals.setdefault(key, [0] * self.nranks)
        counts[rank] += 1
        mine = counts[rank]
        group = range(self.nranks) if members is None else tuple(members)
        self.block_until(lambda: min(counts[r] for r in group) >= mine, what, span)

    def _hand_over(self, me: int) -> None:
        """Give the turn to the next rank that can make progress (the lock is held)."""
        order = list(self._ranks)
        if self._rng is not None:
            self._rng.shuffle(order)
        else:
            i = order.index(me)
            order = order[i + 1:] + order[:i + 1]
        for r in order:
            s = self._ranks[r]
            if s.state == "ready":  # me only when ready (taking turns) and nobody else is
                self._turn = r
                break
            if s.state == "blocked" and s.pred is not None and s.pred():
                self._turn = r
                break
        else:
            waiting = [s for s in self._ranks.values() if s.state == "blocked"]
            self._turn = None
            if waiting:
                self._deadlock = "deadlock"
        self._cv.notify_all()


def _deadlock(stuck: list[_Rank], states: list[_Rank]) -> DeadlockError:
    """One error naming every rank left waiting, what it waits for and where."""
    lines = [f"deadlock: rank(s) {', '.join(str(s.rank) for s in stuck)} wait for something "
             "no rank will ever do"]
    for s in stuck:
        err = s.error
        assert isinstance(err, DeadlockError)
        where = f" (line {err.span.file}:{err.span.line})" if err.span is not None else ""
        lines.append(f"  rank {s.rank}: {err.message}{where}")
    done = [s.rank for s in states if s.error is None]
    if done:
        lines.append(f"  finished: rank(s) {', '.join(map(str, done))}")
    first = stuck[0].error
    assert isinstance(first, DeadlockError)
    return DeadlockError("\n".join(lines), first.span,
                         hint="every rank must reach the same waits, barriers and collectives; "
                         "check rank-dependent branches and which rank notifies which")
