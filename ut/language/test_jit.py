# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`@pl.jit` specialisation (docs/design/language.md §6): parameter types from the arguments, shapes
folded into the body, dependencies specialised per argument signature, and the errors
of bad arguments.  Only parsing here (`JITFunction.specialize`); running and the cache
are in ut/pipeline/test_pipeline_jit.py."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import ParserTypeError, UnsupportedFeatureError
from pytest_pypto.ir.nodes import Call, FuncCall
from pytest_pypto.ir.types import Direction, DynVar, ScalarType, TensorType

M = pl.dynamic("M")


@pl.jit.incore
def copy_k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    R, C = a.shape
    t = pl.load(a, [0, 0], [R, C])
    pl.store(t, [0, 0], out)
    return out


@pl.jit
def entry(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    c = copy_k(a, c)
    d = copy_k(b, d)
    return c, d


@pl.jit.incore
def head16(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, a.shape[1]])
    pl.store(t, [0, 0], out)
    return out


@pl.jit
def annotated(x: pl.Tensor[[M, 32], pl.FP32], n: pl.Scalar[pl.INT32],
              out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
    out = head16(x, out)
    return out


@pl.jit
def scalar_user(a: pl.Tensor, k, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.mul(t, k), [0, 0], out)
    return out


@pl.jit.incore
def bad_dep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 16])
    pl.store(pl.add(t, pl.cast(t, pl.FP16)), [0, 0], out)  # dep-error
    return out


@pl.jit
def calls_bad_dep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = bad_dep(a, out)
    return out


@pl.jit
def passes_scalar_to_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = copy_k(3, out)  # scalar-arg
    return out


def arrays(*shapes: tuple[int, ...], dtype=np.float32) -> list[np.ndarray]:
    return [np.zeros(s, dtype) for s in shapes]


def test_parameters_take_the_arguments_shapes_and_dtypes():
    a, b, c, d = arrays((16, 32), (8, 64), (16, 32), (8, 64))
    prog = entry.specialize(a, b.astype(np.float16), c, d.astype(np.float16))
    main = prog.functions["entry"]
    assert main.kind == "Orchestration"
    assert [(p.name, p.type, p.direction) for p in main.params] == [
        ("a", TensorType((16, 32), dtypes.FP32), Direction.IN),
        ("b", TensorType((8, 64), dtypes.FP16), Direction.IN),
        ("c", TensorType((16, 32), dtypes.FP32), Direction.OUT),
        ("d", TensorType((8, 64), dtypes.FP16), Direction.OUT),
    ]
    # one InCore function per argument signature of the dependency
    assert list(prog.functions) == ["entry", "copy_k", "copy_k_1"]
    k0, k1 = prog.functions["copy_k"], prog.functions["copy_k_1"]
    assert k0.kind == k1.kind == "InCore"
    assert [p.type for p in k1.params] == [TensorType((8, 64), dtypes.FP16)] * 2
    # `R, C = a.shape` folded: the load window is the argument's shape
    load = next(s.value for s in k1.body if isinstance(getattr(s, "value", None), Call))
    assert load.op == "tile.load" and tuple(load.arg("shapes")) == (8, 64)
    calls = [s.value.callee for s in main.body if isinstance(getattr(s, "value", None), FuncCall)]
    assert calls == ["copy_k", "copy_k_1"]


def test_same_signature_reuses_one_function():
    a, b, c, d = arrays((16, 32), (16, 32), (16, 32), (16, 32))
    prog = entry.specialize(a, b, c, d)
    assert list(prog.functions) == ["entry", "copy_k"]


def test_annotated_dynamic_dims_stay_dynamic_and_scalars_are_typed():
    x, out = arrays((48, 32), (48, 32))
    prog = annotated.specialize(x, 7, out)
    params = prog.functions["annotated"].params
    assert params[0].type.shape[0] is M and isinstance(params[0].type.shape[0], DynVar)
    assert params[1].type == ScalarType(dtypes.INT32) and params[1].direction is Direction.SCALAR
    assert prog.functions["head16"].params[0].type.shape == (M, 32)


