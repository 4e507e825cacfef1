# SPDX-License-Identifier: Apache-2.0
"""The op reference rendered from the registry: help(pl.X), signatures, docs/ops.md.

Expected facts are read from the entries and the arch table directly (parameter
names, defaults, MemRule spaces, unavailable_ops, vec_op_dtypes), never from the
renderer's own output.
"""

from __future__ import annotations

import inspect
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld
from pytest_pypto.arch import ARCH_SPECS
from pytest_pypto.ir import opdoc
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.language.surface import OpStub
from pytest_pypto.lint.framework import ProjectContext
from pytest_pypto.lint.manifest import _import

REPO = Path(__file__).resolve().parents[2]
ARCH_NAMES = [a.name for a in ARCH_SPECS.values()]


def help_text(obj: object) -> str:
    """What `help(obj)` prints."""
    return pydoc.render_doc(obj, renderer=pydoc.plaintext)


def section(text: str, header: str) -> str:
    """The lines of ``text`` from the first line starting with ``header`` (stripped) to
    the next line at the same or a lower indent."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith(header))
    indent = len(lines[start]) - len(lines[start].lstrip())
    out = [lines[start]]
    for ln in lines[start + 1:]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        out.append(ln)
    return "\n".join(out)


def param_line(text: str, name: str) -> str:
    return next(ln for ln in text.splitlines() if ln.strip().startswith(f"{name}: "))


def test_row_sum_help_names_every_keyword_and_its_memory_space():
    spec = REGISTRY["tile.row_sum"]
    text = help_text(pl.row_sum)
    sig = inspect.signature(pl.row_sum)
    assert list(sig.parameters)[:len(spec.params)] == [p.name for p in spec.params]
    assert any(ln.strip().startswith("pl.row_sum(tile") for ln in text.splitlines()[:4])
    for p in spec.params:
        line = param_line(section(text, "Tile form"), p.name)
        assert "required" in line  # tmp_tile is required in the tile form (issue #11)
        for space in spec.mem.operands[p.name]:
            assert space in line, (p.name, line)
    assert spec.mem.result in section(text, "Result")
    assert " ".join(spec.doc.split()[:6]) in " ".join(text.split())


def test_matmul_signature_takes_every_keyword_of_both_forms():
    tile, tensor = REGISTRY["tile.matmul"], REGISTRY["tensor.matmul"]
    params = inspect.signature(pl.matmul).parameters
    want = [p.name for p in tile.params] + [p.name for p in tensor.params
                                            if p.name not in {q.name for q in tile.params}]
    assert list(params) == want
    for p in tensor.params:
        if not p.required:
            assert repr(params[p.name].default) == repr(p.default), p.name
    text = help_text(pl.matmul)
    tile_part = section(text, "Tile form")
    for p in tile.params:
        assert tile.mem.operands[p.name][0] in param_line(tile_part, p.name)
    assert tile.mem.result in section(tile_part, "Result")
    tensor_part = section(text, "Tensor form")
    for p in tensor.params:
        assert param_line(tensor_part, p.name)


def test_tensor_namespace_help_is_the_tensor_form_without_scratch_tiles():
    tile = REGISTRY["tile.row_max"]
    scratch = [p.name for p in tile.params if p.name.startswith("tmp")]
    assert scratch  # the fact this test is about
    params = inspect.signature(pl.tensor.row_max).parameters
    assert list(params) == [p.name for p in tile.params if p.name not in scratch]
    text = help_text(pl.tensor.row_max)
    assert "tensor.row_max" in text and "lowered to tile.row_max" in text
    assert "Tensor" in param_line(text, "tile")


def test_a5_only_op_names_the_archs_from_the_arch_table():
    missing = [a.name for a in ARCH_SPECS.values() if "tile.matmul_mx" in a.unavailable_ops]
    have = [n for n in ARCH_NAMES if n not in missing]
    assert missing and have  # the fact: some arch lacks it, some has it
    arch = section(help_text(pl.matmul_mx), "Arch")
    assert f"available on {', '.join(have)} only" in arch
    assert f"not on {', '.join(missing)}" in arch
    for name in ("lhs_scale", "rhs_scale"):
        spaces = REGISTRY["tile.matmul_mx"].mem.operands[name]
        assert spaces[0] in param_line(help_text(pl.matmul_mx), name)


def test_arch_gated_dtypes_match_the_arch_table():
    """tile.and is gated per arch by vec_op_dtypes['and']: the probed dtypes equal it."""
    text = help_text(pl.tile.and_)
    dtypes = section(text, "Dtypes")
    for arch in ARCH_SPECS.values():
        listed = re.search(rf"{arch.name}: ([A-Z0-9, ]+)", " ".join(dtypes.split()))
        assert listed, dtypes
        assert [d.strip() for d in listed.group(1).split(",")] == list(
            arch.vec_op_dtypes["and"]), arch.name
    assert "vec_op_dtypes" in section(text, "Arch")


def test_store_arch_rule_lists_the_table_fields_it_reads():
    arch = section(help_text(pl.store), "Arch")
    flat = " ".join(arch.split())
    for a in ARCH_SPECS.values():
        assert f"{a.name}: {', '.join(a.atomic_add_dtypes)}" in flat
    assert "atomic_add_dtypes" in flat and "acc_store_dtypes" in flat


def test_load_keyword_defaults_and_aliases():
    spec = REGISTRY["tile.load"]
    params = inspect.signature(pl.load).parameters
    for p in spec.params:
        assert p.name in params
        line = param_line(help_text(pl.load), p.name)
        for alias in p.aliases:
            assert alias in line
    assert params["clamp"].default is not inspect.Parameter.empty
    assert repr(params["clamp"].default) == repr(spec.param("clamp").default)


def test_every_spelling_renders_its_entry():
    for spec in REGISTRY.values():
        for s in spec.spellings:
            if s.startswith("pld."):  # pytest_pypto.language.distributed's ops
                *path, name = s.split(".")
                holder = pld
                for part in path[1:]:
                    holder = getattr(holder, part)
                stub = getattr(holder, name)
            elif "." in s:
                ns, name = s.split(".", 1)
                stub = getattr(getattr(pl, ns), name)
            else:
                stub = getattr(pl, s)
            assert spec.name in stub.__doc__ or spec.level == "tensor", (s, spec.name)
            assert "not an op of the bundled toolchain" not in stub.__doc__
            assert inspect.signature(stub) is not None


def test_reference_renders_lazily():
    stub = OpStub("row_min")
    assert "_reference" not in stub.__dict__
    assert "tile.row_min" in stub.__doc__
    assert "_reference" in stub.__dict__
    assert "registry op" in OpStub.__doc__  # the class keeps its own docstring
    code = ("import sys, pytest_pypto.language as pl; pl.row_sum; "
            "print('pytest_pypto.ir.opdoc' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


# ------------------------------------------------------------------ docs/ops.md and its check


@pytest.fixture(scope="module")
def ops_doc_check():
    module = sys.modules[_import(REPO / "lint", "docs_checks.py")]
    return module.ops_doc


def run_check(check, root: Path) -> list:
    spec = check.lint_check
    files = ["docs/ops.md"] if (root / "docs" / "ops.md").exists() else []
    return list(check(ProjectContext(root, spec.id, dict(spec.options), files=files)))


@pytest.fixture(scope="module")
def fresh() -> str:
    return opdoc.ops_markdown()


def test_ops_md_lists_every_op_under_its_family(fresh):
    headings = re.findall(r"^### `([^`]+)`$", fresh, re.M)
    assert sorted(headings) == sorted(REGISTRY)
    families = re.findall(r"^## (\w+)$", fresh, re.M)
    assert "reduce" in families and "matmul" in families
    reduce_part = fresh.split("## reduce\n", 1)[1].split("\n## ", 1)[0]
    assert "### `tile.row_sum`" in reduce_part


def test_stale_check_passes_on_the_generated_file(tmp_path, ops_doc_check, fresh):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ops.md").write_text(fresh)
    assert run_check(ops_doc_check, tmp_path) == []


def test_stale_check_names_the_changed_op_and_the_command(tmp_path, ops_doc_check, fresh):
    (tmp_path / "docs").mkdir()
    edited = fresh.replace("### `tile.row_sum`\n", "### `tile.row_sum`\n\nhand edit\n", 1)
    assert edited != fresh
    (tmp_path / "docs" / "ops.md").write_text(edited)
    [v] = run_check(ops_doc_check, tmp_path)
    assert (v.path, v.line) == ("docs/ops.md", 1)
    assert "stale" in v.message and "tile.row_sum" in v.message
    assert opdoc.REFRESH_COMMAND in v.message
    gone = fresh.replace("### `tile.col_max`", "### `tile.col_maxx`", 1)
    (tmp_path / "docs" / "ops.md").write_text(gone)
    [v] = run_check(ops_doc_check, tmp_path)
    assert "+tile.col_max" in v.message and "-tile.col_maxx" in v.message


def test_stale_check_reports_a_missing_file(tmp_path, ops_doc_check):
    [v] = run_check(ops_doc_check, tmp_path)
    assert "docs/ops.md is missing" in v.message and opdoc.REFRESH_COMMAND in v.message


def test_module_entry_prints_and_checks(tmp_path, capsys, fresh):
    assert opdoc.main([]) == 0
    assert capsys.readouterr().out == fresh
    path = tmp_path / "ops.md"
    path.write_text(fresh.replace("tile.exp", "tile.exq"))
    assert opdoc.main(["--check", str(path)]) == 1
    assert opdoc.REFRESH_COMMAND in capsys.readouterr().out
    path.write_text(fresh)
    assert opdoc.main(["--check", str(path)]) == 0


def test_arch_doc_is_rendered_from_the_table(tmp_path):
    from pytest_pypto.ir import archdoc

    page = archdoc.arch_markdown()
    for arch in ARCH_SPECS.values():
        assert f"{arch.capacity['Acc']}" in page and arch.device in page
    row = next(ln for ln in page.splitlines() if ln.startswith("| `atomic_add_dtypes` |"))
    assert [c.strip() for c in row.split("|")[2:2 + len(ARCH_SPECS)]] == [
        ", ".join(a.atomic_add_dtypes) for a in ARCH_SPECS.values()]
    check = sys.modules[_import(REPO / "lint", "docs_checks.py")].arch_doc
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "arch.md").write_text(page)
    spec = check.lint_check
    ctx = ProjectContext(tmp_path, spec.id, dict(spec.options), files=["docs/arch.md"])
    assert list(check(ctx)) == []
    (tmp_path / "docs" / "arch.md").write_text(page.replace("| 16 |", "| 17 |", 1))
    [v] = list(check(ctx))
    assert "stale" in v.message and archdoc.REFRESH_COMMAND in v.message
