"""Mutations: a valid generated program made invalid in one known way.

Each mutation edits one statement (or inserts one), names it in ``Program.mut_sid``
and sets ``Program.expect``: per arch, the designed error classes (docs/design/checks.md)
one of which must be raised at that statement's line, or None where the mutated
program is still valid on that arch (it must then run and match the reference).
"""

from __future__ import annotations

from fuzz_gen import (
    BINARY,
    CASTS,
    DTYPES,
    ROWRED,
    UNARY,
    Names,
    out_shape,
    vec_bytes,
    vec_programs,
)
from fuzz_mm import MM_DTYPES, mm_programs
from fuzz_spec import Kernel, Program, Stmt
from hypothesis import strategies as st

BOUNDS = ("BoundsError", "SimulationError")  # compile time, or run time for dynamic dims
TYPES = ("ParserTypeError", "ShapeError")  # docs/design/checks.md §5: parse where types decide
BAD_SPACES = ("Left", "Right", "Acc", "Bias")  # never a load target, never reached from Vec


def _both(*classes: str) -> dict[str, tuple[str, ...] | None]:
    return {"a2a3": classes, "a5": classes}


def _types(k: Kernel, upto: str) -> dict[str, tuple[str, str]]:
    """name -> (dtype, shape class) of the tile values defined up to ``upto``."""
    out = {}
    for s in _values(k):
        out[s.out or ""] = (s.dtype, s.cls)
        if s.out == upto:
            break
    return out


def _values(k: Kernel) -> list[Stmt]:
    return [s for s in k.body if s.out and s.kind not in ("tmp", "mm", "big", "store",
                                                          "cond", "full")]


def _pinned(k: Kernel) -> list[Stmt]:
    """Values produced by Vec ops (a load's space would follow its consumers)."""
    return [s for s in _values(k) if s.kind != "load"]


def _vec(prog: Program) -> list[Kernel]:
    return [k for k in prog.kernels if not any(s.kind == "mm" for s in k.body)]


def _mm(prog: Program) -> list[tuple[Kernel, Stmt]]:
    return [(k, s) for k in prog.kernels for s in k.body if s.kind == "mm"]


def _insert_after(k: Kernel, name: str, stmts: list[Stmt]) -> None:
    """Insert ``stmts`` right after the definition of ``name`` (before any store)."""
    at = next(i for i, s in enumerate(k.body) if s.out == name) + 1
    k.body[at:at] = stmts


def applicable(prog: Program) -> list[str]:
    kinds = ["oob_store", "capacity"]
    if any(s.kind == "load" for k in prog.kernels for s in k.body):
        kinds += ["oob_load", "memspace_load"]
    if any(_values(k) for k in _vec(prog)):
        kinds += ["dtype_binary", "annotation", "op_dtype"]
    if any(_pinned(k) for k in _vec(prog)):
        kinds.append("memspace_move")
    if any(vec_bytes(k) <= 40 * 1024 for k in _vec(prog)):
        kinds.append("capacity_a2a3")
    if _stores_to_entry(prog):
        kinds.append("dtype_store")
    if _store_into_in(prog):
        kinds.append("store_in")
    if _fp32_loads(prog):
        kinds.append("fp8_cast")
    if _mm(prog):
        kinds += ["mm_dtype", "mm_k", "memspace_mm"]
    return kinds


def _stores_to_entry(prog: Program) -> list[tuple[Kernel, Stmt]]:
    entry = {p.name for p in prog.entry}
    mm_outs = {s.out for _, s in _mm(prog)}
    loaded = {(k.name, s.args[0]) for k in prog.kernels for s in k.body if s.kind == "load"}
    return [(k, s) for k in prog.kernels for s in k.body
            if s.kind == "store" and s.args[1] in entry and s.args[0] not in mm_outs
            and (k.name, s.args[1]) not in loaded]  # an InOut it also reads keeps its dtype


def _store_into_in(prog: Program) -> list[tuple[Kernel, Stmt, str]]:
    out = []
    for k in prog.kernels:
        for s in k.body:
            if s.kind != "store" or s.attrs["cls"] != "full":
                continue
            dst = k.param(s.args[1])
            for p in k.params:
                if (p.kind == "tensor" and p.direction == "In" and p.dtype == dst.dtype
                        and (p.rows, p.cols) == (dst.rows, dst.cols)):
                    out.append((k, s, p.name))
    return out


def _fp32_loads(prog: Program) -> list[tuple[Kernel, Stmt]]:
    entry = {p.name for p in prog.entry}
    return [(k, s) for k in _vec(prog) for s in k.body
            if s.kind == "load" and s.dtype == "FP32" and s.args[0] in entry]


