# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Compare/select, bitwise, fmod/rem, activations, three-input and partial ops through
the whole pipeline on both sims, against numpy references written here (docs/design/language.md §21,
docs/design/numerics.md
§5), plus the arch gates and type rules at the user's line."""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import PLATFORMS, assert_exact, program, run, sentinel, storage

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ArchSupportError, InvalidOperationError, ParserTypeError
from ut.helpers import line_finder

RAGGED = [(16, 64, 16, 64), (16, 64, 9, 37), (2, 264, 2, 257)]
CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


def k_cmp_sel(DT, MODE, R, C, VR, VC):  # noqa: N803  (DSL closure constants)
    """o1 = sel(cmp(a, b), 1, 0); o2 = sels(cmps(a, 0), a, -3): PyPTO's two mask chains."""

    @pl.program
    class CmpSel:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              o1: pl.InOut[pl.Tensor[[R, C], DT]], o2: pl.InOut[pl.Tensor[[R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
            one = pl.tile.full([R, C], dtype=DT, value=1)
            zero = pl.tile.full([R, C], dtype=DT, value=0)
            tmp = pl.tile.create([1, 32], dtype=pl.UINT8)
            m1 = pl.cmp(a, b, cmp_type=MODE)
            o1 = pl.store(pl.tile.sel(m1, pl.tile.set_validshape(one, VR, VC), zero, tmp),
                          [0, 0], o1)
            m2 = pl.cmp(a, 0, cmp_type=MODE)  # a scalar rhs: tile.cmps
            o2 = pl.store(pl.sels(m2, a, tmp, -3), [0, 0], o2)
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 o1: pl.InOut[pl.Tensor[[R, C], DT]], o2: pl.InOut[pl.Tensor[[R, C], DT]]):
            o1, o2 = self.k(x, y, o1, o2)
            return o1

    return CmpSel


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", range(6))
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.INT32], ids=lambda d: d.name)
def test_cmp_sel_chains(dt, mode, platform):
    rng = np.random.default_rng(mode)
    for R, C, VR, VC in RAGGED if mode == 4 else RAGGED[1:2]:
        x = rng.integers(-3, 4, (R, C)).astype(storage(dt))
        y = rng.integers(-3, 4, (R, C)).astype(storage(dt))
        o1, o2 = sentinel((R, C), dt), sentinel((R, C), dt)
        run(k_cmp_sel, (dt, mode, R, C, VR, VC), platform, x, y, o1, o2)
        a, b = x[:VR, :VC], y[:VR, :VC]
        want1, want2 = o1.copy(), o2.copy()
        want1[:VR, :VC] = np.where(CMP[mode](a, b), 1, 0)
        want2[:VR, :VC] = np.where(CMP[mode](a, 0), a, -3)
        assert_exact(o1, want1, f"sel {R}x{C} v{VR}x{VC}")
        assert_exact(o2, want2, f"sels {R}x{C} v{VR}x{VC}")


