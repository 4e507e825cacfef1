"""Stand-in ``pypto.runtime``: ``RunConfig`` with PyPTO's platform check."""

from __future__ import annotations

from dataclasses import dataclass

PLATFORMS = ("a2a3sim", "a2a3", "a5sim", "a5")


@dataclass
class RunConfig:
    platform: str = "a2a3sim"
    device_id: int = 0

    def __post_init__(self) -> None:
        if self.platform not in PLATFORMS:
            raise ValueError(f"Invalid platform {self.platform!r}")
