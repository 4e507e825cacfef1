# SPDX-License-Identifier: Apache-2.0
"""Comm domains of a multi-chip run (docs/design/distributed.md §3a).

A window buffer serves the ranks the host dispatches its windows to: `Domains`
records, per buffer, the ranks of the queued dispatches that pass one of its windows
(`Domains.bind`), and before those dispatches run seals each buffer to that group
(`Domains.seal`; a buffer every rank uses keeps serving the whole run).  A window
argument is bound as a `Slice`, made into the rank's slice of the group only when
its dispatch runs (`resolved`), since the group is known only then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ranks import WindowBuffer

__all__ = ["Domains", "Slice", "resolved"]


@dataclass
class Slice:
    """A window argument of a queued dispatch on global rank ``rank``."""

    window: Any  # harness.distributed.Window
    rank: int


def resolved(bound: list[Any]) -> list[Any]:
    """The arguments with each `Slice` made into its rank's slice of the window."""
    return [b.window.view(b.window.buffer.member(b.rank)) if isinstance(b, Slice) else b
            for b in bound]


class Domains:
    """The window buffers of the dispatches queued since the last seal, with their ranks."""

    def __init__(self, nranks: int) -> None:
        self.nranks = nranks
        self._users: dict[int, tuple[WindowBuffer, set[int]]] = {}

    def bind(self, window: Any, rank: int, call: str, position: int, where: str) -> Slice:
        """Argument ``position`` of ``call`` on ``rank`` (the host's line ``where``) is
        ``window``: checked against its buffer's size and sealed group, and recorded."""
        buf = window.buffer
        buf.check(window.shape, window.dtype.np)
        if buf.devices is not None and rank not in buf.devices:
            raise SimulationError(
                f"{call}(..., device={rank}){where}: argument {position + 1} is a window of "
                f"window buffer {buf.index}, which serves ranks "
                f"{', '.join(map(str, buf.devices))} (the ranks of its dispatches before it "
                f"was first used), not rank {rank}",
                hint="a window's comm domain is fixed once its dispatches ran: dispatch it "
                "to every rank of its group before the first host collective")
        self._users.setdefault(id(buf), (buf, set()))[1].add(rank)
        return Slice(window, rank)

    def seal(self) -> None:
        """Seal each recorded buffer to the ranks its dispatches run on."""
        users, self._users = self._users, {}
        for buf, group in users.values():
            if buf.devices is None and len(group) == self.nranks:
                continue  # every rank: it keeps serving the run
            try:
                buf.seal(sorted(group))
            except ValueError as exc:
                raise SimulationError(f"{exc}: its dispatches go to ranks "
                                      f"{', '.join(map(str, sorted(group)))}") from None

    def clear(self) -> None:
        self._users = {}
