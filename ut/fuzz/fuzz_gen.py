"""Hypothesis strategies for valid fuzz `Program`s (see `fuzz_spec` for the model).

Ops come from the op registry (`pytest_pypto.ir.registry.REGISTRY`, Tier 1 only),
intersected with the ops whose semantics `fuzz_ref` reproduces; dtype rules, cast
chains and capacities are restated from docs/design/language.md §21 and docs/design/arch.md.  A
valid program
fits a2a3's usable Vec capacity even with every tile it allocates live at once (an
upper bound of the compiler's peak), and never casts an inexact float value to an
integer (its bits would not be defined).  Statements: loads (ragged blocks through
valid shapes), elementwise, scalar (literal, parameter, arithmetic, ``pl.const``),
unary, cast, constant tiles, row/column reductions, row_expand, ``if``/``else`` on a
loop variable or scalar, values carried by the row loop, stores (outputs may be larger
than the grid: the rest stays poison or the caller's data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from fuzz_ref import NATIVE, NP, shortest_chains
from fuzz_spec import (
    BYTES,
    CAST_MODES,
    DTYPES,
    FLOATS,
    Call,
    Kernel,
    Param,
    Program,
    Stmt,
    is_float,
    loops,
    tile_shape,
)
from hypothesis import strategies as st

from pytest_pypto.ir.registry import REGISTRY

KIB = 1024
VEC_USABLE = {"a2a3": 184 * KIB, "a5": 240 * KIB}  # docs/design/arch.md §3
VEC_BUDGET = VEC_USABLE["a2a3"]  # the sum of all tiles: an upper bound of the peak
ALIGN = 128  # Vec allocation alignment


def registered(op: str) -> bool:
    spec = REGISTRY.get(f"tile.{op}")
    return spec is not None and spec.tier == 1


DIV = ("INT16", "INT32", "FP16", "FP32")  # docs/design/language.md §21, tile.div
BINARY = {op: DIV if op == "div" else DTYPES
          for op in ("add", "sub", "mul", "div", "maximum", "minimum") if registered(op)}
SCALAR = {op: dts for op, dts in BINARY.items() if registered(op + "s")}
UNARY = {op: dts for op, dts in {
    "abs": DTYPES, "neg": DTYPES, "relu": DTYPES, "sqrt": FLOATS, "exp": FLOATS,
    "rsqrt": FLOATS, "recip": FLOATS, "log": ("FP16", "FP32"), "sin": ("FP32",),
    "cos": ("FP32",)}.items() if registered(op)}
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "rsqrt", "recip"}
ROWRED = {op: dts for op, dts in {"sum": DTYPES, "max": DTYPES,
                                  "min": ("INT16", "INT32", "FP16", "FP32")}.items()
          if registered("row_" + op)}
COLRED = {op: DTYPES for op in ("sum", "max", "min") if registered("col_" + op)}
# row_expand_add is TROWEXPANDADD: INT16/INT32/FP16/FP32 on both archs (INT8 on a5 only).
ROWEXP = {op: DIV if op in ("div", "add") else DTYPES
          for op in ("add", "sub", "mul", "div") if registered("row_expand_" + op)}


def _cast_ok(src: str, dst: str) -> bool:
    """A pair legal on both archs whose shortest chains all compute the same values:
    one chain, or several through exact widenings only (a5 INT8 -> FP32/BF16)."""
    for arch in NATIVE:
        chains = shortest_chains(arch, src, dst)
        if not chains or (len(chains) > 1 and src != "INT8"):
            return False
    return True


CASTS = {(s, d) for s in DTYPES for d in DTYPES if s != d and _cast_ok(s, d)} if registered(
    "cast") else set()

# Scalars exactly representable in FP32, so the only rounding is to the tile dtype.
# Toolchain bug (report: float literals): a float literal is FP32 (docs/design/language.md §16), but
# a
# ``*s`` op on an FP16/BF16 tile converts it from float64 directly (pl.adds(fp16, v) with
# v = 1 + 2**-11 + 2**-30 adds 1.001, via FP32 it is 1.0); FP32-exact literals avoid it.
FLOAT_LITS = (0.5, -1.25, 3.0, 2.0, -0.0, 0.10000000149011612, 7.099999904632568, 1000.0,
              0.0010000000474974513, 100000.0, 9.5367431640625e-07, -3.5)
INT_LITS = (1, -1, 3, 0, 7, 100, 127, 128, 200, -129, 1000, 40000, -70000, 2147483647,
            8589934597)


def roundup(n: int, m: int) -> int:
    return -(-n // m) * m


def tile_bytes(shape: tuple[int, int], dtype: str) -> int:
    return roundup(shape[0] * shape[1] * BYTES[dtype], ALIGN)


@dataclass
class Tile:
    """A value available to later statements of a kernel body."""

    name: str
    dtype: str
    cls: str
    approx: bool
    pinned: bool = False  # produced by a Vec op (not a retargetable load)


class Names:
    """Fresh names and statement ids of one program."""

    def __init__(self) -> None:
        self.n = 0

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def sid(self) -> int:
        self.n += 1
        return self.n


# ------------------------------------------------------------------------ bodies


@st.composite
def grids(draw: st.DrawFn, dynamic: bool = False) -> tuple[int | str, int, int, int, int]:
    """(rows, cols, tr, tc, run-time rows): a grid of 1-3 x 1-2 blocks, maybe ragged."""
    tr = draw(st.sampled_from((8, 4, 1, 2, 16, 3, 5, 32, 64)))
    tc = draw(st.sampled_from((32, 16, 64, 8, 128, 24, 40, 256)))
    if tr * tc > 4096:  # at most 16 KiB per FP32 tile
        tc = max(8, 4096 // tr // 8 * 8)
    nbr, nbc = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    rag_r = draw(st.integers(0, tr - 1)) if draw(st.booleans()) else 0
    rag_c = draw(st.integers(0, tc - 1)) if draw(st.booleans()) else 0
    rows, cols = max(1, tr * nbr - rag_r), max(1, tc * nbc - rag_c)
    if dynamic:  # run-time rows, sometimes none at all (zero-trip loops)
        return "M", cols, tr, tc, draw(st.integers(0, 3 * tr)) if draw(st.integers(0, 9)) \
            else 0
    return rows, cols, tr, tc, rows


def _pick(draw: st.DrawFn, pool: list[Tile], ok: Callable[[Tile], bool]) -> Tile | None:
    """A tile satisfying ``ok``: the newest one two times in three (chains grow deep)."""
    cands = [t for t in reversed(pool) if ok(t)]
    if not cands:
        return None
    return cands[0] if draw(st.integers(0, 2)) else draw(st.sampled_from(cands))


def fill_values(dtype: str, exact: bool = False) -> st.SearchStrategy[float | int]:
    """Literal fill values ``dtype`` holds (tile.full rejects others); ``exact``: only
    values it represents exactly."""
    if is_float(dtype):
        return st.sampled_from([v for v in FLOAT_LITS if (dtype != "FP16" or abs(v) <= 65504)
                                and (not exact or float(np.float32(v).astype(NP[dtype])) == v)])
    lim = SCALAR_INT_RANGE[dtype]
    return st.sampled_from([v for v in INT_LITS if -lim <= v < lim])


@st.composite
def _arm(draw: st.DrawFn, a: Tile, pool: list[Tile], scalars: list[Param], out: str) -> Stmt:
    """One arm of an ``if``: an op on ``a`` keeping its dtype and shape class."""
    unary = [o for o, d in UNARY.items() if a.dtype in d]
    binary = [o for o, d in BINARY.items() if a.dtype in d]
    kind = draw(st.sampled_from(("scalar", "binary") + (("unary",) if unary else ())))
    if kind == "unary":
        op = draw(st.sampled_from(unary))
        return Stmt("unary", out, (a.name,), {"op": op}, a.dtype, a.cls,
                    a.approx or op in TRANSCENDENTAL)
    if kind == "binary":
        b = _pick(draw, pool, lambda t: t.dtype == a.dtype and t.cls == a.cls) or a
        return Stmt("binary", out, (a.name, b.name), {"op": draw(st.sampled_from(binary))},
                    a.dtype, a.cls, a.approx or b.approx)
    value = draw(st.sampled_from(FLOAT_LITS if is_float(a.dtype) else INT_LITS))
    op = draw(st.sampled_from([o for o, d in SCALAR.items() if a.dtype in d]))
    return Stmt("scalar", out, (a.name,), {"op": op, "operand": repr(value), "value": value},
                a.dtype, a.cls, a.approx)


@st.composite
def op_stmt(draw: st.DrawFn, nm: Names, pool: list[Tile], scalars: list[Param],
            allow_col: bool, kind: str | None = None,
            cond_vars: tuple[tuple[str, int], ...] = ()) -> list[Stmt]:
    """One op over tiles of ``pool`` (plus its scratch tile, or the row reduction a
    row_expand consumes): one to four statements.  ``cond_vars`` are the (name,
    extent) an ``if`` may test: loop variables (extent 0 when unknown) and scalars."""
    kind = kind or draw(st.sampled_from(("scalar", "binary", "unary", "cast", "rowred",
                                         "rowexp", "colred", "full", "cond")))
    out = nm.fresh("t")

    def stmt(kind: str, args: tuple[str, ...], dtype: str, cls: str, approx: bool,
             **attrs: object) -> Stmt:
        return Stmt(kind, out, args, dict(attrs), dtype, cls, approx, nm.sid())

    if kind == "binary":
        a = _pick(draw, pool, lambda t: any(t.dtype in d for d in BINARY.values()))
        if a is not None:
            b = _pick(draw, pool, lambda t: t.dtype == a.dtype and t.cls == a.cls)
            op = draw(st.sampled_from([o for o, d in BINARY.items() if a.dtype in d]))
            ns = draw(st.sampled_from(("pl.", "pl.tile.")))
            return [stmt("binary", (a.name, b.name), a.dtype, a.cls, a.approx or b.approx,
                         op=op, ns=ns)]
    if kind == "cond" and cond_vars:
        a = _pick(draw, pool, lambda t: True)
        assert a is not None
        var, extent = draw(st.sampled_from(cond_vars))
        const = draw(st.integers(-1, extent + 1)) if extent else draw(st.sampled_from(INT_LITS[:8]))
        arms = tuple(draw(_arm(a, pool, scalars, out)) for _ in range(2))
        return [stmt("cond", tuple(x for arm in arms for x in arm.args), a.dtype, a.cls,
                     any(arm.approx for arm in arms), var=var, const=const, arms=arms,
                     cmp=draw(st.sampled_from(("<", ">=", "==", "!="))),
                     **{"yield": draw(st.booleans())})]
    if kind == "full" and registered("full"):  # a constant tile as the rhs of a binary op
        a = _pick(draw, pool, lambda t: t.cls == "full")
        if a is not None:
            value = draw(fill_values(a.dtype))
            const = Stmt("full", nm.fresh("f"), (), {"operand": repr(value), "value": value},
                         a.dtype, "full", False, nm.sid())
            # div needs equal valid shapes; a constant tile is whole, a load may be ragged
            op = draw(st.sampled_from([o for o, d in BINARY.items() if a.dtype in d
                                       and o != "div"]))
            return [const, stmt("binary", (a.name, const.out or ""), a.dtype, "full", a.approx,
                                op=op)]
    if kind == "unary":
        a = _pick(draw, pool, lambda t: any(t.dtype in d for d in UNARY.values()))
        if a is not None:
            op = draw(st.sampled_from([o for o, d in UNARY.items() if a.dtype in d]))
            return [stmt("unary", (a.name,), a.dtype, a.cls,
                         a.approx or op in TRANSCENDENTAL, op=op)]
    if kind == "cast":
        a = _pick(draw, pool, lambda t: any(s == t.dtype for s, _ in CASTS))
        if a is not None:
            dsts = [d for s, d in sorted(CASTS) if s == a.dtype
                    and not (a.approx and is_float(s) and not is_float(d))]
            if dsts:
                dst = draw(st.sampled_from(dsts))
                modes: tuple[object, ...] = (None, *CAST_MODES, *range(len(CAST_MODES)))
                if not (is_float(a.dtype) and not is_float(dst)) and draw(st.booleans()):
                    modes = (None,)  # the mode only matters for float -> int
                return [stmt("cast", (a.name,), dst, a.cls, a.approx,
                             mode=draw(st.sampled_from(modes)))]
    if kind in ("rowred", "colred"):
        table = ROWRED if kind == "rowred" else COLRED
        a = _pick(draw, pool, lambda t: t.cls == "full" and any(t.dtype in d for d in
                                                                  table.values()))
        if a is not None and (kind == "rowred" or allow_col):
            op = draw(st.sampled_from([o for o, d in table.items() if a.dtype in d]))
            cls = "row" if kind == "rowred" else "col"
            approx = a.approx or (op == "sum" and is_float(a.dtype))
            pre: list[Stmt] = []
            args: tuple[str, ...] = (a.name,)
            if kind == "rowred" or (op == "sum" and draw(st.booleans())):
                tmp = Stmt("tmp", nm.fresh("w"), (), {}, a.dtype, "full", False, nm.sid())
                pre, args = [tmp], (a.name, tmp.out or "")
            return [*pre, stmt(kind, args, a.dtype, cls, approx, op=op)]
    if kind == "rowexp" and ROWEXP and ROWRED:
        v = _pick(draw, pool, lambda t: t.cls == "row" and any(t.dtype in d for d in
                                                                 ROWEXP.values()))
        pre = []
        if v is None:  # reduce a row first: the softmax pattern
            pre = draw(op_stmt(nm, pool, scalars, allow_col, kind="rowred"))
            red = pre[-1]
            if red.kind != "rowred":
                return pre
            v = Tile(red.out or "", red.dtype, "row", red.approx)
        a = _pick(draw, pool, lambda t: t.cls == "full" and t.dtype == v.dtype)
        ops = [o for o, d in ROWEXP.items() if v.dtype in d]
        if a is not None and ops:
            return [*pre, stmt("rowexp", (a.name, v.name), a.dtype, "full",
                               a.approx or v.approx, op=draw(st.sampled_from(ops)))]
        return pre
    # scalar form (the fallback: every dtype has one)
    a = _pick(draw, pool, lambda t: True)
    assert a is not None
    op = draw(st.sampled_from([o for o, d in SCALAR.items() if a.dtype in d]))
    attrs = draw(scalar_operands(a.dtype, scalars))
    return [stmt("scalar", (a.name,), a.dtype, a.cls, a.approx, op=op,
                 explicit=draw(st.booleans()), **attrs)]


FLOAT_SOPS, INT_SOPS = ("+", "-", "*", "/"), ("+", "-", "*", "//", "%", "/", "<<", ">>")
EXPR_FLOATS, EXPR_INTS = (0.5, 2.0, 3.0, -1.25, 0.10000000149011612), (1, 2, 3, 5, 7, -3)


@st.composite
def scalar_operands(draw: st.DrawFn, dtype: str, scalars: list[Param]) -> dict[str, object]:
    """The scalar operand of a ``*s`` op on a ``dtype`` tile: a literal, an entry scalar
    of the same category, scalar arithmetic on one (``(p op lit) op lit``, so its dtype
    is FP32 or INDEX, docs/design/language.md §19), or a typed ``pl.const``."""
    params = [p for p in scalars if is_float(p.dtype) == is_float(dtype)]
    kind = draw(st.sampled_from(("lit", "param", "expr", "const")))
    if kind in ("param", "expr") and params:
        p = draw(st.sampled_from(params))
        if kind == "param":
            return {"operand": p.name, "param": p.name}
        terms = []
        for _ in range(draw(st.integers(1, 2))):
            op = draw(st.sampled_from(FLOAT_SOPS if is_float(dtype) else INT_SOPS))
            lit = draw(st.sampled_from((1, 2, 3)) if op in ("<<", ">>") else
                       st.sampled_from(EXPR_FLOATS if is_float(dtype) else EXPR_INTS))
            terms.append((op, lit))
        text = p.name
        for i, (op, lit) in enumerate(terms):
            text = f"({text}) {op} {lit!r}" if i else f"{text} {op} {lit!r}"
        return {"operand": text, "param": p.name, "terms": tuple(terms)}
    if kind == "const":
        cdt = draw(st.sampled_from(FLOATS if is_float(dtype) else ("INT32", "INT16", "INT8")))
        value = draw(fill_values(cdt))  # pl.const rounds to its dtype (was a bug)
        return {"operand": f"pl.const({value!r}, pl.{cdt})", "value": value, "const": cdt}
    value = draw(st.sampled_from(FLOAT_LITS if is_float(dtype) else INT_LITS))
    return {"operand": repr(value), "value": value}


def stmt_bytes(k: Kernel, s: Stmt) -> int:
    if s.kind in ("store", "mm", "big"):
        return 0
    return tile_bytes(tile_shape(k, s.cls), s.dtype or "FP32")


def vec_bytes(k: Kernel) -> int:
    """Upper bound of the kernel's Vec peak: every tile it allocates, live at once."""
    total = sum(stmt_bytes(k, s) for s in k.pre + k.body)
    if any(s.kind == "mm" for s in k.body):
        total += tile_bytes((k.tr, k.tc), "FP32")  # the Acc -> Vec copy
    return total


