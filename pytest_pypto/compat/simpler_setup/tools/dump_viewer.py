"""``simpler_setup.tools.dump_viewer``: read back an argument dump (runtime/argdump.py,
docs/design/scheduling.md §7): the bytes of one manifest entry, and its first elements
as Python numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_pypto.ir.dtypes import dtype_by_name

__all__ = ["decode_elements", "read_arg_data"]


def read_arg_data(bin_path: str | Path, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of the dump's binary file."""
    with open(bin_path, "rb") as f:
        f.seek(int(offset))
        return f.read(int(size))


def decode_elements(data: bytes, dtype: str, count: int) -> list:
    """The first ``count`` elements of ``data`` (row-major) as Python numbers; ``dtype`` is
    the manifest's (the DSL's name: FP32, BF16, INT8, ...)."""
    try:
        dt = dtype_by_name(str(dtype))
    except (KeyError, ValueError):
        raise ValueError(f"dump_viewer: unknown dtype {dtype!r} in the manifest") from None
    values = np.frombuffer(data, dtype=dt.np, count=int(count))
    if values.dtype.kind not in "biuf":  # bfloat16, fp8: as float64
        values = values.astype(np.float64)
    return values.tolist()
