# SPDX-License-Identifier: Apache-2.0
"""PyPTO spellings the bundled toolchain names but does not implement (DSL.md §4.2, §4.3).

Tier 3 constructs are recorded by the parser (decoration succeeds, compiling
raises `UnsupportedFeatureError`); Tier 2 and not-yet-built Tier 1 constructs
raise at parse time.  Either way the user sees the construct's name, never a
silent acceptance.  Also: the `pl.tile` / `pl.tensor` op namespaces and layout
markers.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.language.surface import OpStub, Unsupported

_TIER3_GROUPS: dict[str, tuple[str, ...]] = {
    "explicit task dependencies": (
        "manual_scope", "scope", "submit", "spmd_submit", "no_dep", "TaskId", "TASK_ID",
    ),
    "hand-written cross-core kernels": (
        "cluster", "split_aiv", "get_subblock_idx", "tpush_to_aiv", "tpush_to_aic",
        "tpop_from_aic", "tpop_from_aiv", "tfree_to_aic", "tfree_to_aiv",
        "aic_initialize_pipe", "aiv_initialize_pipe", "reserve_buffer", "import_peer_buffer",
        "aiv_shard", "aic_gather", "system",
    ),
    "distributed execution": ("distributed",),
    "prefetch": ("prefetch", "PrefetchAsyncContext", "AsyncEvent", "AsyncSession"),
    "JIT compilation": ("jit",),
    "explicit memory references": ("MemRef", "MemRefType"),
    "tensor views with strides": ("TensorView",),
    "debug dumps": ("dump_tag",),
    "function attributes": ("func_attr",),
}

_TIER2 = {
    "while_": "while loops",
    "cond": "while loops",
    "inline": "inline functions",
    "spmd": "SPMD launches",
    "get_block_idx": "SPMD launches",
    "get_block_num": "SPMD launches",
    "Array": "on-core arrays",
    "array": "on-core arrays",
    "TileView": "tile views in annotations",
}

# Tier 1 in DSL.md but not built in this slice of the toolchain yet.
_NOT_YET = {
    "at": "outlined regions (with pl.at)",
    "split": "outlined regions (with pl.at)",
    "cross_core_slot": "outlined regions (with pl.at)",
}


def unsupported_names() -> dict[str, Unsupported]:
    """Every named-but-unsupported `pl.` attribute, as inert markers."""
    names: dict[str, Unsupported] = {}
    for reason, group in _TIER3_GROUPS.items():
        for name in group:
            names[name] = Unsupported(name, 3, reason)
    for name, reason in _TIER2.items():
        names[name] = Unsupported(name, 2, reason)
    for name, reason in _NOT_YET.items():
        names[name] = Unsupported(name, 1, reason)
    return names


def unsupported_message(marker: Unsupported) -> str:
    """The user-facing sentence for a marker (DSL.md §6.9 wording)."""
    if marker.tier == 3:
        return (
            f"pl.{marker.name} is not supported by the bundled toolchain "
            f"(tier 3: {marker.reason})"
        )
    if marker.tier == 2:
        return (
            f"pl.{marker.name} is not supported by the bundled toolchain yet "
            f"(tier 2: {marker.reason})"
        )
    return f"pl.{marker.name} is not supported by the bundled toolchain yet ({marker.reason})"


class Layout:
    """A tensor layout marker (`pl.DN`, `pl.ND`, `pl.NZ`) in a Tensor annotation."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


# Names reachable under `pl.tensor.` although no registry op spells them yet: the
# parser reports them as tensor-level ops not supported by the bundled toolchain.
_TENSOR_NAMES = frozenset(
    {"read", "write", "dim", "create", "full", "slice", "reshape", "transpose", "assemble"}
)


class OpNamespace:
    """`pl.tile` / `pl.tensor`: op stubs by name, resolved against the registry lazily."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace
        self._stubs: dict[str, OpStub] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        stub = self._stubs.get(name)
        if stub is None:
            if not self._known(name):
                raise AttributeError(
                    f"pl.{self._namespace} has no op {name!r} in the bundled toolchain"
                )
            stub = self._stubs[name] = OpStub(name, self._namespace)
        return stub

    def _known(self, name: str) -> bool:
        from pytest_pypto.ir.registry import REGISTRY

        specs = REGISTRY.by_namespace(self._namespace, name)
        if self._namespace == "tile":
            return any(s.level == "tile" for s in specs)
        return bool(specs) or name in _TENSOR_NAMES

    def __repr__(self) -> str:
        return f"pl.{self._namespace}"
