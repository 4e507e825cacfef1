# SPDX-License-Identifier: Apache-2.0
"""Compiled multi-chip programs and their prepared runners (docs/design/distributed.md §2, §8).

`DistributedCompiledProgram` is what ``ir.compile(..., distributed_config=)`` and
``@pl.jit.host`` give: calling it runs the host orchestrator once on fresh simulated
devices (`harness.distributed.DistributedRun`); ``prepare()`` gives a `PreparedProgram`
(the PyPTO flavour's ``DistributedWorker`` subclasses it) for repeated calls with
persistent windows and resident tensors.  The names and keywords are PyPTO's, as the
DSL's are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.harness import context, subworkers
from pytest_pypto.harness.distributed import DistributedRun
from pytest_pypto.harness.distributed_dfx import RankDfx
from pytest_pypto.language import distributed_host
from pytest_pypto.language.distributed_host import HostProgram

__all__ = ["DistributedCompiledProgram", "DistributedConfig", "PreparedProgram",
           "compile_jit_host"]


@dataclass
class DistributedConfig:
    """PyPTO's ``DistributedConfig``: the devices the ranks run on (rank r on
    ``device_ids[r]``); the other fields are accepted and have no effect on a sim."""

    device_ids: list[int] = field(default_factory=list)
    num_sub_workers: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __init__(self, device_ids: Any = (), num_sub_workers: int = 0, **extra: Any) -> None:
        self.device_ids = [int(d) for d in device_ids]
        self.num_sub_workers = int(num_sub_workers)
        self.extra = extra
        if not self.device_ids:
            raise ValueError("DistributedConfig needs device_ids (at least one device)")
        if len(set(self.device_ids)) != len(self.device_ids):
            raise ValueError(f"DistributedConfig device_ids repeat a device: {self.device_ids}")


class DistributedCompiledProgram:
    """A multi-chip program ready to run: ``compiled(*args)`` runs its host orchestrator
    on ``distributed_config.device_ids``' simulated devices, in place."""

    def __init__(self, program: Any, host: HostProgram | Any, platform: str,
                 distributed_config: DistributedConfig, *, shuffle: int | None = None,
                 output_dir: Any = None) -> None:
        self.program = program
        self.host = host
        self.platform = platform
        self.distributed_config = distributed_config
        self.shuffle = shuffle
        self.output_dir = output_dir
        self._compiled: dict[str, Any] = {}
        self.last_run: DistributedRun | None = None

    # what prepare() returns; the PyPTO flavour's DistributedWorker (resident tensors)
    prepared_class: type[PreparedProgram]

    @property
    def device_ids(self) -> list[int]:
        return list(self.distributed_config.device_ids)

    def prepare(self, config: Any = None, *, persistent: bool = False,
                reset_persistent_windows: bool | None = None, **accepted: Any) -> PreparedProgram:
        """PyPTO's ``prepare()``: a runner for repeated calls (a context manager).

        ``persistent=True`` keeps the window buffers from one call to the next (zeroed
        before each call unless ``reset_persistent_windows=False``); otherwise every
        call gets fresh, zeroed windows.  ``callbacks={name: fn}`` binds SubWorkers
        (subworkers.py).  Other keywords go to the prepared class (the PyPTO flavour's
        DistributedWorker reads some); the base accepts them and they have no effect.
        """
        return self.prepared_class(self, config, persistent=persistent,
                                   reset_persistent_windows=reset_persistent_windows, **accepted)

    # what a host tensor argument of a dispatch binds as (None: itself); the PyPTO
    # flavour converts it as PyPTO's runtime does (compat distributed_runner.py)
    host_arg: Any = None

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        return self._run(args, config, None)

    def _run(self, args: tuple[Any, ...], config: Any, windows: Any,
             resident: dict[int, tuple[int, Any]] | None = None,
             callbacks: dict[str, Any] | None = None) -> Any:
        __tracebackhide__ = True
        platform = getattr(config, "platform", None) or self.platform
        name = self.program.name if self.program is not None else self.host.__name__
        host_fn = self.host.function() if isinstance(self.host, HostProgram) else self.host
        args, allocated = subworkers.return_style_args(host_fn, args)
        if callbacks is None:  # a one-shot call binds none: every SubWorker needs a body
            callbacks = subworkers.bind_callbacks([self.host], None)
        run = DistributedRun(self.program, self.host, platform, self.device_ids,
                             shuffle=self.shuffle, compiled=self._compiled, windows=windows,
                             resident=resident, dfx=RankDfx.of(config, self.output_dir, name),
                             callbacks=callbacks, host_arg=self.host_arg)
        try:
            result = run(*args)
        finally:
            self.last_run = run  # its dispatch timings (compat benchmark)
        if allocated:  # a return-style call: the outputs it allocated
            return allocated[0] if len(allocated) == 1 else tuple(allocated)
        return result

    def __repr__(self) -> str:
        name = self.program.name if self.program is not None else self.host.__name__
        return (f"<DistributedCompiledProgram {name} on "
                f"{len(self.device_ids)} device(s), {self.platform}>")


class PreparedProgram:
    """What ``DistributedCompiledProgram.prepare()`` returns: call it like the program
    (``rt(*args, config=...)``); windows persist between calls when asked.  PyPTO's
    runner surface on top (submit handles, resident tensors) is compat's
    ``DistributedWorker``."""

    def __init__(self, program: DistributedCompiledProgram, config: Any = None, *,
                 persistent: bool = False, reset_persistent_windows: bool | None = None,
                 callbacks: dict[str, Any] | None = None, **accepted: Any) -> None:
        del accepted
        self.program = program
        self.config = config
        self.closed = False
        self._windows: Any = [] if persistent else None
        self._reset = reset_persistent_windows is not False
        self._resident: dict[int, tuple[int, Any]] = {}  # see DistributedRun
        self.callbacks = subworkers.bind_callbacks(self._hosts(), callbacks)

    def _hosts(self) -> list[Any]:
        """The host programs whose SubWorkers ``callbacks`` may bind."""
        return [self.program.host]

    def __enter__(self) -> PreparedProgram:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        if self.closed:
            raise RuntimeError("the prepared program was called after close()")
        if self._windows and self._reset:
            for buf in self._windows:
                buf.zero()
        return self.program._run(args, config or self.config, self._windows, self._resident,
                                 self.callbacks)

    def close(self) -> None:
        if self._windows:
            for buf in self._windows:
                buf.release()
        self.closed = True


DistributedCompiledProgram.prepared_class = PreparedProgram


def compile_jit_host(fn: Any, args: tuple[Any, ...], config: Any) -> DistributedCompiledProgram:
    """``@pl.jit.host``'s ``compile``: the multi-chip program of a host function, on
    ``config.distributed_config``'s devices (one device without one)."""
    del args
    dist = getattr(config, "distributed_config", None) or DistributedConfig(device_ids=[0])
    platform = getattr(config, "platform", None)
    session = context.current()
    if platform is None:
        platform = session.default_config().platform if session is not None else "a2a3sim"
    shuffle = session.settings.shuffle if session is not None else None
    return DistributedCompiledProgram(None, fn, platform, dist, shuffle=shuffle)


distributed_host.COMPILE_HOST[:] = [compile_jit_host]  # @pl.jit.host compiles here
