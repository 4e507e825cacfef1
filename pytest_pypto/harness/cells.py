"""Cells: which tests run per platform, and why a cell of a test is skipped.

A test that requests a platform-bound fixture gets one item per requested cell
(id = platform string).  Markers narrow the cells a test makes sense on; a cell
outside them is skipped with a reason that says which marker and why, never
silently deselected.  Onboard cells also skip when this host has no NPU or no
onboard runtime (never under ``--pypto-codegen-only``, which runs nothing: there the
session's ``onboard_missing`` is None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from pytest_pypto.arch import ARCH_CHOICES, PLATFORMS, ExecutionMode, parse_platform

# Fixtures whose value depends on the cell; requesting any of them multiplies the test.
# Add a fixture here when it becomes platform-bound.  A fixture that *requests* one of
# these is platform-bound through its closure and needs no entry.  Another plugin's
# fixtures are deliberately absent (a suite may have its own fixture of the same name,
# which must not be multiplied per cell); such a plugin names its fixtures at configure
# time instead (`naming_fixtures` of `cell_of`, plugin/cells.py).
PLATFORM_BOUND_FIXTURES: tuple[str, ...] = (
    "pypto_config",
    "pypto_runner",
    "pypto_platform",
    "pypto_device",
)

# The fixture that carries the cell; parametrized indirectly.
CELL_FIXTURE = "pypto_platform"
CELL_PROPERTY = "pypto_platform"
# The user property of a test on an emulated onboard cell (--pypto-emulate-onboard): its
# label, `emulated_label`; the id spelling of an emulated cell ends in `EMULATED_ID`.
EMULATED_PROPERTY = "pypto_emulated"
EMULATED_ID = "-emulated"

ONBOARD_MARKER_REASON = "needs an NPU: runs only with --pypto-mode onboard"
SIM_MARKER_REASON = "simulator only (pypto_sim): runs only with --pypto-mode sim"

MARKERS: tuple[tuple[str, str], ...] = (
    (
        "pypto_arch(*archs)",
        f"the test only makes sense on these architectures ({', '.join(ARCH_CHOICES)}); "
        "other cells are skipped",
    ),
    ("pypto_onboard", "needs real hardware; skipped on simulator cells"),
    ("pypto_sim", "simulator only (e.g. inspects simulator traces); skipped on onboard cells"),
    (
        "platforms(*platforms)",
        "PyPTO migration alias: the platform strings the test supports "
        f"({', '.join(PLATFORMS)}); other cells are skipped",
    ),
    (
        "pypto_requires(specifier)",
        "a PEP 440 version specifier (e.g. '>=0.4,<0.6') the cell's runtime must satisfy; "
        "cells whose runtime version does not are skipped",
    ),
    (
        "pypto_isolate",
        "on sim cells, run this test's kernels in a child process (runtime 'isolated'): "
        "a crash or hang fails only this test (--pypto-isolate for one test)",
    ),
)

__all__ = [
    "CELL_FIXTURE",
    "EMULATED_ID",
    "EMULATED_PROPERTY",
    "MARKERS",
    "ONBOARD_MARKER_REASON",
    "PLATFORM_BOUND_FIXTURES",
    "PLATFORM_PARAMETER",
    "Constraints",
    "cell_of",
    "chooses_own_cells",
    "constraints_of",
    "emulated_label",
    "item_skip_reason",
    "needs_cells",
    "requires_of",
    "requires_skip_reason",
    "skip_reason",
]


# Markers that take no arguments (a given argument would be ignored: an error instead).
_NO_ARGUMENTS = ("pypto_onboard", "pypto_sim", "pypto_isolate")

# The parameter a test may name its cell by instead of the cell fixture.
PLATFORM_PARAMETER = "platform"


def cell_of(
    params: dict[str, object],
    fixturenames: Iterable[str] = (),
    naming_fixtures: Iterable[str] = (),
) -> str | None:
    """The cell of a collected item: its cell parameter, or a ``platform`` parameter
    naming a platform in a test that runs kernels (one using a platform-bound fixture,
    or one of ``naming_fixtures``, the kernel fixtures other plugins registered), so
    markers, onboard skips and the ledger treat both alike."""
    cell = params.get(CELL_FIXTURE)
    names = set(fixturenames)
    if cell is None and any(n in names for n in (*PLATFORM_BOUND_FIXTURES, *naming_fixtures)):
        cell = params.get(PLATFORM_PARAMETER)
    return cell if isinstance(cell, str) and cell in PLATFORMS else None


def emulated_label(cell: str) -> str:
    """How reports name an onboard cell run on the simulator: ``a5 (emulated)``."""
    return f"{cell} (emulated)"


def needs_cells(fixturenames: Iterable[str]) -> bool:
    """Whether a test's fixture closure includes a platform-bound fixture."""
    names = set(fixturenames)
    return any(name in names for name in PLATFORM_BOUND_FIXTURES)


