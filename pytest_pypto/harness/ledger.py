"""The coverage ledger: per cell, how many tests passed, failed (by failure class) and
skipped (by reason).

Built on the controller from test reports, so it is right under xdist: each item
carries its cell and, when it failed in the toolchain, its failure class
(``compile-error``, ``mismatch``, ``runtime-error``, ``device-error``) in
``user_properties``, which xdist ships with every report.  One outcome is kept per
test (a failing teardown turns a pass into a failure).

A test whose xdist worker died (``os._exit``, a signal, a timeout thread killing the
process) is reported by the controller itself, through ``pytest_handlecrashitem``,
with a report that carries no ``user_properties``: `Ledger.worker_crashed` labels it
with the test's cell (from the test's earlier reports, else its node id's ``[...]``
part) and the failure class ``worker-crash``, so it counts as failed for its cell.

Under ``--pypto-codegen-only`` the ledger also counts the programs and kernels
compiled per cell (`Ledger.add_compiled`, from every process: xdist workers ship
theirs at session end), one line per cell, so a CI gate shows what it checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.arch import PLATFORMS
from pytest_pypto.harness.cells import CELL_PROPERTY, EMULATED_PROPERTY, emulated_label

COLUMNS: tuple[str, ...] = ("passed", "failed", "xfailed", "skipped")
EXECUTED: frozenset[str] = frozenset({"passed", "failed", "xfailed"})
# The user property holding a failing test's failure class (recorded by the plugin,
# plugin/failures.py, from harness/failures.py failure_class_of) and the name of
# failures that are not the toolchain's.
FAILURE_PROPERTY = "pypto_failure_class"
UNCLASSIFIED = "unclassified"
# The failure class of a test whose xdist worker process died while running it.
WORKER_CRASH = "worker-crash"
# Outcomes the ledger folds; others (e.g. pytest-rerunfailures' "rerun") are not final.
_OUTCOMES = frozenset({"passed", "failed", "skipped"})

__all__ = [
    "COLUMNS",
    "FAILURE_PROPERTY",
    "UNCLASSIFIED",
    "WORKER_CRASH",
    "Ledger",
    "cell_of",
    "cell_of_nodeid",
    "failure_class_of_report",
    "unmet_lines",
]


def _property(report: Any, name: str) -> str | None:
    for key, value in getattr(report, "user_properties", ()) or ():
        if key == name:
            return str(value)
    return None


def cell_of(report: Any) -> str | None:
    """The cell a report belongs to (None for tests that are not per-cell); an emulated
    onboard cell's label (``a5 (emulated)``) for a test that ran emulated."""
    return _property(report, EMULATED_PROPERTY) or _property(report, CELL_PROPERTY)


def cell_of_nodeid(nodeid: str) -> str | None:
    """The cell named among a node id's parameter ids (``test_x[a5sim]``,
    ``test_x[3-a5sim]``); None when no id, or more than one, is a platform string."""
    name = nodeid.rpartition("::")[2]
    _, bracket, ids = name.partition("[")
    if not bracket or not ids.endswith("]"):
        return None
    found = {part for part in ids[:-1].split("-") if part in PLATFORMS}
    return found.pop() if len(found) == 1 else None


def failure_class_of_report(report: Any) -> str:
    """The failure class a failed report carries (`UNCLASSIFIED` when none)."""
    return _property(report, FAILURE_PROPERTY) or UNCLASSIFIED


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason.removeprefix("Skipped: ")


