"""Hand-built IR programs shared by the compiler tests (the parser's output shape)."""

from __future__ import annotations

from irb import Fn, S, T, orchestrate, program

from pytest_pypto.ir.dtypes import FP16, FP32
from pytest_pypto.ir.types import Direction

OUT = Direction.OUT
INOUT = Direction.INOUT


def axpy(m: int = 128, n_: int = 64, tm: int = 32):
    """docs/design/language.md §3: out = cast(x) * alpha + y, row tiles of tm."""
    k = Fn("axpy", "InCore", 10, x=T(m, n_, dtype=FP16), y=T(m, n_), alpha=S(), out=(T(m, n_), OUT))
    with k.loop("r", 0, m, tm, 11, carry=(("o", "out"),), results=("out2",)):
        k.let("xh", "tile.load", 12, "x", ["r", 0], [tm, n_])
        k.let("xf", "tile.cast", 13, "xh", FP32)
        k.let("yt", "tile.load", 14, "y", ["r", 0], [tm, n_])
        k.let("xm", "tile.muls", 15, "xf", "alpha")
        k.let("s", "tile.add", 15, "xm", "yt")
        k.let("o2", "tile.store", 15, "s", ["r", 0], "o")
        k.yield_("o2", line=15)
    k.ret("out2", line=16)
    return program(k, orchestrate(k), name="Axpy")


def matmul(m: int, k_: int, n_: int, dtype=FP32, name: str = "mm"):
    """c = a @ b from loads the compiler must place (DDR -> Mat -> Left/Right)."""
    k = Fn(name, "InCore", 30, a=T(m, k_, dtype=dtype), b=T(k_, n_, dtype=dtype),
           c=(T(m, n_), OUT))
    k.let("ta", "tile.load", 31, "a", [0, 0], [m, k_])
    k.let("tb", "tile.load", 32, "b", [0, 0], [k_, n_])
    k.let("acc", "tile.matmul", 41, "ta", "tb")
    k.let("c2", "tile.store", 42, "acc", [0, 0], "c")
    k.ret("c2", line=43)
    return program(k, orchestrate(k), name="MM")
