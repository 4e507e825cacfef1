"""`np`: numpy, loaded on the first attribute access instead of at import.

The op registry (type rules, read at parse and compile time) and the run-time value
helpers it shares with the simulator live in modules that must import without numpy:
the plugin, the parser and the compiler never compute.  Those modules use this `np`;
numpy then loads with the simulator's first compute.  Each attribute is cached on the
proxy after its first lookup, so the hot path pays one instance-dict lookup.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["np"]


class _LazyModule:
    """Imports a module on first attribute access and caches each attribute it hands out."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        object.__setattr__(self, attr, value)
        return value


np: Any = _LazyModule("numpy")
