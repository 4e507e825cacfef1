"""The one table of per-architecture facts (docs/design/arch.md), as plain data.

Every capacity, alignment, core count, move edge, cast pair and arch gate used by
the compiler, the simulator and the plugin is read from here; nothing else in the
package may hard-code them.  This module is also the only place that maps platform
strings to the two axes (architecture, execution mode), so splitting or assembling
a platform string anywhere else is a lint error.

Deliberately stdlib-only: the plugin reads platform names and core counts from it
while loading, and that must not pull in numpy.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


class BackendType(enum.Enum):
    """The hardware architecture a kernel is compiled for."""

    Ascend910B = "Ascend910B"
    Ascend950 = "Ascend950"

    @property
    def arch_name(self) -> str:
        """Target name used in platform strings and diagnostics ('a2a3', 'a5')."""
        return ARCH_NAMES[self]


class ExecutionMode(enum.Enum):
    """Where a compiled kernel executes: the bundled simulator or a real NPU."""

    SIM = "sim"
    ONBOARD = "onboard"


ARCH_NAMES: Mapping[BackendType, str] = MappingProxyType(
    {BackendType.Ascend910B: "a2a3", BackendType.Ascend950: "a5"}
)
BACKENDS_BY_NAME: Mapping[str, BackendType] = MappingProxyType(
    {name: backend for backend, name in ARCH_NAMES.items()}
)
MODE_NAMES: Mapping[ExecutionMode, str] = MappingProxyType(
    {ExecutionMode.SIM: "sim", ExecutionMode.ONBOARD: "onboard"}
)
MODES_BY_NAME: Mapping[str, ExecutionMode] = MappingProxyType(
    {name: mode for mode, name in MODE_NAMES.items()}
)

# The wire form: arch name, plus "sim" for the simulator.  Ordered arch-major, sim first.
PLATFORMS: Mapping[str, tuple[BackendType, ExecutionMode]] = MappingProxyType(
    {
        "a2a3sim": (BackendType.Ascend910B, ExecutionMode.SIM),
        "a2a3": (BackendType.Ascend910B, ExecutionMode.ONBOARD),
        "a5sim": (BackendType.Ascend950, ExecutionMode.SIM),
        "a5": (BackendType.Ascend950, ExecutionMode.ONBOARD),
    }
)
_PLATFORM_OF = {axes: name for name, axes in PLATFORMS.items()}
# The platforms of each execution mode, in PLATFORMS order.
SIM_PLATFORMS: tuple[str, ...] = tuple(
    p for p, (_, mode) in PLATFORMS.items() if mode is ExecutionMode.SIM
)
ONBOARD_PLATFORMS: tuple[str, ...] = tuple(
    p for p, (_, mode) in PLATFORMS.items() if mode is ExecutionMode.ONBOARD
)

ARCH_CHOICES: tuple[str, ...] = tuple(ARCH_NAMES.values())
MODE_CHOICES: tuple[str, ...] = tuple(MODE_NAMES.values())


def platform_string(arch: BackendType, mode: ExecutionMode) -> str:
    """Assemble the platform string of one cell (the only place that does)."""
    return _PLATFORM_OF[(arch, mode)]


def parse_platform(platform: str) -> tuple[BackendType, ExecutionMode]:
    """Split a platform string into its axes; ValueError lists the valid strings."""
    try:
        return PLATFORMS[platform]
    except (KeyError, TypeError):
        valid = ", ".join(repr(p) for p in PLATFORMS)
        raise ValueError(f"unknown platform {platform!r}; valid platforms are {valid}") from None


def backend_of(arch_name: str) -> BackendType:
    """Backend for an arch name ('a2a3' or 'a5'); ValueError names the valid ones."""
    try:
        return BACKENDS_BY_NAME[arch_name]
    except (KeyError, TypeError):
        valid = ", ".join(repr(a) for a in ARCH_CHOICES)
        raise ValueError(f"unknown architecture {arch_name!r}; valid are {valid}") from None


def _ro(d: dict) -> Mapping:
    return MappingProxyType(d)


@dataclass(frozen=True)
class ArchSpec:
    """Everything the toolchain needs to know about one architecture (docs/design/arch.md §2-§7)."""

    backend: BackendType
    name: str
    device: str
    # docs/design/arch.md §3 on-chip memory: bytes the compiler enforces, hardware size, allocation
    # alignment
    capacity: Mapping[str, int]
    physical_capacity: Mapping[str, int]
    alignment: Mapping[str, int]
    acc_m_align: Mapping[str, int]
    cube_fractal: int
    vec_row_align_bytes: int
    # docs/design/arch.md §3 the cube's L0 tiling cost model (compiler/l0_chooser.py): L1->L0A/L0B
    # and FIXPIPE drain bandwidths in bytes per cycle, fixed cycles per drain, per drained row
    # (floor) and per extra burst pass, cycles per MAD issue, the K fractal in bytes and the
    # cube passes an FP32 fractal takes
    l0_cost_model: Mapping[str, float]
    # docs/design/arch.md §4 cores
    aic_cores: int
    aiv_cores: int
    dies: int
    clusters: int
    max_block_dim: int
    sim_clusters: int
    aicpu_threads: int
    system_counter_hz: int
    # docs/design/arch.md §5 data movement
    move_graph: Mapping[str, tuple[str, ...]]
    cross_core_moves: tuple[tuple[str, str], ...]
    cross_core_route: str
    load_targets: tuple[str, ...]
    store_sources: tuple[str, ...]
    acc_store_dtypes: tuple[str, ...]
    bias_move_dtypes: Mapping[str, str]
    gm_granularity_bytes: int
    # docs/design/arch.md §6 dtypes and casts
    native_casts: Mapping[str, tuple[str, ...]]
    incore_4bit_dtypes: tuple[str, ...]
    fp8_casts: bool
    # docs/design/arch.md §7 arch-only ops and dtype gates
    unavailable_ops: tuple[str, ...]
    atomic_add_dtypes: tuple[str, ...]
    tri_rejected_dtypes: tuple[str, ...]
    sels_src_dtypes: tuple[str, ...]
    mgather_fp8: bool
    row_expand_add_int8: bool  # tile.row_expand_add takes INT8 tiles
    gather_int16_indices: bool  # tile.gather takes INT16 indices (besides INT32)
    # Vector ops whose element dtypes differ per arch (pto-isa per-target checks): op family
    # -> the dtypes this arch's instruction takes.  Families absent take every dtype their
    # type rule admits.
    vec_op_dtypes: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _ro({}))
    unvalidated_combos: tuple[str, ...] = field(default=())
    # docs/design/arch.md §5 cross-core pipes (hand-written AIC/AIV kernels): slots of a
    # pipe when aic/aiv_initialize_pipe omits slot_num (a one-way pipe; each way of a
    # two-way one), and whether the pipe takes local_slot_num.
    pipe_slots_one_way: int = 8
    pipe_slots_each_way: int = 4
    pipe_local_slot_num: bool = True
    # docs/design/arch.md §7: an SDMA engine the runtime provisions for `pl.prefetch.*`
    # (asynchronous GM->L2 prefetch).
    sdma_prefetch: bool = False

    @property
    def sim_aic(self) -> int:
        """Simulated AIC slots (one per simulated cluster)."""
        return self.sim_clusters

    @property
    def sim_aiv(self) -> int:
        """Simulated AIV slots (two per simulated cluster)."""
        return 2 * self.sim_clusters

    def has_space(self, space: str) -> bool:
        """Whether a memory space exists on this arch (LeftScale/RightScale: a5 only)."""
        return space == "DDR" or space in self.capacity


_ALIGN_COMMON = {"Vec": 128, "Mat": 128, "Left": 64, "Right": 64, "Acc": 128, "Bias": 64}

A2A3 = ArchSpec(
    backend=BackendType.Ascend910B,
    name="a2a3",
    device="Ascend 910B (A2/A3)",
    capacity=_ro(
        {"Vec": 188416, "Mat": 524288, "Left": 65536, "Right": 65536, "Acc": 131072, "Bias": 1024}
    ),
    physical_capacity=_ro(
        {"Vec": 196608, "Mat": 524288, "Left": 65536, "Right": 65536, "Acc": 131072, "Bias": 1024}
    ),
    alignment=_ro(dict(_ALIGN_COMMON)),
    acc_m_align=_ro({"FP32": 16, "INT32": 32}),
    cube_fractal=16,
    vec_row_align_bytes=32,
    l0_cost_model=_ro(
        {
            "bw_l0a": 129.7,
            "bw_l0b": 85.4,
            "bw_drain": 118.0,
            "drain_fixed_cycles": 164.0,
            "drain_row_cycles": 4.45,
            "drain_penalty_cycles": 2.6,
            "drain_c0_bytes": 32,
            "mad_head_cycles": 21,
            "mad_k_fractal_bytes": 32,
            "mad_fp32_passes": 2,
        }
    ),
    aic_cores=24,
    aiv_cores=48,
    dies=1,
    clusters=24,
    max_block_dim=24,
    sim_clusters=8,
    aicpu_threads=4,
    system_counter_hz=50_000_000,
    move_graph=_ro(
        {
            "DDR": ("Vec", "Mat"),
            "Vec": ("DDR",),
            "Mat": ("Left", "Right", "Bias"),
            "Acc": ("Mat", "DDR"),
        }
    ),
    cross_core_moves=(("Acc", "Vec"), ("Vec", "Mat")),
    cross_core_route="via GM",
    load_targets=("Vec", "Mat"),
    store_sources=("Vec", "Acc"),
    acc_store_dtypes=("INT32", "FP32", "FP16", "BF16"),
    bias_move_dtypes=_ro({"INT32": "INT32", "FP32": "FP32", "FP16": "FP32"}),
    gm_granularity_bytes=512,
    native_casts=_ro(
        {
            "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64"),
            "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"),
            "BF16": ("FP32", "INT32"),
            "INT16": ("FP16", "FP32"),
            "INT32": ("FP32", "INT16", "INT64", "FP16"),
            "INT64": ("FP32", "INT32"),
            "UINT8": ("FP16",),
            "INT8": ("FP16",),
            "INT4": ("FP16",),
        }
    ),
    incore_4bit_dtypes=(),
    fp8_casts=False,
    unavailable_ops=(
        "tile.matmul_mx",
        "tile.matmul_mx_acc",
        "tile.matmul_mx_bias",
        "tile.mscatter",
        "tile.random",
    ),
    atomic_add_dtypes=("FP32", "BF16", "FP16", "INT32", "INT16", "INT8"),
    tri_rejected_dtypes=("INT8", "UINT8", "BF16"),
    sels_src_dtypes=("INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"),
    mgather_fp8=False,
    sdma_prefetch=True,
    row_expand_add_int8=False,
    gather_int16_indices=False,
    vec_op_dtypes=_ro(
        {
            "cmp": ("INT32", "FP16", "FP32"),
            "cmps": ("INT16", "UINT16", "INT32", "FP16", "FP32"),
            "and": ("INT8", "UINT8", "INT16", "UINT16"),
            "or": ("INT8", "UINT8", "INT16", "UINT16"),
            "xor": ("INT8", "UINT8", "INT16", "UINT16"),
            "shift": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
            "fmod": ("INT16", "INT32", "FP16", "FP32"),
            "rem": ("INT16", "INT32", "FP16", "FP32"),
            "part": ("INT16", "INT32", "FP16", "FP32"),
            "prelu_tmp": ("UINT8",),
        }
    ),
    unvalidated_combos=(
        "subs:INT8",
        "subs:BF16",
        "div:INT16",
        "div:INT32",
        "row_expand_add:packed",
        "gather:rank2_expand",
    ),
)

A5 = ArchSpec(
    backend=BackendType.Ascend950,
    name="a5",
    device="Ascend 950",
    capacity=_ro(
        {
            "Vec": 245760,
            "Mat": 524288,
            "Left": 65536,
            "Right": 65536,
            "Acc": 262144,
            "Bias": 4096,
            "LeftScale": 4096,
            "RightScale": 4096,
        }
    ),
    physical_capacity=_ro(
        {
            "Vec": 253952,
            "Mat": 524288,
            "Left": 65536,
            "Right": 65536,
            "Acc": 262144,
            "Bias": 4096,
            "LeftScale": 4096,
            "RightScale": 4096,
        }
    ),
    alignment=_ro({**_ALIGN_COMMON, "LeftScale": 32, "RightScale": 32}),
    acc_m_align=_ro({"FP32": 16, "INT32": 16}),
    cube_fractal=16,
    vec_row_align_bytes=32,
    l0_cost_model=_ro(
        {
            "bw_l0a": 206.3,
            "bw_l0b": 223.8,
            "bw_drain": 30.0,
            "drain_fixed_cycles": 343.4,
            "drain_row_cycles": 4.59,
            "drain_penalty_cycles": 0.26,
            "drain_c0_bytes": 32,
            "mad_head_cycles": 25,
            "mad_k_fractal_bytes": 32,
            "mad_fp32_passes": 8,
        }
    ),
    aic_cores=36,
    aiv_cores=72,
    dies=2,
    clusters=36,
    max_block_dim=36,
    sim_clusters=8,
    aicpu_threads=5,
    system_counter_hz=1_000_000_000,
    move_graph=_ro(
        {
            "DDR": ("Vec", "Mat"),
            "Vec": ("Mat", "DDR"),
            "Mat": ("Left", "Right", "Bias", "LeftScale", "RightScale"),
            "Acc": ("Vec", "Mat", "DDR"),
        }
    ),
    cross_core_moves=(("Acc", "Vec"), ("Vec", "Mat")),
    cross_core_route="direct",
    pipe_local_slot_num=False,
    load_targets=("Vec", "Mat"),
    store_sources=("Vec", "Acc"),
    acc_store_dtypes=("INT32", "FP32", "FP16", "BF16"),
    bias_move_dtypes=_ro({"INT32": "INT32", "FP32": "FP32", "FP16": "FP32", "BF16": "FP32"}),
    gm_granularity_bytes=128,
    native_casts=_ro(
        {
            "FP32": (
                "FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8",
            ),
            "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"),
            "BF16": ("FP32", "INT32", "FP16", "FP4"),
            "INT16": ("FP16", "FP32", "UINT8", "UINT32", "INT32"),
            "INT32": ("FP32", "INT16", "INT64", "UINT16", "UINT8"),
            "INT64": ("FP32", "INT32"),
            "UINT8": ("FP16", "UINT16"),
            "INT8": ("FP16", "INT16", "INT32"),
            "UINT32": ("UINT8", "UINT16", "INT16"),
            "FP8E4M3FN": ("FP32",),
            "FP8E5M2": ("FP32",),
            "HF8": ("FP32",),
            "FP4": ("BF16",),
        }
    ),
    incore_4bit_dtypes=("FP4",),
    fp8_casts=True,
    unavailable_ops=(),
    atomic_add_dtypes=("FP32", "FP16", "INT32", "INT16", "INT8"),
    tri_rejected_dtypes=(),
    sels_src_dtypes=("INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32", "INT8", "UINT8"),
    mgather_fp8=True,
    row_expand_add_int8=True,
    gather_int16_indices=True,
    vec_op_dtypes=_ro(
        {
            "cmp": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"),
            "cmps": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"),
            "and": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
            "or": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
            "xor": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
            "shift": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"),
            "fmod": ("INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"),
            "rem": ("INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32"),
            "part": ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32", "BF16"),
        }
    ),
    unvalidated_combos=(),
)

ARCH_SPECS: Mapping[BackendType, ArchSpec] = MappingProxyType(
    {BackendType.Ascend910B: A2A3, BackendType.Ascend950: A5}
)


def spec(arch: BackendType | str) -> ArchSpec:
    """The ArchSpec of a backend or arch name."""
    if isinstance(arch, str):
        arch = backend_of(arch)
    return ARCH_SPECS[arch]
