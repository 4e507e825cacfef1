"""The compile-time helpers behind issue #13's compile target: expression memo, lazy
fresh names, per-op parameter tables, memoized tile bytes, shared returned_params.

Each helper must give exactly what the plain computation gives (the artifacts are
byte-identical with and without them); the references here are written in the test.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler import walk
from pytest_pypto.compiler.api import PASSES, compile, lower
from pytest_pypto.compiler.capacity import shape_bytes, tile_bytes
from pytest_pypto.compiler.directions import returned_params
from pytest_pypto.compiler.optable import param_table
from pytest_pypto.compiler.passes import Pass, PassContext, PassManager
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import BF16, FP16, FP32, INT8
from pytest_pypto.ir.registry import REGISTRY, VALUE_KINDS
from pytest_pypto.ir.types import TileType


@pl.program
class Looped:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], s: pl.Scalar[pl.FP32],
          out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.range(4):
            t = pl.load(x, [i * 16, 0], [16, 32])
            u = pl.adds(pl.mul(t, t), s)
            out = pl.store(u, [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], s: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        out = self.k(x, s, out)
        return out


def _reference_exprs(e: object) -> list[object]:
    """Operands first, then the node: an independent post-order walk of one expression."""
    out: list[object] = []
    if isinstance(e, n.Call):
        for _, v in e.args:
            for item in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(item, n.Expr):
                    out += _reference_exprs(item)
    elif isinstance(e, n.FuncCall):
        for a in e.args:
            out += _reference_exprs(a)
    elif isinstance(e, (n.BinOp, n.Compare)):
        out += _reference_exprs(e.lhs) + _reference_exprs(e.rhs)
    elif isinstance(e, (n.UnaryOp, n.ScalarCast)):
        out += _reference_exprs(e.operand)
    return out + [e]


def _all_stmts(body: list[n.Stmt]) -> list[n.Stmt]:
    out: list[n.Stmt] = []
    for s in body:
        out.append(s)
        if isinstance(s, n.For):
            out += _all_stmts(s.body)
        elif isinstance(s, n.If):
            out += _all_stmts(s.then_body) + _all_stmts(s.else_body)
    return out


def _lowered() -> n.Program:
    work, _ = lower(Looped, RunConfig(platform="a5sim"))
    return work


def test_stmt_expr_list_is_every_expression_operands_first():
    work = _lowered()
    stmts = [s for fn in work.functions.values() for s in _all_stmts(fn.body)]
    assert any(isinstance(s, n.For) for s in stmts)
    for s in stmts:
        expected = [e for top in walk.stmt_exprs(s) for e in _reference_exprs(top)]
        got = walk.stmt_expr_list(s)
        assert [id(e) for e in got] == [id(e) for e in expected]
        assert [id(e) for e in walk.iter_exprs(walk.stmt_exprs(s)[0])] == (
            [id(e) for e in _reference_exprs(walk.stmt_exprs(s)[0])] if walk.stmt_exprs(s) else [])


def test_iter_stmts_and_iter_calls_follow_program_order():
    fn = _lowered().functions["k"]
    stmts = _all_stmts(fn.body)
    assert list(walk.iter_stmts(fn.body)) == stmts
    expected = [(s, e) for s in stmts for top in walk.stmt_exprs(s)
                for e in _reference_exprs(top) if isinstance(e, (n.Call, n.FuncCall))]
    assert [(id(s), id(e)) for s, e in walk.iter_calls(fn.body)] == [
        (id(s), id(e)) for s, e in expected]


def test_expression_memo_answers_from_the_memo_only_inside():
    fn = _lowered().functions["k"]
    stmt = next(s for s in _all_stmts(fn.body) if isinstance(s, n.Assign))
    assert walk.stmt_expr_list(stmt) is not walk.stmt_expr_list(stmt)  # no memo: fresh lists
    memo: walk.ExprMemo = {}
    with walk.expressions_fixed(memo):
        first = walk.stmt_expr_list(stmt)
        assert walk.stmt_expr_list(stmt) is first
        calls = list(walk.iter_calls(fn.body))
        assert list(walk.iter_calls(fn.body)) == calls
    assert memo[id(stmt)] == (stmt, first)
    assert id(fn.body) in memo
    assert walk.stmt_expr_list(stmt) is not first  # left: walked afresh again


def test_pass_manager_clears_the_memo_before_a_rewriting_pass():
    """A pass that rewrites expressions runs without the memo and empties it, so a later
    keeping pass sees the new expressions, not the old ones."""
    fn = _lowered().functions["k"]
    stmt = next(s for s in _all_stmts(fn.body)
                if isinstance(s, n.Assign) and isinstance(s.value, n.Call))
    seen: list[list[int]] = []

    def look(program: n.Program, ctx: PassContext) -> n.Program:
        seen.append([id(e) for e in walk.stmt_expr_list(stmt)])
        return program

    replacement = n.Var("fresh_name", type=stmt.value.type)

    def rewrite(program: n.Program, ctx: PassContext) -> n.Program:
        stmt.value = replacement
        return program

    ctx = PassContext(arch=spec("a5"), registry=REGISTRY.as_dict())
    program = n.Program("P", {"k": fn}, "f.py")
    PassManager([Pass("look", look, keeps_exprs=True), Pass("rewrite", rewrite),
                 Pass("look_again", look, keeps_exprs=True)]).run(program, ctx)
    assert seen[1] == [id(replacement)] and seen[0] != seen[1]


def test_name_generator_collects_taken_names_only_when_asked():
    calls = []

    def taken() -> set[str]:
        calls.append(1)
        return {"t_1", "t_2", "x"}

    names = walk.NameGen(taken)
    assert calls == []
    assert names.fresh("t") == "t_3"
    assert names.fresh("t_9") == "t_4"
    assert names.fresh("x") == "x_1"
    assert calls == [1]
    assert walk.NameGen({"a_1"}).fresh("a") == "a_2"


def test_param_table_matches_the_op_params_and_is_built_once():
    for name in ("tile.load", "tile.store", "tile.adds", "tile.matmul", "tile.cast"):
        op = REGISTRY[name]
        table = param_table(op)
        assert [r.name for r in table.rows] == [p.name for p in op.params]
        assert [r.is_value for r in table.rows] == [p.kind in VALUE_KINDS for p in op.params]
        assert [r.required for r in table.rows] == [p.required for p in op.params]
        assert [r.default for r in table.rows] == [p.default for p in op.params]
        assert table.names == {p.name for p in op.params}
        assert table.value_names == tuple(p.name for p in op.params if p.kind in VALUE_KINDS)
        assert param_table(op) is table


def _bytes_by_hand(shape, dtype, space, arch) -> int:
    dims = list(shape)
    if space == "Acc" and len(dims) >= 2:
        a = arch.acc_m_align.get(dtype.name, 1)
        dims[-2] = -(-dims[-2] // a) * a
    count = math.prod(dims)
    raw = (count + 1) // 2 if dtype.bits == 4 else count * dtype.bits // 8
    a = arch.alignment.get(space or "", 1)
    return -(-raw // a) * a


@pytest.mark.parametrize("arch_name", ["a2a3", "a5"])
@pytest.mark.parametrize("space", ["Vec", "Mat", "Left", "Right", "Acc", None])
def test_shape_bytes_is_tile_bytes(arch_name, space):
    arch = spec(arch_name)
    for shape in [(1, 1), (3, 5), (16, 64), (17, 33), (128, 128)]:
        for dtype in (FP32, FP16, BF16, INT8):
            expected = _bytes_by_hand(shape, dtype, space, arch)
            assert shape_bytes(shape, dtype, space, arch) == expected
            assert shape_bytes(list(shape), dtype, space, arch) == expected
            assert tile_bytes(TileType(shape, dtype, space), arch) == expected


def test_shape_bytes_memo_is_per_arch_object():
    arch = spec("a5")
    wider = dataclasses.replace(arch, alignment={**arch.alignment, "Vec": 4096})
    assert shape_bytes((3, 5), FP32, "Vec", arch) == _bytes_by_hand((3, 5), FP32, "Vec", arch)
    assert shape_bytes((3, 5), FP32, "Vec", wider) == 4096


def test_tile_type_with_returns_itself_only_when_nothing_changes():
    t = TileType((16, 32), FP32, "Vec")
    assert t.with_(space="Vec") is t
    assert t.with_() is t
    moved = t.with_(space="Mat")
    assert moved is not t and moved.space == "Mat" and t.space == "Vec"
    assert moved.shape == t.shape and moved.valid == t.valid
    assert t.with_(valid=(16, 32)) == t  # an equal tuple is a new value, equal to the old


def test_returned_params_memo_gives_the_plain_answers():
    work = _lowered()
    memo: dict[str, list[int]] = {}
    for fn in work.functions.values():
        assert returned_params(fn, memo=memo) == returned_params(fn)
        got = returned_params(fn, memo=memo)
        got.append(99)  # a caller's list is its own: the memo is not changed through it
        assert returned_params(fn, memo=memo) == returned_params(fn)
    entry = work.functions["main"]
    assert returned_params(entry, work, memo=memo) == returned_params(entry, work) == [2]


def test_keeping_passes_are_the_ones_that_rewrite_no_expression():
    """The pass list's keeps_exprs flags: every pass that rewrites IR is False."""
    rewriting = {"check_placement", "flatten_calls", "lower_tensor_ops", "auto_tile_l0",
                 "infer_memory_spaces"}
    assert {p.name for p in PASSES if not p.keeps_exprs} == rewriting


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_compiling_twice_gives_the_same_texts(platform):
    config = RunConfig(platform=platform)
    first = compile(Looped, config).memory.files()
    second = compile(Looped, config).memory.files()
    assert first == second
    assert "kernels/k.py" in first and "for i in range" in first["kernels/k.py"]
