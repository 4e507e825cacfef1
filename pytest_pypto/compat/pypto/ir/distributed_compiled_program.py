"""``pypto.ir.distributed_compiled_program``: multi-chip programs on simulated devices
(docs/design/distributed.md §2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.harness.distributed import DistributedRun
from pytest_pypto.language.distributed_host import HostProgram

__all__ = ["DistributedCompiledProgram", "DistributedConfig"]


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

    def __init__(self, program: Any, host: HostProgram, platform: str,
                 distributed_config: DistributedConfig, *, shuffle: int | None = None,
                 output_dir: Any = None) -> None:
        self.program = program
        self.host = host
        self.platform = platform
        self.distributed_config = distributed_config
        self.shuffle = shuffle
        self.output_dir = output_dir
        self._compiled: dict[str, Any] = {}

    @property
    def device_ids(self) -> list[int]:
        return list(self.distributed_config.device_ids)

    def prepare(self) -> DistributedCompiledProgram:
        """PyPTO's explicit preparation step: nothing to set up on a sim."""
        return self

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        platform = getattr(config, "platform", None) or self.platform
        run = DistributedRun(self.program, self.host, platform, self.device_ids,
                             shuffle=self.shuffle, compiled=self._compiled)
        return run(*args)

    def __repr__(self) -> str:
        return (f"<DistributedCompiledProgram {self.program.name} on "
                f"{len(self.device_ids)} device(s), {self.platform}>")
