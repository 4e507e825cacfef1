# SPDX-License-Identifier: Apache-2.0
"""Block identity of an SPMD launch: `pl.get_block_idx()` and `pl.get_block_num()`.

A kernel launched with `pl.spmd(n)` runs as n tasks of one launch; each reads its
own block index (0..n-1) and the block count n.  A kernel launched by a plain call
is a launch of one block (index 0, count 1).  The values are not operands: the
generated kernel receives the launch as a hidden ``_launch=(index, count)``
argument (compiler/codegen.py; these entries set ``reads_launch``) and passes it to
these ops, so their semantics stay here.  PyPTO spells them at tile level (`pl.tile.get_block_idx`,
also `pl.get_block_idx`) and as tensor-scope aliases (`pl.tensor.get_block_idx`).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import dtypes
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, register
from pytest_pypto.ir.types import ScalarType, Type

SINGLE_BLOCK = (0, 1)  # the launch of a kernel called without pl.spmd


def _index_type(info: CallInfo) -> Type:
    return ScalarType(dtypes.INDEX)


def _block_idx(launch: Any = SINGLE_BLOCK, out: Any = None) -> int:
    return int(launch[0])


def _block_num(launch: Any = SINGLE_BLOCK, out: Any = None) -> int:
    return int(launch[1])


_IDX_DOC = ("The index (0..n-1, an INDEX Scalar) of the block running this kernel in its "
            "pl.spmd(n) launch; 0 when the kernel is called without pl.spmd.")
_NUM_DOC = ("The number of blocks n (an INDEX Scalar) of the pl.spmd(n) launch running this "
            "kernel; 1 when the kernel is called without pl.spmd.")

for _level, _spelling in (("tile", "get_block_idx"), ("tensor", "tensor.get_block_idx")):
    register(OpSpec(
        name=f"{_level}.get_block_idx", params=(), type_rule=_index_type, mem=MemRule(),
        execute=_block_idx, spellings=(_spelling,), reads_launch=True, doc=_IDX_DOC,
    ))
for _level, _spelling in (("tile", "get_block_num"), ("tensor", "tensor.get_block_num")):
    register(OpSpec(
        name=f"{_level}.get_block_num", params=(), type_rule=_index_type, mem=MemRule(),
        execute=_block_num, spellings=(_spelling,), reads_launch=True, doc=_NUM_DOC,
    ))