@st.composite
def mutate(draw: st.DrawFn, prog: Program, kind: str) -> Program:
    """Apply mutation ``kind`` to ``prog`` (in place) and return it."""
    nm = Names()
    nm.n = 10_000  # fresh names and ids after the generator's
    prog.label = kind
    if kind.startswith("oob"):  # a window past the edge needs at least one trip
        prog.dyn = {name: max(1, rows) for name, rows in prog.dyn.items()}
    if kind in ("oob_load", "memspace_load"):
        loads = [(k, s) for k in prog.kernels for s in k.body if s.kind == "load"]
        k, s = draw(st.sampled_from(loads))
        if kind == "oob_load":
            axis = draw(st.sampled_from(("row_extra", "col_extra")))
            s.attrs[axis] = draw(st.sampled_from((" + 1", " - 1")))
            prog.expect = _both(*BOUNDS)
        else:
            s.attrs["target"] = draw(st.sampled_from(BAD_SPACES))
            prog.expect = _both("MemorySpaceError")
        prog.mut_sid = s.sid
    elif kind == "oob_store":
        stores = [(k, s) for k in prog.kernels for s in k.body if s.kind == "store"]
        k, s = draw(st.sampled_from(stores))
        rows = k.param(s.args[1]).rows  # past the grid and any padding rows
        grid_rows = out_shape(k, "col" if s.attrs["cls"] == "col" else "full")[0]
        pad = rows - grid_rows if isinstance(rows, int) and isinstance(grid_rows, int) else 0
        s.attrs["row_extra"] = f" + {pad + 1}"
        prog.expect, prog.mut_sid = _both(*BOUNDS), s.sid
    elif kind in ("capacity", "capacity_a2a3"):
        ks = _vec(prog) if kind == "capacity" else [
            k for k in _vec(prog) if vec_bytes(k) <= 40 * 1024]
        k = draw(st.sampled_from(ks or prog.kernels))
        # 2 x 256 KiB is over both archs' Vec; 2 x 96 KiB only over a2a3's 184 KiB.
        shape = (512, 128) if kind == "capacity" else (192, 128)
        big = Stmt("big", nm.fresh("big"), (), {"shape": shape}, "FP32", sid=nm.sid())
        stores = [i for i, s in enumerate(k.body) if s.kind == "store"]
        k.body.insert(draw(st.integers(0, stores[0])), big)
        prog.mut_sid = big.sid
        prog.expect = _both("CapacityError") if kind == "capacity" else {
            "a2a3": ("CapacityError",), "a5": None}
    elif kind in ("dtype_binary", "annotation", "op_dtype", "memspace_move"):
        pick = _pinned if kind == "memspace_move" else _values
        k = draw(st.sampled_from([k for k in _vec(prog) if pick(k)]))
        s = draw(st.sampled_from(pick(k)))
        prog.mut_sid = _mutate_value(draw, nm, k, s, kind)
        prog.expect = _both("MemorySpaceError") if kind == "memspace_move" else _both(*TYPES)
    elif kind == "dtype_store":
        k, s = draw(st.sampled_from(_stores_to_entry(prog)))
        p = k.param(s.args[1])
        p.dtype = draw(st.sampled_from([d for d in DTYPES if d != p.dtype]))
        prog.expect, prog.mut_sid = _both(*TYPES), s.sid
    elif kind == "store_in":
        k, s, name = draw(st.sampled_from(_store_into_in(prog)))
        s.args = (s.args[0], name)
        prog.expect, prog.mut_sid = _both("DirectionError"), s.sid
    elif kind == "fp8_cast":
        k, s = draw(st.sampled_from(_fp32_loads(prog)))
        q = Stmt("fp8", nm.fresh("q"), (s.out or "",), {}, "FP32", "full", False, nm.sid())
        for later in k.body + k.post + [a for x in k.body for a in x.attrs.get("arms", ())]:
            later.args = tuple(q.out or "" if a == s.out else a for a in later.args)
        _insert_after(k, s.out or "", [q])
        prog.mut_sid = q.sid
        prog.expect = {"a2a3": ("ArchSupportError",), "a5": None}
    elif kind in ("mm_dtype", "mm_k", "memspace_mm"):
        k, s = draw(st.sampled_from(_mm(prog)))
        prog.mut_sid = s.sid
        if kind == "mm_dtype":
            p = k.param(s.args[1])
            p.dtype = draw(st.sampled_from([d for d in MM_DTYPES if d != p.dtype]))
            prog.expect = _both(*TYPES)
        elif kind == "mm_k":
            s.attrs["b_rows"] = s.attrs["tk"] // 2
            prog.expect = _both(*TYPES)
        else:  # lhs loaded into Vec: its explicit move to Left has no edge
            s.attrs["a_target"] = "Vec"
            s.attrs["focus"] = "a_move" if s.attrs.get("split_moves") else "matmul"
            prog.expect = _both("MemorySpaceError")
    else:
        raise ValueError(kind)
    return prog


