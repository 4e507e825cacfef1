"""The fuzzer's program description and its printer (DSL source text with line numbers).

A `Program` is what the hypothesis strategies of `fuzz_gen` build, what `fuzz_ref`
interprets with numpy and what `render` prints as a module holding one `@pl.program`
class.  Every kernel is a grid: ``for r`` over row blocks of ``tr`` rows and ``for c``
over column blocks of ``tc`` columns (a loop is left out when it has one trip); its
body is a list of SSA `Stmt`s run once per block.  Nothing here imports the toolchain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FLOATS = ("FP32", "FP16", "BF16")
INTS = ("INT32", "INT16", "INT8")
DTYPES = FLOATS + INTS
BYTES = {"FP32": 4, "FP16": 2, "BF16": 2, "INT32": 4, "INT16": 2, "INT8": 1, "FP8E4M3FN": 1}
CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")  # codes 0..6


def is_float(dtype: str) -> bool:
    return dtype in FLOATS or dtype.startswith("FP")


@dataclass
class Param:
    """A kernel or entry parameter: a tensor ``[rows, cols]`` (rows may be a dynamic
    dim's name) or a scalar."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str
    rows: int | str = 0
    cols: int = 0
    direction: str = "In"  # In | Out | InOut
    value: float | int | None = None  # an entry scalar's run-time value
    step: int | None = None  # a kernel scalar bound to the orchestration's ``i + step``
    approx: bool = False  # a temporary holding inexact values

    def annotation(self) -> str:
        if self.kind == "scalar":
            return f"pl.Scalar[pl.{self.dtype}]"
        ann = f"pl.Tensor[[{self.rows}, {self.cols}], pl.{self.dtype}]"
        return ann if self.direction == "In" else f"pl.{self.direction}[{ann}]"


@dataclass
class Stmt:
    """One statement of a kernel body.

    kind: load | binary | scalar | unary | cast | tmp | full (a constant tile) | rowred |
    colred | rowexp | mm (the matmul chain over K) | move | fp8 | big (a capacity
    filler) | cond (``if``/``else`` over a loop variable or scalar; ``attrs["arms"]`` are
    two statements defining ``out``) | store.
    ``cls`` is the result's shape class: "full" [tr, tc], "row" [tr, 1], "col" [1, tc].
    ``approx`` marks values whose bits the DSL does not pin down (reductions, matmul,
    transcendentals) and everything computed from them.
    """

    kind: str
    out: str | None
    args: tuple[str, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    dtype: str = ""
    cls: str = "full"
    approx: bool = False
    sid: int = 0


@dataclass
class Kernel:
    """An InCore function over a ``rows x cols`` grid of ``tr x tc`` blocks."""

    name: str
    params: list[Param]
    rows: int | str
    cols: int
    tr: int
    tc: int
    body: list[Stmt]
    loop: str = "range"  # range | parallel | pipeline | unroll
    dyn_rows: int = 0  # run-time value of a dynamic ``rows``
    pre: list[Stmt] = field(default_factory=list)  # before the loops (carried values' inits)
    post: list[Stmt] = field(default_factory=list)  # after the loops (their stores)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "tensor" and p.direction != "In"]


@dataclass
class Call:
    """``results = self.kernel(args)``; with ``reps`` > 1 inside an orchestration loop
    ``for i in pl.range(0, reps)``, and ``steps`` maps a kernel scalar to the offset
    ``c`` of the argument ``i + c`` it receives."""

    kernel: str
    args: list[str]
    results: list[str]
    reps: int = 1
    steps: dict[str, int] = field(default_factory=dict)


@dataclass
class Program:
    """A whole generated program: kernels, the entry's signature and its calls.

    ``expect`` maps an arch ('a2a3', 'a5') to None (must run and match the reference)
    or to the tuple of error class names one of which must be raised, at the line of
    statement ``mut_sid``.
    """

    kernels: list[Kernel]
    entry: list[Param]
    temps: list[Param]
    calls: list[Call]
    scalars: dict[str, float | int]
    dyn: dict[str, int]  # dynamic dim name -> run-time value
    data_seed: int
    label: str = "valid"
    expect: dict[str, tuple[str, ...] | None] = field(
        default_factory=lambda: {"a2a3": None, "a5": None})
    mut_sid: int | None = None
    name: str = "FuzzProgram"
    batch_loops: bool = True  # PYPTO_BATCH_LOOPS at compile time (the batched loop path)
    numpy_scalars: bool = False  # pass scalars as numpy scalars of their dtype

    def kernel(self, name: str) -> Kernel:
        return next(k for k in self.kernels if k.name == name)

    def stmt(self, sid: int) -> Stmt:
        return next(s for k in self.kernels for s in k.body if s.sid == sid)


# ------------------------------------------------------------------------- printing


def fnum(v: float | int) -> str:
    """A literal the parser reads back as exactly ``v`` (floats keep a decimal point)."""
    if isinstance(v, float):
        text = repr(v)
        return text if any(ch in text for ch in ".einf") else text + ".0"
    return str(v)


def _off(var: str | None, extra: str) -> str:
    base = var or "0"
    return f"{base}{extra}" if extra else base


def _valid(k: Kernel, axis: int) -> str:
    """The valid extent of a block along ``axis`` (0 rows, 1 cols): a literal when every
    block is whole, else ``pl.min(tile, extent - offset)``."""
    tile, extent, var = (k.tr, k.rows, "r") if axis == 0 else (k.tc, k.cols, "c")
    if isinstance(extent, int) and extent % tile == 0:
        return str(tile)
    return f"pl.min({tile}, {extent} - {var if loops(k)[axis] else 0})"


def loops(k: Kernel) -> tuple[bool, bool]:
    """Whether the row / column loop exists (more than one block, or a dynamic dim)."""
    rows_loop = not isinstance(k.rows, int) or k.rows > k.tr
    return rows_loop, k.cols > k.tc


def _iter(k: Kernel, extent: int | str, step: int) -> str:
    kind = k.loop
    if kind == "unroll" and not isinstance(extent, int):
        kind = "range"
    if kind == "pipeline":
        return f"pl.pipeline(0, {extent}, {step}, stage=2)"
    return f"pl.{kind}(0, {extent}, {step})"


def _expr(k: Kernel, s: Stmt) -> str:
    """The right-hand side of a one-line statement."""
    a = s.attrs
    rv, cv = ("r" if loops(k)[0] else None), ("c" if loops(k)[1] else None)
    if s.kind == "load":
        offs = f"[{_off(rv, a.get('row_extra', ''))}, {_off(cv, a.get('col_extra', ''))}]"
        text = f"pl.load({s.args[0]}, {offs}, [{k.tr}, {k.tc}]"
        if a.get("valid", True):
            text += f", {a.get('valid_kw', 'valid_shapes')}=[{_valid(k, 0)}, {_valid(k, 1)}]"
        if a.get("target"):
            text += f", target_memory=pl.Mem.{a['target']}"
        return text + ")"
    if s.kind == "binary":
        return f"{a.get('ns', 'pl.')}{a['op']}({s.args[0]}, {s.args[1]})"
    if s.kind == "scalar":
        name = a["op"] + "s" if a.get("explicit") else a["op"]
        return f"pl.{name}({s.args[0]}, {a['operand']})"
    if s.kind == "unary":
        return f"{a.get('ns', 'pl.')}{a['op']}({s.args[0]})"
    if s.kind == "cast":
        text = f"pl.cast({s.args[0]}, pl.{s.dtype}"
        if a.get("mode") is not None:
            mode = a["mode"]
            text += f", mode={mode!r}" if isinstance(mode, str) else f", mode={mode}"
        return text + ")"
    if s.kind == "fp8":
        return f"pl.cast(pl.cast({s.args[0]}, pl.FP8E4M3FN), pl.{s.dtype})"
    if s.kind == "tmp":
        return f"pl.create_tile([{k.tr}, {k.tc}], pl.{s.dtype})"
    if s.kind == "full":
        rows, cols = tile_shape(k, s.cls)
        return f"pl.tile.full([{rows}, {cols}], pl.{s.dtype}, {a['operand']})"
    if s.kind in ("rowred", "colred"):
        return f"pl.{'row' if s.kind == 'rowred' else 'col'}_{a['op']}({', '.join(s.args)})"
    if s.kind == "rowexp":
        return f"pl.row_expand_{a['op']}({s.args[0]}, {s.args[1]})"
    if s.kind == "move":
        return f"pl.move({s.args[0]}, target_memory=pl.Mem.{a['target']})"
    if s.kind == "big":
        rows, cols = a["shape"]
        # two tiles live together (a result may reuse a dying operand's buffer)
        full = f"pl.tile.full([{rows}, {cols}], pl.{s.dtype}, {{}})"
        return f"pl.add({full.format(0.0)}, {full.format(1.0)})"
    if s.kind == "store" and a.get("outside"):  # after the loops: the whole [1, cols] row
        return f"pl.store({s.args[0]}, [0, 0], {s.args[1]})"
    if s.kind == "store":
        cls = a["cls"]
        r_off = f"r // {k.tr}" if cls == "col" and rv else ("0" if cls == "col" else rv or "0")
        c_off = f"c // {k.tc}" if cls == "row" and cv else ("0" if cls == "row" else cv or "0")
        r_off, c_off = _off(r_off, a.get("row_extra", "")), _off(c_off, a.get("col_extra", ""))
        return f"pl.store({s.args[0]}, [{r_off}, {c_off}], {s.args[1]})"
    raise ValueError(f"no printer for {s.kind}")


def _mm_lines(k: Kernel, s: Stmt) -> list[tuple[str, str]]:
    """The matmul chain over K as (part, line) pairs: Mat loads, moves, matmul(_acc).
    Ragged M, N or K blocks load with valid shapes (the product covers them)."""
    a = s.attrs
    rv, cv = ("r" if loops(k)[0] else "0"), ("c" if loops(k)[1] else "0")
    tk, kk = a["tk"], a["k"]
    b_rows = a.get("b_rows", tk)
    lhs, rhs, acc = s.args[0], s.args[1], s.out
    vm, vn = _valid(k, 0), _valid(k, 1)

    def vk(off: str) -> str:
        return str(tk) if kk % tk == 0 else f"pl.min({tk}, {kk} - {off})"

    def load(name: str, src: str, offs: str, shape: str, valid: str, space: str) -> str:
        ragged = valid != shape
        text = f"{name} = pl.load({src}, {offs}, {shape}"
        return text + (f", valid_shapes={valid}" if ragged else "") + \
            f", target_memory=pl.Mem.{space})"

    left, right = "pl.Mem.Left", "pl.Mem.Right"
    lines = [
        ("a_load", load(f"{acc}_a", lhs, f"[{rv}, 0]", f"[{k.tr}, {tk}]", f"[{vm}, {vk('0')}]",
                        a.get("a_target", "Mat"))),
        ("b_load", load(f"{acc}_b", rhs, f"[0, {cv}]", f"[{b_rows}, {k.tc}]",
                        f"[{vk('0') if b_rows == tk else b_rows}, {vn}]", "Mat")),
    ]
    if a.get("split_moves"):
        lines += [("a_move", f"{acc}_l = pl.move({acc}_a, target_memory={left})"),
                  ("b_move", f"{acc}_r = pl.move({acc}_b, target_memory={right})"),
                  ("matmul", f"{acc} = pl.matmul({acc}_l, {acc}_r)")]
    else:
        lines.append(("matmul", f"{acc} = pl.matmul(pl.move({acc}_a, target_memory={left}), "
                                f"pl.move({acc}_b, target_memory={right}))"))
    if kk > tk:
        lines += [
            ("k_loop", f"for kk in pl.range({tk}, {kk}, {tk}):"),
            ("ak", "    " + load(f"{acc}_ak", lhs, f"[{rv}, kk]", f"[{k.tr}, {tk}]",
                                 f"[{vm}, {vk('kk')}]", "Mat")),
            ("bk", "    " + load(f"{acc}_bk", rhs, f"[kk, {cv}]", f"[{tk}, {k.tc}]",
                                 f"[{vk('kk')}, {vn}]", "Mat")),
            ("acc", f"    {acc} = pl.matmul_acc({acc}, pl.move({acc}_ak, target_memory={left}), "
                    f"pl.move({acc}_bk, target_memory={right}))"),
        ]
    return lines


def _signature(name: str, params: list[Param], ftype: str) -> list[str]:
    outs = [p for p in params if p.kind == "tensor" and p.direction != "In"]
    rets = [f"pl.Tensor[[{p.rows}, {p.cols}], pl.{p.dtype}]" for p in outs]
    ret = rets[0] if len(rets) == 1 else f"tuple[{', '.join(rets)}]"
    args = ", ".join(f"{p.name}: {p.annotation()}" for p in params)
    return [f"    @pl.function(type=pl.FunctionType.{ftype})",
            f"    def {name}(self, {args}) -> {ret}:"]


def _stmt_lines(k: Kernel, s: Stmt, ind: str, out: list[str], lines: dict[int, int]) -> None:
    """Print one statement (several lines for the matmul chain and ``if``/``else``)."""
    if s.kind == "mm":
        focus = s.attrs.get("focus", "matmul")
        for part, text in _mm_lines(k, s):
            out.append(ind + text)
            if part == focus:
                lines[s.sid] = len(out)
        return
    if s.kind == "cond":
        a = s.attrs
        out.append(f"{ind}if {a['var']} {a['cmp']} {a['const']}:")
        lines[s.sid] = len(out)
        for i, arm in enumerate(a["arms"]):
            if i:
                out.append(f"{ind}else:")
            expr = _expr(k, arm)
            out.append(f"{ind}    {s.out} = " + (f"pl.yield_({expr})" if a["yield"] else expr))
        return
    target = s.args[1] if s.kind == "store" else s.out or ""
    if s.attrs.get("ann"):
        target += f": {s.attrs['ann']}"
    out.append(f"{ind}{target} = {_expr(k, s)}")
    lines[s.sid] = len(out)


def render(prog: Program) -> tuple[str, dict[int, int]]:
    """The module source of ``prog`` and the 1-based line of every statement id."""
    out = ["# Generated by ut/fuzz (pytest-pypto's random program generator).",
           "import pytest_pypto.language as pl", ""]
    for name in prog.dyn:
        out.append(f'{name} = pl.dynamic("{name}")')
    out += ["", "", "@pl.program", f"class {prog.name}:"]
    lines: dict[int, int] = {}
    for k in prog.kernels:
        out += _signature(k.name, k.params, "InCore")
        for s in k.pre:
            _stmt_lines(k, s, " " * 8, out, lines)
        rows_loop, cols_loop = loops(k)
        ind = " " * 8
        if rows_loop:
            out.append(f"{ind}for r in {_iter(k, k.rows, k.tr)}:")
            ind += "    "
        if cols_loop:
            out.append(f"{ind}for c in {_iter(k, k.cols, k.tc)}:")
            ind += "    "
        for s in k.body:
            _stmt_lines(k, s, ind, out, lines)
        for s in k.post:
            _stmt_lines(k, s, " " * 8, out, lines)
        rets = ", ".join(p.name for p in k.outputs)
        out += [f"        return {rets}", ""]
    out += _signature("main", prog.entry, "Orchestration")
    for t in prog.temps:
        out.append(f"        {t.name} = pl.create_tensor([{t.rows}, {t.cols}], pl.{t.dtype})")
    for call in prog.calls:
        ind = " " * 8
        if call.reps > 1 or call.steps:
            out.append(f"{ind}for i in pl.range(0, {call.reps}):")
            ind += "    "
        params = [p.name for p in prog.kernel(call.kernel).params]
        args = [f"i + {call.steps[p]}" if p in call.steps else a for p, a in zip(params, call.args)]
        out.append(f"{ind}{', '.join(call.results)} = self.{call.kernel}({', '.join(args)})")
    outs = [p.name for p in prog.entry if p.kind == "tensor" and p.direction != "In"]
    out.append(f"        return {', '.join(outs)}")
    return "\n".join(out) + "\n", lines


def tile_shape(k: Kernel, cls: str) -> tuple[int, int]:
    """Physical shape of a tile of class ``cls`` in kernel ``k``."""
    return {"full": (k.tr, k.tc), "row": (k.tr, 1), "col": (1, k.tc)}[cls]
