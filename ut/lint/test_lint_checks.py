# SPDX-License-Identifier: Apache-2.0
"""Unit tests of each built-in and project lint check, plus glob matching."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_pypto.lint.files import match
from pytest_pypto.lint.framework import CheckError, FileContext, ProjectContext, Violation
from pytest_pypto.lint.manifest import _import

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project_checks() -> ModuleType:
    """This repository's own checks, loaded the way lint/lint.toml loads them."""
    return sys.modules[_import(REPO / "lint", "pypto_checks.py")]


def run_file(fn: Any, root: Path, path: str, text: str | bytes, **options: Any) -> list[Violation]:
    spec = fn.lint_check
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(text if isinstance(text, bytes) else textwrap.dedent(text).encode())
    texts = {k: options.pop(f"{k}_text") for k in spec.file_options}
    ctx = FileContext(root, spec.id, {**spec.options, **options}, texts, path=path)
    return list(fn(ctx))


# --- globs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("a.py", "*.py", True),
        ("pkg/sub/a.py", "*.py", True),
        ("pkg/sub/a.py", "pkg/*.py", False),
        ("pkg/sub/a.py", "pkg/**/*.py", True),
        ("pkg/a.py", "pkg/**/*.py", True),
        ("other/pkg/a.py", "pkg/**/*.py", False),
        ("lint/lint.toml", "lint/**", True),
        ("a.pyc", "*.py", False),
        ("x/a1.py", "x/a?.py", True),
        ("x/ab.py", "x/a[!b].py", False),
    ],
)
def test_glob_match(path: str, pattern: str, hit: bool) -> None:
    assert match(path, [pattern]) is hit


# --- license-header ----------------------------------------------------------

SPDX = "# SPDX-License-Identifier: Apache-2.0\n"


@pytest.mark.parametrize(
    ("text", "bad_line"),
    [
        (SPDX + "x = 1\n", None),
        ("#!/usr/bin/env python3\n" + SPDX, None),
        ("", None),
        ('"""doc"""\n' + SPDX, 1),
        ("#!/usr/bin/env python3\nx = 1\n", 2),
        ("# SPDX-License-Identifier: MIT\n", 1),
    ],
)
def test_license_header(tmp_path: Path, text: str, bad_line: int | None) -> None:
    from pytest_pypto.lint.builtin.license import license_header

    found = run_file(license_header, tmp_path, "m.py", text, template_text=SPDX)
    assert [v.line for v in found] == ([] if bad_line is None else [bad_line])


def test_license_header_year_placeholder(tmp_path: Path) -> None:
    from pytest_pypto.lint.builtin.license import license_header

    template = "# Copyright {year} Example\n# SPDX-License-Identifier: Apache-2.0\n"
    ok = "# Copyright 2019-2024 Example\n" + SPDX
    assert run_file(license_header, tmp_path, "a.py", ok, template_text=template) == []
    bad = "# Copyright Example\n" + SPDX
    assert len(run_file(license_header, tmp_path, "b.py", bad, template_text=template)) == 1


# --- english-only ------------------------------------------------------------


def test_english_only_accepts_ascii_and_typography(tmp_path: Path) -> None:
    from pytest_pypto.lint.builtin.english import english_only

    text = "x = 1  # a -> b, 3 \u00d7 4, \u2264 8 \u2014 see \u00a72, \u03b1\n"
    assert run_file(english_only, tmp_path, "a.py", text) == []


def test_english_only_flags_cjk_with_line_and_column(tmp_path: Path) -> None:
    from pytest_pypto.lint.builtin.english import english_only

    found = run_file(english_only, tmp_path, "a.md", "ok\nab\u4e2d\u6587\nok\n")
    assert found == [Violation("a.md", 2, "non-English character '\u4e2d' (U+4E2D) at column 3")]


