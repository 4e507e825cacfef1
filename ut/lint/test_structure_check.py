"""The `import-structure` check (lint/structure_checks.py) on small made-up packages."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from pytest_pypto.lint.framework import ProjectContext, Violation
from pytest_pypto.lint.manifest import _import

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checks() -> ModuleType:
    """The check module, loaded the way lint/lint.toml loads it."""
    return sys.modules[_import(REPO / "lint", "structure_checks.py")]


def run(checks: ModuleType, root: Path, files: dict[str, str], **options: object) -> list[str]:
    """`path:line: message` for every violation in a tree of `files` (package `pkg`)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    spec = checks.import_structure.lint_check
    opts = {**spec.options, "package": "pkg", "max_local_share": 1.0, **options}
    ctx = ProjectContext(root, spec.id, opts, files=sorted(files))
    found: list[Violation] = list(checks.import_structure(ctx))
    return [f"{v.path}:{v.line}: {v.message}" for v in found]


BASE = {"pkg/__init__.py": "", "pkg/ir/__init__.py": "", "pkg/harness/__init__.py": "",
        "pkg/arch.py": "X = 1\n"}


def test_a_clean_tree_passes(checks: ModuleType, tmp_path: Path) -> None:
    files = {**BASE, "pkg/ir/nodes.py": "from pkg.arch import X\n",
             "pkg/harness/run.py": "from pkg.ir import nodes\nfrom ..ir.nodes import X\n"}
    assert run(checks, tmp_path, files) == []


@pytest.mark.parametrize(("line", "at"), [
    ("from pkg.harness import run", 2),
    ("from ..harness.run import go", 2),
    ("def f():\n    import pkg.harness.run  # lazy: tried to hide it\n", 3),
    ("import importlib\nM = importlib.import_module('pkg.harness.run')", 3),
])
def test_an_upward_import_is_flagged_at_its_line(checks: ModuleType, tmp_path: Path,
                                                 line: str, at: int) -> None:
    files = {**BASE, "pkg/harness/run.py": "def go(): pass\n",
             "pkg/ir/launch.py": "x = 1\n" + line + "\n"}
    found = run(checks, tmp_path, files)
    assert len(found) == 1, found
    assert found[0].startswith(f"pkg/ir/launch.py:{at}: upward import: ir/ imports "
                               "pkg.harness.run (harness/); ir/ may import only base")


def test_type_checking_imports_are_types_only(checks: ModuleType, tmp_path: Path) -> None:
    files = {**BASE, "pkg/harness/run.py": "X = 1\n",
             "pkg/ir/launch.py": "from typing import TYPE_CHECKING\n"
                                 "if TYPE_CHECKING:\n    from pkg.harness.run import X\n"}
    assert run(checks, tmp_path, files) == []


def test_a_circle_across_rooms_is_flagged_and_one_inside_a_room_is_not(
        checks: ModuleType, tmp_path: Path) -> None:
    inside = {**BASE, "pkg/ir/a.py": "from pkg.ir import b\n", "pkg/ir/b.py": "from pkg.ir import a\n"}
    assert run(checks, tmp_path / "one", inside) == []
    across = {**BASE, "pkg/plugin.py": "from pkg.harness import run\n",
              "pkg/harness/run.py": "def f():\n    import pkg.plugin  # lazy: hook\n"}
    found = run(checks, tmp_path / "two", across)
    assert any("import circle across harness, plugin: pkg.harness.run , pkg.plugin" in f
               for f in found), found


