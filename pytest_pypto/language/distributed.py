# SPDX-License-Identifier: Apache-2.0
"""`pl.distributed` (PyPTO's ``pypto.language.distributed``): Tier 3 (docs/design/language.md §22).

Multi-chip programs need PyPTO's distributed runtime.  Every name here is an
inert marker, so a module that imports and annotates with them
(``x: pld.DistributedTensor[...]``) still imports; a kernel that uses one gets the
Tier-3 "not supported by the bundled toolchain" error.
"""

from __future__ import annotations

from pytest_pypto.language.surface import Unsupported

_REASON = "distributed execution"


def __getattr__(name: str) -> Unsupported:
    if name.startswith("__"):
        raise AttributeError(name)
    return Unsupported(f"distributed.{name}", 3, _REASON)
