# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.prefetch.*` (asynchronous GM->L2 prefetch, docs/design/language.md §21): a cache hint
that changes no value, whose `wait` yields true once the prefetch landed.  Runs on a2a3
(the arch with an SDMA engine for it), refused at the user's line on a5; parse-time rules
on the source tensor and the handles point at the call."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import PyptoError
from ut.helpers import line_finder
from ut.helpers import line_of as line_in

N = 128
line_of = line_finder(__file__)


@pl.program
class PrefetchThenScale:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[1, N], pl.FP32],
               out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()  # make-context
        evt: pl.AsyncEvent = pl.prefetch.async_prefetch(a, ctx)
        session: pl.AsyncSession = pl.prefetch.session(ctx)
        done: pl.Scalar[pl.BOOL] = pl.prefetch.wait(evt, session)
        t: pl.Tile[[1, N], pl.FP32] = pl.load(a, [0, 0], [1, N])
        if done:
            t = pl.mul(t, 2.0)
        return pl.store(t, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.kernel(a, out)


def _run(program, platform, a):
    out = np.zeros_like(a)
    config = RunConfig(platform=platform)
    pytest_pypto.run(pytest_pypto.compile(program, config), a, out, config=config)
    return out


def test_prefetch_changes_no_value_and_wait_says_it_landed():
    a = np.random.default_rng(5).standard_normal((1, N)).astype(np.float32)
    out = _run(PrefetchThenScale, "a2a3sim", a)
    np.testing.assert_array_equal(out, a * 2)  # the copy is exact, and wait gave true


def test_a5_has_no_sdma_engine_for_it():
    with pytest.raises(PyptoError, match="not available on the 'a5' backend") as info:
        pytest_pypto.compile(PrefetchThenScale, RunConfig(platform="a5sim"))
    assert "SDMA engine" in str(info.value)
    assert info.value.span.line == line_of("make-context")


def _kernel(tmp_path, body: str):
    """Parse a kernel whose line marked ``# the-call`` is ``body``; that line's number."""
    src = (
        "import pytest_pypto.language as pl\n\n\n"
        "def build():\n"
        "    @pl.program\n"
        "    class P:\n"
        "        @pl.function(type=pl.FunctionType.InCore)\n"
        "        def kernel(self, a: pl.Tensor[[4, 32], pl.FP32],\n"
        "                   f: pl.Tensor[[1, 1, 64], pl.FP32],\n"
        "                   out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]\n"
        "                   ) -> pl.Tensor[[4, 32], pl.FP32]:\n"
        "            ctx = pl.prefetch.make_context()\n"
        f"            {body}  # the-call\n"
        "            t: pl.Tile[[4, 32], pl.FP32] = pl.load(a, [0, 0], [4, 32])\n"
        "            return pl.store(t, [0, 0], out)\n"
        "    return P\n"
    )
    path = tmp_path / "prefetch_kernel.py"
    path.write_text(src)
    name = f"_prefetch_kernel_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.build()
    return line_in(src, "the-call")


@pytest.mark.parametrize(("body", "message"), [
    ("evt = pl.prefetch.async_prefetch(a, ctx)",
     "every dim but the last 1), but dim 0 of [4, 32] is 4"),
    ("evt = pl.prefetch.async_prefetch(ctx, ctx)", "must be a Tensor"),
    ("s = pl.prefetch.session(f)", "must be a handle its producer returned"),
    ("w = pl.prefetch.wait(pl.prefetch.session(ctx), pl.prefetch.session(ctx))",
     "expects event to be a AsyncEvent"),
    ("w = pl.prefetch.wait(pl.prefetch.async_prefetch(f, ctx), ctx)",
     "expects session to be a AsyncSession (the result of pl.prefetch.session(ctx)), but got "
     "a PrefetchAsyncContext"),
    ("x: pl.AsyncEvent = pl.prefetch.session(ctx)",
     "says AsyncEvent, but the value is a AsyncSession"),
], ids=["not-flat", "ctx-as-src", "tensor-as-ctx", "session-as-event", "ctx-as-session",
        "wrong-annotation"])
def test_rules_are_reported_at_the_call(tmp_path, body, message):
    with pytest.raises(PyptoError) as info:
        _kernel(tmp_path, body)
    assert message in str(info.value)
    src = (tmp_path / "prefetch_kernel.py").read_text()
    assert info.value.span.line == line_in(src, "the-call")


def test_a_flat_source_of_rank_three_is_accepted(tmp_path):
    _kernel(tmp_path, "evt = pl.prefetch.async_prefetch(f, ctx)")


def test_a_handle_is_no_function_parameter(tmp_path):
    with pytest.raises(PyptoError, match="cannot be a function parameter"):
        _kernel(tmp_path, "pass\n        @pl.function(type=pl.FunctionType.InCore)\n"
                          "        def other(self, c: pl.PrefetchAsyncContext):\n"
                          "            pass")


def test_a_wait_on_another_contexts_session_fails_when_it_runs():
    @pl.program
    class Crossed:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, a: pl.Tensor[[N], pl.FP32],
                   out: pl.Out[pl.Tensor[[N], pl.FP32]]) -> pl.Tensor[[N], pl.FP32]:
            ctx = pl.prefetch.make_context()
            other = pl.prefetch.make_context()
            evt = pl.prefetch.async_prefetch(a, ctx)
            pl.prefetch.wait(evt, pl.prefetch.session(other))  # crossed
            t: pl.Tile[[N], pl.FP32] = pl.load(a, [0], [N])
            return pl.store(t, [0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[N], pl.FP32],
                 out: pl.Out[pl.Tensor[[N], pl.FP32]]) -> pl.Tensor[[N], pl.FP32]:
            return self.kernel(a, out)

    with pytest.raises(PyptoError, match="two different prefetch contexts") as info:
        _run(Crossed, "a2a3sim", np.ones(N, np.float32))
    assert f"test_prefetch.py:{line_of('crossed')}" in str(info.value)


def test_printed_programs_spell_the_ops_and_handles_as_pypto_does():
    from pytest_pypto.ir.printer import print_function
    from pytest_pypto.ir.pyprint import python_print

    kernel = PrefetchThenScale.functions["kernel"]
    text = python_print(kernel)
    assert "ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()" in text
    assert "evt: pl.AsyncEvent = pl.prefetch.async_prefetch(a, ctx)" in text
    assert "= pl.prefetch.wait(evt, session)" in text
    assert "ctx: PrefetchAsyncContext = tile.prefetch_make_context()" in print_function(kernel)
