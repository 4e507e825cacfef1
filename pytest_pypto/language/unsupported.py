# SPDX-License-Identifier: Apache-2.0
"""PyPTO spellings the bundled toolchain names but does not implement (docs/design/language.md §21,
§22).

Tier 3 constructs are recorded by the parser (decoration succeeds, compiling
raises `UnsupportedFeatureError`); Tier 2 and not-yet-built Tier 1 constructs
raise at parse time.  `@pl.jit.host` / `@pl.jit.extern` functions raise when called
(language/jit.py builds `@pl.jit`).  Either way the user
sees the construct's name, never a silent acceptance.  Also: the `pl.tile` /
`pl.tensor` op namespaces and layout markers.
"""

from __future__ import annotations

import functools
import linecache
from typing import Any

from pytest_pypto.ir.errors import UnsupportedFeatureError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.language.surface import (
    SCALAR_MINMAX,
    OpStub,
    Unsupported,
    task_dummy,
    task_invalid,
)

_TIER3_GROUPS: dict[str, tuple[str, ...]] = {}  # all built; `pl.distributed` is the module

_TIER2: dict[str, str] = {}

# Part of the language (docs/design/language.md §22) but not built in this slice of the toolchain
# yet.
_NOT_YET: dict[str, str] = {}


# Names PyPTO defines as classes: their markers are classes too (isinstance/issubclass
# with them work and never match; the compat-classes lint check keeps it so).
_CLASSES: frozenset[str] = frozenset()


class _UnsupportedClass(type, Unsupported):
    """The metaclass of a marker that is a class: the class itself is the inert
    `Unsupported` marker (indexing, attributes and calls give it back; called on a
    function, as a decorator, it returns the function), and it has no instances."""

    __repr__ = Unsupported.__repr__
    __getattr__ = Unsupported.__getattr__
    __getitem__ = Unsupported.__getitem__


def _inert_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return cls


def unsupported_class(name: str, tier: int, reason: str) -> Unsupported:
    """The marker of a PyPTO class: a class that is also an `Unsupported` marker."""
    return _UnsupportedClass(name, (), {  # type: ignore[return-value]
        "__new__": _inert_new, "__module__": "pytest_pypto.language", "name": name,
        "tier": tier, "reason": reason,
    })


def unsupported_names() -> dict[str, Unsupported]:
    """Every named-but-unsupported `pl.` attribute, as inert markers."""
    names: dict[str, Unsupported] = {}
    for reason, group in _TIER3_GROUPS.items():
        for name in group:
            make = unsupported_class if name in _CLASSES else Unsupported
            names[name] = make(name, 3, reason)
    for name, reason in _TIER2.items():
        names[name] = Unsupported(name, 2, reason)
    for name, reason in _NOT_YET.items():
        names[name] = Unsupported(name, 1, reason)
    return names


def unsupported_message(marker: Unsupported) -> str:
    """The user-facing sentence for a marker (docs/design/checks.md §11 wording)."""
    if marker.tier == 3:
        return (
            f"pl.{marker.name} is not supported by the bundled toolchain "
            f"(tier 3: {marker.reason})"
        )
    if marker.tier == 2:
        return (
            f"pl.{marker.name} is not supported by the bundled toolchain yet "
            f"(tier 2: {marker.reason})"
        )
    return f"pl.{marker.name} is not supported by the bundled toolchain yet ({marker.reason})"


