"""Stand-ins for PyPTO features the bundled toolchain leaves out (docs/design/language.md §22, Tier
3).

Such a name must import (a test file that merely imports it still collects) and
fail only when *used*, with the designed error instead of an AttributeError.

A name PyPTO defines as a class gets a class here too (`tier3_class`): ``isinstance``,
``issubclass`` and ``except`` with it work and simply never match, while constructing
it, or reading one of its public attributes, raises.  Functions and module objects get
a `Tier3Name`.  The lint check ``compat-classes`` (lint/compat_checks.py) keeps every
compat name PyPTO defines as a class a class here.
"""

from __future__ import annotations

import abc
from typing import Any, NoReturn

from pytest_pypto.ir.errors import UnsupportedFeatureError

__all__ = ["Tier3Name", "tier3_class", "tier3_name", "unsupported"]


def unsupported(name: str, reason: str) -> UnsupportedFeatureError:
    """The designed error for using ``pypto.<name>`` (``reason``: its Tier-3 feature)."""
    return UnsupportedFeatureError(
        f"pypto.{name} is not supported by the bundled toolchain (tier 3: {reason})"
    )


class Tier3Name:
    """An importable stand-in: calling it, or reading an attribute, raises."""

    def __init__(self, name: str, reason: str) -> None:
        self._name = name
        self._reason = reason

    def _raise(self) -> NoReturn:
        raise unsupported(self._name, self._reason)

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


class _Tier3Meta(abc.ABCMeta):
    """The metaclass of `tier3_class` classes: a public class attribute raises (an
    ABCMeta, so a stand-in may derive from an abstract base such as a worker's)."""

    def __getattr__(cls, attr: str) -> Any:  # only for names the class does not have
        if attr.startswith("_"):
            raise AttributeError(attr)
        raise unsupported(f"{cls._tier3_name}.{attr}", cls._tier3_reason)

    def __repr__(cls) -> str:
        return f"<class pypto.{cls._tier3_name}: not supported by the bundled toolchain (tier 3)>"


def tier3_class(name: str, reason: str, *, base: type = object) -> type:
    """A class standing in for PyPTO's class ``pypto.<name>``: no instance can be made
    (construction raises the designed error), so ``isinstance`` is always False; pass
    ``base=Exception`` (or a subclass) for an error class, so ``except`` with it works."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> NoReturn:
        raise unsupported(name, reason)

    namespace = {
        "__new__": __new__,
        "__doc__": f"pypto.{name}: not supported by the bundled toolchain (tier 3: {reason}).",
        "__module__": f"pytest_pypto.compat.pypto.{name.rpartition('.')[0]}".rstrip("."),
        "_tier3_name": name,
        "_tier3_reason": reason,
    }
    return _Tier3Meta(name.rpartition(".")[2], (base,), namespace)
