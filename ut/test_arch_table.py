"""Pins every value of pytest_pypto/arch.py against values written out by hand (docs/design/arch.md
§1)."""

from __future__ import annotations

import pytest

from pytest_pypto import arch
from pytest_pypto.arch import BackendType, ExecutionMode

KIB = 1024

# Written out by hand (docs/design/arch.md §1), not read from the module.
EXPECTED = {
    "a2a3": dict(
        backend=BackendType.Ascend910B,
        name="a2a3",
        device="Ascend 910B (A2/A3)",
        capacity={
            "Vec": 184 * KIB,
            "Mat": 512 * KIB,
            "Left": 64 * KIB,
            "Right": 64 * KIB,
            "Acc": 128 * KIB,
            "Bias": 1 * KIB,
        },
        physical_capacity={
            "Vec": 192 * KIB,
            "Mat": 512 * KIB,
            "Left": 64 * KIB,
            "Right": 64 * KIB,
            "Acc": 128 * KIB,
            "Bias": 1 * KIB,
        },
        alignment={"Vec": 128, "Mat": 128, "Left": 64, "Right": 64, "Acc": 128, "Bias": 64},
        acc_m_align={"FP32": 16, "INT32": 32},
        cube_fractal=16,
        vec_row_align_bytes=32,
        l0_cost_model={"bw_l0a": 129.7, "bw_l0b": 85.4, "bw_drain": 118.0,
                       "drain_fixed_cycles": 164.0, "drain_row_cycles": 4.45,
                       "drain_penalty_cycles": 2.6, "drain_c0_bytes": 32, "mad_head_cycles": 21,
                       "mad_k_fractal_bytes": 32, "mad_fp32_passes": 2},
        aic_cores=24,
        aiv_cores=48,
        dies=1,
        clusters=24,
        max_block_dim=24,
        sim_clusters=8,
        aicpu_threads=4,
        system_counter_hz=50_000_000,
        move_graph={
            "DDR": {"Vec", "Mat"},
            "Vec": {"DDR"},
            "Mat": {"Left", "Right", "Bias"},
            "Acc": {"Mat", "DDR"},
        },
        cross_core_moves={("Acc", "Vec"), ("Vec", "Mat")},
        cross_core_route="via GM",
        pipe_slots_one_way=8,
        pipe_slots_each_way=4,
        pipe_local_slot_num=True,
        load_targets={"Vec", "Mat"},
        store_sources={"Vec", "Acc"},
        acc_store_dtypes={"INT32", "FP32", "FP16", "BF16"},
        bias_move_dtypes={"INT32": "INT32", "FP32": "FP32", "FP16": "FP32"},
        gm_granularity_bytes=512,
        native_casts={
            "FP32": {"FP16", "BF16", "INT16", "INT32", "INT64"},
            "FP16": {"FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"},
            "BF16": {"FP32", "INT32"},
            "INT16": {"FP16", "FP32"},
            "INT32": {"FP32", "INT16", "INT64", "FP16"},
            "INT64": {"FP32", "INT32"},
            "UINT8": {"FP16"},
            "INT8": {"FP16"},
            "INT4": {"FP16"},
        },
        incore_4bit_dtypes=set(),
        fp8_casts=False,
        unavailable_ops={
            "tile.matmul_mx",
            "tile.matmul_mx_acc",
            "tile.matmul_mx_bias",
            "tile.mscatter",
            "tile.random",
        },
        atomic_add_dtypes={"FP32", "BF16", "FP16", "INT32", "INT16", "INT8"},
        tri_rejected_dtypes={"INT8", "UINT8", "BF16"},
        sels_src_dtypes={"INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"},
        mgather_fp8=False,
        sdma_prefetch=True,  # PyPTO runs pl.prefetch only where an SDMA provider exists
        row_expand_add_int8=False,
        gather_int16_indices=False,
        vec_op_dtypes={  # pto-isa a2a3 per-instruction dtype checks
            "cmp": {"INT32", "FP16", "FP32"},
            "cmps": {"INT16", "UINT16", "INT32", "FP16", "FP32"},
            "and": {"INT8", "UINT8", "INT16", "UINT16"},
            "or": {"INT8", "UINT8", "INT16", "UINT16"},
            "xor": {"INT8", "UINT8", "INT16", "UINT16"},
            "shift": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"},
            "fmod": {"INT16", "INT32", "FP16", "FP32"},
            "rem": {"INT16", "INT32", "FP16", "FP32"},
            "part": {"INT16", "INT32", "FP16", "FP32"},
            "prelu_tmp": {"UINT8"},  # TPRELU's bit-mask scratch
        },
        unvalidated_combos={
            "subs:INT8",
            "subs:BF16",
            "div:INT16",
            "div:INT32",
            "row_expand_add:packed",
            "gather:rank2_expand",
        },
    ),
    "a5": dict(
        backend=BackendType.Ascend950,
        name="a5",
        device="Ascend 950",
        capacity={
            "Vec": 240 * KIB,
            "Mat": 512 * KIB,
            "Left": 64 * KIB,
            "Right": 64 * KIB,
            "Acc": 256 * KIB,
            "Bias": 4 * KIB,
            "LeftScale": 4 * KIB,
            "RightScale": 4 * KIB,
        },
        physical_capacity={
            "Vec": 248 * KIB,
            "Mat": 512 * KIB,
            "Left": 64 * KIB,
            "Right": 64 * KIB,
            "Acc": 256 * KIB,
            "Bias": 4 * KIB,
            "LeftScale": 4 * KIB,
            "RightScale": 4 * KIB,
        },
        alignment={
            "Vec": 128,
            "Mat": 128,
            "Left": 64,
            "Right": 64,
            "Acc": 128,
            "Bias": 64,
            "LeftScale": 32,
            "RightScale": 32,
        },
        acc_m_align={"FP32": 16, "INT32": 16},
        cube_fractal=16,
        vec_row_align_bytes=32,
        l0_cost_model={"bw_l0a": 206.3, "bw_l0b": 223.8, "bw_drain": 30.0,
                       "drain_fixed_cycles": 343.4, "drain_row_cycles": 4.59,
                       "drain_penalty_cycles": 0.26, "drain_c0_bytes": 32, "mad_head_cycles": 25,
                       "mad_k_fractal_bytes": 32, "mad_fp32_passes": 8},
        aic_cores=36,
        aiv_cores=72,
        dies=2,
        clusters=36,
        max_block_dim=36,
        sim_clusters=8,
        aicpu_threads=5,
        system_counter_hz=1_000_000_000,
        move_graph={
            "DDR": {"Vec", "Mat"},
            "Vec": {"Mat", "DDR"},
            "Mat": {"Left", "Right", "Bias", "LeftScale", "RightScale"},
            "Acc": {"Vec", "Mat", "DDR"},
        },
        cross_core_moves={("Acc", "Vec"), ("Vec", "Mat")},
        cross_core_route="direct",
        pipe_slots_one_way=8,
        pipe_slots_each_way=4,
        pipe_local_slot_num=False,
        load_targets={"Vec", "Mat"},
        store_sources={"Vec", "Acc"},
        acc_store_dtypes={"INT32", "FP32", "FP16", "BF16"},
        bias_move_dtypes={"INT32": "INT32", "FP32": "FP32", "FP16": "FP32", "BF16": "FP32"},
        gm_granularity_bytes=128,
        native_casts={
            "FP32": {"FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8"},
            "FP16": {"FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"},
            "BF16": {"FP32", "INT32", "FP16", "FP4"},
            "INT16": {"FP16", "FP32", "UINT8", "UINT32", "INT32"},
            "INT32": {"FP32", "INT16", "INT64", "UINT16", "UINT8"},
            "INT64": {"FP32", "INT32"},
            "UINT8": {"FP16", "UINT16"},
            "INT8": {"FP16", "INT16", "INT32"},
            "UINT32": {"UINT8", "UINT16", "INT16"},
            "FP8E4M3FN": {"FP32"},
            "FP8E5M2": {"FP32"},
            "HF8": {"FP32"},
            "FP4": {"BF16"},
        },
        incore_4bit_dtypes={"FP4"},
        fp8_casts=True,
        unavailable_ops=set(),
        atomic_add_dtypes={"FP32", "FP16", "INT32", "INT16", "INT8"},
        tri_rejected_dtypes=set(),
        sels_src_dtypes={"INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32", "INT8", "UINT8"},
        mgather_fp8=True,
        sdma_prefetch=False,
        row_expand_add_int8=True,
        gather_int16_indices=True,
        vec_op_dtypes={  # pto-isa a5 per-instruction dtype checks
            "cmp": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"},
            "cmps": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"},
            "and": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"},
            "or": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"},
            "xor": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"},
            "shift": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"},
            "fmod": {"INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"},
            "rem": {"INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"},
            "part": {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32",
                     "BF16"},
        },
        unvalidated_combos=set(),
    ),
}


