"""Stand-ins for PyPTO features the bundled toolchain leaves out (docs/design/language.md §22, Tier
3).

Such a name must import (a test file that merely imports it still collects) and
fail only when *used*, with the designed error instead of an AttributeError.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pytest_pypto.ir.errors import UnsupportedFeatureError

__all__ = ["Tier3Name", "tier3_name"]


class Tier3Name:
    """An importable stand-in: calling it, or reading an attribute, raises."""

    def __init__(self, name: str, reason: str) -> None:
        self._name = name
        self._reason = reason

    def _raise(self) -> NoReturn:
        raise UnsupportedFeatureError(
            f"pypto.{self._name} is not supported by the bundled toolchain "
            f"(tier 3: {self._reason})"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._raise()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._raise()

    def __repr__(self) -> str:
        return f"<pypto.{self._name}: not supported by the bundled toolchain (tier 3)>"


def tier3_name(name: str, reason: str) -> Tier3Name:
    """The stand-in for ``pypto.<name>`` (``reason``: the Tier-3 feature it belongs to)."""
    return Tier3Name(name, reason)