def test_english_only_ranges_option_and_bad_utf8(tmp_path: Path) -> None:
    from pytest_pypto.lint.builtin.english import english_only

    ascii_only = ["0x09-0x0D", "0x20-0x7E"]
    assert len(run_file(english_only, tmp_path, "a.txt", "a \u2014 b\n", ranges=ascii_only)) == 1
    cjk_ok = ascii_only + ["U+4E00-U+9FFF"]
    assert run_file(english_only, tmp_path, "b.txt", "\u4e2d\n", ranges=cjk_ok) == []
    found = run_file(english_only, tmp_path, "c.txt", b"ok\n\xff\xfe\n")
    assert found == [Violation("c.txt", 2, "not valid UTF-8 text")]


# --- no-broad-raises ---------------------------------------------------------

BROAD_CASES = [
    "import pytest\npytest.raises(Exception)\n",
    "import pytest\nwith pytest.raises(BaseException):\n    pass\n",
    "import pytest\npytest.raises((ValueError, Exception))\n",
    "import pytest as pt\npt.raises(Exception)\n",
    "from pytest import raises as r\nr(Exception)\n",
    "from pytest import raises\nraises(expected_exception=BaseException)\n",
    "import builtins, pytest\npytest.raises(builtins.Exception)\n",
    "import builtins as b\nimport pytest\npytest.raises(b.BaseException)\n",
    "from builtins import Exception as E\nimport pytest\npytest.raises(E)\n",
    "import pytest\nBROAD = (KeyError, Exception)\npytest.raises(BROAD)\n",
    "import pytest\nE = Exception\npytest.raises(E)\n",
    "import pytest\nr = pytest.raises\nr(Exception)\n",
    "import pytest\ndef t():\n    with pytest.raises(Exception, match='x'):\n        pass\n",
]
NARROW_CASES = [
    "import pytest\npytest.raises(ValueError)\n",
    "import pytest\npytest.raises((KeyError, IndexError))\n",
    "raises(Exception)\n",  # not pytest's raises
    "import pytest\nclass Exception(Exception): pass\npytest.raises(MyError)\n",
    "import pytest\nx = 'pytest.raises(Exception)'\n",
    "import pytest\npytest.raises(errors.Exception)\n",  # not builtins
]  # a file that is not Python is reported, not passed: ut/lint/test_lint_faults.py


@pytest.mark.parametrize("src", BROAD_CASES)
def test_no_broad_raises_flags(tmp_path: Path, src: str) -> None:
    from pytest_pypto.lint.builtin.raises import no_broad_raises

    found = run_file(no_broad_raises, tmp_path, "t.py", src)
    call_line = next(
        n
        for n, line in enumerate(src.splitlines(), 1)
        if "(" in line
        and "def" not in line
        and "BROAD =" not in line
        and not line.startswith(("import", "from"))
    )
    assert [v.line for v in found] == [call_line]


@pytest.mark.parametrize("src", NARROW_CASES)
def test_no_broad_raises_passes(tmp_path: Path, src: str) -> None:
    from pytest_pypto.lint.builtin.raises import no_broad_raises

    assert run_file(no_broad_raises, tmp_path, "t.py", src) == []


# --- platform-strings --------------------------------------------------------

ASSEMBLY = [
    'p = arch + "sim"',
    'p = "a2a3" + mode',
    'p = f"{arch}sim"',
    'p = f"a5{mode}"',
    'p = f"{arch_name}{mode_name}"',
    'p = "%ssim" % arch',
    'p = "{}sim".format(arch)',
    'p = "".join([arch, "sim"])',
    'a = platform.replace("sim", "")',
    'sim = platform.endswith("sim")',
    'a = platform.removesuffix("sim")',
    'a = platform.rstrip("sim")',
    'a5 = name.startswith(("a5", "a2a3"))',
    "a = platform[:-3]",
    'a = cell_name[:-len("sim")]',
    'm = re.match(r"(a2a3|a5)(sim)?", s)',
    'sim = "sim" in platform',
]
FINE = [
    'mode = "sim"',
    'modes = ("sim", "onboard")',
    'if mode == "sim": pass',
    "x = path[:-3]",
    'msg = f"running {name} in sim mode"',
    'msg = f"{n} simulated cores"',
    'ok = "sim" in modes',
    'label = "similar" + x',
    'p = arch_table.PLATFORMS["a5sim"]',
    's = text.replace("simple", "")',
]


