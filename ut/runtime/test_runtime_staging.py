"""Host staging at the entry boundary: binding checks, In untouched, Out poisoned, copy-back."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_artifacts import K, S, T

from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.worker import Worker

F = [16, 32]


def _peek(artifact, dtype="FP32"):
    """peek copies its Out param `o` (before writing it) into `seen`, then writes o = x."""
    return artifact(
        entry_args=[T("x", F, dtype), T("o", F, dtype, "Out"), T("seen", F, dtype, "Out")],
        kernels=[K("peek", [T("a", F, dtype), T("o", F, dtype, "Out"),
                            T("s", F, dtype, "Out")], "s[...] = o\no[...] = a")],
        orchestration="""
            o, seen = rt.submit("peek", (x, o, seen), returns=(1, 2))
            return (o, seen)
        """,
    )


def test_pure_out_starts_poisoned_not_copied_in(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    o = np.full(F, 7.0, np.float32)  # the caller's contents must not leak into the kernel
    seen = np.zeros(F, np.float32)
    run = Worker("a2a3sim").run(_peek(artifact), x, o, seen)
    assert np.isnan(seen).all()
    np.testing.assert_array_equal(o, x)
    assert run.outputs["o"] is o and run.outputs["seen"] is seen
    assert set(run.outputs) == {"o", "seen"}  # In params are not outputs
    assert run.deps()["uninitialized"] == "poison"


def test_integer_out_poison_is_the_a5_byte_pattern(artifact):
    x = np.arange(16 * 32, dtype=np.int32).reshape(F)
    seen = np.zeros(F, np.int32)
    Worker("a2a3sim").run(_peek(artifact, "INT32"), x, np.zeros(F, np.int32), seen)
    assert (seen.view(np.uint32) == 0xA5A5A5A5).all()


def test_uninitialized_zero_fills_out_with_zeros(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    seen = np.full(F, 5.0, np.float32)
    run = Worker("a2a3sim").run(
        _peek(artifact), x, np.ones(F, np.float32), seen, config=RunConfig(uninitialized="zero")
    )
    np.testing.assert_array_equal(seen, 0.0)
    assert run.uninitialized == "zero" and run.deps()["uninitialized"] == "zero"


def test_create_tensor_without_init_is_poisoned_and_init_value_fills(artifact):
    art = artifact(
        entry_args=[T("a", F, direction="Out"), T("b", F, direction="Out")],
        kernels=[K("copy", [T("s", F), T("d", F, direction="Out")], "d[...] = s")],
        orchestration="""
            u = rt.create_tensor([16, 32], "FP32")
            v = rt.create_tensor([16, 32], "FP32", 2.5)
            a = rt.submit("copy", (u, a), returns=(1,))
            b = rt.submit("copy", (v, b), returns=(1,))
            return (a, b)
        """,
    )
    a, b = np.zeros(F, np.float32), np.zeros(F, np.float32)
    Worker("a2a3sim").run(art, a, b)
    assert np.isnan(a).all()
    np.testing.assert_array_equal(b, 2.5)


def test_in_arrays_are_never_mutated_and_inout_is_copied_back(artifact, rng):
    art = artifact(
        entry_args=[T("x", F), T("acc", F, direction="InOut"), S("alpha")],
        kernels=[K("axpy", [T("a", F), T("c", F, direction="InOut"), S("s")],
                   "c[...] = c + a * s")],
        orchestration="""
            acc = rt.submit("axpy", (x, acc, alpha), returns=(1,))
            acc = rt.submit("axpy", (x, acc, alpha), returns=(1,))
            return (acc,)
        """,
    )
    x = rng.standard_normal(F).astype(np.float32)
    acc = rng.standard_normal(F).astype(np.float32)
    x0, acc0 = x.copy(), acc.copy()
    run = Worker("a2a3sim").run(art, x, acc, 0.5)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_allclose(acc, acc0 + x0 * np.float32(0.5) * 2, rtol=1e-6)
    assert run.returns[0] is acc
    assert run.tasks[0]["args"][2] == {"name": "s", "direction": "Scalar", "value": 0.5}


def test_a_kernel_writing_an_in_param_fails_instead_of_mutating_the_caller(artifact):
    art = artifact(
        entry_args=[T("x", F), T("o", F, direction="Out")],
        kernels=[K("bad", [T("a", F), T("o", F, direction="Out")], "a[...] = 0\no[...] = a")],
        orchestration="""
            o = rt.submit("bad", (x, o), returns=(1,))
            return (o,)
        """,
    )
    x = np.ones(F, np.float32)
    with pytest.raises(ValueError, match="read-only"):
        Worker("a2a3sim").run(art, x, np.zeros(F, np.float32))
    np.testing.assert_array_equal(x, 1.0)


def test_non_contiguous_in_array_is_staged(artifact, rng):
    big = rng.standard_normal([32, 32]).astype(np.float32)
    x = big.T[:, :32][:16]  # a strided view
    o, seen = np.zeros(F, np.float32), np.zeros(F, np.float32)
    Worker("a2a3sim").run(_peek(artifact), x, o, seen)
    np.testing.assert_array_equal(o, x)


def _simple(artifact, dims=(16, 32), dtype="FP32"):
    return artifact(
        entry_args=[T("x", list(dims), dtype), T("out", list(dims), dtype, "Out")],
        kernels=[K("copy", [T("a", list(dims), dtype), T("o", list(dims), dtype, "Out")],
                   "o[...] = a")],
        orchestration="""
            out = rt.submit("copy", (x, out), returns=(1,))
            return (out,)
        """,
    )


@pytest.mark.parametrize(
    ("x", "pattern"),
    [
        (np.zeros(F, np.float16), r"parameter 'x' of 'Prog' has dtype FP32 \(float32\), but the "
                                  r"array has dtype float16"),
        (np.zeros([16], np.float32), r"parameter 'x' of 'Prog' is rank 2 .* the array is rank 1"),
        (np.zeros([16, 31], np.float32), r"parameter 'x' .* \(dimension 1: expected 32, got 31\)"),
        ([[1.0] * 32] * 16, r"parameter 'x' of 'Prog' is a Tensor\[\[16, 32\], FP32\], but list"),
    ],
)
def test_binding_errors_name_the_parameter(artifact, x, pattern):
    with pytest.raises(SimulationError, match=pattern) as info:
        Worker("a2a3sim").run(_simple(artifact), x, np.zeros(F, np.float32))
    assert "'x'" in info.value.message


def test_dtype_error_hints_the_conversion(artifact):
    with pytest.raises(SimulationError) as info:
        Worker("a2a3sim").run(_simple(artifact), np.zeros(F, np.float16), np.zeros(F, np.float32))
    assert info.value.hint == "convert it with .astype(numpy.float32)"


def test_argument_count_is_checked(artifact):
    with pytest.raises(SimulationError, match="takes 2 arguments, but 1 were given") as info:
        Worker("a2a3sim").run(_simple(artifact), np.zeros(F, np.float32))
    assert "main(x: Tensor[[16, 32], FP32], out: Out[Tensor[[16, 32], FP32]])" in info.value.hint


def test_scalar_param_rejects_an_array(artifact):
    art = artifact(
        entry_args=[T("x", F), S("n", "INT32"), T("o", F, direction="Out")],
        kernels=[K("shift", [T("a", F), S("n", "INT32"), T("o", F, direction="Out")],
                   "o[...] = a + n")],
        orchestration="""
            o = rt.submit("shift", (x, n, o), returns=(2,))
            return (o,)
        """,
    )
    x = np.ones(F, np.float32)
    with pytest.raises(SimulationError, match="'n' of 'Prog' is a Scalar\\[INT32\\]"):
        Worker("a2a3sim").run(art, x, np.ones(3), np.zeros(F, np.float32))
    with pytest.raises(SimulationError, match="but 1.5 \\(float\\) was given"):
        Worker("a2a3sim").run(art, x, 1.5, np.zeros(F, np.float32))
    o = np.zeros(F, np.float32)
    Worker("a2a3sim").run(art, x, np.int64(3), o)
    np.testing.assert_array_equal(o, 4.0)


def _dynamic(artifact):
    return artifact(
        entry_args=[T("x", ["M", 32]), T("y", ["M", 32]), T("out", ["M", 32], direction="Out")],
        kernels=[K("add", [T("a", ["M", 32]), T("b", ["M", 32]), T("o", ["M", 32], "FP32", "Out")],
                   "o[...] = a + b")],
        orchestration="""
            out = rt.submit("add", (x, y, out), returns=(2,))
            return (out,)
        """,
    )


def test_dynamic_dims_bind_from_the_arrays(artifact, rng):
    art = _dynamic(artifact)
    for m in (8, 24):
        x, y = (rng.standard_normal([m, 32]).astype(np.float32) for _ in range(2))
        out = np.zeros([m, 32], np.float32)
        run = Worker("a2a3sim").run(art, x, y, out)
        np.testing.assert_array_equal(out, x + y)
        assert run.deps()["dynamic_dims"] == {"M": m}


def test_entry_parameters_may_disagree_in_a_dynamic_dim_but_a_task_may_not(artifact):
    """PyPTO does not check entry dims against each other; a kernel's own params still agree."""
    x, y = np.zeros([8, 32], np.float32), np.zeros([16, 32], np.float32)
    with pytest.raises(SimulationError) as info:
        Worker("a2a3sim").run(_dynamic(artifact), x, y, np.zeros([8, 32], np.float32))
    msg = info.value.message
    assert "kernel 'add'" in msg and "'M'" in msg and "8" in msg and "16" in msg


def test_read_only_out_array_is_rejected(artifact):
    out = np.zeros(F, np.float32)
    out.flags.writeable = False
    with pytest.raises(SimulationError, match="'out' .* is Out, but the array given is read-only"):
        Worker("a2a3sim").run(_simple(artifact), np.zeros(F, np.float32), out)


def test_out_aliasing_an_in_array_still_sees_the_original_input(artifact, rng):
    """Passing one array as both In and Out: the kernel reads the input, not the poison."""
    x = rng.standard_normal(F).astype(np.float32)
    expected = x.copy()
    seen = np.zeros(F, np.float32)
    Worker("a2a3sim").run(_peek(artifact), x, x, seen)  # o aliases x
    np.testing.assert_array_equal(x, expected)  # o = x copied back onto the same memory
    assert np.isnan(seen).all()


def test_strided_out_array_is_staged_and_copied_back(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    wide = np.zeros([16, 64], np.float32)
    o = wide[:, ::2]
    seen = np.zeros(F, np.float32)
    Worker("a2a3sim").run(_peek(artifact), x, o, seen)
    np.testing.assert_array_equal(wide[:, ::2], x)
    np.testing.assert_array_equal(wide[:, 1::2], 0.0)
    assert np.isnan(seen).all()
