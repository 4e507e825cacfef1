"""pytest-html, when it is installed and on (``--html``): a failed kernel test's report
carries the pictures and files its kept artifact holds (the mismatch heatmap, the
schedule swimlane, links to ``trace.json`` and ``deps.json``) as extras, and the report's
summary gets the coverage ledger as a table (docs/design/plugin.md §20).

pytest-html is never imported here unless a report is being written.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import pytest

from pytest_pypto.harness.ledger import COLUMNS
from pytest_pypto.plugin.keys import RUNNER_KEY
from pytest_pypto.plugin.ledger import labelled_cells, ledger_of

__all__ = ["PICTURES", "LINKS", "kept_extras", "ledger_html"]

# What of a kept artifact a report shows: pictures inline, files as links.
PICTURES = ("mismatch.png", "mismatch-*.png", "schedule.png")
LINKS = ("trace.json", "deps.json")


def _html_report(config: pytest.Config) -> bool:
    """Whether pytest-html writes a report in this session."""
    return config.pluginmanager.hasplugin("html") and bool(getattr(config.option, "htmlpath", None))


def kept_extras(kept: Path) -> list[dict[str, Any]]:
    """pytest-html extras of a kept artifact directory: each picture (base64, so the
    report holds it whether or not it is self-contained), then a link to each file."""
    from pytest_html import extras  # lazy: optional plugin, loaded only with --html

    out = []
    for pattern in PICTURES:
        for picture in sorted(kept.glob(pattern)):
            data = base64.b64encode(picture.read_bytes()).decode("ascii")
            out.append(extras.png(data, name=picture.name))
    for name in LINKS:
        path = kept / name
        if path.is_file():
            out.append(extras.url(path.resolve().as_uri(), name=name))
    return out


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "call" and report.failed and _html_report(item.config):
        runner = item.stash.get(RUNNER_KEY, None)
        kept = runner.keep_failure() if runner is not None else None  # a no-op once kept
        if kept is not None:
            report.extras = [*getattr(report, "extras", []), *kept_extras(Path(kept))]
    return report


def ledger_html(config: pytest.Config) -> str:
    """The coverage ledger as an HTML table (cell x outcome), then its failures by class
    and skips by reason."""
    ledger = ledger_of(config)
    if ledger is None:
        return ""
    cells = ledger.cells(labelled_cells(config))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ("cell", *COLUMNS))
    rows = "".join(
        "<tr>" + f"<td>{html.escape(cell)}</td>"
        + "".join(f"<td>{ledger.counts(cell)[o]}</td>" for o in COLUMNS) + "</tr>"
        for cell in cells
    )
    details = [line for line in ledger.table(labelled_cells(config)) if ": " in line]
    listing = "".join(f"<li>{html.escape(line)}</li>" for line in details)
    return (
        '<h2>pypto coverage ledger</h2><table id="pypto-ledger">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        + (f"<ul>{listing}</ul>" if listing else "")
    )


@pytest.hookimpl(optionalhook=True)
def pytest_html_results_summary(prefix: list, summary: list, postfix: list, session: Any) -> None:
    table = ledger_html(session.config)
    if table:
        prefix.append(table)