@st.composite
def grow_body(draw: st.DrawFn, nm: Names, k: Kernel, pool: list[Tile], scalars: list[Param],
              max_ops: int, budget: int = VEC_BUDGET) -> None:
    # (a tile that would pass the budget ends the chain: valid programs come near it)
    """Append up to ``max_ops`` ops to ``k.body`` while the Vec bound stays in budget."""
    n_ops = draw(st.integers(1, max_ops))
    rows_loop, cols_loop = loops(k)
    cond_vars = tuple([("r", k.rows if isinstance(k.rows, int) else 0)] if rows_loop else []) \
        + tuple([("c", k.cols)] if cols_loop else []) \
        + tuple((p.name, 0) for p in scalars if not is_float(p.dtype))
    steps = tuple((p.name, 0) for p in scalars if p.step is not None)
    for i in range(n_ops):
        # an orchestration loop variable is tested first (so the kernel takes it)
        stmts = draw(op_stmt(nm, pool, scalars, allow_col=isinstance(k.rows, int),
                             kind="cond" if steps and i == 0 else None,
                             cond_vars=steps if steps and i == 0 else cond_vars))
        if vec_bytes(k) + sum(stmt_bytes(k, s) for s in stmts) > budget:
            break
        for s in stmts:
            if draw(st.integers(0, 5)) == 0 and s.kind not in ("tmp", "full"):
                shape = tile_shape(k, s.cls)
                s.attrs["ann"] = f"pl.Tile[[{shape[0]}, {shape[1]}], pl.{s.dtype}]"
            k.body.append(s)
            if s.kind not in ("tmp", "full"):  # scratch and constants are no results
                pool.append(Tile(s.out or "", s.dtype, s.cls, s.approx, pinned=True))


