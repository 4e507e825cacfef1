# SPDX-License-Identifier: Apache-2.0
"""The argument dump of a run (``--pypto-dump-args``, PyPTO's ``--dump-args``;
docs/design/scheduling.md §7).

At level 1 a task dumps the arguments marked for it (``dumps=`` on ``pl.submit`` /
``pl.at``, or a tensor tagged by ``pl.dump_tag`` before the call), at level 2 every
tensor argument of every task.  An argument the kernel reads (In, InOut) is copied just
before the task runs (stage ``before_dispatch``), one it writes (Out, InOut) just after
it finished (``after_completion``): an InOut argument gives both.  A task whose predicate
is false runs nothing and dumps nothing.

`write_args_dump` writes ``<dfx>/args_dump/args_dump.json`` (``{"bin_file", "args"}``,
one entry per dumped argument: ``task_id`` (a string), ``role`` (input, output, inout),
``stage``, ``arg_index``, ``dtype`` (the DSL's name, FP32, BF16, ...), ``shape``,
``strides`` (in elements of its tensor), ``start_offset`` (elements from the tensor's
start), ``bin_offset``/``bin_size`` (its bytes in the binary, row-major), ``is_contiguous``,
and our ``name`` and ``kernel``) and ``args_dump.bin`` next to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BIN_NAME", "MANIFEST_NAME", "capture", "write_args_dump"]

MANIFEST_NAME = "args_dump.json"
BIN_NAME = "args_dump.bin"

_ROLES = {"In": "input", "Out": "output", "InOut": "inout"}
_BEFORE = ("In", "InOut")
_AFTER = ("Out", "InOut")


def capture(task: Any, level: int, before: bool) -> list[dict[str, Any]]:
    """The dumped arguments of ``task`` at one stage (``before`` it runs, or after)."""
    positions: Iterable[int] = range(len(task.handles)) if level >= 2 else task.dumps
    wanted = _BEFORE if before else _AFTER
    out = []
    for i in positions:
        handle = task.handles[i]
        direction = task.directions[i]
        if handle is None or direction not in wanted:
            continue
        view = task.call_args[i]
        itemsize = view.dtype.itemsize
        root = handle.root
        out.append({
            "task_id": str(task.id),
            "role": _ROLES[direction],
            "stage": "before_dispatch" if before else "after_completion",
            "arg_index": int(i),
            "dtype": root.dtype.name,
            "name": task.arg_names[i],
            "kernel": task.kernel,
            "array": np.array(view, copy=True),
            "strides": [int(s) // itemsize for s in view.strides],
            "start_offset": int(handle.byte_range[0]) // itemsize,
            "is_contiguous": bool(view.flags.c_contiguous),
        })
    return out


def write_args_dump(entries: Sequence[dict[str, Any]], dfx: str | Path) -> Path:
    """Write the manifest and binary of ``entries`` (from `capture`) under
    ``<dfx>/args_dump/``; the manifest's path."""
    folder = Path(dfx) / "args_dump"
    folder.mkdir(parents=True, exist_ok=True)
    args = []
    offset = 0
    with open(folder / BIN_NAME, "wb") as blob:
        for e in entries:
            data = np.ascontiguousarray(e["array"]).tobytes()
            blob.write(data)
            record = {k: v for k, v in e.items() if k != "array"}
            record.update(shape=[int(d) for d in e["array"].shape], bin_offset=offset,
                          bin_size=len(data))
            args.append(record)
            offset += len(data)
    manifest = folder / MANIFEST_NAME
    manifest.write_text(json.dumps({"bin_file": BIN_NAME, "args": args}, indent=1))
    return manifest
