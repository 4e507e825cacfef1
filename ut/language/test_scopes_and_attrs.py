# SPDX-License-Identifier: Apache-2.0
"""`pl.scope` / `pl.ScopeMode`, `pl.no_dep`, `pl.TaskId` and `pl.func_attr` (issue 23;
docs/design/scheduling.md §1, §8, language.md): parse, the rules PyPTO states with their
messages at the user's line, and runs on each sim against numpy."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.ir.dtypes import TASK_ID
from pytest_pypto.ir.errors import (
    InvalidOperationError,
    ParserSyntaxError,
    ParserTypeError,
    RaceError,
)
from pytest_pypto.ir.nodes import FuncCall
from pytest_pypto.language.surface import Unsupported

R, C = 16, 32

KERNELS = '''
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
          ) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.add(pl.load(x, [0, 0], [R, C]), 1.0), [0, 0], o)
'''


def _module(tmp_path, cls_body: str, decorator: str = "@pl.function(type=pl.FunctionType.Orchestration)",
            main_body: str = ""):
    """A program in its own file: kernels, then ``main`` whose body starts on line 14."""
    src = f'''import pytest_pypto.language as pl
R, C = {R}, {C}
def build():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
              ) -> pl.Tensor[[R, C], pl.FP32]:
            return pl.store(pl.add(pl.load(x, [0, 0], [R, C]), 1.0), [0, 0], o)
{textwrap.indent(cls_body, " " * 8)}
        {decorator}
        def main(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
                 ) -> pl.Tensor[[R, C], pl.FP32]:
{textwrap.indent(main_body, " " * 12)}
            return o
    return P
'''
    path = tmp_path / "scope_mod.py"
    path.write_text(src)
    name = f"_scope_mod_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[name]


def _main_calls(P):
    return [e for s in P.functions["main"].body
            for e in (getattr(s, "value", None), getattr(s, "expr", None))
            if isinstance(e, FuncCall)]


def _run(pypto_runner, pypto_config, pypto_rng, P):
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    pytest_pypto.run(pypto_runner.compile(P), x, o, config=pypto_config)
    np.testing.assert_allclose(o, x + 1.0, rtol=1e-6)


# ------------------------------------------------------------------ pl.TaskId

def test_task_id_is_the_scalar_annotation_of_a_task_id(tmp_path):
    assert pl.TaskId.dtype is TASK_ID
    P = _module(tmp_path, "", main_body="o, t = pl.submit(self.k, x, o)\n"
                                        "u: pl.TaskId = t\n"
                                        "o, _ = pl.submit(self.k, x, o, deps=[u])")
    first, second = _main_calls(P)
    assert first.task_id and len(second.deps) == 1


# ------------------------------------------------------------------ pl.no_dep

def test_no_dep_marks_that_argument_of_that_call_only(tmp_path, pypto_runner, pypto_config,
                                                      pypto_rng):
    P = _module(tmp_path, "", main_body="o, t = pl.submit(self.k, x, pl.no_dep(o))\n"
                                        "o, u = pl.submit(self.k, pl.no_dep(x), o, deps=[t])\n"
                                        "o = self.k(x, o)")
    assert [c.no_dep for c in _main_calls(P)] == [(1,), (0,), ()]
    _run(pypto_runner, pypto_config, pypto_rng, P)


def test_an_untracked_write_left_unordered_is_a_race(tmp_path, pypto_runner, pypto_config,
                                                     pypto_rng):
    P = _module(tmp_path, "", main_body="o = self.k(x, pl.no_dep(o))\n"
                                        "o = self.k(x, o)")
    with pytest.raises(RaceError, match="WAW race on 'o'"):
        _run(pypto_runner, pypto_config, pypto_rng, P)


def test_no_dep_outside_a_call_hands_the_tensor_back(tmp_path, pypto_runner, pypto_config,
                                                      pypto_rng):
    P = _module(tmp_path, "", main_body="y = pl.no_dep(x)\no = self.k(y, o)")
    assert [c.no_dep for c in _main_calls(P)] == [()]
    _run(pypto_runner, pypto_config, pypto_rng, P)


def test_no_dep_of_a_scalar_is_an_error_at_its_line(tmp_path):
    kernel = ('@pl.function(type=pl.FunctionType.InCore)\n'
              'def ks(self, x: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INT32],\n'
              '       o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:\n'
              '    return pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)\n')
    with pytest.raises(ParserTypeError, match="pl.no_dep marks a tensor argument") as info:
        _module(tmp_path, kernel, main_body="o = self.ks(x, pl.no_dep(3), o)")
    assert info.value.span.line == 18


# ------------------------------------------------------------------ pl.scope

def test_scope_manual_is_a_manual_scope(tmp_path, pypto_runner, pypto_config, pypto_rng):
    assert pl.ScopeMode.AUTO.value == 0 and pl.ScopeMode.MANUAL.value == 1
    P = _module(tmp_path, "", main_body="with pl.scope(mode=pl.ScopeMode.MANUAL):\n"
                                        "    o, t = pl.submit(self.k, x, o)\n"
                                        "o, u = pl.submit(self.k, x, o, deps=[t])")
    assert [c.manual for c in _main_calls(P)] == [True, False]
    _run(pypto_runner, pypto_config, pypto_rng, P)
    racy = _module(tmp_path, "", main_body="with pl.scope(pl.ScopeMode.MANUAL):\n"
                                           "    o, t = pl.submit(self.k, x, o)\n"
                                           "    o, u = pl.submit(self.k, x, o)")
    with pytest.raises(RaceError, match="WAW race on 'o'"):  # nothing inferred inside
        _run(pypto_runner, pypto_config, pypto_rng, racy)


def test_an_auto_scope_under_auto_scope_false_tracks_as_always(tmp_path, pypto_runner,
                                                               pypto_config, pypto_rng):
    P = _module(tmp_path, "", decorator="@pl.function(type=pl.FunctionType.Orchestration, "
                "auto_scope=False)", main_body="with pl.scope():\n"
                                               "    o = self.k(x, o)\n"
                                               "with pl.scope(pl.ScopeMode.AUTO):\n"
                                               "    o = self.k(x, o)")
    assert [c.manual for c in _main_calls(P)] == [False, False]
    _run(pypto_runner, pypto_config, pypto_rng, P)


@pytest.mark.parametrize(("decorator", "body", "error", "message", "line"), [
    ("", "with pl.scope():\n    o = self.k(x, o)", ParserSyntaxError,
     "pl.scope() with mode=AUTO needs @pl.function(auto_scope=False)", 14),
    (", auto_scope=False", "with pl.manual_scope():\n    with pl.scope():\n"
     "        o, t = pl.submit(self.k, x, o)", ParserSyntaxError,
     "an AUTO pl.scope cannot nest inside a manual scope", 15),
    ("", "with pl.scope(mode=pl.ScopeMode.MANUAL):\n    with pl.manual_scope():\n"
     "        o, t = pl.submit(self.k, x, o)", ParserSyntaxError,
     "pl.manual_scope cannot nest inside another pl.manual_scope", 15),
    ("", "with pl.scope(mode=3):\n    o = self.k(x, o)", ParserTypeError,
     "pl.scope mode= must be a pl.ScopeMode member", 14),
    (", auto_scope=1", "o = self.k(x, o)", ParserTypeError,
     "auto_scope= must be True or False", 11),
], ids=["auto-needs-auto-scope-false", "auto-in-manual", "manual-in-manual", "bad-mode",
        "bad-auto-scope"])
def test_scope_rules_are_reported_at_their_line(tmp_path, decorator, body, error, message, line):
    with pytest.raises(error, match=re.escape(message)) as info:
        _module(tmp_path, "", decorator="@pl.function(type=pl.FunctionType.Orchestration"
                + decorator + ")", main_body=body)
    assert info.value.span.line == line


def test_a_scope_belongs_to_the_orchestration(tmp_path):
    kernel = ('@pl.function(type=pl.FunctionType.InCore)\n'
              'def kk(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]\n'
              '       ) -> pl.Tensor[[R, C], pl.FP32]:\n'
              '    with pl.scope(mode=pl.ScopeMode.MANUAL):\n'
              '        t = pl.load(x, [0, 0], [R, C])\n'
              '    return pl.store(t, [0, 0], o)\n')
    with pytest.raises(InvalidOperationError, match="pl.scope is not supported inside InCore") as info:
        _module(tmp_path, kernel, main_body="o = self.kk(x, o)")
    assert info.value.span.line == 13


# ------------------------------------------------------------------ pl.func_attr

FUNC_ATTR_KERNEL = '''@pl.function(type=pl.FunctionType.InCore)
def kw(self, x: pl.Tensor[[R, C], pl.FP32], w: pl.Tensor[[R, C], pl.FP32],
       o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
{prologue}
    t = pl.add(pl.load(x, [0, 0], [R, C]), pl.load(w, [0, 0], [R, C]))
    return pl.store(t, [0, 0], o)
'''


def test_func_attr_records_attributes_and_changes_no_result(tmp_path, pypto_runner,
                                                           pypto_config, pypto_rng):
    prologue = ('    """A kernel with attributes."""\n'
                '    pl.func_attr({"stationary": w, "windowize": True})\n'
                '    pl.func_attr({"tile_sizes": [16, 32]})')
    P = _module(tmp_path, FUNC_ATTR_KERNEL.format(prologue=prologue),
                main_body="o = self.kw(x, x, o)")
    attrs = P.functions["kw"].attrs
    assert attrs["windowize"] is True and attrs["tile_sizes"] == [16, 32]
    w = P.functions["kw"].params[1]
    assert attrs["stationary"] is w  # a bare name is the parameter
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    pytest_pypto.run(pypto_runner.compile(P), x, o, config=pypto_config)
    np.testing.assert_allclose(o, x + x, rtol=1e-6)


@pytest.mark.parametrize(("prologue", "error", "message", "line"), [
    ('    t0 = pl.load(x, [0, 0], [R, C])\n    pl.func_attr({"windowize": True})',
     ParserSyntaxError, "pl.func_attr must appear before every other statement", 14),
    ('    pl.func_attr({"windowize": True})\n    pl.func_attr({"windowize": False})',
     ParserSyntaxError, "Duplicate function attribute 'windowize'", 14),
    ('    pl.func_attr({"windowize": True, "windowize": False})',
     ParserSyntaxError, "Duplicate function attribute 'windowize'", 13),
    ('    pl.func_attr(["split"])', ParserSyntaxError, "must be a dict literal", 13),
    ('    pl.func_attr(split=1)', ParserSyntaxError,
     "exactly one positional dict argument", 13),
    ('    pl.func_attr({1: True})', ParserSyntaxError, "key must be a string literal", 13),
    ('    pl.func_attr({"auto_scope": True})', ParserSyntaxError,
     "'auto_scope' cannot be set with pl.func_attr", 13),
    ('    pl.func_attr({"core": "aic"})', ParserSyntaxError,
     "'core' cannot be set with pl.func_attr", 13),
], ids=["after-a-statement", "duplicate-across-calls", "duplicate-in-one", "not-a-dict",
        "keywords", "non-string-key", "decorator-only", "reserved"])
def test_func_attr_rules_are_reported_at_their_line(tmp_path, prologue, error, message, line):
    with pytest.raises(error, match=re.escape(message)) as info:
        _module(tmp_path, FUNC_ATTR_KERNEL.format(prologue=prologue),
                main_body="o = self.kw(x, x, o)")
    assert info.value.span.line == line


def test_none_of_these_names_is_refused_any_more():
    from pytest_pypto.language.unsupported import unsupported_names

    refused = unsupported_names()
    for name in ("scope", "no_dep", "TaskId", "func_attr"):
        assert name not in refused
        assert not isinstance(getattr(pl, name), Unsupported)


# ------------------------------------------------------------------ predicate= producers

@pytest.mark.parametrize(("body", "ok"), [
    ("o, tid = pl.submit(self.k, x, o)\n"
     "o, u = pl.submit(self.k, x, o, predicate=(o[0, 0] > 0))", False),
    ("o, tid = pl.submit(self.k, x, o)\n"
     "o, u = pl.submit(self.k, x, o, deps=[None], predicate=(o[0, 0] > 0))", False),
    ("o, tid = pl.submit(self.k, x, o)\n"
     "o, u = pl.submit(self.k, x, o, deps=[tid], predicate=(o[0, 0] > 0))", True),
    ("o, u = pl.submit(self.k, x, o, predicate=(x[0, 0] > 0))", True),  # x: no producer known
], ids=["no-deps", "producer-missing", "producer-in-deps", "parameter"])
def test_a_predicate_on_a_submitted_tensor_needs_its_producer_in_deps(tmp_path, body, ok):
    if ok:
        _module(tmp_path, "", main_body=body)
        return
    with pytest.raises(ParserSyntaxError, match=re.escape(
            "pl.submit predicate reads 'o', which is produced by the task bound to 'tid', but "
            "'tid' is not in deps=")) as info:
        _module(tmp_path, "", main_body=body)
    assert info.value.span.line == 15
    assert "deps=[tid]" in info.value.hint


def test_dump_tag_belongs_where_kernels_are_called(tmp_path):
    kernel = ('@pl.function(type=pl.FunctionType.InCore)\n'
              'def kt(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]\n'
              '       ) -> pl.Tensor[[R, C], pl.FP32]:\n'
              '    pl.dump_tag(x)\n'
              '    return pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)\n')
    with pytest.raises(ParserSyntaxError, match="pl.dump_tag is not supported inside InCore "
                       "function 'kt'") as info:
        _module(tmp_path, kernel, main_body="o = self.kt(x, o)")
    assert info.value.span.line == 13
