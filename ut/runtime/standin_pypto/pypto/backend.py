"""Stand-in ``pypto.backend``: the two codegen backends."""

from __future__ import annotations

import enum


class BackendType(enum.Enum):
    Ascend910B = "910B"
    Ascend950 = "950"
