"""The coverage ledger: per cell, how many tests passed, failed and skipped (by reason).

Built on the controller from test reports, so it is right under xdist: each item
carries its cell in ``user_properties`` (which xdist ships with every report), and
one outcome is kept per test (a failing teardown turns a pass into a failure).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.harness.cells import CELL_PROPERTY

COLUMNS: tuple[str, ...] = ("passed", "failed", "xfailed", "skipped")
EXECUTED: frozenset[str] = frozenset({"passed", "failed", "xfailed"})

__all__ = ["COLUMNS", "Ledger", "cell_of"]


def cell_of(report: Any) -> str | None:
    """The cell a report belongs to (None for tests that are not per-cell)."""
    for key, value in getattr(report, "user_properties", ()) or ():
        if key == CELL_PROPERTY:
            return str(value)
    return None


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

    def record(self, report: Any) -> None:
        """Fold one test report (setup, call or teardown) into the ledger."""
        cell = cell_of(report)
        if cell is None:
            return
        key = (cell, report.nodeid)
        if report.when == "teardown":
            if report.failed:
                self.outcomes[key] = ("failed", None)
            return
        if report.when == "setup" and report.passed:
            return
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "passed"
            self.outcomes[key] = (outcome, None)
        elif report.skipped:
            self.outcomes[key] = ("skipped", _skip_reason(report))
        else:
            self.outcomes[key] = ("failed" if report.failed else "passed", None)

    def counts(self, cell: str) -> Counter[str]:
        """Outcome counts of one cell."""
        return Counter(o for (c, _), (o, _) in self.outcomes.items() if c == cell)

    def skip_reasons(self, cell: str) -> Counter[str]:
        """Skip counts of one cell, by reason."""
        return Counter(
            r for (c, _), (o, r) in self.outcomes.items() if c == cell and o == "skipped"
        )

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

    def unmet(self, required: Sequence[str]) -> list[str]:
        """Required cells that executed no test."""
        return [cell for cell in required if not self.executed(cell)]

    def table(self, requested: Iterable[str] = ()) -> list[str]:
        """The ledger as text lines: a cell x outcome table, then skips by reason."""
        cells = self.cells(requested)
        header = ["cell", *COLUMNS]
        rows = [[c, *(str(self.counts(c)[o]) for o in COLUMNS)] for c in cells]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            "  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(r))
            for r in [header, *rows]
        ]
        for cell in cells:
            for reason, n in sorted(
                self.skip_reasons(cell).items(), key=lambda kv: (-kv[1], kv[0])
            ):
                lines.append(f"{cell}: {n} skipped: {reason}")
        return lines
