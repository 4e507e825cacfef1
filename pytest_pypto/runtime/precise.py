# SPDX-License-Identifier: Apache-2.0
"""The op binder of precise runs (``RunConfig.precise``, ``--pypto-precise``).

Under precise mode value ops keep BF16/FP16/FP8 results in FP32 storage
(`pytest_pypto.ir.apply.PRECISE`).  Memory ops (``execute``) receive their operands
unchanged, and some of them read a tile's storage bit by bit (reinterpret, packed
sorts, byte gathers) or allocate a buffer of the tile's own dtype.  This binder
lets the ops known to work on FP32-held tiles (their entries set ``wide_safe``) see
them as they are (stores round once into the tensor, moves and views keep the data,
casts and matmuls widen anyway) and hands every other memory op its tiles rounded to their dtype first:
such an op costs one rounding, never a wrong reading of the bits.

The binder is chosen by the Worker for precise runs only, so ordinary runs keep
the registry's callables with no wrapper on the dispatch path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pytest_pypto.ir.apply import nominal
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.runtime.loader import registry_bind

__all__ = ["precise_bind"]


def precise_bind(op: str) -> Callable[..., Any]:
    """`registry_bind`, with memory ops whose entries are not ``wide_safe`` reading
    nominal tiles."""
    fn = registry_bind(op)
    spec = REGISTRY.get(op)
    if spec is None or spec.execute is None or spec.wide_safe:  # value ops: `apply` does it
        return fn

    @functools.wraps(fn)
    def narrowed(*args: Any, **kwargs: Any) -> Any:
        return fn(*(nominal(a) for a in args), **kwargs)

    return narrowed