def out_shape(k: Kernel, cls: str) -> tuple[int | str, int]:
    nrb = -(-k.rows // k.tr) if isinstance(k.rows, int) else k.rows
    ncb = -(-k.cols // k.tc)
    return {"full": (k.rows, k.cols), "acc": (k.rows, k.cols), "row": (k.rows, ncb),
            "col": (nrb, k.cols)}[cls]


@st.composite
def add_stores(draw: st.DrawFn, nm: Names, k: Kernel, pool: list[Tile], n_max: int = 3,
               first: Tile | None = None, first_name: str | None = None) -> list[Param]:
    """Store the last value (or ``first``) and up to two more, unused values first, into
    new output tensors."""
    chosen = [first or pool[-1]]
    used = {a for s in k.body for a in s.args}
    leaves = [t for t in pool if t.name not in used and t.pinned] or pool
    for _ in range(draw(st.integers(0, n_max - 1))):
        t = draw(st.sampled_from(leaves[::-1] if draw(st.integers(0, 3)) else pool))
        if all(t.name != c.name for c in chosen):
            chosen.append(t)
    outs = []
    for i, t in enumerate(chosen):
        name = first_name if i == 0 and first_name else nm.fresh("o")
        rows, cols = out_shape(k, t.cls)
        fixed = i == 0 and first_name is not None
        if not fixed and isinstance(rows, int) and draw(st.integers(0, 3)) == 0:
            # never-written elements: poison in an Out, the caller's values in an InOut
            rows, cols = rows + draw(st.integers(0, 3)), cols + draw(st.integers(0, 9))
        direction = "Out" if fixed or draw(st.integers(0, 3)) else "InOut"
        dtype = t.dtype
        if t.cls == "acc":  # an Acc result may be stored into a narrower float tensor
            dtype = draw(st.sampled_from(("FP32", "FP16", "BF16"))) if t.dtype == "FP32" \
                else t.dtype
        p = Param(name, "tensor", dtype, rows, cols, direction)
        outs.append(p)
        k.body.append(Stmt("store", None, (t.name, name), {"cls": "row" if t.cls == "row" else
                                                           "col" if t.cls == "col" else
                                                           "full"}, dtype, sid=nm.sid()))
    return outs


def loads(nm: Names, k: Kernel, inputs: list[tuple[Param, bool]], draw: st.DrawFn
           ) -> list[Tile]:
    pool = []
    for p, approx in inputs:
        whole = isinstance(k.rows, int) and k.rows % k.tr == 0 and k.cols % k.tc == 0
        attrs: dict[str, object] = {"valid": not whole or draw(st.booleans())}
        if draw(st.integers(0, 3)) == 0:
            attrs["valid_kw"] = "valid_shape"
        s = Stmt("load", nm.fresh("t"), (p.name,), attrs, p.dtype, "full", approx, nm.sid())
        k.body.append(s)
        pool.append(Tile(s.out or "", p.dtype, "full", approx))
    return pool


@st.composite
def vec_kernel(draw: st.DrawFn, nm: Names, name: str, grid: tuple, inputs: list[tuple[Param, bool]],
               scalars: list[Param], temp: Param | None = None, want_dtype: str | None = None,
               max_ops: int = 8) -> Kernel:
    """A Vec kernel: loads of ``inputs``, an op chain, stores.  With ``temp`` the first
    output is that tensor (a full tile, of ``want_dtype`` when given)."""
    rows, cols, tr, tc, dyn_rows = grid
    k = Kernel(name, [], rows, cols, tr, tc, [], draw(st.sampled_from(
        ("range", "parallel", "pipeline", "unroll"))), dyn_rows)
    pool = loads(nm, k, inputs, draw)
    draw(grow_body(nm, k, pool, scalars, max_ops))
    carried = draw(carry(nm, k, pool, scalars)) if temp is None else []
    first = None
    if temp is not None:
        first = next(t for t in reversed(pool) if t.cls == "full"
                     and (want_dtype is None or t.dtype == want_dtype))
    outs = draw(add_stores(nm, k, pool, first=first, first_name=temp.name if temp else None))
    if temp is not None:
        temp.dtype, temp.approx = outs[0].dtype, first.approx
    used = {s.attrs.get("param") for s in k.body} | {s.attrs.get("var") for s in k.body}
    used |= {a.attrs.get("param") for s in k.body for a in s.attrs.get("arms", ())}
    ins = [p for p, _ in inputs if temp is None or p.name != temp.name]
    outs = [temp if temp is not None and o.name == temp.name and temp.direction == "InOut"
            else o for o in outs]
    params = ins + [p for p in scalars if p.name in used] + outs + carried
    order = draw(st.permutations(range(len(params))))
    k.params = [params[i] for i in order]
    return k


@st.composite
def carry(draw: st.DrawFn, nm: Names, k: Kernel, pool: list[Tile], scalars: list[Param]
          ) -> list[Param]:
    """Maybe a value carried by the row loop: ``acc = op(acc, col_reduction)`` per block,
    initialised by a constant before the loop and stored after it (needs one column
    block covering the columns exactly: the constant's valid shape is the whole tile)."""
    rows_loop, cols_loop = loops(k)
    if not rows_loop or cols_loop or k.cols != k.tc or draw(st.integers(0, 2)):
        return []
    col = _pick(draw, pool, lambda t: t.cls == "col")
    if col is None:
        stmts = draw(op_stmt(nm, pool, scalars, True, kind="colred"))
        if stmts[-1].kind != "colred":
            return []
        k.body += stmts
        col = Tile(stmts[-1].out or "", stmts[-1].dtype, "col", stmts[-1].approx)
    name = nm.fresh("acc")
    value = draw(fill_values(col.dtype))
    k.pre.append(Stmt("full", name, (), {"operand": repr(value), "value": value}, col.dtype,
                      "col", sid=nm.sid()))
    op = draw(st.sampled_from(("add", "maximum", "minimum")))
    k.body.append(Stmt("binary", name, (name, col.name), {"op": op}, col.dtype, "col",
                       col.approx, nm.sid()))
    out = Param(nm.fresh("o"), "tensor", col.dtype, 1, k.cols,
                draw(st.sampled_from(("Out", "InOut"))))
    k.post.append(Stmt("store", None, (name, out.name), {"cls": "col", "outside": True},
                       col.dtype, sid=nm.sid()))
    return [out]


SCALAR_INT_RANGE = {"INT8": 2**7, "INT16": 2**15, "INT32": 2**31, "INT64": 2**63,
                    "INDEX": 2**63}


@st.composite
def scalar_params(draw: st.DrawFn) -> list[Param]:
    """Up to one float and one int entry scalar, of any scalar dtype, with a value its
    dtype holds (floats are staged by rounding to the declared dtype)."""
    out = []
    if draw(st.booleans()):
        dt = draw(st.sampled_from(("FP32", "FP16", "BF16")))
        vals = [v for v in FLOAT_LITS if dt != "FP16" or abs(v) <= 65504]
        out.append(Param("alpha", "scalar", dt, value=draw(st.sampled_from(vals))))
    if draw(st.booleans()):
        dt = draw(st.sampled_from(("INT32", "INDEX", "INT64", "INT16", "INT8")))
        lim = SCALAR_INT_RANGE[dt]
        vals = [v for v in INT_LITS if -lim <= v < lim]
        out.append(Param("n", "scalar", dt, value=draw(st.sampled_from(vals))))
    return out


def _entry(kernels: list[Kernel], temps: list[Param]) -> list[Param]:
    """The entry's parameters: every kernel parameter that is not a temporary, once."""
    seen: dict[str, Param] = {}
    tnames = {t.name for t in temps}
    for k in kernels:
        for p in k.params:
            if p.name not in tnames and p.name not in seen:
                seen[p.name] = p
    ins = [p for p in seen.values() if p.kind == "tensor" and p.direction == "In"]
    scal = [p for p in seen.values() if p.kind == "scalar" and p.step is None]
    outs = [p for p in seen.values() if p.kind == "tensor" and p.direction != "In"]
    return ins + scal + outs


def program(draw: st.DrawFn, kernels: list[Kernel], temps: list[Param],
             dyn: dict[str, int], reps: dict[str, int] | None = None) -> Program:
    entry = _entry(kernels, temps)
    calls = [Call(k.name, [p.name for p in k.params], [p.name for p in k.outputs],
                  (reps or {}).get(k.name, 1),
                  {p.name: p.step for p in k.params if p.step is not None})
             for k in kernels]
    scalars = {p.name: p.value for p in entry if p.kind == "scalar"}
    return Program(kernels, entry, temps, calls, scalars, dyn,
                   draw(st.integers(0, 2**32 - 1)), batch_loops=draw(st.integers(0, 3)) > 0,
                   numpy_scalars=draw(st.booleans()))


def inputs(draw: st.DrawFn, nm: Names, rows: int | str, cols: int, n: tuple[int, int] = (1, 3),
            dtypes: tuple[str, ...] = DTYPES) -> list[tuple[Param, bool]]:
    main = draw(st.sampled_from(dtypes))
    out = []
    for _ in range(draw(st.integers(*n))):
        dt = main if draw(st.integers(0, 2)) else draw(st.sampled_from(dtypes))
        out.append((Param(nm.fresh("x"), "tensor", dt, rows, cols), False))
    return out


@st.composite
def vec_programs(draw: st.DrawFn, dynamic: bool = False, chained: bool = False) -> Program:
    """One Vec kernel, or two chained through a temporary tensor of the orchestration,
    or (in place) through an entry output that the second kernel reads and rewrites."""
    nm = Names()
    grid = draw(grids(dynamic))
    rows, cols = grid[0], grid[1]
    scalars = draw(scalar_params())
    temps: list[Param] = []
    inplace = chained and draw(st.integers(0, 2)) == 0
    temp = Param("tmp0", "tensor", "FP32", rows, cols, "Out") if chained else None
    if inplace:
        temp = Param(nm.fresh("o"), "tensor", "FP32", rows, cols, "Out")
    k0 = draw(vec_kernel(nm, "k0", grid, inputs(draw, nm, rows, cols), scalars, temp))
    kernels = [k0]
    reps = {}
    if temp is not None and inplace:
        g1 = draw(grids(dynamic))
        io = Param(temp.name, "tensor", temp.dtype, rows, cols, "InOut")
        # the orchestration's loop variable, passed as `i + c`
        step = [Param("step", "scalar", "INDEX", step=draw(st.integers(-2, 5)))] \
            if draw(st.booleans()) else []
        k1 = draw(vec_kernel(nm, "k1", (rows, cols, g1[2], g1[3], grid[4]),
                             [(io, temp.approx)], scalars + step, io, want_dtype=temp.dtype))
        kernels.append(k1)
        # repeated in place: each call reads the last one's result (exact values only,
        # since a float -> int cast of an inexact value has no defined bits)
        reps["k1"] = 1 if io.approx else draw(st.integers(1, 3))
    elif temp is not None:
        g1 = draw(grids(dynamic))
        grid1 = (rows, cols, g1[2], g1[3], grid[4])
        t_in = Param(temp.name, "tensor", temp.dtype, rows, cols, "In")
        more = inputs(draw, nm, rows, cols, (0, 1))
        kernels.append(draw(vec_kernel(nm, "k1", grid1, [(t_in, temp.approx), *more],
                                       scalars)))
        temps.append(Param(temp.name, "tensor", temp.dtype, rows, cols, "Out"))
    return program(draw, kernels, temps, {"M": grid[4]} if dynamic else {}, reps)
