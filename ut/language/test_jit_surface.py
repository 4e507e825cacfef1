# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""PyPTO's JIT surface (issue 24 item 4): ``lower`` (the specialised program after the
passes, nothing compiled or run), ``compile(...).output_dir`` run again with
``execute_compiled``, ``@pl.jit.inline`` functions returning tuples, and
``@pl.jit.extern`` / ``@pl.jit.host`` accepted at definition and refused at the call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto.runtime import execute_compiled
from pytest_pypto.compiler.api import ir_printer
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import CompileError, UnsupportedFeatureError
from pytest_pypto.ir.nodes import Program
from ut.helpers import line_of

HERE = Path(__file__)
SIM = RunConfig(platform="a5sim")


@pl.jit
def scale(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows, cols = a.shape
        c = pl.store(pl.mul(pl.load(a, [0, 0], [rows, cols]), 2.0), [0, 0], c)
    return c


@pl.jit.incore
def add_k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16]))
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.inline
def pair_made(a: pl.Tensor, b: pl.Tensor):
    s = pl.create_tensor([16, 16], dtype=pl.FP32)
    s = add_k(a, b, s)
    t = pl.create_tensor([16, 16], dtype=pl.FP32)
    t = add_k(s, b, t)
    return s, t


@pl.jit.inline
def pair_forwarded(a: pl.Tensor, b: pl.Tensor):
    return pair_made(a, b)


@pl.jit
def uses_pairs(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor], d: pl.Out[pl.Tensor]):
    s, t = pair_forwarded(a, b)
    c = add_k(s, t, c)
    u, v = pair_made(t, s)
    d = add_k(u, v, d)
    return c, d


@pl.jit.extern(source="add_aiv.cpp", core_type="aiv")
def extern_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]): ...


@pl.jit
def calls_extern(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    c = extern_add(a, b, c)  # extern-call
    return c


@pl.jit.host
def host_entry(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    scale(a, c, device=0)
    return c


def test_lower_returns_the_program_after_the_passes_and_compiles_nothing() -> None:
    scale._cache.clear()
    a = np.ones((16, 32), np.float32)
    lowered = scale.lower(a, a, config=SIM)
    parsed = scale.specialize(a, a)
    assert isinstance(lowered, Program) and len(scale._cache) == 0
    printed, before = ir_printer()(lowered), ir_printer()(parsed)
    # memory-space inference ran on the lowered program only
    assert "Tile[[16, 32], FP32, Vec] = tile.load" in printed
    assert "Tile[[16, 32], FP32, ?] = tile.load" in before


def test_lower_reports_a_compile_error_of_the_specialisation() -> None:
    big = np.ones((1024, 1024), np.float32)  # one 4 MiB tile: over every on-chip buffer
    scale.specialize(big, big)  # parses
    with pytest.raises(CompileError):
        scale.lower(big, big, config=SIM)


def test_compile_output_dir_runs_again_with_execute_compiled() -> None:
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.zeros_like(a)
    work_dir = scale.compile(a, out, config=SIM).output_dir
    execute_compiled(work_dir, [a, out], platform="a5sim", device_id=0)
    np.testing.assert_array_equal(out, a * 2)


def test_inline_functions_return_tuples_directly_and_forwarded() -> None:
    a = np.full((16, 16), 3.0, np.float32)
    b = np.ones((16, 16), np.float32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    uses_pairs(a, b, c, d, config=SIM)
    s = a + b  # pair_made(a, b): s, then t = s + b
    t = s + b
    u = t + s  # pair_made(t, s): u, then v = u + s
    v = u + s
    np.testing.assert_array_equal(c, s + t)
    np.testing.assert_array_equal(d, u + v)


def test_extern_is_accepted_at_definition_and_refused_at_the_call() -> None:
    a = np.ones((16, 16), np.float32)
    with pytest.raises(UnsupportedFeatureError, match=r"jit\.extern .*tier 3") as info:
        calls_extern(a, a, a, config=SIM)
    assert info.value.span.line == line_of(HERE, "extern-call")
    assert "'extern_add' cannot be called" in str(info.value)
    with pytest.raises(UnsupportedFeatureError, match=r"jit\.extern .*'extern_add'"):
        extern_add(a, a, a)


def test_host_runs_its_dispatch_on_one_simulated_device() -> None:
    a = np.ones((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    host_entry(a, c, config=SIM)  # docs/design/distributed.md §2: device 0 of one
    np.testing.assert_array_equal(c, 2 * a)
