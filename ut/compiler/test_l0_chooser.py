"""The AutoL0 tile chooser (docs/design/checks.md §7a): every choice is a legal tile of the
arch's L0 buffers, a matmul that fits L0 is left whole, and allowing more design points
never makes the estimate worse.  PyPTO's spelling of it is importable."""

from __future__ import annotations

import itertools

import pytest

from pytest_pypto.arch import A2A3, A5, ArchSpec
from pytest_pypto.compiler.l0_chooser import (
    L0TileConfig,
    Stationarity,
    choose_l0_tile,
    config_for,
)

SHAPES = [(64, 64, 64), (128, 256, 128), (256, 256, 512), (272, 192, 352), (528, 32, 528),
          (1040, 64, 64), (16, 1024, 1152), (48, 352, 96), (320, 64, 320)]
DTYPES = [(2, "FP32"), (4, "FP32"), (1, "INT32")]  # (operand bytes, accumulator)


def _cfg(arch: ArchSpec, m: int, k: int, n: int, nbytes: int, acc: str, **gates) -> L0TileConfig:
    cfg = config_for(arch, m, n, k, bytes_a=nbytes, bytes_b=nbytes, acc_dtype=acc)
    for name, value in gates.items():
        setattr(cfg, name, value)
    return cfg


def _assert_legal(cfg: L0TileConfig, arch: ArchSpec, acc: str) -> None:
    r = choose_l0_tile(cfg)
    frac = arch.cube_fractal
    for dim, whole in ((r.m, cfg.M), (r.n, cfg.N), (r.k, cfg.K)):
        assert dim % frac == 0 and frac <= dim <= whole
    a_bufs = 1 if r.stationarity is Stationarity.AStationary else 2
    b_bufs = 1 if r.stationarity is Stationarity.BStationary else 2
    assert r.m * r.k * cfg.bytes_a * a_bufs <= arch.capacity["Left"]
    assert r.k * r.n * cfg.bytes_b * b_bufs <= arch.capacity["Right"]
    align = arch.acc_m_align[acc]
    rows = -(-r.m // align) * align
    assert rows * r.n * 4 * (2 if r.double_buffer_c else 1) <= arch.capacity["Acc"]
    if r.stationarity is not Stationarity.OutputStationary or r.double_buffer_c:
        assert r.k == cfg.K  # an operand held across K, or two accumulators: one K pass
    if r.double_buffer_c:
        inner = cfg.N // r.n if r.os_holds_a or r.stationarity is Stationarity.AStationary \
            else cfg.M // r.m
        assert inner >= 2
    if cfg.max_n:
        assert r.n <= cfg.max_n


@pytest.mark.parametrize("arch", [A2A3, A5], ids=["a2a3", "a5"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("nbytes,acc", DTYPES, ids=["bf16", "fp32", "int8"])
def test_every_choice_is_a_legal_l0_tile(arch, shape, nbytes, acc):
    m, k, n = shape
    _assert_legal(_cfg(arch, m, k, n, nbytes, acc), arch, acc)
    gates = dict(allow_a_stationary=True, allow_b_stationary=True, allow_double_buffer_c=True)
    _assert_legal(_cfg(arch, m, k, n, nbytes, acc, **gates), arch, acc)


@pytest.mark.parametrize("arch", [A2A3, A5], ids=["a2a3", "a5"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_more_design_points_never_cost_more(arch, shape):
    m, k, n = shape
    base = choose_l0_tile(_cfg(arch, m, k, n, 2, "FP32"))
    for a, b, dbc in itertools.product((False, True), repeat=3):
        more = choose_l0_tile(_cfg(arch, m, k, n, 2, "FP32", allow_a_stationary=a,
                                   allow_b_stationary=b, allow_double_buffer_c=dbc))
        assert more.estimated_cost_cycles <= base.estimated_cost_cycles


def test_a_matmul_that_fits_l0_stays_whole():
    # [64, 64] x [64, 64] BF16: 8 KiB per operand, 16 KiB of FP32 Acc: all fit a2a3's L0.
    r = choose_l0_tile(_cfg(A2A3, 64, 64, 64, 2, "FP32", allow_double_buffer_c=True,
                            allow_a_stationary=True, allow_b_stationary=True))
    assert (r.m, r.n, r.k) == (64, 64, 64)
    assert r.stationarity is Stationarity.OutputStationary and not r.double_buffer_c


def test_the_int32_row_alignment_counts_against_acc():
    # [16, 1152] INT32 is 72 KiB logically but 32 rows physically on a2a3 (144 KiB > 128 KiB):
    # the output must be cut; on a5 (16-row INT32 alignment, 256 KiB Acc) it need not be.
    a2 = choose_l0_tile(_cfg(A2A3, 16, 128, 1152, 1, "INT32"))
    assert a2.n < 1152
    a5 = choose_l0_tile(_cfg(A5, 16, 128, 1152, 1, "INT32"))
    assert (a5.m, a5.n) == (16, 1152)


def test_k_is_peeled_only_when_aligned():
    peeled = choose_l0_tile(_cfg(A2A3, 64, 272, 64, 2, "FP32"))
    assert peeled.k % 16 == 0  # 272 = 17 * 16: a k that does not divide it is allowed
    with pytest.raises(ValueError, match="no legal"):
        choose_l0_tile(_cfg(A2A3, 64, 264, 64, 2, "FP32"))  # 264 is no multiple of 16


def test_divisors_only_without_k_boundary():
    r = choose_l0_tile(_cfg(A2A3, 256, 272, 256, 4, "FP32", allow_k_boundary=False))
    assert 272 % r.k == 0


def test_bias_table_caps_n():
    # a2a3's Bias table is 1 KiB: 256 FP32 columns at most.
    cfg = _cfg(A2A3, 64, 64, 512, 2, "FP32", max_n=A2A3.capacity["Bias"] // 4)
    r = choose_l0_tile(cfg)
    assert r.n <= 256


def test_bad_configs_raise_value_error():
    with pytest.raises(ValueError, match="positive"):
        choose_l0_tile(L0TileConfig())
    with pytest.raises(ValueError, match="cube minimum"):
        choose_l0_tile(_cfg(A2A3, 8, 64, 64, 2, "FP32"))


def test_pypto_spelling_is_importable():
    from pytest_pypto.compat.pypto.pypto_core import passes

    cfg = passes.l0_tile_chooser.L0TileConfig()
    cfg.M, cfg.K, cfg.N = 256, 64, 256
    cfg.l0a_bytes = cfg.l0b_bytes = 64 * 1024
    cfg.l0c_bytes = 128 * 1024
    cfg.bytes_a = cfg.bytes_b = 4
    r = passes.l0_tile_chooser.choose_l0_tile(cfg)
    assert r.m * r.n * 4 <= cfg.l0c_bytes
    assert r.stationarity == passes.l0_tile_chooser.Stationarity.OutputStationary
    with pytest.raises(AttributeError):
        r.m = 1  # a result is read-only, as PyPTO's
    with pytest.raises(AttributeError):
        cfg.l0_a_bytes = 1  # a misspelt field is not silently a new attribute