def test_function_local_imports_need_a_reason_and_stay_rare(checks: ModuleType,
                                                            tmp_path: Path) -> None:
    files = {**BASE, "pkg/ir/a.py": "X = 1\n", "pkg/ir/b.py": (
        "from pkg.ir.a import X\n"
        "def f():\n"
        "    from pkg.ir import a\n"
        "def g():\n"
        "    # lazy: keeps the registry numpy-free\n"
        "    from pkg.arch import X\n"
        "def h():\n"
        "    from pkg.arch import X  # lazy: the same\n")}
    found = run(checks, tmp_path, files)
    assert found == ["pkg/ir/b.py:3: function-local import of pkg.ir.a without a reason: "
                     "move it to module level or say why ('# lazy: ...')"]
    found = run(checks, tmp_path, files, max_local_share=0.5)
    assert "pkg/__init__.py:1: 3 of 4 internal imports (75%) are function-local; at most 50%" \
        in found


def test_module_sizes(checks: ModuleType, tmp_path: Path) -> None:
    files = {**BASE, "pkg/ir/big.py": "x = 1\n" * 11, "pkg/plugin/__init__.py": "",
             "pkg/plugin/hooks.py": "x = 1\n" * 6, "pkg/ir/ok.py": "x = 1\n" * 10}
    found = run(checks, tmp_path, files, max_lines=10, plugin_max_lines=5)
    assert sorted(found) == [
        "pkg/ir/big.py:11: 11 lines; a ir/ module stays under 10: split it by concern",
        "pkg/plugin/hooks.py:6: 6 lines; a plugin/ module stays under 5: split it by concern",
    ]


def test_the_harness_imports_no_pytest_at_module_level(checks: ModuleType, tmp_path: Path) -> None:
    files = {**BASE, "pkg/harness/a.py": "import pytest\n",
             "pkg/harness/b.py": "from _pytest.nodes import Item\n",
             "pkg/harness/c.py": "def f():\n    import pytest\n"}
    found = run(checks, tmp_path, files)
    assert sorted(found) == [
        "pkg/harness/a.py:1: the harness is a pytest-free library: no pytest import at module level",
        "pkg/harness/b.py:1: the harness is a pytest-free library: no pytest import at module level",
    ]


def test_pypto_flavour_lives_in_compat(checks: ModuleType, tmp_path: Path) -> None:
    files = {**BASE, "pkg/harness/pypto_cases.py": "", "pkg/compat/__init__.py": "",
             "pkg/compat/pypto_cases.py": "", "pkg/runtimes/__init__.py": "",
             "pkg/runtimes/pypto.py": ""}
    found = run(checks, tmp_path, files)
    assert found == ["pkg/harness/pypto_cases.py:1: pkg.harness.pypto_cases is named after "
                     "PyPTO: PyPTO's flavour lives in compat or runtimes/"]


def test_an_unknown_room_is_flagged(checks: ModuleType, tmp_path: Path) -> None:
    found = run(checks, tmp_path, {**BASE, "pkg/extras/__init__.py": ""})
    assert found and found[0].startswith("pkg/extras/__init__.py:1: room 'extras' is not in")


def test_docstrings_cite_only_files_in_the_repository(checks: ModuleType,
                                                      tmp_path: Path) -> None:
    files = {**BASE, "docs/design/runtime.md": "# Runtime\n", "pkg/ir/graph.py": "",
             "pkg/ir/a.py": '"""See docs/design/runtime.md §2 and ir/graph.py, not tests/t.py::x.\n\n'
                            'Also https://example.org/x/README.md, then\nDSL.md §4.\n"""\n'
                            'def f():\n    """As in ../shared/design/ARCH.md."""\n'}
    found = run(checks, tmp_path, files)
    assert sorted(found) == [
        "pkg/ir/a.py:4: docstring cites DSL.md, which is not in the repository",
        "pkg/ir/a.py:7: docstring cites shared/design/ARCH.md, which is not in the repository",
    ]


def test_this_repository_keeps_its_structure() -> None:
    """The manifest enables the check on this repository (a pass is asserted by the lint
    item itself; here: it is enabled, so it cannot silently drop out)."""
    manifest = (REPO / "lint" / "lint.toml").read_text()
    assert "structure_checks.py" in manifest
    assert "[checks.import-structure]" in manifest
