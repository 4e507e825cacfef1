"""Hypothesis strategies for matmul programs: Mat loads, moves to Left/Right, matmul
and matmul_acc over K chunks (ragged M/N/K blocks through valid shapes), an optional
Vec epilogue on the Acc result, and chains with a Vec kernel through a temporary.
Sizes keep every cube buffer within both archs' capacities (docs/design/arch.md §3), except
`big_acc`, whose FP32 Acc fits only a5's.
"""

from __future__ import annotations

from fuzz_gen import (
    Names,
    Tile,
    add_stores,
    grids,
    grow_body,
    inputs,
    loads,
    program,
    roundup,
    scalar_params,
    vec_kernel,
)
from fuzz_spec import BYTES, Kernel, Param, Program, Stmt
from hypothesis import strategies as st

KIB = 1024
CUBE_USABLE = {"Left": 64 * KIB, "Right": 64 * KIB, "Acc": 128 * KIB}  # a2a3, the smaller
ACC_M_ALIGN = 32  # rows (a2a3 INT32 Acc; FP32 is 16)

MM_DTYPES = ("FP16", "FP32", "BF16", "INT8")


@st.composite
def mm_kernel(draw: st.DrawFn, nm: Names, name: str, a: Param, b: Param, dims: tuple,
              epilogue: bool, temp: Param | None = None) -> Kernel:
    """c = a @ b tiled [tm, tn] over the output, K in tk chunks (matmul, matmul_acc),
    with an optional Vec epilogue (bias, elementwise ops, casts) on the result."""
    m, n, kk, tm, tn, tk = dims
    acc_dt = "INT32" if a.dtype == "INT8" else "FP32"
    k = Kernel(name, [], m, n, tm, tn, [], "range", m)
    mm = Stmt("mm", nm.fresh("acc"), (a.name, b.name), {"tk": tk, "k": kk,
                                                         "split_moves": draw(st.booleans())},
              acc_dt, "acc", acc_dt == "FP32", nm.sid())
    k.body.append(mm)
    inputs: list[Param] = []
    pool = [Tile(mm.out or "", acc_dt, "full", mm.approx, pinned=True)]
    if epilogue:
        if acc_dt == "FP32" and draw(st.booleans()):
            bias = Param(nm.fresh("bias"), "tensor", "FP32", m, n)
            inputs.append(bias)
            pool += loads(nm, k, [(bias, False)], draw)
        draw(grow_body(nm, k, pool, [], 4))
    last = Tile(mm.out or "", acc_dt, "acc", mm.approx)
    if epilogue:
        last = next(t for t in reversed(pool) if t.cls == "full") if temp else pool[-1]
    outs = draw(add_stores(nm, k, pool, 1, first=last,
                           first_name=temp.name if temp else None))
    if temp is not None:
        temp.dtype, temp.approx = outs[0].dtype, last.approx
    k.params = [a, b, *inputs, *outs]
    return k


@st.composite
def mm_dims(draw: st.DrawFn, dtype: str, big_acc: bool = False) -> tuple[int, ...]:
    """(M, N, K, tm, tn, tk) within the Left/Right/Acc capacities of both archs."""
    if big_acc:  # an FP32 Acc over a2a3's 128 KiB that fits a5's 256 KiB
        tm, tn, tk = draw(st.sampled_from((160, 192, 256))), 256, 16
        return tm, tn, tk * draw(st.integers(1, 2)), tm, tn, tk
    tm = draw(st.sampled_from((16, 32, 8, 64, 48)))
    tn = draw(st.sampled_from((16, 32, 8, 64)))
    tk = draw(st.sampled_from((16, 32, 8, 64)))
    nbk = draw(st.integers(1, 3))
    per = 2 if nbk > 1 else 1
    while per * tm * tk * BYTES[dtype] > CUBE_USABLE["Left"] or \
            per * tk * tn * BYTES[dtype] > CUBE_USABLE["Right"]:
        tk //= 2
    assert roundup(tm, ACC_M_ALIGN) * tn * 4 <= CUBE_USABLE["Acc"]
    m, n = tm * draw(st.integers(1, 2)), tn * draw(st.integers(1, 2))
    kk = tk * nbk
    if draw(st.integers(0, 2)) == 0:  # ragged last blocks: valid shapes on the loads
        m, n = m - draw(st.integers(0, tm - 1)), n - draw(st.integers(0, tn - 1))
        kk -= draw(st.integers(0, tk - 1))
    return m, n, kk, tm, tn, tk


@st.composite
def mm_programs(draw: st.DrawFn, chained: bool = False, big_acc: bool = False) -> Program:
    """A matmul kernel; chained: a Vec kernel feeds its lhs through a temporary, or a
    Vec kernel consumes its result."""
    nm = Names()
    dtype = "FP32" if big_acc else draw(st.sampled_from(MM_DTYPES))
    m, n, kk, tm, tn, tk = draw(mm_dims(dtype, big_acc))
    a = Param(nm.fresh("a"), "tensor", dtype, m, kk)
    b = Param(nm.fresh("b"), "tensor", dtype, kk, n)
    order = draw(st.sampled_from(("pre", "post"))) if chained else None
    epilogue = not big_acc and draw(st.booleans())
    kernels, temps = [], []
    if order == "pre" and dtype != "INT8":  # Vec kernel -> temp -> lhs of the matmul
        grid = draw(grids())
        grid = (m, kk, grid[2], min(grid[3], kk), m)
        temp = Param("tmp0", "tensor", dtype, m, kk, "Out")
        ins = inputs(draw, nm, m, kk, dtypes=(dtype,))
        kernels.append(draw(vec_kernel(nm, "k0", grid, ins, [], temp, want_dtype=dtype)))
        temps.append(temp)
        a = Param(temp.name, "tensor", dtype, m, kk)
        mk = draw(mm_kernel(nm, "k1", a, b, (m, n, kk, tm, tn, tk), epilogue))
        kernels.append(mk)
    elif order == "post":  # matmul -> temp -> Vec kernel
        temp = Param("tmp0", "tensor", "FP32", m, n, "Out")
        kernels.append(draw(mm_kernel(nm, "k0", a, b, (m, n, kk, tm, tn, tk), epilogue,
                                      temp)))
        temps.append(Param(temp.name, "tensor", temp.dtype, m, n, "Out"))
        g = draw(grids())
        t_in = Param(temp.name, "tensor", temp.dtype, m, n)
        kernels.append(draw(vec_kernel(nm, "k1", (m, n, g[2], g[3], m),
                                       [(t_in, temp.approx)], draw(scalar_params()))))
    else:
        kernels.append(draw(mm_kernel(nm, "k0", a, b, (m, n, kk, tm, tn, tk), epilogue)))
    return program(draw, kernels, temps, {})
