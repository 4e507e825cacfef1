# SPDX-License-Identifier: Apache-2.0
"""Group tasks: an AIC and an AIV kernel run side by side, pipes between them
(docs/design/runtime.md §7).

`group_kernel` turns a Group (its member kernels and which Group argument each of
their parameters is) into one task kernel.  Running it runs each member on a thread
of its own, one thread at a time: a member runs until it finishes or waits on a
pipe, then the next member that can go on runs (AIC first, then round robin), so a
run is deterministic.  A pipe (`Pipe`, one per direction and id) holds
``slot_num`` slots (``aic/aiv_initialize_pipe``, else the arch's default): a push
waits while every slot holds a tile its consumer has not freed, a pop waits while
none was pushed.  When no member can go on, the Group is deadlocked: a
`SimulationError` names every member with what it waits for and the user's line,
instead of a hang.  The pipe ops reach their member's endpoint through
`pytest_pypto.ir.ops.cross_core.LANE`.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ops.cross_core import LANE
from pytest_pypto.runtime.graph import write_back
from pytest_pypto.runtime.loader import Kernel

__all__ = ["Pipe", "barrier_launch", "group_kernel", "run_group"]

class _Abort(BaseException):
    """Unwinds a waiting member when the Group stops (a deadlock or a peer's error)."""


class Pipe:
    """One direction of one pipe id: tiles pushed and not popped, slots in use."""

    def __init__(self, key: tuple[str, int], slots: int) -> None:
        self.key = key
        self.slots = slots
        self.queue: deque[Any] = deque()
        self.in_use = 0  # pushed and not yet freed

    def label(self) -> str:
        return f"pipe {self.key[1]} ({self.key[0]}, {self.slots} slots)"


class _Group:
    """The shared state of one Group run: the turn, the members' waits, the pipes."""

    def __init__(self, names: Sequence[str], slots: tuple[int, int]) -> None:
        self.names = list(names)
        self.default_slots = slots
        self.cond = threading.Condition()
        self.turn = -1  # the member allowed to run (-1: none)
        self.done = [False] * len(names)
        self.waiting: list[tuple[Callable[[], bool], str, str] | None] = [None] * len(names)
        self.stopped = False
        self.deadlock: list[str] | None = None
        self.failure: BaseException | None = None
        self.pipes: dict[tuple[str, int], Pipe] = {}
        self.arrived = 0  # members at the current pl.system.syncall barrier
        self.generation = 0  # barriers passed

    # -- turns (called with self.cond held) ---------------------------------------
    def pass_turn(self, i: int) -> None:
        n = len(self.names)
        if self.stopped:  # a deadlock or a failure: every member unwinds, none runs on
            self.turn = -1
            self.cond.notify_all()
            return
        for step in range(1, n + 1):
            j = (i + step) % n
            if self.done[j]:
                continue
            wait = self.waiting[j]
            if wait is None or wait[0]():
                self.turn = j
                self.cond.notify_all()
                return
        if not all(self.done):
            self.deadlock = [self._stuck(j) for j in range(n)]
            self.stopped = True
        self.turn = -1
        self.cond.notify_all()

    def _stuck(self, j: int) -> str:
        if self.done[j]:
            return f"'{self.names[j]}' has finished"
        _, what, where = self.waiting[j]  # type: ignore[misc]
        return f"'{self.names[j]}' waits at {where}: {what}"

    def wait_until(self, i: int, ready: Callable[[], bool], what: str, where: str) -> None:
        with self.cond:
            while not ready():
                self.waiting[i] = (ready, what, where)
                self.pass_turn(i)
                self.cond.wait_for(lambda: self.turn == i or self.stopped)
                if self.stopped:
                    raise _Abort
            self.waiting[i] = None

    # -- pipes -------------------------------------------------------------------
    def pipe(self, direction: str, pipe_id: int, op: str) -> Pipe:
        pipe = self.pipes.get((direction, pipe_id))
        if pipe is None:
            raise SimulationError(
                f"{op} uses pipe {pipe_id} ({direction}), which no "
                f"aic_initialize_pipe / aiv_initialize_pipe of this Group declared",
                hint=f"declare it on both sides with id={pipe_id} and a dir_mask including "
                f"{direction}",
            )
        return pipe


class _Endpoint:
    """One member's view of the Group: what its pipe ops call (ir/ops/cross_core.py)."""

    def __init__(self, group: _Group, index: int, kernel: Kernel) -> None:
        self.group = group
        self.index = index
        self.kernel = kernel

    def _where(self) -> str:
        """The user's line of the pipe op this member is running (else the kernel name)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.kernel.path:
                span = self.kernel.spans.get(frame.f_lineno)
                if span is not None:
                    return f"{span.file}:{span.line}"
            frame = frame.f_back
        return f"kernel '{self.kernel.name}'"

    def init_pipe(self, pipe_id: int, dir_mask: int, slot_num: int | None) -> None:
        both = dir_mask == 3
        g = self.group
        with g.cond:
            for bit, direction in ((1, "C2V"), (2, "V2C")):
                if dir_mask & bit and (direction, pipe_id) not in g.pipes:
                    slots = slot_num or g.default_slots[1 if both else 0]
                    g.pipes[direction, pipe_id] = Pipe((direction, pipe_id), int(slots))

    def push(self, direction: str, pipe_id: int, value: Any, op: str) -> None:
        g = self.group
        pipe = g.pipe(direction, pipe_id, op)
        g.wait_until(self.index, lambda: pipe.in_use < pipe.slots,
                     f"{op} into {pipe.label()}, every slot of which is in use", self._where())
        pipe.queue.append(value)
        pipe.in_use += 1

    def pop(self, direction: str, pipe_id: int, op: str) -> Any:
        g = self.group
        pipe = g.pipe(direction, pipe_id, op)
        g.wait_until(self.index, lambda: bool(pipe.queue),
                     f"{op} from {pipe.label()}, which is empty", self._where())
        return pipe.queue.popleft()

    def barrier(self, op: str) -> None:
        """`pl.system.syncall`: wait until every member has arrived."""
        g = self.group
        with g.cond:
            generation = g.generation
            g.arrived += 1
            if g.arrived == len(g.names):
                g.arrived = 0
                g.generation += 1
        g.wait_until(self.index, lambda: g.generation > generation,
                     f"{op}, which the other blocks of the launch never reach", self._where())

    def free(self, direction: str, pipe_id: int, op: str) -> None:
        pipe = self.group.pipe(direction, pipe_id, op)
        if pipe.in_use - len(pipe.queue) <= 0:
            raise SimulationError(
                f"{op} frees a slot of {pipe.label()}, but this kernel holds no popped tile "
                "of it",
                hint="free each popped tile once, after its pop",
            )
        pipe.in_use -= 1


def run_group(members: Sequence[tuple[Kernel, list[Any]]], slots: tuple[int, int],
              kwargs: Sequence[dict[str, Any]] | None = None,
              names: Sequence[str] | None = None) -> None:
    """Run ``members`` (kernel, call arguments; ``kwargs`` per member) side by side (the
    module docstring); ``names`` label them in a deadlock report."""
    group = _Group(list(names) if names else [k.name for k, _ in members], slots)
    group.kernels = [k for k, _ in members]  # (explicit events count AIV kernels: sync_events)
    extra = list(kwargs) if kwargs is not None else [{} for _ in members]

    def member(i: int, kernel: Kernel, args: list[Any]) -> None:
        LANE.endpoint = _Endpoint(group, i, kernel)
        try:
            with group.cond:
                group.cond.wait_for(lambda: group.turn == i or group.stopped)
            if not group.stopped:
                result = kernel.fn(*args, **extra[i])
                write_back(kernel.returns, args, result or ())
        except _Abort:
            pass
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread)
            with group.cond:
                if group.failure is None:
                    group.failure = exc
                group.stopped = True
        finally:
            LANE.endpoint = None
            with group.cond:
                group.done[i] = True
                group.pass_turn(i)

    threads = [
        threading.Thread(target=member, args=(i, k, list(a)), name=f"group-{k.name}", daemon=True)
        for i, (k, a) in enumerate(members)
    ]
    for t in threads:
        t.start()
    with group.cond:
        group.turn = 0
        group.cond.notify_all()
    for t in threads:
        t.join()
    if group.failure is not None:
        raise group.failure
    if group.deadlock is not None:
        raise SimulationError(
            "cross-core deadlock: no kernel of the group can go on; "
            + "; ".join(group.deadlock),
            hint="every pop needs a push on the same pipe id before the peer waits itself, "
            "and every push a free slot (pop and free before pushing more than slot_num tiles)",
        )


def group_kernel(name: str, func_id: int, members: Sequence[tuple[Kernel, Sequence[int]]],
                 arity: int, returns: Sequence[int], slots: tuple[int, int],
                 launch: Sequence[int] = ()) -> Kernel:
    """The task kernel of a Group: its parameters are the Group's (each described by the
    first member taking it, directions merged), running it runs `run_group`.  In a launch
    of the Group (``_launch=(i, n)``) the members at positions ``launch`` get it too."""
    names: list[str] = [""] * arity
    directions: list[str] = [""] * arity
    kinds: list[str] = [""] * arity
    dtypes: list[str] = [""] * arity
    shapes: list[tuple] = [()] * arity
    reads: list[bool] = [False] * arity
    writes: list[bool] = [False] * arity
    for k, positions in members:
        for slot, p in enumerate(positions):
            if not names[p]:
                names[p], kinds[p] = k.arg_names[slot], k.kinds[slot]
                dtypes[p], shapes[p] = k.dtypes[slot], k.shapes[slot]
                directions[p] = k.directions[slot]  # a Scalar stays one
            reads[p] |= k.directions[slot] in ("In", "InOut")
            writes[p] |= k.directions[slot] in ("Out", "InOut")
    for p in range(arity):
        if directions[p] != "Scalar" and names[p]:
            # read by one kernel and written by the other: the task both reads and writes it
            directions[p] = "InOut" if reads[p] and writes[p] else "Out" if writes[p] else "In"
    unused = [p for p in range(arity) if not names[p]]
    if unused:
        raise SimulationError(
            f"Group '{name}' has parameters at positions {unused} that none of its kernels takes"
        )

    def run(*args: Any, _launch: Any = None) -> tuple:
        extra = [{"_launch": _launch} if _launch is not None and i in launch else {}
                 for i in range(len(members))]
        run_group([(k, [args[p] for p in pos]) for k, pos in members], slots, kwargs=extra)
        return tuple(args[r] for r in returns)

    return Kernel(
        name=name, func_id=func_id, core_type="mix", fn=run, arg_names=tuple(names),
        directions=tuple(directions), kinds=tuple(kinds), dtypes=tuple(dtypes),
        shapes=tuple(shapes), returns=tuple(returns),
    )


def barrier_launch(kernel: Kernel, blocks: int, pass_block: bool) -> Kernel:
    """A `pl.spmd(blocks)` launch of a kernel holding `pl.system.syncall`, as one task whose
    blocks run side by side (each with its ``_launch``), so the barrier holds."""

    def run(*args: Any) -> tuple:
        run_group(
            [(kernel, list(args))] * blocks, (0, 0),
            kwargs=[{"_launch": (i, blocks)} if pass_block else {} for i in range(blocks)],
            names=[f"{kernel.name} block {i}" for i in range(blocks)],
        )
        return tuple(args[r] for r in kernel.returns)

    return Kernel(
        name=kernel.name, func_id=kernel.func_id, core_type=kernel.core_type, fn=run,
        arg_names=kernel.arg_names, directions=kernel.directions, kinds=kernel.kinds,
        dtypes=kernel.dtypes, shapes=kernel.shapes, returns=kernel.returns, path=kernel.path,
        spans=kernel.spans, scalars=kernel.scalars,
    )