def chooses_own_cells(definition: Any) -> bool:
    """Whether the test parametrizes the cell fixture itself (then the plugin does not)."""
    for mark in definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if CELL_FIXTURE in names:
            return True
    return False


def _names(marker_args: Sequence[object]) -> list[object]:
    """Marker args may be given spread out or as one list/tuple."""
    out: list[object] = []
    for arg in marker_args:
        if isinstance(arg, (list, tuple, set, frozenset)):
            out.extend(arg)
        else:
            out.append(arg)
    return out


class Constraints(NamedTuple):
    """What a test's markers allow.  None = no constraint on that axis."""

    archs: tuple[str, ...] | None = None
    platforms: tuple[str, ...] | None = None
    onboard: bool = False
    sim: bool = False


def constraints_of(node: object) -> Constraints:
    """Read and validate the pypto markers of a test; ValueError explains a bad one.

    ``node`` is anything with ``iter_markers`` (an item or a function definition).
    Stacked markers of the same kind intersect.
    """
    archs: set[str] | None = None
    for mark in node.iter_markers("pypto_arch"):  # type: ignore[attr-defined]
        given = _names(mark.args)
        if not given:
            raise ValueError("@pytest.mark.pypto_arch needs at least one architecture")
        bad = [a for a in given if a not in ARCH_CHOICES]
        if bad:
            raise ValueError(
                f"@pytest.mark.pypto_arch({bad[0]!r}): unknown architecture; "
                f"valid are {', '.join(ARCH_CHOICES)}"
            )
        archs = set(given) if archs is None else archs & set(given)
    platforms: set[str] | None = None
    for mark in node.iter_markers("platforms"):  # type: ignore[attr-defined]
        given = _names(mark.args)
        if not given:
            raise ValueError("@pytest.mark.platforms needs at least one platform string")
        for p in given:
            try:
                parse_platform(p)  # type: ignore[arg-type]
            except ValueError as exc:
                raise ValueError(f"@pytest.mark.platforms: {exc}") from None
        platforms = set(given) if platforms is None else platforms & set(given)  # type: ignore[arg-type]
    for name in _NO_ARGUMENTS:
        for mark in node.iter_markers(name):  # type: ignore[attr-defined]
            if mark.args or mark.kwargs:
                given = [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
                raise ValueError(
                    f"@pytest.mark.{name} takes no arguments, but got ({', '.join(given)}); "
                    f"write @pytest.mark.{name}"
                )
    onboard = node.get_closest_marker("pypto_onboard") is not None  # type: ignore[attr-defined]
    sim = node.get_closest_marker("pypto_sim") is not None  # type: ignore[attr-defined]
    if onboard and sim:
        raise ValueError("a test cannot be both @pytest.mark.pypto_onboard and pypto_sim")
    return Constraints(
        archs=tuple(a for a in ARCH_CHOICES if a in archs) if archs is not None else None,
        platforms=tuple(p for p in PLATFORMS if p in platforms) if platforms is not None else None,
        onboard=onboard,
        sim=sim,
    )


def requires_of(node: object) -> Any:
    """The `SpecifierSet` of a test's ``pypto_requires`` markers (stacked ones
    intersect), None without one; ValueError explains a bad specifier."""
    marks = list(node.iter_markers("pypto_requires"))  # type: ignore[attr-defined]
    if not marks:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # lazy: plugin import cost

    combined = SpecifierSet()
    for mark in marks:
        if len(mark.args) != 1 or not isinstance(mark.args[0], str) or mark.kwargs:
            raise ValueError(
                "@pytest.mark.pypto_requires takes one version specifier string, "
                "e.g. pypto_requires('>=0.4,<0.6')"
            )
        try:
            combined &= SpecifierSet(mark.args[0])
        except InvalidSpecifier:
            raise ValueError(
                f"@pytest.mark.pypto_requires({mark.args[0]!r}): not a PEP 440 version "
                f"specifier; write e.g. '>=0.4,<0.6' or '==1.2.*'"
            ) from None
    return combined


def requires_skip_reason(node: object, runtime: str, version: str, cell: str) -> str | None:
    """Why ``pypto_requires`` rules out a cell whose runtime is ``runtime`` ``version``
    (the specifiers as the test spells them)."""
    specifier = requires_of(node)
    if specifier is None or specifier.contains(version, prereleases=True):
        return None
    spelled = ", ".join(
        f"pypto_requires({m.args[0]!r})" for m in node.iter_markers("pypto_requires")  # type: ignore[attr-defined]
    )
    return f"cell {cell} runs on runtime {runtime} {version}, which does not satisfy {spelled}"


def marker_skip_reason(constraints: Constraints, cell: str) -> str | None:
    """Why the markers rule out this cell (None when they allow it)."""
    backend, mode = parse_platform(cell)
    if constraints.archs is not None and backend.arch_name not in constraints.archs:
        return (
            f"runs only on {', '.join(constraints.archs)} (pypto_arch marker), "
            f"not on {backend.arch_name} (cell {cell})"
        )
    if constraints.platforms is not None and cell not in constraints.platforms:
        return (
            f"supports only {', '.join(constraints.platforms)} (platforms marker), not cell {cell}"
        )
    if constraints.onboard and mode is ExecutionMode.SIM:
        return ONBOARD_MARKER_REASON
    if constraints.sim and mode is not ExecutionMode.SIM:
        return SIM_MARKER_REASON
    return None


def skip_reason(
    constraints: Constraints,
    cells: Sequence[str],
    onboard_missing: str | None,
) -> str | None:
    """Why an item over ``cells`` should skip (None = run it).

    A cell item passes one cell.  A test without platform-bound fixtures passes all
    requested cells and runs when any of them satisfies its markers.
    ``onboard_missing`` is what this host lacks for onboard cells (or None).
    """
    reasons: list[str] = []
    for cell in cells:
        reason = marker_skip_reason(constraints, cell)
        if reason is None and parse_platform(cell)[1] is not ExecutionMode.SIM and onboard_missing:
            reason = f"onboard cell {cell}: {onboard_missing}"
        if reason is None:
            return None
        reasons.append(reason)
    if not reasons:
        return "no cell requested"
    return reasons[0] if len(set(reasons)) == 1 else "; ".join(dict.fromkeys(reasons))


def item_skip_reason(
    node: object,
    cell: str | None,
    requested: Sequence[str],
    onboard_missing: Callable[[], str | None],
) -> str | None:
    """Why a collected item should skip (None = run it).

    ``cell`` is the item's cell, or None for a test without platform-bound fixtures;
    such a test is judged only when it carries a pypto marker, against every
    requested cell.  ``onboard_missing`` is called only when an onboard cell matters.
    """
    constraints = constraints_of(node)
    if cell is None and constraints == Constraints():
        return None
    cells = [cell] if cell is not None else list(requested)
    hardware_matters = cell is not None or constraints.onboard
    needs_onboard = any(parse_platform(c)[1] is not ExecutionMode.SIM for c in cells)
    missing = onboard_missing() if hardware_matters and needs_onboard else None
    return skip_reason(constraints, cells, missing)
