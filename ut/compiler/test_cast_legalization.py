# SPDX-License-Identifier: Apache-2.0
"""Only PyPTO's legalized cast pairs compile (docs/design/arch.md §6), and docs/arch.md
says so: INT8 -> FP32 has a chain of native hops on both archs (through FP16, or
through INT16/INT32), but every such chain passes an intermediate narrower than FP32,
so the cast is a compile error at the user's line on both."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.archdoc import arch_markdown
from pytest_pypto.ir.errors import ArchSupportError

ROOT = Path(__file__).parents[2]


def _int8_to_fp32():
    @pl.program
    class Widen:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.INT8],
              out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 32])
            out = pl.store(pl.cast(t, pl.FP32), [0, 0], out)  # the refused cast
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.INT8],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            out = self.k(x, out)
            return out

    return Widen


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_int8_to_fp32_cast_is_a_compile_error_on_both_archs(platform: str) -> None:
    program = _int8_to_fp32()
    with pytest.raises(ArchSupportError) as e:
        pytest_pypto.compile(program, RunConfig(platform=platform))
    err = e.value
    assert "INT8 to FP32" in err.message and "no chain of native conversions" in err.message
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "# the refused cast" in text)
    assert err.span is not None and err.span.line == line and err.span.file == __file__


def test_arch_doc_says_only_legalized_pairs_compile() -> None:
    page = arch_markdown()
    assert "shortest chain of these hops, one rounding per hop |" not in page
    assert "only pairs PyPTO's cast legalization accepts compile" in page
    assert "INT8 -> FP32 is refused on both archs" in page
    assert (ROOT / "docs" / "arch.md").read_text() == page  # the committed page is current