@pytest.mark.parametrize("src", ASSEMBLY)
def test_platform_strings_flags(tmp_path: Path, project_checks: ModuleType, src: str) -> None:
    found = run_file(project_checks.platform_strings, tmp_path, "pkg/m.py", src + "\n")
    assert [v.line for v in found] == [1], found


@pytest.mark.parametrize("src", FINE)
def test_platform_strings_passes(tmp_path: Path, project_checks: ModuleType, src: str) -> None:
    assert run_file(project_checks.platform_strings, tmp_path, "pkg/m.py", src + "\n") == []


# --- arch-literals -----------------------------------------------------------


def test_arch_literals_default_comes_from_the_arch_table(project_checks: ModuleType) -> None:
    assert project_checks.default_capacity_literals() == [
        65536,
        131072,
        188416,
        245760,
        262144,
        524288,
    ]


def test_arch_literals(tmp_path: Path, project_checks: ModuleType) -> None:
    src = (
        "VEC = 188416\n"
        "ACC = 131_072\n"
        "MAT = 0x80000\n"
        "# the a5 vec buffer holds 245760 bytes\n"
        "OK = 1655360 + 4096 + 2621440\n"
        "V = 65536.5\n"
    )
    found = run_file(project_checks.arch_literals, tmp_path, "pytest_pypto/x.py", src)
    assert [v.line for v in found] == [1, 2, 3, 4]
    assert found[2].message == "capacity literal 524288 outside pytest_pypto/arch.py"


# --- op-registry ---------------------------------------------------------------

REGISTRY_SRC = """
from types import SimpleNamespace as Op

def rule(*a):
    return None

def add(a, b):
    return a + b

REGISTRY = {
    "tile.add": Op(name="tile.add", doc="a + b", type_rule=rule, compute=add, execute=None,
                   spellings=("add",)),
    "tile.exp": Op(name="tile.exp", doc="", type_rule=None, compute=None, execute=None,
                   spellings=("exp",)),
    "tile.load": Op(name="tile.load", doc="load", type_rule=rule, compute=None, execute=add,
                    spellings=("load",)),
}
"""


def run_registry(tmp_path: Path, project_checks: ModuleType, tests: dict[str, str], module: str):
    files = []
    for rel, text in tests.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
        files.append(rel)
    spec = project_checks.op_registry.lint_check
    options = {**spec.options, "registry": module}
    ctx = ProjectContext(tmp_path, spec.id, options, files=sorted(files))
    return list(project_checks.op_registry(ctx))


def test_op_registry(tmp_path: Path, project_checks: ModuleType, monkeypatch) -> None:
    pkg = tmp_path / "fakeops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "registry.py").write_text(REGISTRY_SRC)
    monkeypatch.syspath_prepend(str(tmp_path))
    tests = {
        "ut/test_a.py": "y = pl.add(a, b)\n",
        "st/test_b.py": "run('tile.load')\n",
        "docs/x.py": "pl.exp(a)\n",  # not a test directory
    }
    found = run_registry(tmp_path, project_checks, tests, "fakeops.registry")
    messages = sorted(v.message for v in found)
    assert messages == [
        "op 'tile.exp' has no docstring",
        "op 'tile.exp' has no numpy semantics (compute/execute)",
        "op 'tile.exp' has no type rule",
        "op 'tile.exp' is not exercised by any test under ut/, st/ "
        "(looked for \"tile.exp\", 'tile.exp', pl.exp(, pl.tile.exp()",
    ]
    assert {v.path for v in found} == {"fakeops/registry.py"}
    tests["ut/test_c.py"] = "pl.tile.exp(x)\n"
    found = run_registry(tmp_path, project_checks, tests, "fakeops.registry")
    assert not any("exercised" in v.message for v in found)


def test_op_registry_missing_is_an_error(tmp_path: Path, project_checks: ModuleType) -> None:
    with pytest.raises(CheckError, match="cannot import the op registry no_such_pkg.registry"):
        run_registry(tmp_path, project_checks, {}, "no_such_pkg.registry")