def test_scalar_arguments_fold_into_the_body():
    a, out = arrays((16, 16), (16, 16))
    prog = scalar_user.specialize(a, 2.5, out)
    main = prog.functions["scalar_user"]
    assert main.params[1].type == ScalarType(dtypes.FP32)  # unannotated float
    muls = [s.value for fn in prog.functions.values() for s in fn.body
            if isinstance(getattr(s, "value", None), Call) and s.value.op == "tile.muls"]
    assert len(muls) == 1 and [v for _, v in muls[0].args][1].value == 2.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("text", 1, None), "argument 'x' is a str; pass a torch tensor or numpy array"),
        ((np.zeros((4, 32), np.float32), 1), "missing a required argument: 'out'"),
        ((np.zeros((4, 16), np.float32), 1, np.zeros((4, 16), np.float32)),
         "argument 'x' has shape [4, 16], but the annotation declares [M, 32] (dimension 1)"),
        ((np.zeros((4, 32), np.float16), 1, np.zeros((4, 32), np.float32)),
         "argument 'x' has dtype FP16, but the annotation declares FP32"),
        ((np.zeros((4, 32, 1), np.float32), 1, np.zeros((4, 32), np.float32)),
         "argument 'x' has shape [4, 32, 1], but the annotation declares rank 2 ([M, 32])"),
        ((np.zeros((4, 32), np.float32), np.zeros(3), np.zeros((4, 32), np.float32)),
         "argument 'n' is a tensor, but the parameter is annotated pl.Scalar[pl.INT32]"),
        ((np.zeros((4, 32), np.complex64), 1, np.zeros((4, 32), np.float32)),
         "argument 'x' has dtype complex64, which has no DSL dtype"),
    ],
    ids=["kind", "missing", "static-dim", "dtype", "rank", "scalar-annotated", "no-dtype"],
)
def test_bad_arguments_raise_type_errors_naming_them(args: tuple, message: str):
    with pytest.raises(TypeError) as info:
        annotated.specialize(*args)
    assert str(info.value).startswith("@pl.jit function 'annotated': ")
    assert message in str(info.value)


def test_errors_in_a_dependency_point_at_its_lines(line_of: Callable[[str], int]):
    with pytest.raises(ParserTypeError) as info:
        calls_bad_dep.specialize(*arrays((16, 16), (16, 16)))
    assert (info.value.file, info.value.line) == (__file__, line_of("dep-error"))


def test_a_dependency_needs_tensor_arguments(line_of: Callable[[str], int]):
    with pytest.raises(ParserTypeError) as info:
        passes_scalar_to_tensor.specialize(*arrays((16, 16), (16, 16)))
    assert info.value.message == (
        "argument 'a' of copy_k(...) (position 0) must be a Tensor, but got 3"
    )
    assert info.value.line == line_of("scalar-arg")


def test_bind_dynamic_marks_a_dim_dynamic():
    N = pl.dynamic("N")

    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        a.bind_dynamic(0, N)
        out.bind_dynamic(0, N)
        out = head16(a, out)
        return out

    prog = k.specialize(*arrays((24, 16), (24, 16)))
    assert [p.type.shape for p in prog.functions["k"].params] == [(N, 16), (N, 16)]


def test_dtype_and_shape_attributes_fold():
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [a.shape[0], a.shape[1]])
            pl.store(pl.cast(t, out.dtype), [0, 0], out)
        return out

    prog = k.specialize(np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float16))
    casts = [s.value for fn in prog.functions.values() for s in fn.body
             if isinstance(getattr(s, "value", None), Call) and s.value.op == "tile.cast"]
    assert len(casts) == 1 and casts[0].type.dtype is dtypes.FP16


def test_decorator_forms_and_tier3_variants():
    def body(a, out):
        return out

    assert isinstance(pl.jit(body), pl.JITFunction)
    assert pl.jit()(body)._func_type == "orchestration"
    assert pl.jit.incore(level=pl.Level.CORE_GROUP)(body)._func_type == "incore"
    assert pl.jit.inline(body)._func_type == "inline"
    assert pl.jit.opaque(body)._func_type == "opaque"
    manual = pl.jit(auto_scope=False)(body)
    with pytest.raises(UnsupportedFeatureError, match=r"auto_scope=False\) is not supported .*"
                       r"tier 3"):
        manual(np.zeros(4), np.zeros(4))
    with pytest.raises(TypeError, match="pl.jit decorates a function"):
        pl.jit(3)


def test_pypto_module_paths_reach_the_same_objects():
    from pytest_pypto.compat.pypto.ir.compiled_program import CompiledProgram
    from pytest_pypto.compat.pypto.jit import JITFunction, jit
    from pytest_pypto.ir.artifact import CompiledProgram as Ours

    assert jit is pl.jit and JITFunction is pl.JITFunction and CompiledProgram is Ours