def _mutate_value(draw: st.DrawFn, nm: Names, k: Kernel, s: Stmt, kind: str) -> int:
    """Mutations around one tile value ``s.out`` of a Vec kernel; returns the bad sid."""
    name, dtype, cls = s.out or "", s.dtype, s.cls
    if kind == "annotation":
        shape = {"full": [k.tr, k.tc], "row": [k.tr, 1], "col": [1, k.tc]}[cls]
        if draw(st.booleans()):
            dtype = draw(st.sampled_from([d for d in DTYPES if d != dtype]))
        else:
            shape[draw(st.integers(0, 1))] += draw(st.sampled_from((1, 7)))
        s.attrs["ann"] = f"pl.Tile[[{shape[0]}, {shape[1]}], pl.{dtype}]"
        return s.sid
    if kind == "memspace_move":
        mv = Stmt("move", nm.fresh("mv"), (name,),
                  {"target": draw(st.sampled_from(BAD_SPACES))}, dtype, cls, sid=nm.sid())
        _insert_after(k, name, [mv])
        return mv.sid
    if kind == "dtype_binary":
        others = [d for src, d in sorted(CASTS) if src == dtype]
        op = draw(st.sampled_from(sorted(BINARY)))
        pre: list[Stmt] = []
        before = _types(k, upto=name)
        rhs = next((n for n, (d, c) in before.items() if c == cls and d != dtype), None)
        if rhs is None or not draw(st.integers(0, 2)):
            cast = Stmt("cast", nm.fresh("c"), (name,), {}, draw(st.sampled_from(others)),
                        cls, sid=nm.sid())
            pre, rhs = [cast], cast.out
        args = (name, rhs) if draw(st.booleans()) else (rhs, name)
        bad = Stmt("binary", nm.fresh("bad"), args, {"op": op}, dtype, cls, sid=nm.sid())
        _insert_after(k, name, [*pre])
        _insert_after(k, (pre[-1].out if pre else name) or "", [bad])
        return bad.sid
    # op_dtype: an op applied to a dtype it does not take
    wrong = [("unary", op) for op, dts in UNARY.items() if dtype not in dts]
    if dtype not in BINARY.get("div", DTYPES):
        wrong.append(("binary", "div"))
    if cls == "full" and "min" in ROWRED and dtype not in ROWRED["min"]:
        wrong.append(("rowred", "min"))
    if not wrong:  # every dtype misses something: FP32 has no bad unary; re-type it
        cast = Stmt("cast", nm.fresh("c"), (name,), {}, "INT32" if dtype != "INT32"
                    else "INT8", cls, sid=nm.sid())
        _insert_after(k, name, [cast])
        return _mutate_value(draw, nm, k, cast, kind)
    what, op = draw(st.sampled_from(wrong))
    pre = []
    args: tuple[str, ...] = (name,)
    if what == "binary":
        args = (name, name)
    elif what == "rowred":
        tmp = Stmt("tmp", nm.fresh("w"), (), {}, dtype, "full", sid=nm.sid())
        pre, args = [tmp], (name, tmp.out or "")
    bad = Stmt(what, nm.fresh("bad"), args, {"op": op}, dtype,
               "row" if what == "rowred" else cls, sid=nm.sid())
    _insert_after(k, name, [*pre, bad])
    return bad.sid


KINDS = ("oob_load", "oob_store", "capacity", "capacity_a2a3", "memspace_load",
         "memspace_move", "dtype_binary", "dtype_store", "annotation", "op_dtype",
         "store_in", "fp8_cast", "mm_dtype", "mm_k", "memspace_mm", "acc_a2a3")


def uniform(draw: st.DrawFn, seq: list[str] | tuple[str, ...]) -> str:
    """An element of ``seq``, uniformly (hypothesis' small integers are skewed)."""
    return seq[draw(st.integers(0, 2**16)) % len(seq)]


@st.composite
def invalid_programs(draw: st.DrawFn) -> Program:
    """A generated program with one mutation: the kind is drawn first, then a program
    it applies to (or another kind that applies to the program drawn)."""
    kind = uniform(draw, KINDS)
    if kind == "acc_a2a3":  # an FP32 Acc over a2a3's 128 KiB, within a5's 256 KiB
        prog = draw(mm_programs(big_acc=True))
        k, s = _mm(prog)[0]
        prog.label, prog.mut_sid = kind, s.sid
        prog.expect = {"a2a3": ("CapacityError",), "a5": None}
        return prog
    if kind.startswith("mm_") or kind == "memspace_mm":
        base = mm_programs(chained=draw(st.booleans()))
    else:
        base = draw(st.sampled_from((vec_programs(), vec_programs(dynamic=True),
                                     vec_programs(chained=True), mm_programs(chained=True))))
    prog = draw(base)
    kinds = applicable(prog)
    return draw(mutate(prog, kind if kind in kinds else uniform(draw, kinds)))
