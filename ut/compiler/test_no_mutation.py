# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Compiling never changes the user's program, and the copy the passes rewrite is honest.

The passes rewrite IR in place (call flattening, tensor-op lowering, memory-space
types, kernel-local tensors), on a copy made by `ir.clone`.  These tests compile
programs that exercise every rewriting pass and check that the program object is
exactly as it was (printed IR, and a fingerprint recording every node's identity
and every field), that two compiles give byte-identical artifacts, and that a
program compiled for one arch then the other gives what fresh programs give.
"""

from __future__ import annotations

import copy
import enum
from pathlib import Path
from typing import Any

import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import compile as compile_artifact
from pytest_pypto.compiler.api import lower
from pytest_pypto.compiler.walk import iter_calls, iter_stmts
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.clone import clone_node, clone_program
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.printer import print_program
from pytest_pypto.ir.types import DynVar, TileType, Type
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
R, C, TR = 64, 64, 16
M = pl.dynamic("M")
UB = pl.MemRef(slots=2)


line_of = line_finder(__file__)


# ------------------------------------------------------------------ programs


def mixed_program() -> Any:
    """Several kernels: nested calls, carried loops, an if, a MemRef slot, a kernel-local
    tensor and a tensor-level op (both rewritten by the passes), a matmul (moves and
    memory-space types inserted), and a pl.at region outlined from the orchestration."""

    @pl.program
    class Mixed:
        @pl.function(type=pl.FunctionType.InCore)
        def vec(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            for i in pl.range(0, R // TR):
                a: pl.Tile[[TR, C], pl.FP32, UB[i % 2], pl.Mem.Vec] = pl.load(x, [i * TR, 0], [TR, C])
                b = pl.load(y, [i * TR, 0], [TR, C])
                if i % 2 == 0:
                    s = pl.add(pl.mul(a, b), pl.exp(a))
                else:
                    s = pl.sub(a, pl.adds(b, 1.0))
                out = pl.store(pl.row_expand_sub(s, pl.row_max(s, pl.create_tile([TR, C], pl.FP32))),
                               [i * TR, 0], out)
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def tens(self, x: pl.Tensor[[TR, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
            local = pl.create_tensor([TR, C], dtype=pl.FP32)
            local = pl.assemble(local, x, [0, 0])
            out = pl.assemble(out, pl.mul(pl.add(local, x), 2.0), [0, 0])
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[TR, C], pl.FP32], b: pl.Tensor[[C, TR], pl.FP32],
               c: pl.Out[pl.Tensor[[TR, TR], pl.FP32]]) -> pl.Tensor[[TR, TR], pl.FP32]:
            acc = pl.matmul(pl.load(a, [0, 0], [TR, C]), pl.load(b, [0, 0], [C, TR]))
            c = pl.store(acc, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]], t: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
                 b: pl.Tensor[[C, TR], pl.FP32], c: pl.Out[pl.Tensor[[TR, TR], pl.FP32]],
                 z: pl.Out[pl.Tensor[[TR, C], pl.FP32]],
                 ) -> tuple[pl.Tensor[[R, C], pl.FP32], pl.Tensor[[TR, C], pl.FP32],
                            pl.Tensor[[TR, TR], pl.FP32], pl.Tensor[[TR, C], pl.FP32]]:
            out = self.vec(x, y, out)
            head = pl.slice(x, [TR, C], [0, 0])
            t = self.tens(head, t)
            c = self.mm(head, b, c)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="region"):
                w = pl.load(t, [0, 0], [TR, C])
                z = pl.store(pl.neg(w), [0, 0], z)
            return out, t, c, z

    return Mixed


def dynamic_program() -> Any:
    """Tensor-level ops on a pl.dynamic dim (a run-time tile loop) in an outlined region."""

    @pl.program
    class Dyn:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, C], pl.FP32], y: pl.Tensor[[M, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[M, C], pl.FP32]]) -> pl.Tensor[[M, C], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                s = pl.row_expand_sub(pl.add(x, y), pl.row_sum(pl.abs(x)))
                out = pl.assemble(out, s, [0, 0])
            return out

    return Dyn


def too_big_program() -> Any:
    """Fails in check_capacity, after flattening and memory spaces rewrote the copy."""

    @pl.program
    class TooBig:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[512, 512], pl.FP32],
              out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            t = pl.load(x, [0, 0], [512, 512])  # too-big
            out = pl.store(pl.exp(pl.add(t, t)), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[512, 512], pl.FP32],
                 out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            out = self.k(x, out)
            return out

    return TooBig


BUILDERS = {"mixed": mixed_program, "dynamic": dynamic_program}


# ------------------------------------------------------------------ helpers


def fingerprint(value: Any) -> Any:
    """Every field of every node, with each mutable object's identity: a pass that
    rewrote a field, replaced a child by an equal one, or reordered a body shows."""
    if isinstance(value, (n.Node, n.Unsupported)):
        return (type(value).__name__, id(value),
                tuple((k, fingerprint(v)) for k, v in sorted(vars(value).items())))
    if isinstance(value, list):
        return ("list", id(value), tuple(fingerprint(v) for v in value))
    if isinstance(value, dict):
        return ("dict", id(value), tuple((k, fingerprint(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return tuple(fingerprint(v) for v in value)
    if isinstance(value, DynVar):
        return ("dyn", id(value), value.name)
    if isinstance(value, Type):
        fields = getattr(value, "__dataclass_fields__", {})
        return (type(value).__name__, tuple((k, fingerprint(getattr(value, k))) for k in fields))
    if isinstance(value, enum.Enum):
        return repr(value)
    return (type(value).__name__, repr(value))


def artifact_files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def compile_to(program: Any, platform: str, directory: Path) -> dict[str, bytes]:
    compiled = compile_artifact(program, RunConfig(platform=platform), output_dir=directory)
    files = artifact_files(directory)
    files["<ir_text>"] = compiled.ir_text.encode()
    return files


def mutable_objects(value: Any, found: dict[int, Any]) -> dict[int, Any]:
    """id -> object of every node, list and dict reachable through node fields."""
    if isinstance(value, (n.Node, n.Unsupported, list, dict)):
        if id(value) in found:
            return found
        found[id(value)] = value
        items = (vars(value).values() if isinstance(value, (n.Node, n.Unsupported))
                 else value.values() if isinstance(value, dict) else value)
        for v in items:
            mutable_objects(v, found)
    elif isinstance(value, tuple):
        for v in value:
            mutable_objects(v, found)
    return found


# ------------------------------------------------------------------ compile leaves the program


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_compiling_leaves_the_program_unchanged(name, platform, tmp_path):
    program = BUILDERS[name]()
    text, mark = print_program(program), fingerprint(program)
    work, ctx = lower(program, RunConfig(platform=platform))
    compile_to(program, platform, tmp_path / "a")
    assert print_program(program) == text
    assert fingerprint(program) == mark
    # The passes did rewrite their copy (else this test would prove nothing).
    assert print_program(work) != text
    assert not set(mutable_objects(work, {})) & set(mutable_objects(program, {}))


def test_the_passes_rewrite_what_the_program_is_checked_for():
    """The mixed program reaches each in-place rewrite: flattened calls, a kernel-local
    tensor, lowered tensor ops, memory-space types (so the checks above cover them)."""
    program = mixed_program()
    work, _ = lower(program, RunConfig(platform="a5sim"))
    ops = {e.op for fn in work.functions.values() for _, e in iter_calls(fn.body)
           if isinstance(e, n.Call)}
    assert "tensor.local" in ops  # structure._make_kernel_local rewrote a call
    tens = work.functions["tens"]
    assert any(isinstance(e, n.Call) and e.op == "tile.load" for _, e in iter_calls(tens.body))
    vec_types = [t.type for s in iter_stmts(work.functions["vec"].body)
                 if isinstance(s, n.Assign) for t in s.targets]
    assert vec_types and all(t.space == "Vec" for t in vec_types if isinstance(t, TileType))
    orig_types = [t.type for s in iter_stmts(program.functions["vec"].body)
                  if isinstance(s, n.Assign) for t in s.targets]
    assert any(isinstance(t, TileType) and t.space is None for t in orig_types)
    assert "tensor.create(" in print_program(program)  # the user's call is still there


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_failing_compile_leaves_the_program_unchanged(platform):
    program = too_big_program()
    text, mark = print_program(program), fingerprint(program)
    with pytest.raises(CapacityError) as info:
        compile_artifact(program, RunConfig(platform=platform))
    assert info.value.span is not None and info.value.span.line == line_of("# too-big")
    assert "Vec peak usage" in str(info.value)
    assert print_program(program) == text
    assert fingerprint(program) == mark


# ------------------------------------------------------------------ deterministic artifacts


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_compiling_twice_gives_byte_identical_artifacts(name, platform, tmp_path):
    program = BUILDERS[name]()
    first = compile_to(program, platform, tmp_path / "a")
    second = compile_to(program, platform, tmp_path / "b")
    assert any(k.startswith("kernels/") for k in first)
    assert first == second


@pytest.mark.parametrize("order", [PLATFORMS, PLATFORMS[::-1]], ids="-then-".join)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_one_program_compiled_for_both_arches_matches_fresh_compiles(name, order, tmp_path):
    fresh = {p: compile_to(BUILDERS[name](), p, tmp_path / f"fresh-{p}") for p in order}
    assert fresh[order[0]] != fresh[order[1]]  # the arches do give different artifacts
    program = BUILDERS[name]()
    for p in order:
        assert compile_to(program, p, tmp_path / f"shared-{p}") == fresh[p]


# ------------------------------------------------------------------ the copier itself


def test_clone_copies_every_node_and_shares_immutable_leaves():
    program = mixed_program()
    copied = clone_program(program)
    assert print_program(copied) == print_program(program)
    originals, copies = mutable_objects(program, {}), mutable_objects(copied, {})
    assert len(originals) == len(copies) > 100
    assert not set(originals) & set(copies)
    pairs = list(zip(_leaves(program), _leaves(copied), strict=True))
    shared_kinds = {type(a).__name__ for a, b in pairs if a is b}
    assert {"Span", "TensorType", "TileType", "DataType"} <= shared_kinds
    assert all(a is b for a, b in pairs if isinstance(a, (n.Span, Type, DynVar)))
    assert copied.source_lines is program.source_lines


def test_clone_keeps_the_users_dynvars():
    program = dynamic_program()
    copied = clone_program(program)
    dims = [d for p in copied.functions["main"].params for d in getattr(p.type, "shape", ())]
    assert any(d is M for d in dims)


def test_clone_keeps_one_node_reached_twice_as_one_node():
    shared = n.Var("x")
    stmt = n.Assign((n.Var("y"),), n.BinOp("+", shared, shared))
    copied = clone_node(stmt)
    assert copied.value.lhs is copied.value.rhs
    assert copied.value.lhs is not shared


def test_changing_the_clone_leaves_the_original():
    program = mixed_program()
    text = print_program(program)
    copied = clone_program(program)
    for fn in copied.functions.values():
        for stmt in iter_stmts(fn.body):
            if isinstance(stmt, n.Assign):
                stmt.targets[0].name += "_renamed"
            if isinstance(stmt, n.For):
                stmt.body.append(n.Yield(()))
        fn.body.clear()
        fn.params[0].name = "renamed"
    copied.functions.clear()
    assert print_program(program) == text


def test_clone_deep_copies_values_it_does_not_know():
    """A value of no IR kind (here a dict-like attribute) is copied, never shared."""
    stmt = n.For(n.Var("i"), n.Const(0), n.Const(4), n.Const(1), [], attrs={"k": [1, 2]})
    stmt.extra = bytearray(b"ab")  # type: ignore[attr-defined]
    copied = clone_node(stmt)
    assert copied.attrs == {"k": [1, 2]} and copied.attrs["k"] is not stmt.attrs["k"]
    assert copied.extra == bytearray(b"ab") and copied.extra is not stmt.extra
    assert copy.deepcopy(stmt).attrs == copied.attrs


def _leaves(value: Any) -> list[Any]:
    """Non-container values in field order (what clone shares), for pairing two trees."""
    if isinstance(value, (n.Node, n.Unsupported)):
        return [x for v in vars(value).values() for x in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]
