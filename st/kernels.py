"""DSL kernels shared by the system tests and bench/bench_dispatch.py (a plain module, not collected).

Builders take their shapes as arguments: the parser folds closure constants from the
defining frame (docs/design/language.md §7), so each builder defines its program class inside itself
with the sizes as locals.  The fixed-size programs the tests use are built once here.
"""

from __future__ import annotations

from typing import Any

import pytest_pypto.language as pl


def add_program(R: int, C: int, TR: int) -> Any:  # noqa: N803  (DSL closure constants)
    """out = x + y over FP32 [R, C], tiled by TR rows."""

    @pl.program
    class Add:
        @pl.function(type=pl.FunctionType.InCore)
        def add(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            for r in pl.range(0, R, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                out = pl.store(pl.add(xt, yt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.add(x, y, out)
            return out

    return Add


def matmul_program(M: int, K: int, N: int, TM: int, TK: int, TN: int) -> Any:  # noqa: N803
    """c = a @ b in FP32, tiled [TM, TN] over the output; K in TK chunks via matmul_acc."""

    @pl.program
    class MatMulTiled:
        @pl.function(type=pl.FunctionType.InCore)
        def mm(
            self,
            a: pl.Tensor[[M, K], pl.FP32],
            b: pl.Tensor[[K, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
        ) -> pl.Tensor[[M, N], pl.FP32]:
            for m in pl.range(0, M, TM):
                for n in pl.range(0, N, TN):
                    a0 = pl.load(a, [m, 0], [TM, TK], target_memory=pl.Mem.Mat)
                    b0 = pl.load(b, [0, n], [TK, TN], target_memory=pl.Mem.Mat)
                    acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left),
                                    pl.move(b0, target_memory=pl.Mem.Right))
                    for k in pl.range(TK, K, TK):
                        ak = pl.load(a, [m, k], [TM, TK], target_memory=pl.Mem.Mat)
                        bk = pl.load(b, [k, n], [TK, TN], target_memory=pl.Mem.Mat)
                        acc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                            pl.move(bk, target_memory=pl.Mem.Right))
                    c = pl.store(acc, [m, n], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            a: pl.Tensor[[M, K], pl.FP32],
            b: pl.Tensor[[K, N], pl.FP32],
            c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
        ) -> pl.Tensor[[M, N], pl.FP32]:
            c = self.mm(a, b, c)
            return c

    return MatMulTiled


def softmax_program(R: int, C: int, TR: int) -> Any:  # noqa: N803
    """Row softmax over FP32 [R, C], TR rows per tile: row_max, exp(x - max), row_sum, divide."""

    @pl.program
    class RowSoftmax:
        @pl.function(type=pl.FunctionType.InCore)
        def softmax(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            for r in pl.range(0, R, TR):
                t = pl.load(x, [r, 0], [TR, C])
                tmp = pl.create_tile([TR, C], pl.FP32)
                m = pl.row_max(t, tmp)
                e = pl.exp(pl.row_expand_sub(t, m))
                s = pl.row_sum(e, tmp)
                out = pl.store(pl.row_expand_div(e, s), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.softmax(x, out)
            return out

    return RowSoftmax


# -- FP16 matmul, one tile: Mat -> Left/Right -> Acc, FP32 result ---------------------------

MM, MK, MN = 64, 64, 32


@pl.program
class MatMulFP16:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(
        self,
        a: pl.Tensor[[MM, MK], pl.FP16],
        b: pl.Tensor[[MK, MN], pl.FP16],
        c: pl.Out[pl.Tensor[[MM, MN], pl.FP32]],
    ) -> pl.Tensor[[MM, MN], pl.FP32]:
        ta = pl.load(a, [0, 0], [MM, MK], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [MK, MN], target_memory=pl.Mem.Mat)
        la = pl.move(ta, target_memory=pl.Mem.Left)
        rb = pl.move(tb, target_memory=pl.Mem.Right)
        acc = pl.matmul(la, rb)
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[MM, MK], pl.FP16],
        b: pl.Tensor[[MK, MN], pl.FP16],
        c: pl.Out[pl.Tensor[[MM, MN], pl.FP32]],
    ) -> pl.Tensor[[MM, MN], pl.FP32]:
        c = self.mm(a, b, c)
        return c


# -- the fixed-size programs the system tests run ---------------------------------------------

SR, SC, STR = 64, 128, 16  # row softmax: rows, cols, tile rows
RowSoftmax = softmax_program(SR, SC, STR)

KM, KK, KN, TK = 32, 128, 64, 32  # matmul_acc over K: one [KM, KN] output tile, K in TK chunks
MatMulAccK = matmul_program(KM, KK, KN, KM, TK, KN)
