# SPDX-License-Identifier: Apache-2.0
"""The code in docs/tutorial.md and the README runs, so the pages cannot rot.

Every ```python block of the tutorial is one test module; they run in one pytester
session on both simulators, and the pass count must be each block's `def test_`
count times the two sim cells.  The README's kernel examples (a block with a
`@pl.program` and a test) run the same way.  Packaging facts of issue #11 (xdist is a base dependency) live here
too: they are what the README's install lines promise.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy  # noqa: F401  (loaded once here: in-process pytester runs must not reload it)
import pytest

from pytest_pypto.ir.registry import REGISTRY

# In-process pytester runs drop the modules they imported when they end; the op modules
# must stay loaded (their entries stay registered), so load them before any inner run.
assert len(REGISTRY) > 0

REPO = Path(__file__).resolve().parents[2]
SIM_CELLS = 2  # a2a3sim, a5sim under --pypto-arch all


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def run_blocks(pytester: pytest.Pytester, blocks: list[str], stem: str) -> pytest.RunResult:
    for i, block in enumerate(blocks):
        pytester.makepyfile(**{f"test_{stem}_{i}": block})
    return pytester.runpytest("--pypto-arch", "all", "-p", "no:randomly", "-q")


def test_tutorial_blocks_run_on_both_sims(pytester: pytest.Pytester) -> None:
    blocks = python_blocks(REPO / "docs" / "tutorial.md")
    assert len(blocks) == 4  # add, matmul, softmax, the two-kernel pipeline
    tests = sum(len(re.findall(r"^def test_", b, re.M)) for b in blocks)
    assert tests == 4
    result = run_blocks(pytester, blocks, "tutorial")
    result.assert_outcomes(passed=tests * SIM_CELLS)
    result.stdout.fnmatch_lines(["*a2a3sim*4*0*", "*a5sim*4*0*"])


def test_readme_example_runs_on_both_sims(pytester: pytest.Pytester) -> None:
    examples = [b for b in python_blocks(REPO / "README.md")
                if "@pl.program" in b and "def test_" in b]
    assert examples, "the README shows a kernel with its test"
    tests = sum(len(re.findall(r"^def test_", b, re.M)) for b in examples)
    result = run_blocks(pytester, examples, "readme")
    result.assert_outcomes(passed=tests * SIM_CELLS)


def test_docs_link_to_each_other() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in ("docs/tutorial.md", "docs/language.md", "docs/ops.md", "docs/arch.md"):
        assert (REPO / page).is_file(), page
        assert page in readme, f"the README points at {page}"


def test_xdist_is_a_base_dependency() -> None:
    """`pytest -n 16` after `pip install pytest-pypto` works: pytest-xdist is required
    without an extra, and the extras are torch, plot and dev (read from the installed
    metadata, outside the source tree so a stale egg-info there cannot answer)."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps(m.requires('pytest-pypto')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/").stdout
    import json

    requires = json.loads(out)
    base = [r for r in requires if "extra ==" not in r]
    assert any(r.startswith("pytest-xdist") for r in base), requires
    extras = {re.search(r'extra == "(\w+)"', r).group(1): r.split(";")[0]
              for r in requires if "extra ==" in r}
    assert extras.get("plot", "").startswith("matplotlib")
    assert {"torch", "plot", "dev"} <= set(extras)
    assert not any(r.startswith("pytest-xdist") and "extra ==" in r for r in requires)


def test_language_guide_snippets_are_python() -> None:
    """The guide's snippets are fragments of kernels: each must at least be valid Python."""
    import ast

    blocks = python_blocks(REPO / "docs" / "language.md")
    assert len(blocks) >= 3
    for block in blocks:
        ast.parse(block)
