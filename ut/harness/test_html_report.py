"""pytest-html: a failed kernel test carries its heatmap, swimlane and file links, the
summary the coverage ledger; the pictures load in a real browser (docs/design/plugin.md
§20)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FAILING = """
import numpy as np
import pytest_pypto
from kcases import Add, AddCase, WrongAdd

def test_wrong(pypto_runner):
    pypto_runner.check(WrongAdd())

def test_readme(pypto_runner):           # the README's style: run, then assert_close
    x = np.full((16, 64), 1.0, np.float32)
    out = np.empty((16, 64), np.float32)
    pypto_runner.run(Add, x, x, out)
    want = x + x
    want[3, 7] = 5.0
    pytest_pypto.assert_close(out, want)

def test_right(pypto_runner):
    pypto_runner.check(AddCase())
"""


def _blob(report: Path) -> dict:
    text = report.read_text()
    m = re.search(r'data-jsonblob="([^"]*)"', text)
    assert m, "pytest-html's data blob is missing"
    return json.loads(html.unescape(m.group(1)))


def _extras(blob: dict, test: str) -> list[dict]:
    found = [r for tid, runs in blob["tests"].items() if test in tid for r in runs]
    assert found, sorted(blob["tests"])
    return [e for r in found for e in r.get("extras", [])]


@pytest.fixture
def html_run(cases: pytest.Pytester) -> tuple[pytest.Pytester, Path]:
    cases.makepyfile(test_k=FAILING)
    result = cases.runpytest("--html=out/report.html", "-p", "pytest_html")
    result.assert_outcomes(passed=1, failed=2)
    return cases, cases.path / "out" / "report.html"


def test_a_failed_kernel_test_carries_heatmap_swimlane_and_links(html_run) -> None:
    suite, report = html_run
    extras = _extras(_blob(report), "test_wrong")
    names = [e["name"] for e in extras]
    assert names == ["mismatch.png", "schedule.png", "trace.json", "deps.json"]
    kept = next((suite.path / "build_output").glob("*test_wrong*"))
    for e in extras[:2]:
        asset = report.parent / e["content"]
        assert asset.read_bytes() == (kept / e["name"]).read_bytes()  # the kept picture
    assert extras[2]["content"] == (kept / "trace.json").resolve().as_uri()
    assert _extras(_blob(report), "test_right") == []  # a passing test carries nothing
    readme = [e["name"] for e in _extras(_blob(report), "test_readme")]
    assert readme == ["mismatch.png", "schedule.png", "trace.json", "deps.json"]


def test_the_summary_holds_the_coverage_ledger(html_run) -> None:
    _, report = html_run
    blob_text = report.read_text()
    table = re.search(r'<table id="pypto-ledger">.*?</table>', html.unescape(blob_text), re.S)
    assert table, "no ledger table in the report"
    assert "<td>a2a3sim</td><td>1</td><td>2</td><td>0</td><td>0</td>" in table.group(0)


# The report's own page, plus a script that, once pytest-html's script has drawn the
# results, writes every picture's naturalWidth into the DOM (read back with --dump-dom).
PROBE = """
<script>
window.addEventListener("load", () => setTimeout(() => {
  const shown = [...document.querySelectorAll("img")].map(i => i.getAttribute("src") + "=" + i.naturalWidth);
  const blob = JSON.parse(document.getElementById("data-container").dataset.jsonblob);
  const srcs = Object.values(blob.tests).flat().flatMap(t => t.extras || [])
      .filter(e => e.format_type === "image").map(e => e.content);
  let left = srcs.length;
  const loaded = [];
  const done = () => { const p = document.createElement("pre"); p.id = "probe";
      p.textContent = JSON.stringify({shown, loaded}); document.body.appendChild(p); };
  if (!left) done();
  for (const s of srcs) { const im = new Image();
      im.onload = im.onerror = () => { loaded.push(s + "=" + im.naturalWidth); if (!--left) done(); };
      im.src = s; }
}, 500));
</script>
"""

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--no-first-run", "--disable-component-update", "--disable-sync",
)


def test_the_pictures_load_in_a_real_browser(html_run, tmp_path: Path) -> None:
    _, report = html_run
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is needed (apt-get install -y chromium; .ci/run does)"
    page = report.with_name("probe.html")  # next to the report: its assets resolve alike
    page.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         "--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    m = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert m, f"the probe never ran: {done.stderr[-2000:]}"
    probe = json.loads(html.unescape(m.group(1)))
    widths = {s.rpartition("=")[0]: int(s.rpartition("=")[2]) for s in probe["loaded"]}
    assert len(widths) == 4 and all(w > 0 for w in widths.values()), probe
    shown = [s for s in probe["shown"] if s.split("=")[0] in widths]
    assert shown and all(int(s.rpartition("=")[2]) > 0 for s in shown), probe
