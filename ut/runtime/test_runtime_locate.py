"""Mapping run-time failures back to the user's source: SPANS, SCALARS, dim labels."""

from __future__ import annotations

import sys

from pytest_pypto.ir.artifact import dim_label
from pytest_pypto.ir.nodes import Span
from pytest_pypto.runtime.locate import scalar_values, scalars_of, span_in, spans_of

GENERATED = '''
def kernel(n):
    c = 1
    M = n
    for r in range(3):
        if r == 2:
            raise IndexError("window past the edge")
'''
SPANS = {3: ("user.py", 10, 5), 4: ("user.py", 11, 5), 6: ("user.py", 12, 9)}
SCALARS = {7: (("c", "c"), ("M", "M"), ("r", "r"), ("gone", "nowhere"))}


def _traceback(path: str):
    namespace: dict = {}
    exec(compile(GENERATED, path, "exec"), namespace)
    try:
        namespace["kernel"](96)
    except IndexError:
        return sys.exc_info()[2]
    raise AssertionError("the generated function did not raise")


def test_span_of_an_unmapped_line_is_the_nearest_mapped_line_above():
    spans = spans_of({"SPANS": SPANS})
    assert spans[4] == Span("user.py", 11, 5)
    tb = _traceback("gen_kernel.py")
    assert span_in(tb, "gen_kernel.py", spans) == Span("user.py", 12, 9)  # line 7 -> 6
    assert span_in(tb, "other.py", spans) is None


def test_scalar_values_read_the_failing_frame():
    tb = _traceback("gen_kernel.py")
    table = scalars_of({"SCALARS": SCALARS})
    assert scalar_values(tb, "gen_kernel.py", table) == "c = 1, M = 96, r = 2"
    assert scalar_values(tb, "gen_kernel.py", {}) == ""


def test_malformed_tables_are_ignored():
    assert scalars_of({"SCALARS": "nope"}) == {}
    assert scalars_of({"SCALARS": {"x": (("a", "b"),), 3: ((1, 2),)}}) == {3: (("1", "2"),)}
    assert spans_of({}) == {}


def test_dim_label_keeps_the_number_only_when_two_dims_share_a_name():
    assert dim_label("M@0", ["M@0", 32, "N@1"]) == "'M'"
    assert dim_label("M@1", ["M@0", "M@1"]) == "'M@1'"
    assert dim_label("M", ["M", 4]) == "'M'"  # artifacts from before the numbering
