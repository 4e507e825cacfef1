# SPDX-License-Identifier: Apache-2.0
"""One parse per file per session: every AST check of a run sees the same tree and node list.

The probe checks report what they saw as violations, so the assertions read the
session's own report: the id of the tree (the trees stay alive, so equal ids are one
object), whether `ctx.nodes` is `ast.walk`'s order, and the gc state around the run.
"""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator

import pytest
from lint_kit import project

from pytest_pypto.lint.files import FileSet
from pytest_pypto.lint.framework import FileContext

PROBES = '''\
import ast
import gc

from pytest_pypto.lint.framework import FileContext, check


def _seen(ctx):
    walked = [type(n).__name__ for n in ast.walk(ctx.tree)]
    same = walked == [type(n).__name__ for n in ctx.nodes]
    yield ctx.violation(1, f"tree={id(ctx.tree)} nodes={id(ctx.nodes)} walk-order={same} "
                           f"gc={gc.isenabled()}")


@check("probe-a", files=["src/*.py"])
def probe_a(ctx: FileContext):
    yield from _seen(ctx)


@check("probe-b", files=["src/*.py"])
def probe_b(ctx: FileContext):
    yield from _seen(ctx)
'''
MANIFEST = """
[lint]
modules = ["probes.py"]
[checks.probe-a]
[checks.probe-b]
"""
SOURCES = {
    "src/one.py": "def f(x):\n    return [x + i for i in range(3)]\n",
    "src/two.py": "class C:\n    y = {'a': (1, 2)}\n",
    "src/bad.py": "def broken(:\n",
}
SEEN = re.compile(r"(src/\w+\.py):1: \[(probe-[ab])\] tree=(\d+) nodes=(\d+) walk-order=(\w+) gc=(\w+)")


def _project(pytester: pytest.Pytester) -> None:
    project(pytester, MANIFEST, {**SOURCES, "lint/probes.py": PROBES})


def test_checks_of_one_session_share_each_files_tree_and_nodes(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest("lint", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    seen: dict[str, dict[str, tuple[str, ...]]] = {}
    for path, check_id, tree, nodes, order, gc_on in SEEN.findall(result.stdout.str()):
        seen.setdefault(path, {})[check_id] = (tree, nodes, order, gc_on)
    assert set(seen) == {"src/one.py", "src/two.py"}
    for path, by_check in seen.items():
        assert by_check["probe-a"] == by_check["probe-b"], path  # one tree, one node list
        assert by_check["probe-a"][2:] == ("True", "False"), path  # walk order; gc paused
    assert seen["src/one.py"]["probe-a"][0] != seen["src/two.py"]["probe-a"][0]
    # the file that does not parse is reported by both checks, with the same line
    result.stdout.fnmatch_lines_random([
        "src/bad.py:1: [[]probe-a] cannot parse: *", "src/bad.py:1: [[]probe-b] cannot parse: *",
    ])


@pytest.fixture
def thawed() -> Iterator[None]:
    """A process with nothing frozen, as a user's session starts (our root conftest
    freezes the collected heap of our own runs; it is frozen again afterwards)."""
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    yield
    if frozen:
        gc.freeze()


def test_the_run_releases_its_trees_and_thaws_the_collector(
    pytester: pytest.Pytester, thawed: None
) -> None:
    _project(pytester)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    pytester.runpytest("lint", "-p", "no:cacheprovider").assert_outcomes(failed=2)
    assert gc.get_freeze_count() == 0  # nothing of the run stays frozen
    assert gc.isenabled()


def test_split_by_file_shares_too(pytester: pytest.Pytester, thawed: None) -> None:
    _project(pytester)
    result = pytester.runpytest(
        "lint", "-p", "no:randomly", "-p", "no:cacheprovider", "--pypto-lint-split=file"
    )
    result.assert_outcomes(failed=6)
    trees = {}
    for path, check_id, tree, *_ in SEEN.findall(result.stdout.str()):
        trees.setdefault(path, set()).add(tree)
    assert {p: len(t) for p, t in trees.items()} == {"src/one.py": 1, "src/two.py": 1}
    assert gc.get_freeze_count() == 0


def test_a_context_without_the_session_parses_on_its_own(tmp_path) -> None:
    (tmp_path / "m.py").write_text("x = [1, 2]\n")
    shared = FileSet(tmp_path)
    first = FileContext(tmp_path, "c", {}, path="m.py", shared=shared)
    second = FileContext(tmp_path, "d", {}, path="m.py", shared=shared)
    alone = FileContext(tmp_path, "e", {}, path="m.py")
    assert first.tree is second.tree and first.nodes is second.nodes
    assert alone.tree is not first.tree
    assert ast.dump(alone.tree) == ast.dump(first.tree)
    assert [type(n) for n in alone.nodes] == [type(n) for n in ast.walk(first.tree)]
    shared.release_parses()
    assert FileContext(tmp_path, "f", {}, path="m.py", shared=shared).tree is not first.tree
