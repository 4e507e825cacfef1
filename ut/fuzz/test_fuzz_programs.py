"""Random DSL programs against an independent numpy reference, on a2a3sim and a5sim.

The strategies of fuzz_gen / fuzz_mm build valid programs (Vec kernels over row and
column blocks with ragged tails, op chains over the registry's Tier 1 ops, reductions,
casts, constants, scalar parameters and arithmetic, if/else, loop-carried values,
`pl.dynamic` rows, matmul with a K loop and a Vec epilogue, two kernels chained
through a temporary tensor or in place through an InOut, repeated in an
orchestration loop); fuzz_mut turns them into invalid ones with a known designed
error.  Property (fuzz_exec.check_program): a valid program compiles, runs on both
platforms and matches fuzz_ref with its In arrays unmodified; an invalid one raises
its designed `PyptoError` subclass pointing at the generated file and the mutated
line.  Anything else (another exception, a mismatch, a hang) fails and is shrunk.

The suite runs a fixed, derandomized set of 450 programs (about 15 s on one core).
The long run (random seeds, N examples per test, failures kept in .hypothesis/;
add ``-n 2`` to use two cores):

    PYPTO_FUZZ_EXAMPLES=5000 .venv/bin/pytest ut/fuzz -p no:randomly

Toolchain bugs found by this fuzzer are excluded from generation where they are
(search "Toolchain bug" in ut/fuzz) until fixed.
"""

from __future__ import annotations

import os

import fuzz_ref
import numpy as np
import pytest
from fuzz_exec import check_program
from fuzz_gen import vec_programs
from fuzz_mm import mm_programs
from fuzz_mut import invalid_programs
from fuzz_spec import Call, Kernel, Param, Program, Stmt
from hypothesis import given, settings

LONG = bool(os.environ.get("PYPTO_FUZZ_EXAMPLES"))


def fuzz_settings(n: int) -> settings:
    """``n`` derandomized examples, or the long-run profile (conftest.py)."""
    if LONG:
        return settings(settings.get_profile("fuzz-long"))
    return settings(settings.get_profile("fuzz-fixed"), derandomize=True, max_examples=n,
                    deadline=None, database=None)


@fuzz_settings(120)
@given(prog=vec_programs())
def test_vec_kernels(prog: Program) -> None:
    check_program(prog)


@fuzz_settings(60)
@given(prog=vec_programs(dynamic=True))
def test_dynamic_rows(prog: Program) -> None:
    check_program(prog)


@fuzz_settings(60)
@given(prog=vec_programs(chained=True, dynamic=False) | vec_programs(chained=True, dynamic=True))
def test_two_kernels_through_a_temporary(prog: Program) -> None:
    check_program(prog)


@fuzz_settings(60)
@given(prog=mm_programs() | mm_programs(chained=True))
def test_matmul_kernels(prog: Program) -> None:
    check_program(prog)


@fuzz_settings(150)
@given(prog=invalid_programs())
def test_invalid_programs_raise_designed_errors(prog: Program) -> None:
    check_program(prog)


def _add_one_program() -> Program:
    """out = x + 1.0 over FP32 [16, 32] in two row blocks (built by hand)."""
    x = Param("x", "tensor", "FP32", 16, 32)
    out = Param("out", "tensor", "FP32", 16, 32, "Out")
    body = [Stmt("load", "t1", ("x",), {}, "FP32", sid=1),
            Stmt("scalar", "t2", ("t1",), {"op": "add", "operand": "1.0", "value": 1.0},
                 "FP32", sid=2),
            Stmt("store", None, ("t2", "out"), {"cls": "full"}, "FP32", sid=3)]
    k = Kernel("k0", [x, out], 16, 32, 8, 32, body)
    return Program([k], [x, out], [], [Call("k0", ["x", "out"], ["out"])], {}, {}, 7)


def test_the_property_is_not_vacuous(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker passes a correct program, and fails it when the reference is wrong,
    when a designed error is expected but the program runs, or at a wrong line."""
    check_program(_add_one_program())
    prog = _add_one_program()
    prog.expect, prog.mut_sid = {"a2a3": ("BoundsError",), "a5": ("BoundsError",)}, 1
    with pytest.raises(AssertionError, match="must raise"):
        check_program(prog)
    prog.kernels[0].body[0].attrs["row_extra"] = " + 1"  # now past the edge, at sid 1
    check_program(prog)
    prog.mut_sid = 2
    with pytest.raises(AssertionError, match="expected line"):
        check_program(prog)
    monkeypatch.setattr(fuzz_ref, "scalar_operand",
                        lambda value, dtype: fuzz_ref.Val(np.full((1, 1), 2.0, np.float32),
                                                          dtype))
    with pytest.raises(AssertionError, match="differs from the reference"):
        check_program(_add_one_program())
