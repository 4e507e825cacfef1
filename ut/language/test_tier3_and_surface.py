# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Tier 3 constructs are recorded (decoration succeeds); the pl surface itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import InvalidOperationError, ParserTypeError
from pytest_pypto.ir.nodes import Call, DynDim, FuncCall
from pytest_pypto.ir.types import DynVar, TensorType
from pytest_pypto.language.surface import NotRunnable


def test_pl_distributed_is_pld_and_a_name_it_lacks_fails_at_its_line(line_of):
    import pytest_pypto.language.distributed as pld

    assert pl.distributed is pld  # as after PyPTO's `import pypto.language.distributed`

    with pytest.raises(InvalidOperationError, match="pld.system.no_such_op") as info:

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 64], pl.FP32]):
                pl.distributed.system.no_such_op(x)  # unknown

    assert info.value.span.line == line_of("unknown")


def test_tier3_function_types_dtypes_and_attrs_are_recorded():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Spmd)
        def cube(self, x: pl.Tensor[[64, 64], pl.FP32]):
            pass

        @pl.function(type=pl.FunctionType.InCore)
        def packed(self, x: pl.Tensor[[64, 64], pl.INT4]):
            pass

        @pl.function(type=pl.FunctionType.InCore, attrs={"a": 1})
        def attributed(self, x: pl.Tensor[[64, 64], pl.FP32]):
            pass

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32]):
            self.cube(x)

    constructs = {name: fn.unsupported.construct for name, fn in P.functions.items()}
    assert constructs == {
        "cube": "pl.FunctionType.Spmd",
        "packed": "pl.INT4",
        "attributed": "pl.function(attrs=...)",
        "main": "pl.FunctionType.Spmd",  # calling an unsupported function is unsupported too
    }


def test_inline_functions_are_spliced_not_kept():  # calls: ut/language/test_inline.py
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Inline)
        def f(self, x: pl.Tensor[[64, 64], pl.FP32]):
            pass

    assert P.functions == {}


def test_ops_raise_when_called_from_python():
    with pytest.raises(NotRunnable, match="pl.add is kernel code"):
        pl.add(1, 2)
    with pytest.raises(NotRunnable):
        pl.range(4)
    with pytest.raises(AttributeError, match="no_such_op"):
        pl.no_such_op  # noqa: B018
    assert pl.tile.add.op_name == "add" and pl.tile.add.namespace == "tile"
    assert pl.tile.full.op_name == "full"
    with pytest.raises(AttributeError):
        pl.full_of_nothing  # noqa: B018


def test_surface_names_and_enums():
    assert pl.Mem is pl.MemorySpace and pl.Mem.Vec.value == "Vec"
    assert pl.FP32 is dtypes.FP32
    assert {t.name for t in pl.FunctionType} >= {
        "InCore", "Orchestration", "Opaque", "Inline", "AIC", "AIV", "Group", "Spmd", "Graph"
    }
    assert [m.name for m in pl.PadValue] == ["null", "zero", "min", "max"]
    assert [m.name for m in pl.AtomicType] == ["None_", "Add"]
    assert isinstance(pl.dynamic("M"), DynVar)
    assert pl.dynamic("M") != pl.dynamic("M")


def test_import_does_not_load_numpy_or_ops():
    code = (
        "import sys; import pytest_pypto.language as pl; "
        "assert 'numpy' not in sys.modules, 'numpy'; "
        "assert 'pytest_pypto.ir.ops.memory' not in sys.modules, 'ops'; "
        "pl.FP32; pl.Tensor[[4], pl.FP32]; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_dynamic_dims_unify_across_a_call():
    M = pl.dynamic("M")

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, 64], pl.FP32], b: pl.Tensor[[M, 64], pl.FP32],
              out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 64])
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 64], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
            out = self.k(a, b, out)
            return out

    call = P.functions["main"].body[0].value
    assert isinstance(call, FuncCall)
    assert call.type == TensorType((128, 64), dtypes.FP32)  # M bound to 128

    with pytest.raises(ParserTypeError, match="binds to 128"):
        @pl.program
        class Q:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[M, 64], pl.FP32], b: pl.Tensor[[M, 64], pl.FP32]):
                pass

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[128, 64], pl.FP32], b: pl.Tensor[[96, 64], pl.FP32]):
                self.k(a, b)


def test_dynamic_dim_as_scalar_and_create_tensor():
    N = pl.dynamic("N")

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[N, 64], pl.FP32]):
            buf = pl.create_tensor([N, 64], pl.FP16, init_value=0)
            for i in pl.range(N):
                pass

    create, loop = P.functions["main"].body
    assert isinstance(create.value, Call) and create.value.op == "tensor.create"
    assert create.value.args == (("shape", (N, 64)), ("dtype", dtypes.FP16), ("init_value", 0))
    assert create.targets[0].type == TensorType((N, 64), dtypes.FP16)
    assert isinstance(loop.stop, DynDim) and loop.stop.var is N


def test_subscript_sugar_reaches_the_registry_view_op():
    # (views now exist: ut/language/test_subscripts.py tests the sugar in full)
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
            t = pl.load(x, [0, 0], [64, 64])
            u = t[0:32, :]

    u = P.functions["k"].body[-1].value
    assert u.op == "tile.slice" and u.type.shape == (32, 64)
