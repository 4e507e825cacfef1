"""Registry-wide facts: every op is documented and spelled, names follow the brief."""

from __future__ import annotations

import subprocess
import sys

from pytest_pypto.ir.registry import REGISTRY

REQUIRED = [
    "load", "store", "move", "create", "full", "add", "sub", "mul", "div", "adds", "subs",
    "muls", "divs", "maximum", "minimum", "maximums", "minimums", "exp", "log", "sqrt",
    "rsqrt", "recip", "abs", "neg", "relu", "cast", "matmul", "matmul_acc", "row_sum",
    "row_max", "row_min", "col_sum", "row_expand_add", "row_expand_sub", "row_expand_mul",
    "row_expand_div", "row_expand_expdif",
]


def test_every_required_op_is_registered_with_a_doc():
    for name in REQUIRED:
        op = REGISTRY[f"tile.{name}"]
        assert op.doc and len(op.doc) > 20, name
        assert op.spellings, name
        assert (op.compute is None) != (op.execute is None)


def test_spellings_of_create_and_full():
    assert REGISTRY["tile.create"].spellings == ("create_tile", "tile.create")
    assert REGISTRY["tile.full"].spellings == ("tile.full",)
    assert [s.name for s in REGISTRY.by_namespace("", "create_tile")] == ["tile.create"]
    assert [s.name for s in REGISTRY.by_namespace("tile", "create")] == ["tile.create"]
    # pl.full is the tensor-level fill (tensor.full), never tile.full
    assert [s.name for s in REGISTRY.by_namespace("", "full")] == ["tensor.full"]


def test_scalar_forms_point_at_registered_scalar_ops():
    pairs = {"add": "adds", "sub": "subs", "mul": "muls", "div": "divs",
             "maximum": "maximums", "minimum": "minimums"}
    for tile_op, scalar_op in pairs.items():
        assert REGISTRY[f"tile.{tile_op}"].scalar_form == f"tile.{scalar_op}"
        assert REGISTRY[f"tile.{scalar_op}"].param("rhs").kind == "scalar"


def test_memrules_of_the_tier1_table():
    assert REGISTRY["tile.load"].mem.result == "attr:target_memory"
    assert REGISTRY["tile.create"].mem.result == "attr:target_memory"
    assert REGISTRY["tile.move"].mem.result == "attr:target_memory"
    assert REGISTRY["tile.store"].mem.operands["tile"] == ("Vec", "Acc")
    assert REGISTRY["tile.store"].mem.result is None
    mm = REGISTRY["tile.matmul"].mem
    assert (mm.operands["lhs"], mm.operands["rhs"], mm.result) == (("Left",), ("Right",), "Acc")
    acc = REGISTRY["tile.matmul_acc"].mem
    assert acc.operands["acc"] == ("Acc",) and acc.result == "same:acc"
    for name in ("add", "adds", "exp", "row_sum", "row_expand_expdif", "cast"):
        assert REGISTRY[f"tile.{name}"].mem.result == "Vec", name


def test_importing_the_registry_does_not_import_numpy():
    code = (
        "import sys\n"
        "from pytest_pypto.ir.registry import REGISTRY\n"
        "assert len(REGISTRY) >= 37\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