@dataclass
class Ledger:
    """Outcome per (cell, node id), folded into a table on demand."""

    outcomes: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)
    # node id -> cell, from every report that named it (a crash report names none)
    cells_by_nodeid: dict[str, str] = field(default_factory=dict)
    # --pypto-codegen-only: cell -> {(program, digest): kernels}; None: not counted
    compiled: dict[str, dict[tuple[str, str], int]] | None = None

    def add_compiled(self, entries: Iterable[Sequence[Any]]) -> None:
        """Count compiled programs, ``[platform, program, digest, kernels]`` each (see
        ``harness/codegen_only.py``); the same program on a cell counts once."""
        if self.compiled is None:
            self.compiled = {}
        for platform, program, digest, kernels in entries:
            self.compiled.setdefault(str(platform), {})[(str(program), str(digest))] = int(kernels)

    def compiled_lines(self, requested: Iterable[str] = ()) -> list[str]:
        """Per cell, ``a5: 3 kernels compiled (2 programs), 0 run`` (none when not
        counting)."""
        if self.compiled is None:
            return []
        cells = self.cells(requested)
        cells += [c for c in self.compiled if c not in cells]
        lines = []
        for cell in cells:
            programs = self.compiled.get(cell, {})
            kernels = sum(programs.values())
            lines.append(
                f"{cell}: {_plural(kernels, 'kernel')} compiled "
                f"({_plural(len(programs), 'program')}), 0 run (--pypto-codegen-only)"
            )
        return lines

    def worker_crashed(self, report: Any) -> None:
        """Label xdist's report of a test whose worker died (``pytest_handlecrashitem``)
        with the test's cell and the failure class `WORKER_CRASH`; `record` then counts
        it as failed.  The report has no ``user_properties`` of the test: the cell comes
        from the test's earlier reports (its setup report, when it reached the
        controller) or else from its node id."""
        nodeid = report.nodeid
        cell = cell_of(report) or self.cells_by_nodeid.get(nodeid) or cell_of_nodeid(nodeid)
        props = [
            (k, v)
            for k, v in getattr(report, "user_properties", ()) or ()
            if k not in (CELL_PROPERTY, FAILURE_PROPERTY)
        ]
        if cell is not None:
            props.append((CELL_PROPERTY, cell))
        props.append((FAILURE_PROPERTY, WORKER_CRASH))
        report.user_properties = props

    def record(self, report: Any) -> None:
        """Fold one test report (setup, call, teardown or a worker crash) into the ledger."""
        cell = cell_of(report)
        if cell is None or getattr(report, "outcome", None) not in _OUTCOMES:
            return
        key = (cell, report.nodeid)
        self.cells_by_nodeid[report.nodeid] = cell
        if report.when == "teardown":
            if report.failed:
                before = self.outcomes.get(key)
                if before is not None and before[0] == "failed":
                    return  # the first failure's class stands
                self.outcomes[key] = ("failed", failure_class_of_report(report))
            return
        if report.when == "setup" and report.passed:
            return
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "passed"
            self.outcomes[key] = (outcome, None)
        elif report.skipped:
            self.outcomes[key] = ("skipped", _skip_reason(report))
        elif report.failed:
            self.outcomes[key] = ("failed", failure_class_of_report(report))
        else:
            self.outcomes[key] = ("passed", None)

    def counts(self, cell: str) -> Counter[str]:
        """Outcome counts of one cell."""
        return Counter(o for (c, _), (o, _) in self.outcomes.items() if c == cell)

    def _details(self, cell: str, outcome: str) -> Counter[str]:
        return Counter(d for (c, _), (o, d) in self.outcomes.items() if c == cell and o == outcome)

    def skip_reasons(self, cell: str) -> Counter[str]:
        """Skip counts of one cell, by reason."""
        return self._details(cell, "skipped")

    def failure_classes(self, cell: str) -> Counter[str]:
        """Failure counts of one cell, by failure class (`UNCLASSIFIED` for the rest)."""
        return self._details(cell, "failed")

    def cells(self, requested: Iterable[str] = ()) -> list[str]:
        """Requested cells first, then any other cell seen in reports."""
        seen = list(dict.fromkeys(requested))
        for cell, _ in self.outcomes:
            if cell not in seen:
                seen.append(cell)
        return seen

    def executed(self, cell: str) -> int:
        """How many tests of a cell actually ran (passed, failed or xfailed)."""
        counts = self.counts(cell)
        return sum(counts[o] for o in EXECUTED)

    def unmet(self, required: Sequence[str], emulated_ok: bool = False) -> list[str]:
        """Required cells that executed no test (under --pypto-codegen-only: that
        compiled no kernel either, since nothing executes there).  Emulated runs of a
        cell count only when ``emulated_ok`` (--pypto-require-emulated)."""
        compiled = self.compiled or {}
        return [
            cell
            for cell in required
            if not self.executed(cell)
            and not compiled.get(cell)
            and not (emulated_ok and self.executed(emulated_label(cell)))
        ]

    def table(self, requested: Iterable[str] = ()) -> list[str]:
        """The ledger as text lines: a cell x outcome table, then per cell its failures
        by class and its skips by reason (most frequent first)."""
        cells = self.cells(requested)
        header = ["cell", *COLUMNS]
        rows = [[c, *(str(self.counts(c)[o]) for o in COLUMNS)] for c in cells]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            "  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(r))
            for r in [header, *rows]
        ]
        for cell in cells:
            for outcome, details in (
                ("failed", self.failure_classes(cell)),
                ("skipped", self.skip_reasons(cell)),
            ):
                for detail, n in sorted(details.items(), key=lambda kv: (-kv[1], kv[0])):
                    lines.append(f"{cell}: {n} {outcome}: {detail}")
        return lines + self.compiled_lines(requested)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def unmet_lines(
    unmet: Sequence[str], requested: Iterable[str], ledger: Ledger | None = None
) -> list[str]:
    """One report line per --pypto-require cell that executed no test, saying when the
    cell was not even requested (the usual cause) or ran only emulated."""
    requested = set(requested)
    lines = []
    for cell in unmet:
        emulated = ledger.executed(emulated_label(cell)) if ledger is not None else 0
        if emulated:
            why = f" ({emulated} ran emulated; --pypto-require-emulated counts them)"
        elif cell not in requested:
            why = " (not requested by --pypto-arch/--pypto-mode)"
        else:
            why = ""
        lines.append(f"--pypto-require: cell {cell} executed no test{why}")
    return lines
