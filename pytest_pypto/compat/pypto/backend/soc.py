"""``pypto.backend``'s SoC model (``Backend910B.instance().soc`` ...), built from the arch table.

One die holding ``aic_cores`` clusters of one AIC core and ``aiv_cores // aic_cores`` AIV
cores (docs/design/arch.md §4): the counts tests derive launch sizes from.
"""

from __future__ import annotations

import enum
from functools import cache

from pytest_pypto.arch import BackendType, spec

__all__ = ["Backend", "Backend910B", "Backend950", "Cluster", "Core", "CoreType", "Die", "SoC",
           "get_backend_instance"]


class CoreType(enum.IntEnum):
    """A core's kind: VECTOR (AIV) or CUBE (AIC)."""

    VECTOR = 0
    CUBE = 1


class _Counted:
    """A part of the SoC with a ``{part: count}`` map below it."""

    def __init__(self, counts: dict) -> None:
        self._counts = counts

    def _total(self, attr: str) -> int:
        return sum(getattr(part, attr)() * k for part, k in self._counts.items())


class Core:
    def __init__(self, core_type: CoreType, mems: list | None = None) -> None:
        self.core_type = core_type
        self.mems = list(mems or ())

    def __repr__(self) -> str:
        return f"Core({self.core_type.name})"


class Cluster(_Counted):
    @property
    def core_counts(self) -> dict[Core, int]:
        return dict(self._counts)

    def total_core_count(self) -> int:
        return sum(self._counts.values())


class Die(_Counted):
    @property
    def cluster_counts(self) -> dict[Cluster, int]:
        return dict(self._counts)

    def total_cluster_count(self) -> int:
        return sum(self._counts.values())

    def total_core_count(self) -> int:
        return self._total("total_core_count")


class SoC(_Counted):
    def __init__(self, die_counts: dict[Die, int]) -> None:
        super().__init__(die_counts)

    @property
    def die_counts(self) -> dict[Die, int]:
        return dict(self._counts)

    def total_die_count(self) -> int:
        return sum(self._counts.values())

    def total_cluster_count(self) -> int:
        return self._total("total_cluster_count")

    def total_core_count(self) -> int:
        return self._total("total_core_count")


class Backend:
    """One architecture's backend: its type name and SoC model."""

    backend_type: BackendType

    def __init__(self) -> None:
        arch = spec(self.backend_type)
        per_cluster = {Core(CoreType.CUBE): 1, Core(CoreType.VECTOR): arch.aiv_cores // arch.aic_cores}
        self._soc = SoC({Die({Cluster(per_cluster): arch.aic_cores}): 1})

    @property
    def soc(self) -> SoC:
        return self._soc

    def get_type_name(self) -> str:
        return self.backend_type.value

    def get_core_count(self, core_type: CoreType) -> int:
        return sum(
            core_n * cluster_n * die_n
            for die, die_n in self._soc.die_counts.items()
            for cluster, cluster_n in die.cluster_counts.items()
            for core, core_n in cluster.core_counts.items()
            if core.core_type == core_type
        )

    @classmethod
    def instance(cls) -> Backend:
        return _instance(cls)


class Backend910B(Backend):
    backend_type = BackendType.Ascend910B


class Backend950(Backend):
    backend_type = BackendType.Ascend950


@cache
def _instance(cls: type[Backend]) -> Backend:
    return cls()


def get_backend_instance(backend_type: BackendType) -> Backend:
    """The backend object of ``backend_type``."""
    return (Backend910B if backend_type is BackendType.Ascend910B else Backend950).instance()
