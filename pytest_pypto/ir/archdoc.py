# SPDX-License-Identifier: Apache-2.0
"""`docs/arch.md`: the a2a3 vs a5 facts, rendered from `pytest_pypto/arch.py`'s table.

Every value comes from an `ArchSpec` (and the list of ops with arch rules from the
op registry), so the page cannot drift from what the compiler enforces; the only
prose kept here says what each field is for.  A field added to `ArchSpec` shows up
on its own (under "Other facts") until it gets a description.
`python -m pytest_pypto.ir.archdoc > docs/arch.md` refreshes the page; the
`arch-doc` lint check fails when it is stale.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from pytest_pypto.arch import ARCH_SPECS, MODE_NAMES, PLATFORMS, ArchSpec
from pytest_pypto.ir.opfacts import arch_fields_read
from pytest_pypto.ir.registry import REGISTRY

REFRESH_COMMAND = "python -m pytest_pypto.ir.archdoc > docs/arch.md"

# (section, [(field, what the toolchain uses it for)]) in page order.
_SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Identity", (
        ("device", "the device the arch names; recorded in run artifacts"),
        ("backend", "the `BackendType` key of the table"),
    )),
    ("On-chip memory (bytes)", (
        ("capacity", "usable bytes per memory space: the compiler's capacity check sums a "
                     "kernel's live tiles against it"),
        ("physical_capacity", "the hardware size (Vec keeps a reserved top region unused)"),
        ("alignment", "each tile's bytes are rounded up to this before summing"),
        ("acc_m_align", "Acc rows are rounded up to this many rows per accumulator dtype"),
        ("cube_fractal", "the cube unit's fractal: matmul dims off it get a warning"),
        ("vec_row_align_bytes", "Vec tile rows should be a multiple of this many bytes"),
        ("l0_cost_model", "the AutoL0 tile chooser's cost model: L1->L0A/L0B and drain "
                          "bandwidths (bytes/cycle), drain and MAD cycle counts, the K "
                          "fractal, FP32 cube passes"),
    )),
    ("Cores", (
        ("aic_cores", "cube cores per device"),
        ("aiv_cores", "vector cores per device"),
        ("dies", "dies per device"),
        ("clusters", "clusters (1 AIC + 2 AIV) per device"),
        ("max_block_dim", "largest `pl.spmd(n)` the device runs at once (above it: a warning "
                          "on onboard platforms)"),
        ("sim_clusters", "clusters the simulator models: ready tasks wait for a free "
                         "simulated core (1 AIC + 2 AIV per cluster)"),
        ("aicpu_threads", "AICPU threads (recorded only)"),
        ("system_counter_hz", "the system counter's rate (unused: no timing model)"),
    )),
    ("Data movement", (
        ("move_graph", "direct copy edges: what `pl.load`, `pl.store`, `pl.move` and the "
                       "automatic move insertion may use"),
        ("cross_core_moves", "cube/vector transfers accepted inside one mixed kernel"),
        ("cross_core_route", "how such a transfer travels (the listing labels it)"),
        ("pipe_slots_one_way", "slots of a one-way hand-written cross-core pipe without "
                               "`slot_num=`"),
        ("pipe_slots_each_way", "slots of each way of a two-way pipe without `slot_num=`"),
        ("pipe_local_slot_num", "whether `pl.aic/aiv_initialize_pipe` take `local_slot_num=`"),
        ("load_targets", "where a `pl.load` may land"),
        ("store_sources", "where a `pl.store` may read from"),
        ("acc_store_dtypes", "tensor dtypes an Acc tile stores into directly"),
        ("bias_move_dtypes", "Mat -> Bias moves: source dtype -> bias dtype"),
        ("gm_granularity_bytes", "global-memory access granularity (performance hints only)"),
    )),
    ("Dtypes and casts", (
        ("native_casts", "single-instruction casts (from: to); another pair compiles only "
                         "through PyPTO's cast legalization (below), one rounding per hop"),
        ("incore_4bit_dtypes", "4-bit dtypes a kernel may hold in a tile"),
        ("fp8_casts", "whether casts to and from the FP8 formats exist"),
    )),
    ("Arch-only ops and dtype gates", (
        ("unavailable_ops", "ops this arch does not have: using one is a compile error"),
        ("atomic_add_dtypes", "destination dtypes of `pl.store(..., atomic=pl.AtomicType.Add)`"),
        ("tri_rejected_dtypes", "dtypes `tile.tri` refuses"),
        ("sels_src_dtypes", "source dtypes `tile.sels` takes"),
        ("mgather_fp8", "whether `tile.mgather` gathers FP8 data"),
        ("sdma_prefetch", "whether `pl.prefetch.*` has an SDMA engine to run on"),
        ("row_expand_add_int8", "whether `tile.row_expand_add` takes INT8 tiles"),
        ("gather_int16_indices", "whether `tile.gather` takes INT16 indices (INT32 always)"),
        ("vec_op_dtypes", "per vector-op family, the element dtypes this arch's instruction "
                          "takes (families not listed take what their type rule admits)"),
        ("unvalidated_combos", "combinations accepted with a warning: PyPTO validates them "
                               "only on the other arch"),
    )),
)


def _cell(value: Any) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "none"
        return "; ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, tuple):
        if not value:
            return "none"
        return ", ".join("->".join(v) if isinstance(v, tuple) else str(v) for v in value)
    if hasattr(value, "value") and hasattr(value, "name"):  # an enum member
        return f"`{value.name}`"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


# docs/design/arch.md §6; the rule is `pytest_pypto.ir.casts.cast_chain`.
_LEGALIZATION = (
    "Casts: only pairs PyPTO's cast legalization accepts compile. A native pair is one "
    "instruction; another pair compiles to the shortest chain of native hops that never "
    "passes an intermediate dtype narrower than the destination (any integer before a "
    "float destination; a float with a shorter significand or exponent before a float one; "
    "a float whose significand is shorter than an integer destination's value bits; an "
    "integer with fewer value bits than an integer destination, or an unsigned integer "
    "before a signed one). A pair with no such chain is a compile error, "
    "never a lossy chain, even when a chain of hops exists: INT8 -> FP32 is refused on "
    "both archs (every route passes FP16 or an integer); cast in two steps, e.g. "
    "`pl.cast(pl.cast(x, pl.FP16), pl.FP32)`. The simulator rounds once per hop."
)


def _row(archs: list[Any], field: str, use: str) -> str:
    cells = [_cell(getattr(a, field)).replace("|", "\\|") for a in archs]
    return f"| `{field}` | " + " | ".join(cells) + f" | {use} |"


def _casts(archs: list[Any]) -> list[str]:
    sources: list[str] = []
    for a in archs:
        sources += [s for s in a.native_casts if s not in sources]
    out = ["| From | " + " | ".join(a.name for a in archs) + " |",
           "| --- |" + " --- |" * len(archs)]
    for src in sources:
        out.append(f"| {src} | " + " | ".join(
            ", ".join(a.native_casts.get(src, ())) or "none" for a in archs) + " |")
    return out


def _arch_gated_ops(archs: list[Any]) -> list[str]:
    out = ["| Op | Arch table fields its rule reads | Not available on |", "| --- | --- | --- |"]
    for name in sorted(REGISTRY):
        spec = REGISTRY[name]
        missing = [a.name for a in archs if name in a.unavailable_ops]
        if spec.arch_rule is None and not missing:
            continue
        read = arch_fields_read(spec.arch_rule)[0] if spec.arch_rule is not None else []
        label = {"spaces": "memory spaces"}
        out.append(f"| `{name}` | {', '.join(label.get(r, r) for r in read) or 'none'} | "
                   f"{', '.join(missing) or '-'} |")
    return out


def arch_markdown() -> str:
    """The whole page."""

    archs = list(ARCH_SPECS.values())
    head = "| Field | " + " | ".join(a.name for a in archs) + " | What it is for |"
    rule = "| --- |" + " --- |" * (len(archs) + 1)
    out = [
        "# Architecture facts: " + " vs ".join(a.name for a in archs),
        "",
        "Generated from the arch table (`pytest_pypto/arch.py`, one `ArchSpec` per arch); "
        f"do not edit by hand. Refresh with `{REFRESH_COMMAND}`; the `arch-doc` lint check "
        "fails when this file is stale. Every number the compiler and the simulator use "
        "per arch is read from that table.",
        "",
        "## Platforms",
        "",
        "| Platform | Arch | Mode |",
        "| --- | --- | --- |",
    ]
    for platform, (backend, mode) in PLATFORMS.items():
        out.append(f"| `{platform}` | {ARCH_SPECS[backend].name} (`{backend.value}`) | "
                   f"{MODE_NAMES[mode]} |")
    described: set[str] = {"name"}
    for title, rows in _SECTIONS:
        out += ["", f"## {title}", "", head, rule]
        for field, use in rows:
            described.add(field)
            out.append(_row(archs, field, use))
        if title == "Dtypes and casts":
            out += ["", _LEGALIZATION, "", "Native casts by source dtype:", ""] + _casts(archs)
    others = [f.name for f in fields(ArchSpec) if f.name not in described]
    if others:
        out += ["", "## Other facts", "", head, rule]
        out += [_row(archs, f, "(not described yet)") for f in others]
    out += ["", "## Ops with arch-specific rules", "",
            "From the op registry: each op whose entry has an arch rule or that an arch "
            "lacks, and the table fields its rule reads (see `docs/ops.md` for the values "
            "per op).", ""]
    out += _arch_gated_ops(archs)
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m pytest_pypto.ir.archdoc`: print docs/arch.md."""
    if (sys.argv[1:] if argv is None else argv):
        print("usage: python -m pytest_pypto.ir.archdoc > docs/arch.md", file=sys.stderr)
        return 2
    sys.stdout.write(arch_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
