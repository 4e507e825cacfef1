"""Rendering of toolchain diagnostics (docs/design/checks.md §1): layout for people."""

from pytest_pypto.ir.errors import CapacityError, render
from pytest_pypto.ir.nodes import Span


def test_notes_and_help_align_under_the_gutter():
    err = CapacityError(
        "Acc peak usage is 262144 bytes",
        Span("k.py", 23, 13),
        hint="target a5",
        notes=["live at the peak: c"],
    )
    text = str(err).splitlines()
    assert text[0] == "Error: Acc peak usage is 262144 bytes"
    assert text[1] == "  --> k.py:23:13"
    assert text[-2:] == ["   = note: live at the peak: c", "   = help: target a5"]
    assert (err.file, err.line, err.column, err.hint) == ("k.py", 23, 13, "target a5")


def test_snippet_points_at_the_column():
    src = "            c = pl.matmul(a, b)"
    lines = render("m", Span("k.py", 23, 13), hint="h", source_line=src).splitlines()
    assert lines[2:] == ["   |", "23 | " + src, "   |             ^", "   = help: h"]
