"""Data types of the DSL (docs/design/language.md §13): one DataType object per `pl.` dtype name.

Numpy storage dtypes are resolved lazily (numpy and ml_dtypes load only when a
kernel is actually compiled or run), so the IR can be imported cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True, eq=False)
class DataType:
    """A scalar element type: name, width, category and numpy storage."""

    name: str
    bits: int
    kind: str  # "float", "int", "uint", "bool", "index"
    storage: str | None  # numpy / ml_dtypes dtype name; None: no faithful numpy format
    tier: int = 1

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (dtype_by_name, (self.name,))

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (4-bit types pack two per byte: see nbytes)."""
        return max(1, self.bits // 8)

    def get_byte(self) -> int:
        """PyPTO's ``DataType.get_byte()``: bytes per element (as `itemsize`)."""
        return self.itemsize

    def nbytes(self, count: int) -> int:
        """Bytes of ``count`` elements; 4-bit types pack two per byte."""
        if self.bits == 4:
            return (count + 1) // 2
        return count * (self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """Integer category (signed, unsigned or INDEX); BOOL is neither int nor float."""
        return self.kind in ("int", "uint", "index")

    @cached_property
    def np(self) -> Any:
        """The numpy dtype that stores this type (imports numpy/ml_dtypes on first use)."""
        if self.storage is None:
            raise TypeError(f"{self.name} has no numpy storage format")
        import numpy  # lazy: numpy-free registry

        if self.storage in _ML_DTYPES:
            import ml_dtypes  # lazy: numpy-free registry

            return numpy.dtype(getattr(ml_dtypes, self.storage))
        return numpy.dtype(self.storage)


_ML_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn"}

BOOL = DataType("BOOL", 8, "bool", "bool")
INT8 = DataType("INT8", 8, "int", "int8")
UINT8 = DataType("UINT8", 8, "uint", "uint8")
INT16 = DataType("INT16", 16, "int", "int16")
UINT16 = DataType("UINT16", 16, "uint", "uint16")
INT32 = DataType("INT32", 32, "int", "int32")
UINT32 = DataType("UINT32", 32, "uint", "uint32")
INT64 = DataType("INT64", 64, "int", "int64")
UINT64 = DataType("UINT64", 64, "uint", "uint64")
INDEX = DataType("INDEX", 64, "index", "int64")
FP16 = DataType("FP16", 16, "float", "float16")
FP32 = DataType("FP32", 32, "float", "float32")
BF16 = DataType("BF16", 16, "float", "bfloat16")
FP8E4M3FN = DataType("FP8E4M3FN", 8, "float", "float8_e4m3fn", tier=2)
FP8E5M2 = DataType("FP8E5M2", 8, "float", "float8_e5m2", tier=2)
FP8E8M0 = DataType("FP8E8M0", 8, "float", "float8_e8m0fnu", tier=2)
FP4 = DataType("FP4", 4, "float", "float4_e2m1fn", tier=2)
HF8 = DataType("HF8", 8, "float", None, tier=3)
HF4 = DataType("HF4", 4, "float", None, tier=3)
INT4 = DataType("INT4", 4, "int", None, tier=3)
UINT4 = DataType("UINT4", 4, "uint", None, tier=3)

ALL_DTYPES: tuple[DataType, ...] = (
    BOOL, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, INDEX,
    FP16, FP32, BF16, FP8E4M3FN, FP8E5M2, FP8E8M0, FP4, HF8, HF4, INT4, UINT4,
)
# A runtime task handle (`pl.TASK_ID`, docs/design/scheduling.md §2): the type of the
# TaskIds `pl.submit` and `pl.at(...) as tid` bind; orchestration-only, no tensor or
# tile holds it, so it is not among ALL_DTYPES.  -1 is the invalid TaskId (None).
TASK_ID = DataType("TASK_ID", 64, "task", "int64")
DTYPES: dict[str, DataType] = {d.name: d for d in (*ALL_DTYPES, TASK_ID)}


def dtype_by_name(name: str) -> DataType:
    """The DataType named ``name`` ('FP32', ...); KeyError lists the valid names."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; valid: {', '.join(DTYPES)}") from None


def round_float(value: float, name: str) -> float:
    """``value`` rounded (to nearest, ties to even) to the float dtype ``name``, as a
    Python float: what a Scalar of that dtype holds (docs/design/language.md §19; an overflow is
    inf)."""
    import numpy  # lazy: numpy-free registry

    with numpy.errstate(over="ignore"):
        return float(numpy.asarray(value, dtype=numpy.float64).astype(DTYPES[name].np))
