"""``pypto.pypto_core.passes.l0_tile_chooser``: PyPTO's names for the AutoL0 tile chooser.

The chooser itself is `pytest_pypto.compiler.l0_chooser` (docs/design/checks.md §7a); this
module only gives it PyPTO's spellings.
"""

from pytest_pypto.compiler.l0_chooser import (
    L0TileConfig,
    L0TileResult,
    Stationarity,
    choose_l0_tile,
)

__all__ = ["L0TileConfig", "L0TileResult", "Stationarity", "choose_l0_tile"]