def k_int_ops(R, C):
    """not_, xor (with tmp), and_ with a scalar, shl/shr by a tile and by a scalar."""

    @pl.program
    class IntOps:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.INT16], y: pl.Tensor[[R, C], pl.INT16],
              o: pl.Out[pl.Tensor[[5, R, C], pl.INT16]]):
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            tmp = pl.create_tile([R, C], pl.INT16)
            o = pl.store(pl.reshape(pl.not_(a), [1, R, C]), [0, 0, 0], o)
            o = pl.store(pl.reshape(pl.xor(a, b, tmp), [1, R, C]), [1, 0, 0], o)
            o = pl.store(pl.reshape(pl.and_(a, 0x0FF0), [1, R, C]), [2, 0, 0], o)
            o = pl.store(pl.reshape(pl.shr(a, pl.ands(b, 15)), [1, R, C]), [3, 0, 0], o)
            o = pl.store(pl.reshape(pl.shl(a, 3), [1, R, C]), [4, 0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.INT16], y: pl.Tensor[[R, C], pl.INT16],
                 o: pl.Out[pl.Tensor[[5, R, C], pl.INT16]]):
            o = self.k(x, y, o)
            return o

    return IntOps


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int16_bitwise_ops(platform):
    rng = np.random.default_rng(11)
    x = rng.integers(-32768, 32767, (8, 32), endpoint=True).astype(np.int16)
    y = rng.integers(-32768, 32767, (8, 32), endpoint=True).astype(np.int16)
    o = np.zeros((5, 8, 32), np.int16)
    run(k_int_ops, (8, 32), platform, x, y, o)
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    wrap = lambda v: ((v + 2**15) % 2**16 - 2**15).astype(np.int16)  # noqa: E731
    assert_exact(o[0], wrap(-xi - 1), "not_")
    assert_exact(o[1], wrap(xi ^ yi), "xor")
    assert_exact(o[2], wrap(xi & 0x0FF0), "and_ scalar")
    assert_exact(o[3], wrap(xi // 2 ** (yi & 15)), "shr (arithmetic)")
    assert_exact(o[4], wrap(xi * 8), "shl")


def k_float_ops(DT, R, C, VR, VC):
    """fmod, rem (+tmp), fmods/rems, lrelu, prelu (+UINT8 tmp), addc, subsc, part_max."""

    @pl.program
    class FloatOps:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              o: pl.Out[pl.Tensor[[9, R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            bits = pl.create_tile([R + 1, 32], pl.UINT8)
            o = pl.store(pl.reshape(pl.fmod(a, b), [1, R, C]), [0, 0, 0], o)
            o = pl.store(pl.reshape(pl.rem(a, b, tmp), [1, R, C]), [1, 0, 0], o)
            o = pl.store(pl.reshape(pl.fmods(a, -2.5), [1, R, C]), [2, 0, 0], o)
            o = pl.store(pl.reshape(pl.rems(a, 3.0, tmp), [1, R, C]), [3, 0, 0], o)
            o = pl.store(pl.reshape(pl.lrelu(a, -0.5), [1, R, C]), [4, 0, 0], o)
            o = pl.store(pl.reshape(pl.prelu(a, b, bits), [1, R, C]), [5, 0, 0], o)
            o = pl.store(pl.reshape(pl.addc(a, b, a), [1, R, C]), [6, 0, 0], o)
            o = pl.store(pl.reshape(pl.subsc(a, 1.5, b), [1, R, C]), [7, 0, 0], o)
            full = pl.load(x, [0, 0], [R, C])
            o = pl.store(pl.reshape(pl.part_max(full, b), [1, R, C]), [8, 0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 o: pl.Out[pl.Tensor[[9, R, C], DT]]):
            o = self.k(x, y, o)
            return o

    return FloatOps


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16], ids=lambda d: d.name)
def test_float_ops_on_a_ragged_tile(dt, platform):
    R, C, VR, VC = 8, 64, 5, 45
    st = storage(dt)
    x = ((np.arange(R * C).reshape(R, C) % 13) - 6).astype(st)  # PyPTO's fmod inputs
    y = ((np.arange(R * C).reshape(R, C) % 5) + 1.5).astype(st)
    o = np.zeros((9, R, C), st)
    run(k_float_ops, (dt, R, C, VR, VC), platform, x, y, o)
    a, b = x[:VR, :VC].astype(np.float64), y[:VR, :VC].astype(np.float64)
    r = lambda v: np.asarray(v).astype(np.float32).astype(st)  # noqa: E731  (round once)
    wants = [
        np.fmod(a, b), a - np.floor(a / b) * b, np.fmod(a, -2.5), a - np.floor(a / 3) * 3,
        np.where(a > 0, a, a * -0.5), np.where(a > 0, a, a * b),
        r(r(a + b).astype(np.float64) + a),  # addc: two device adds, rounded after each
        r(r(a - 1.5).astype(np.float64) + b),  # subsc: TSUBS + TADD
    ]
    for i, want in enumerate(wants):
        assert_exact(o[i, :VR, :VC], r(want), f"output {i}")
    part = x.astype(np.float64)
    part[:VR, :VC] = np.maximum(part[:VR, :VC], b)
    assert_exact(o[8], r(part), "part_max")


def k_precision(DT, R, C):
    @pl.program
    class Precision:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              o1: pl.Out[pl.Tensor[[R, C], DT]], o2: pl.Out[pl.Tensor[[R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            o1 = pl.store(pl.tile.log(a, high_precision=True), [0, 0], o1)
            o2 = pl.store(pl.div(a, b, True), [0, 0], o2)  # PyPTO's positional form
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 o1: pl.Out[pl.Tensor[[R, C], DT]], o2: pl.Out[pl.Tensor[[R, C], DT]]):
            o1, o2 = self.k(x, y, o1, o2)
            return o1

    return Precision


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16], ids=lambda d: d.name)
def test_high_precision_log_and_div(dt, platform):
    st = storage(dt)
    x = ((np.arange(16 * 64).reshape(16, 64) % 127 + 1) / 8).astype(st)  # PyPTO's log inputs
    y = ((np.arange(16 * 64).reshape(16, 64) % 7) + 0.5).astype(st)
    o1, o2 = np.zeros((16, 64), st), np.zeros((16, 64), st)
    run(k_precision, (dt, 16, 64), platform, x, y, o1, o2)
    np.testing.assert_allclose(o1.astype(np.float64), np.log(x.astype(np.float64)),
                               rtol=2e-3 if dt is pl.FP16 else 1e-6)
    want = (x.astype(np.float64) / y.astype(np.float64)).astype(np.float32).astype(st)
    assert_exact(o2, want, "div")


# ------------------------------------------------------------- rules at the user's line


def k_int16_cmp(R, C):
    @pl.program
    class Int16Cmp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.INT16], o: pl.Out[pl.Tensor[[R, C], pl.INT16]]):
            a = pl.load(x, [0, 0], [R, C])
            tmp = pl.create_tile([1, 32], pl.UINT8)
            m = pl.cmp(a, a, cmp_type=2)  # int16-cmp
            o = pl.store(pl.sel(m, a, a, tmp), [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.INT16], o: pl.Out[pl.Tensor[[R, C], pl.INT16]]):
            o = self.k(x, o)
            return o

    return Int16Cmp


_line = line_finder(__file__)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int16_cmp_is_a5_only(platform):
    x = np.arange(-64, 64, dtype=np.int16).reshape(8, 16)
    if platform == "a5sim":
        o = sentinel((8, 16), pl.INT16)
        run(k_int16_cmp, (8, 16), platform, x, o)
        assert_exact(o, x, "sel(a < a, a, a) = a")
        return
    with pytest.raises(ArchSupportError) as e:
        pytest_pypto.compile(program(k_int16_cmp, (8, 16)), RunConfig(platform=platform))
    assert "tile.cmp does not support dtype INT16 on the 'a2a3' backend" in e.value.message
    assert (e.value.file, e.value.line) == (__file__, _line("int16-cmp"))
    assert e.value.hint == "use INT32, FP16 or FP32, or target a5"


def test_rules_raise_at_the_calls_line():
    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class DivsPrecision:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], o: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
                a = pl.load(x, [0, 0], [8, 16])
                o = pl.store(pl.div(a, 2.0, high_precision=True), [0, 0], o)  # divs-hp
                return o
    assert "'high_precision' needs a Tile rhs" in e.value.message
    assert e.value.line == _line("divs-hp")

    with pytest.raises(ParserTypeError) as e:
        @pl.program
        class NotInt32:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.INT32], o: pl.Out[pl.Tensor[[8, 16], pl.INT32]]):
                a = pl.load(x, [0, 0], [8, 16])
                o = pl.store(pl.not_(a), [0, 0], o)  # not-int32
                return o
    assert "tile.not requires dtype INT16 or UINT16, but got INT32" in e.value.message
    assert e.value.line == _line("not-int32")

    with pytest.raises(InvalidOperationError) as e:
        @pl.program
        class XorNoTmp:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.INT16], o: pl.Out[pl.Tensor[[8, 16], pl.INT16]]):
                a = pl.load(x, [0, 0], [8, 16])
                o = pl.store(pl.xor(a, a), [0, 0], o)  # xor-tmp
                return o
    assert "missing the argument 'tmp'" in e.value.message
    assert e.value.line == _line("xor-tmp")
