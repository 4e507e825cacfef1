"""Diagnostics of the toolchain (docs/design/checks.md §1): every error points into the user's
kernel.

Three phases, three families: `ParserError` (decoration time), `CompileError`
(per arch), `SimulationError` (run time).  `str(exc)` renders rustc-style::

    Error: <message>
      --> tests/test_softmax.py:23:13
       |
    23 |             m: pl.Tile[[64, 128], pl.FP32] = pl.row_max(t, tmp)
       |             ^
       = note: <note>
       = help: <hint>
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence

from pytest_pypto.ir.nodes import Span


def render(
    message: str,
    span: Span | None,
    *,
    hint: str | None = None,
    notes: Sequence[str] = (),
    level: str = "Error",
    source_line: str | None = None,
) -> str:
    """Render a diagnostic with its location, source snippet, notes and hint."""
    lines = [f"{level}: {message}"]
    if span is not None:
        lines.append(f"  --> {span.file}:{span.line}:{span.col}")
        text = source_line
        if text is None:
            text = linecache.getline(span.file, span.line).rstrip("\n")
        if text:
            gutter = " " * len(str(span.line))
            lines.append(f"{gutter} |")
            lines.append(f"{span.line} | {text}")
            lines.append(f"{gutter} | {' ' * max(span.col - 1, 0)}^")
    pad = " " * (len(str(span.line)) if span else 1)
    for note in notes:
        lines.append(f"{pad} = note: {note}")
    if hint:
        lines.append(f"{pad} = help: {hint}")
    return "\n".join(lines)


class PyptoError(Exception):
    """Base of toolchain errors; keeps file, line, column, hint (and arch for compile errors)."""

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        *,
        hint: str | None = None,
        notes: Sequence[str] = (),
        arch: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.notes = tuple(notes)
        self.arch = arch

    @property
    def file(self) -> str | None:
        return self.span.file if self.span else None

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.col if self.span else None

    def __str__(self) -> str:
        return render(self.message, self.span, hint=self.hint, notes=self.notes)


# Parse phase (arch-independent)
class ParserError(PyptoError):
    """Raised while `@pl.program` parses a class."""


class ParserSyntaxError(ParserError):
    """A Python construct the DSL does not have (e.g. `while`, a bare `range`)."""


class ParserTypeError(ParserError):
    """Types disagree: annotations, carried values, scalar categories, closures."""


class InvalidOperationError(ParserError):
    """An op used wrongly: operators on tiles, bad dispatch, wrong keywords."""


# Compile phase (per arch)
class CompileError(PyptoError):
    """Raised while compiling for one arch."""


class MemorySpaceError(CompileError):
    """Illegal memory space or move (docs/design/checks.md §4)."""


class ShapeError(CompileError):
    """Shape or dtype rule violated once spaces are known (docs/design/checks.md §5)."""


class BoundsError(CompileError):
    """A window reads or writes past a tensor's edge (docs/design/checks.md §6)."""


class CapacityError(CompileError):
    """Peak live bytes of a memory space exceed the arch's usable capacity (docs/design/checks.md
    §7)."""


class ArchSupportError(CompileError):
    """Op, dtype or cast not available on the arch (docs/design/checks.md §8)."""


class DirectionError(CompileError):
    """Argument directions violated (docs/design/checks.md §9)."""


class PlacementError(CompileError):
    """An op in the wrong kind of function (docs/design/checks.md §10)."""


class UnsupportedFeatureError(CompileError, NotImplementedError):
    """A Tier 3 construct: needs a real PyPTO installation (docs/design/checks.md §11)."""


# Run phase (simulator)
class SimulationError(PyptoError):
    """Raised by the simulator: dynamic bounds, dtype bindings, artifact mismatches."""


class MemoryLimitError(SimulationError):
    """A run whose simulated tensors would exceed its memory limit (RunConfig.max_memory,
    ``--pypto-max-memory``): stopped before the allocation, naming the tensor and line."""


class RaceError(SimulationError):
    """Two tasks touch overlapping elements of one tensor (at least one writing) with no
    dependency path between them, in a run that relies on explicit dependencies
    (docs/design/scheduling.md §5).  ``races`` lists each pair found."""


class PyptoWarning(UserWarning):
    """Warnings of the toolchain (rendered like errors, level 'warning')."""