def _normalize(value):
    """Compare order-free: tuples become sets, mappings plain dicts of normalized values."""
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return set(value)
    if isinstance(value, tuple):
        return set(value)
    if hasattr(value, "items") and not isinstance(value, str):
        return {k: _normalize(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", ["a2a3", "a5"])
def test_every_field_pinned(name: str) -> None:
    import dataclasses

    spec = arch.spec(name)
    fields = {f.name for f in dataclasses.fields(spec)}
    assert fields == set(EXPECTED[name]), "a field was added or removed: pin it here (docs/design/arch.md §1)"
    for field, expected in EXPECTED[name].items():
        assert _normalize(getattr(spec, field)) == expected, field


def test_derived_values() -> None:
    a2a3, a5 = arch.spec("a2a3"), arch.spec("a5")
    assert (a2a3.sim_aic, a2a3.sim_aiv) == (8, 16)
    assert (a5.sim_aic, a5.sim_aiv) == (8, 16)
    assert a5.has_space("LeftScale") and not a2a3.has_space("LeftScale")
    assert a2a3.has_space("DDR") and a5.has_space("DDR")
    # Cores: a5 = 2 dies x 18 clusters; a2a3 one die of 24 clusters of 1 AIC + 2 AIV.
    assert a5.clusters == 2 * 18 and a5.aiv_cores == 2 * a5.aic_cores
    assert a2a3.aiv_cores == 2 * a2a3.aic_cores


def test_identity_tables() -> None:
    assert dict(arch.ARCH_NAMES) == {BackendType.Ascend910B: "a2a3", BackendType.Ascend950: "a5"}
    assert dict(arch.BACKENDS_BY_NAME) == {
        "a2a3": BackendType.Ascend910B,
        "a5": BackendType.Ascend950,
    }
    assert dict(arch.MODE_NAMES) == {ExecutionMode.SIM: "sim", ExecutionMode.ONBOARD: "onboard"}
    assert arch.ARCH_CHOICES == ("a2a3", "a5")
    assert arch.MODE_CHOICES == ("sim", "onboard")
    assert dict(arch.PLATFORMS) == {
        "a2a3sim": (BackendType.Ascend910B, ExecutionMode.SIM),
        "a2a3": (BackendType.Ascend910B, ExecutionMode.ONBOARD),
        "a5sim": (BackendType.Ascend950, ExecutionMode.SIM),
        "a5": (BackendType.Ascend950, ExecutionMode.ONBOARD),
    }
    assert list(arch.PLATFORMS) == ["a2a3sim", "a2a3", "a5sim", "a5"]
    assert arch.SIM_PLATFORMS == ("a2a3sim", "a5sim")
    assert arch.ONBOARD_PLATFORMS == ("a2a3", "a5")


def test_the_simulator_serves_the_tables_sim_platforms() -> None:
    from pytest_pypto.runtime.simulator import SIM_PLATFORMS, SimRuntime

    assert SIM_PLATFORMS is arch.SIM_PLATFORMS
    assert SimRuntime.platforms == arch.SIM_PLATFORMS


def test_platform_functions() -> None:
    for platform, axes in [
        ("a2a3sim", (BackendType.Ascend910B, ExecutionMode.SIM)),
        ("a2a3", (BackendType.Ascend910B, ExecutionMode.ONBOARD)),
        ("a5sim", (BackendType.Ascend950, ExecutionMode.SIM)),
        ("a5", (BackendType.Ascend950, ExecutionMode.ONBOARD)),
    ]:
        assert arch.parse_platform(platform) == axes
        assert arch.platform_string(*axes) == platform
    with pytest.raises(ValueError, match="unknown platform 'x86'"):
        arch.parse_platform("x86")
    assert arch.backend_of("a5") is BackendType.Ascend950
    with pytest.raises(ValueError, match="'a2a3', 'a5'"):
        arch.backend_of("a6")
    assert arch.spec(BackendType.Ascend950) is arch.spec("a5")


def test_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        arch.spec("a2a3").capacity["Vec"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        arch.PLATFORMS["x"] = None  # type: ignore[index]
