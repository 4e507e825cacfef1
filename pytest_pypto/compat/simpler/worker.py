"""``simpler.worker``: the runtime worker, on the simulator (docs/design/distributed.md §8).

Level 2 (one chip): ``Worker(level=2, device_id=, platform=, runtime=)``: ``init`` /
``close``, ``register(chip_callable) -> cid``, ``run(cid, orch_args, call_config)`` (the
arguments of ``compiled.build_orch_args(..., worker=this)``; results land in them) and
``unregister(cid)``.

Level 3 (a host orchestrating chips and Python sub-workers):
``Worker(level=3, device_ids=[...], num_sub_workers=N, platform=, runtime=)``;
``register`` a chip callable or a Python function ``fn(args)`` before ``init()``;
``run(orch_fn)`` calls ``orch_fn(orch, args, config)``, whose
``orch.submit_next_level(cid, task_args, call_config, worker=k)`` queues a chip task
on chip k and ``orch.submit_sub(cid, task_args)`` a sub-worker task; the tasks run when
``orch_fn`` returns, in the order submitted (each after the tasks it depends on).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.simpler.task_interface import TaskArgs
from pytest_pypto.compat.standins import unsupported
from pytest_pypto.ir.runtime_facade import RUNTIME_NAME, ChipCallable, OrchArgs

__all__ = ["Worker"]


class Worker:
    """A runtime worker bound to one platform and runtime."""

    def __init__(self, level: int = 2, device_id: int = 0, platform: str = "a2a3sim",
                 runtime: str = RUNTIME_NAME, enable_sdma: bool = False, *,
                 device_ids: Sequence[int] | None = None, num_sub_workers: int = 0,
                 **_: Any) -> None:
        if level not in (2, 3):
            raise unsupported(f"simpler Worker(level={level})",
                              "levels above 3 (only one chip, or one host of chips, runs here)")
        self.level, self.device_id, self.platform, self.runtime = level, device_id, platform, runtime
        if device_ids is None:  # one chip; a sim run may name none (device_id=None): chip 0
            device_ids = [0 if device_id is None else device_id]
        self.device_ids = [int(d) for d in device_ids]
        if level == 3 and not self.device_ids:
            raise ValueError("simpler Worker(level=3) needs device_ids (at least one chip)")
        self.num_sub_workers = int(num_sub_workers)
        self._callables: dict[int, ChipCallable | Callable[..., Any]] = {}
        self._ids = itertools.count(1)
        self._open = False

    def init(self, **_: Any) -> None:
        self._open = True

    def close(self) -> None:
        self._callables.clear()
        self._open = False

    def _require_open(self, op: str) -> None:
        if not self._open:
            raise RuntimeError(f"simpler Worker.{op}() before init() or after close()")

    def register(self, fn: Any) -> int:
        """Register ``compiled.chip_callable`` (level 3 also: a Python sub-worker
        ``fn(args)``, before ``init()``); the id to run it by."""
        if self.level == 3:
            if self._open:
                raise RuntimeError("simpler Worker(level=3).register() after init(): chips "
                                   "and sub-workers are registered before init()")
            if not isinstance(fn, ChipCallable) and not callable(fn):
                raise TypeError(f"register() takes a chip callable or a Python function, got "
                                f"{type(fn).__name__}")
        else:
            self._require_open("register")
            if not isinstance(fn, ChipCallable):
                raise TypeError(f"register() takes compiled.chip_callable, got "
                                f"{type(fn).__name__}")
        if isinstance(fn, ChipCallable) and fn.compiled.runtime_name != self.runtime:
            raise ValueError(f"the program is compiled for runtime "
                             f"{fn.compiled.runtime_name!r}, this worker runs {self.runtime!r}")
        cid = next(self._ids)
        self._callables[cid] = fn
        return cid

    def unregister(self, cid: int) -> None:
        self._callables.pop(cid, None)

    def run(self, cid: Any, orch_args: Any = None, config: Any = None) -> None:
        """Level 2: run the registered program with ``orch_args`` (built for this
        worker).  Level 3: run the orchestration function ``cid`` (see module)."""
        self._require_open("run")
        if self.level == 3:
            orch = _Orchestrator(self)
            cid(orch, orch_args, config)
            orch.drain()
            return
        if cid not in self._callables:
            raise KeyError(f"no program registered as {cid!r} on this worker")
        callable_ = self._callables[cid]
        assert isinstance(callable_, ChipCallable)
        compiled = callable_.compiled
        if not isinstance(orch_args, OrchArgs) or orch_args.compiled is not compiled:
            raise ValueError("orch_args were not built by this program's build_orch_args")
        if orch_args.worker is not self:
            raise ValueError("orch_args were built for another worker (build_orch_args(worker=))")
        compiled(*orch_args.args, config=RunConfig(platform=self.platform))


class _Orchestrator:
    """The ``orch`` a level-3 orchestration function submits tasks to."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._tasks: list[Callable[[], None]] = []

    def _registered(self, cid: Any, op: str) -> Any:
        found = self._worker._callables.get(cid)
        if found is None:
            raise KeyError(f"orch.{op}: no callable registered as {cid!r} on this worker")
        return found

    def submit_next_level(self, cid: Any, task_args: TaskArgs, config: Any = None, *,
                          worker: int | None = None) -> None:
        """Queue chip task ``cid`` with ``task_args`` on chip ``worker``."""
        found = self._registered(cid, "submit_next_level")
        if not isinstance(found, ChipCallable):
            raise TypeError(f"orch.submit_next_level: {cid!r} is a sub-worker; submit it with "
                            "orch.submit_sub")
        chips = len(self._worker.device_ids)
        if worker is None or not 0 <= int(worker) < chips:
            raise ValueError(f"orch.submit_next_level needs worker= naming a chip, "
                             f"0..{chips - 1}, got {worker!r}")
        values = _args(task_args, "submit_next_level").values()
        platform = self._worker.platform
        self._tasks.append(lambda: found.compiled(*values, config=RunConfig(platform=platform)))

    def submit_sub(self, cid: Any, task_args: TaskArgs) -> None:
        """Queue Python sub-worker task ``cid``: it is called with the task's arguments."""
        found = self._registered(cid, "submit_sub")
        if isinstance(found, ChipCallable):
            raise TypeError(f"orch.submit_sub: {cid!r} is a chip callable; submit it with "
                            "orch.submit_next_level")
        if self._worker.num_sub_workers < 1:
            raise ValueError("orch.submit_sub: the worker has no sub-workers "
                             "(Worker(level=3, num_sub_workers=0))")
        task_args = _args(task_args, "submit_sub")
        mapped = tuple(task_args.tensor(i) for i in range(task_args.tensor_count())) \
            + tuple(task_args.scalar(i) for i in range(task_args.scalar_count()))
        self._tasks.append(lambda: found(mapped))

    def drain(self) -> None:
        """Run the queued tasks (the scope around the orchestration function ends)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task()


def _args(task_args: Any, op: str) -> TaskArgs:
    if not isinstance(task_args, TaskArgs):
        raise TypeError(f"orch.{op} takes a TaskArgs, got {type(task_args).__name__}")
    return task_args