class JitMarker(Unsupported):
    """`pl.jit.host` / `pl.jit.extern` (Tier 3): decorating works, calling raises.

    The base marker hands a decorated function back unchanged, which would run the
    kernel body as plain Python; here the function is wrapped so that the module
    imports and the first call names what is missing.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return JitFunction(self, args[0])
        return self  # `pl.jit(options...)`: the decorator it returns is this marker

    def __getattr__(self, name: str) -> JitMarker:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "host":
            return JitMarker(f"{self.name}.host", 3, "distributed execution")
        return JitMarker(f"{self.name}.{name}", self.tier, self.reason)


class JitFunction:
    """A function decorated by a `pl.jit` chain; calling it raises `UnsupportedFeatureError`."""

    def __init__(self, marker: JitMarker, fn: Any) -> None:
        functools.update_wrapper(self, fn)
        self.marker = marker
        self.fn = fn
        # PyPTO's specialisation cache (tests clear and inspect it); nothing is
        # specialised until the bundled toolchain builds @pl.jit, so it stays empty.
        self._cache: dict[Any, Any] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the caller's line; the message has the def's

        raise self.error(_definition_span(self.fn))

    def error(self, span: Any) -> UnsupportedFeatureError:
        """The error for calling this function, pointing at ``span`` (its definition
        when called from Python, the call's line when called from kernel code)."""
        name = getattr(self.fn, "__name__", repr(self.fn))
        return UnsupportedFeatureError(
            f"{unsupported_message(self.marker)}: the @pl.{self.marker.name} function "
            f"'{name}' cannot be called",
            span,
            hint="this program needs a PyPTO installation; mark the test @pytest.mark.pypto_onboard",
        )

    def __repr__(self) -> str:
        return f"<@pl.{self.marker.name} function {getattr(self.fn, '__name__', self.fn)!r}>"


def _definition_span(fn: Any) -> Any:
    """Where ``fn`` is defined (its first decorator's line), for the diagnostic's snippet."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    text = linecache.getline(code.co_filename, code.co_firstlineno)
    return Span(code.co_filename, code.co_firstlineno, len(text) - len(text.lstrip()) + 1)


class Layout:
    """A tensor layout marker (`pl.DN`, `pl.ND`, `pl.NZ`) in a Tensor annotation."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


class TensorLayout:
    """PyPTO's tensor layouts, `pl.TensorLayout.ND` ...; `pl.ND` is `pl.TensorLayout.ND`."""

    ND = Layout("ND")
    DN = Layout("DN")
    NZ = Layout("NZ")
    MX_A_ZZ = Layout("MX_A_ZZ")
    MX_B_NN = Layout("MX_B_NN")


class TensorView:
    """`pl.TensorView(valid_shape=..., layout=..., stride=...)` in a `pl.Tensor[...]`
    annotation: an inert record.  ``valid_shape`` is the tensor's valid region
    (docs/design/language.md §15); a row-major (`ND`) view is the only layout, and
    ``stride`` (a strided view) is not supported (language/annots.py reads it)."""

    def __init__(self, valid_shape: Any = None, layout: Any = None, stride: Any = None
                 ) -> None:
        self.valid_shape = valid_shape
        self.layout = layout
        self.stride = stride

    def __repr__(self) -> str:
        return (f"pl.TensorView(valid_shape={self.valid_shape!r}, layout={self.layout!r}, "
                f"stride={self.stride!r})")


# Names reachable under `pl.tensor.` although no registry op spells them yet: the
# parser reports them as tensor-level ops not supported by the bundled toolchain.
_TENSOR_NAMES = frozenset(
    {"read", "write", "dim", "create", "full", "slice", "reshape", "transpose", "assemble"}
)


class OpNamespace:
    """`pl.tile` / `pl.tensor` / `pl.array` / `pl.prefetch`: op stubs by name, resolved against
    the registry lazily."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace
        self._stubs: dict[str, OpStub] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._namespace == "tile" and name in ("max", "min"):
            # PyPTO's pl.tile.max / pl.tile.min are the Scalar max/min (not reductions).
            return SCALAR_MINMAX[name]
        stub = self._stubs.get(name)
        if stub is None:
            if not self._known(name):
                raise AttributeError(
                    f"pl.{self._namespace} has no op {name!r} in the bundled toolchain"
                )
            stub = self._stubs[name] = OpStub(name, self._namespace)
        return stub

    def _known(self, name: str) -> bool:
        specs = REGISTRY.by_namespace(self._namespace, name)
        if self._namespace == "array":
            return f"array.{name}" in REGISTRY
        if self._namespace == "prefetch":
            return bool(specs)
        if self._namespace == "tile":
            return any(s.level == "tile" for s in specs)
        return bool(specs) or name in _TENSOR_NAMES

    def __repr__(self) -> str:
        return f"pl.{self._namespace}"


class SystemNamespace(OpNamespace):
    """`pl.system`: `task_dummy` and `task_invalid` (explicit scheduling), the ops the
    registry spells `system.<name>` (syncall, the events, the pipes); any other name is an inert Tier 3
    marker (the parser reports it when a kernel uses it)."""

    def __init__(self) -> None:
        super().__init__("system")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "task_dummy":
            return task_dummy
        if name == "task_invalid":
            return task_invalid
        if REGISTRY.by_namespace("system", name):
            return super().__getattr__(name)
        return Unsupported(f"system.{name}", 3, "hand-written cross-core kernels")

    def _known(self, name: str) -> bool:
        return bool(REGISTRY.by_namespace("system", name))
