"""Independent numpy reference of the fuzzer's `Program`s (docs/design/numerics.md,
docs/design/arch.md §6).

It interprets the program description (never the simulator's code): each op widens
floats to float32 (ints to int64), computes, and rounds once to the tile dtype
(RNE / two's-complement wrap); casts run the arch's shortest chain of native hops
(the arch table's native casts, restated below), one rounding per hop.

Where the DSL leaves bits open (summation order of reductions and matmul, numpy's
transcendentals), a value also carries ``err``: a float64 bound on how far any
faithful implementation may be from the reference value, propagated through later
ops (first-order interval rules).  Values without ``err`` must match bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from fuzz_spec import CAST_MODES, Kernel, Program, Stmt, is_float

NP: dict[str, Any] = {
    "FP32": np.float32, "FP16": np.float16, "BF16": ml_dtypes.bfloat16,
    "FP8E4M3FN": ml_dtypes.float8_e4m3fn, "INT64": np.int64, "INDEX": np.int64, "INT32": np.int32,
    "INT16": np.int16, "INT8": np.int8, "UINT32": np.uint32, "UINT16": np.uint16,
    "UINT8": np.uint8,
}
# Unit roundoff 2**-p and smallest subnormal of the float dtypes.
EPS = {"FP32": 2.0**-23, "FP16": 2.0**-10, "BF16": 2.0**-7, "FP8E4M3FN": 2.0**-3}
TINY = {"FP32": 2.0**-149, "FP16": 2.0**-24, "BF16": 2.0**-133, "FP8E4M3FN": 2.0**-9}
U32 = 2.0**-24
# compare.py's default (rtol, atol) per storage dtype.
TOLERANCE = {"FP32": (1e-5, 1e-5), "FP16": (1e-3, 1e-3), "BF16": (1e-2, 1e-2)}
POISON64 = np.int64(np.frombuffer(b"\xa5" * 8, np.int64)[0])

# docs/design/arch.md §6: native single-instruction casts (from -> to).
NATIVE = {
    "a2a3": {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"),
        "BF16": ("FP32", "INT32"),
        "INT16": ("FP16", "FP32"),
        "INT32": ("FP32", "INT16", "INT64", "FP16"),
        "INT64": ("FP32", "INT32"),
        "UINT8": ("FP16",), "INT8": ("FP16",), "INT4": ("FP16",),
    },
    "a5": {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"),
        "BF16": ("FP32", "INT32", "FP16", "FP4"),
        "INT16": ("FP16", "FP32", "UINT8", "UINT32", "INT32"),
        "INT32": ("FP32", "INT16", "INT64", "UINT16", "UINT8"),
        "INT64": ("FP32", "INT32"),
        "UINT8": ("FP16", "UINT16"), "INT8": ("FP16", "INT16", "INT32"),
        "UINT32": ("UINT8", "UINT16", "INT16"),
        "FP8E4M3FN": ("FP32",), "FP8E5M2": ("FP32",), "HF8": ("FP32",), "FP4": ("BF16",),
    },
}


# docs/design/arch.md §6 (PyPTO's legalization): an intermediate never holds fewer bits than the
# destination: no int before a float destination, no float with a shorter significand or
# exponent than a float destination or than an int destination's value bits, no
# narrower or unsigned-into-signed int.  (significand, exponent) / value bits:
_FMT = {"FP32": (24, 8), "FP16": (11, 5), "BF16": (8, 8)}
_VALUE_BITS = {"INT8": 7, "INT16": 15, "INT32": 31, "INT64": 63, "UINT8": 8, "UINT16": 16,
               "UINT32": 32}


def _narrows(mid: str, dst: str) -> bool:
    if is_float(dst):
        if not is_float(mid):
            return True
        return mid in _FMT and dst in _FMT and any(m < d for m, d in zip(_FMT[mid], _FMT[dst]))
    if is_float(mid):
        return mid in _FMT and _FMT[mid][0] < _VALUE_BITS.get(dst, 0)
    unsigned_into_signed = mid.startswith("U") and not dst.startswith("U")
    return unsigned_into_signed or _VALUE_BITS.get(mid, 0) < _VALUE_BITS.get(dst, 0)


def shortest_chains(arch: str, src: str, dst: str) -> list[list[str]]:
    """Every shortest chain of native hops from ``src`` to ``dst`` (BFS by levels) whose
    intermediates do not narrow the destination."""
    graph = NATIVE[arch]
    paths, seen = [[src]], {src}
    while paths:
        done = [p + [dst] for p in paths if dst in graph.get(p[-1], ())]
        if done:
            return done
        nxt = [p + [m] for p in paths for m in graph.get(p[-1], ())
               if m not in seen and not _narrows(m, dst)]
        seen |= {p[-1] for p in nxt}
        paths = nxt
    return []


@dataclass
class Val:
    """A tile's valid region (storage dtype) and its error bound (None: bit-exact)."""

    v: np.ndarray
    dtype: str
    err: np.ndarray | None = None


def wide(x: Val) -> np.ndarray:
    return x.v.astype(np.float32) if is_float(x.dtype) else x.v.astype(np.int64)


def absf(x: Val) -> np.ndarray:
    return np.abs(x.v.astype(np.float64))


def _e(x: Val) -> np.ndarray:
    return np.zeros(x.v.shape) if x.err is None else x.err


def rounded(w: np.ndarray, dtype: str) -> np.ndarray:
    """Round float32 results once (RNE, overflow to inf) or wrap int64 results."""
    with np.errstate(all="ignore"):
        if is_float(dtype):
            return np.asarray(w, dtype=np.float32).astype(NP[dtype])
        return np.asarray(w, dtype=np.int64).astype(NP[dtype])


def finish(w: np.ndarray, dtype: str, err: np.ndarray | None, own: float = 0.0) -> Val:
    """Round ``w`` to ``dtype``; a propagated or own (ulps of float32) error also allows
    the neighbouring value of the final rounding; non-finite results become don't-care."""
    v = rounded(w, dtype)
    if err is None and own == 0.0:
        return Val(v, dtype)
    with np.errstate(all="ignore"):
        mag = np.abs(v.astype(np.float64))
        e = (0.0 if err is None else err) + own * (mag * 2 * U32 + TINY["FP32"])
        e = e + mag * 2 * EPS[dtype] + TINY[dtype] + e * 2 * EPS[dtype]
        # a result that may round past the largest finite value may be infinite
        e = np.where(np.isfinite(mag) & np.isfinite(e) & (mag + e < float(
            np.finfo(np.float32).max if dtype == "FP32" else ml_dtypes.finfo(NP[dtype]).max)),
            e, np.inf)
    return Val(v, dtype, np.asarray(e, dtype=np.float64))


def _any_err(*xs: Val) -> bool:
    return any(x.err is not None for x in xs)


# --------------------------------------------------------------------------- ops


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division (truncate toward zero); a zero divisor yields the poison pattern."""
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    q = np.where((a < 0) != (safe < 0), -q, q)
    return np.where(b == 0, POISON64, q)


def binary(op: str, a: Val, b: Val) -> Val:
    """Elementwise ``a op b`` (b may broadcast, as row_expand does)."""
    x, y = wide(a), wide(b)
    with np.errstate(all="ignore"):
        if op == "add":
            w = x + y
        elif op == "sub":
            w = x - y
        elif op == "mul":
            w = x * y
        elif op == "div":
            w = np.divide(x, y, dtype=np.float32) if is_float(a.dtype) else int_div(x, y)
        elif op == "maximum":
            w = np.maximum(x, y)
        elif op == "minimum":
            w = np.minimum(x, y)
        else:
            raise ValueError(op)
    if not _any_err(a, b):
        return finish(w, a.dtype, None)
    ea, eb, fa, fb = _e(a), _e(b), absf(a), absf(b)
    with np.errstate(all="ignore"):
        if op in ("add", "sub"):
            e = ea + eb
        elif op == "mul":
            e = fa * eb + fb * ea + ea * eb
        elif op == "div":
            room = fb - eb
            e = np.where(room > 0, (ea * fb + fa * eb) / (fb * room), np.inf)
        else:
            e = np.maximum(ea, eb)
    return finish(w, a.dtype, np.broadcast_to(e, np.shape(w)).copy())


def scalar_operand(value: float | int, dtype: str) -> Val:
    """A scalar operand, converted to the tile dtype first (docs/design/numerics.md §2)."""
    with np.errstate(all="ignore"):
        if is_float(dtype):
            v = np.asarray(np.float32(value)).astype(NP[dtype]).reshape(1, 1)
        else:
            v = np.asarray(np.int64(value)).astype(NP[dtype]).reshape(1, 1)
    return Val(v, dtype)


def _wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def _int_op(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "//":
        return a // b
    if op == "%":
        return a % b
    if op == "/":  # C: truncate toward zero
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return a << b if op == "<<" else a >> b


def scalar_value(attrs: dict[str, Any], scalars: dict[str, Any]) -> float | int:
    """A scalar operand's value: literal, parameter, ``pl.const`` (rounded to its dtype),
    or arithmetic on a parameter with literals (docs/design/language.md §19: FP32 with a float
    literal,
    INDEX (int64, wrapping) with an int literal; ``//``/``%`` floor, int ``/`` truncates)."""
    if "const" in attrs:
        with np.errstate(all="ignore"):
            v = np.asarray(attrs["value"]).astype(NP[attrs["const"]])
        return float(v) if is_float(attrs["const"]) else int(v)
    if "param" not in attrs:
        return attrs["value"]
    value = scalars[attrs["param"]]
    for op, lit in attrs.get("terms", ()):
        if isinstance(value, float):
            x, y = np.float32(value), np.float32(lit)
            with np.errstate(all="ignore"):
                value = float({"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op])
        else:
            value = _wrap64(_int_op(op, value, lit))
    return value


def unary(op: str, a: Val) -> Val:
    x = wide(a)
    own = 0.0
    with np.errstate(all="ignore"):
        if op == "abs":
            w = np.abs(x)
        elif op == "neg":
            w = -x
        elif op == "relu":
            w = np.maximum(x, np.zeros_like(x))
        elif op == "sqrt":
            w = np.sqrt(x)
        else:  # numpy's float32 transcendentals: a couple of ulps of freedom
            own = 4.0
            w = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
                 "recip": lambda t: np.float32(1.0) / t,
                 "rsqrt": lambda t: np.float32(1.0) / np.sqrt(t)}[op](x)
    if a.err is None:
        return finish(w, a.dtype, None, own)
    ea, fx = a.err, x.astype(np.float64)
    with np.errstate(all="ignore"):
        lo = fx - ea
        if op in ("abs", "neg", "relu", "sin", "cos"):
            e = ea
        elif op == "exp":
            e = np.exp(fx) * np.expm1(ea)
        elif op == "log":
            e = np.where(lo > 0, -np.log1p(-ea / fx), np.inf)
        elif op == "sqrt":
            e = np.where(lo > 0, ea / (np.sqrt(np.maximum(lo, 0)) + np.sqrt(fx)), np.inf)
        elif op == "recip":
            e = np.where(np.abs(fx) > ea, ea / (np.abs(fx) * (np.abs(fx) - ea)), np.inf)
        else:  # rsqrt: 1/sqrt over [x - e, x + e]
            e = np.where(lo > 0, 1 / np.sqrt(np.maximum(lo, 1e-300)) - 1 / np.sqrt(fx), np.inf)
    return finish(w, a.dtype, np.asarray(e, dtype=np.float64), own)


def _mode_round(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "rint":
        return np.rint(x)
    if mode == "round":  # half away from zero
        return np.copysign(np.floor(np.abs(x) + 0.5), x)
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode in ("trunc", "none"):
        return np.trunc(x)
    if mode == "odd":  # ties to odd, otherwise nearest
        lo = np.floor(x)
        tie_odd = np.where(np.mod(lo, 2) != 0, lo, lo + 1)
        return np.where(x - lo == 0.5, tie_odd, np.rint(x))
    raise ValueError(mode)


def cast_hop(x: np.ndarray, src: str, dst: str, mode: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if is_float(src) and is_float(dst):
            return x.astype(np.float32).astype(NP[dst])
        if is_float(dst):  # int -> float: one RNE rounding from the exact value
            return x.astype(np.float64).astype(NP[dst])
        if is_float(src):  # mode, NaN -> 0, saturate (the simulator's documented choice)
            r = _mode_round(x.astype(np.float64), mode)
            info = np.iinfo(NP[dst])
            r = np.clip(np.where(np.isnan(r), 0.0, r), info.min, info.max)
            return r.astype(np.int64).astype(NP[dst])
        return x.astype(np.int64).astype(NP[dst])


def cast(a: Val, dst: str, mode: Any, arch: str) -> Val:
    if isinstance(mode, int):
        mode = CAST_MODES[mode]
    results = []
    for chain in shortest_chains(arch, a.dtype, dst):
        v = a.v
        for s, d in zip(chain, chain[1:]):
            v = cast_hop(v, s, d, mode or "round")
        results.append(v)
    assert results and all(r.tobytes() == results[0].tobytes() for r in results), (
        f"generator bug: cast {a.dtype}->{dst} on {arch} has no unique chain")
    v = results[0]
    if a.err is None:
        return Val(v, dst)
    assert is_float(dst), "generator bug: float->int cast of an inexact value"
    return finish(v.astype(np.float32), dst, a.err.copy())


def _overflow(gamma: float, total: np.ndarray, largest: float | None = None) -> np.ndarray:
    """Bound of a float32 sum in any order: gamma * sum|terms|; unbounded when a partial
    sum may overflow (sum|terms| past FP32's largest value, or ``largest``)."""
    top = float(np.finfo(np.float32).max) if largest is None else largest
    return np.where(total < top, gamma * total, np.inf)


def reduce(kind: str, op: str, a: Val) -> Val:
    """row_* (axis 1, result [vr, 1]) or col_* (axis 0, result [1, vc]) reductions."""
    axis = 1 if kind == "rowred" else 0
    if not is_float(a.dtype):
        x = a.v.astype(np.int64)
        w = {"sum": np.sum, "max": np.max, "min": np.min}[op](x, axis=axis, keepdims=True)
        return finish(w, a.dtype, None)
    x = a.v.astype(np.float64)
    with np.errstate(all="ignore"):
        if op == "sum":
            n = a.v.shape[axis]
            w = np.sum(x, axis=axis, keepdims=True)
            # col_sum adds in the tile dtype, each addition rounded (the device's order,
            # docs/design/numerics.md §2: TCOLSUM's own order); the rest accumulate in float32.
            unit, top = U32, None
            if kind == "colred":
                unit, top = EPS[a.dtype] / 2, float(ml_dtypes.finfo(NP[a.dtype]).max)
            gamma = n * unit / (1 - n * unit)
            e = _overflow(gamma, np.sum(np.abs(x), axis=axis, keepdims=True), top)
            e = e + np.sum(_e(a), axis=axis, keepdims=True)
            return finish(w.astype(np.float32), a.dtype, e, 1.0)
        fn = np.max if op == "max" else np.min
        w = fn(x, axis=axis, keepdims=True).astype(np.float32)
        e = None if a.err is None else np.max(a.err, axis=axis, keepdims=True)
    return finish(w, a.dtype, e)


def matmul(a: Val, b: Val, acc_dtype: str) -> Val:
    """l @ r over the whole K: exact products, float32 (int32) accumulation."""
    if acc_dtype == "INT32":
        return Val((a.v.astype(np.int64) @ b.v.astype(np.int64)).astype(np.int32), "INT32")
    x, y = a.v.astype(np.float64), b.v.astype(np.float64)
    n = x.shape[1]
    with np.errstate(all="ignore"):
        e = _overflow((n + 1) * U32 / (1 - (n + 1) * U32), np.abs(x) @ np.abs(y))
        e = e + _e(a) @ (np.abs(y) + _e(b)) + np.abs(x) @ _e(b)
    return finish((x @ y).astype(np.float32), "FP32", e)


# ----------------------------------------------------------------------- programs


def _window(t: Val, win: tuple[slice, slice]) -> Val:
    err = None if t.err is None else t.err[win].copy()
    return Val(t.v[win].copy(), t.dtype, err if err is not None and err.any() else None)


def _block(k: Kernel, s: Stmt, env: dict[str, Val], tensors: dict[str, Val],
           scalars: dict[str, Any], win: tuple[slice, slice], arch: str) -> None:
    a = s.attrs
    if s.kind == "load":
        env[s.out] = _window(tensors[s.args[0]], win)
    elif s.kind == "mm":
        rows, cols = win
        env[s.out] = matmul(_window(tensors[s.args[0]], (rows, slice(None))),
                            _window(tensors[s.args[1]], (slice(None), cols)), s.dtype)
    elif s.kind in ("binary", "rowexp"):
        env[s.out] = binary(a["op"], env[s.args[0]], env[s.args[1]])
    elif s.kind == "scalar":
        lhs = env[s.args[0]]
        env[s.out] = binary(a["op"], lhs, scalar_operand(scalar_value(a, scalars), lhs.dtype))
    elif s.kind == "full":
        rows, cols = win
        shape = (rows.stop - rows.start, cols.stop - cols.start)
        const = scalar_operand(a["value"], s.dtype)
        env[s.out] = Val(np.broadcast_to(const.v, shape).copy(), s.dtype)
    elif s.kind == "unary":
        env[s.out] = unary(a["op"], env[s.args[0]])
    elif s.kind == "cast":
        env[s.out] = cast(env[s.args[0]], s.dtype, a.get("mode"), arch)
    elif s.kind == "fp8":
        x = env[s.args[0]]
        assert x.err is None, "generator bug: FP8 round trip of an inexact value"
        env[s.out] = Val(x.v.astype(ml_dtypes.float8_e4m3fn).astype(NP[s.dtype]), s.dtype)
    elif s.kind in ("rowred", "colred"):
        env[s.out] = reduce(s.kind, a["op"], env[s.args[0]])
    elif s.kind == "move":
        env[s.out] = env[s.args[0]]
    elif s.kind == "cond":
        value, const = scalars[a["var"]], a["const"]
        taken = {"<": value < const, ">=": value >= const, "==": value == const,
                 "!=": value != const}[a["cmp"]]
        _block(k, a["arms"][0 if taken else 1], env, tensors, scalars, win, arch)
    elif s.kind == "store":
        _store(k, s, env[s.args[0]], tensors[s.args[1]], win)
    # tmp / big: scratch, no value


def _store(k: Kernel, s: Stmt, val: Val, dst: Val, win: tuple[slice, slice]) -> None:
    rows, cols = win
    bi, bj = rows.start // k.tr, cols.start // k.tc
    if s.attrs["cls"] == "row":
        win = (rows, slice(bj, bj + 1))
    elif s.attrs["cls"] == "col":
        win = (slice(bi, bi + 1), cols)
    if val.dtype != dst.dtype:  # an Acc result stored into a narrower float tensor
        val = finish(val.v.astype(np.float32), dst.dtype, val.err)
    dst.v[win] = val.v
    if val.err is not None:
        if dst.err is None:
            dst.err = np.zeros(dst.v.shape)
        dst.err[win] = val.err


def run_kernel(k: Kernel, tensors: dict[str, Val], scalars: dict[str, Any], arch: str) -> None:
    """Run ``k`` block by block over the valid part of each block."""
    rows = k.rows
    if not isinstance(rows, int):
        rows = next(tensors[p.name].v.shape[0] for p in k.params if p.rows == k.rows)
    whole = (slice(0, 1), slice(0, k.cols))  # carried values are [1, cols] rows
    carried: dict[str, Val] = {}
    for s in k.pre:
        _block(k, s, carried, tensors, scalars, whole, arch)
    for r0 in range(0, rows, k.tr):
        for c0 in range(0, k.cols, k.tc):
            win = (slice(r0, min(r0 + k.tr, rows)), slice(c0, min(c0 + k.tc, k.cols)))
            env = dict(carried)
            loop_vars = {**scalars, "r": r0, "c": c0}
            for s in k.body:
                _block(k, s, env, tensors, loop_vars, win, arch)
            carried = {name: env[name] for name in carried}
    for s in k.post:
        _block(k, s, carried, tensors, scalars, whole, arch)


def poison(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """docs/design/numerics.md §6: NaN for floats, every byte 0xA5 for ints."""
    if is_float(dtype):
        return np.full(shape, np.nan, np.float32).astype(NP[dtype])
    return np.full(shape, POISON64).astype(NP[dtype])


def run_program(prog: Program, arrays: dict[str, Any], arch: str) -> dict[str, Val]:
    """Reference results of every Out/InOut entry tensor."""
    tensors: dict[str, Val] = {}
    scalars: dict[str, Any] = {}
    for p in prog.entry:
        if p.kind == "scalar":  # staged: rounded (floats) to the declared dtype
            value = np.asarray(arrays[p.name]).astype(NP[p.dtype])
            scalars[p.name] = float(value) if is_float(p.dtype) else int(value)
        elif p.direction == "Out":
            tensors[p.name] = Val(poison(arrays[p.name].shape, p.dtype), p.dtype)
        else:
            tensors[p.name] = Val(np.array(arrays[p.name]), p.dtype)
    for t in prog.temps:
        rows = prog.dyn.get(t.rows, t.rows) if isinstance(t.rows, str) else t.rows
        tensors[t.name] = Val(poison((rows, t.cols), t.dtype), t.dtype)
    for call in prog.calls:
        k = prog.kernel(call.kernel)
        bound = {p.name: tensors.get(a) for p, a in zip(k.params, call.args) if a in tensors}
        sc = {p.name: scalars[a] for p, a in zip(k.params, call.args) if a in scalars}
        for i in range(call.reps):
            run_kernel(k, bound, {**sc, **{p: i + c for p, c in call.steps.items()}}, arch)
    return {p.name: tensors[p.name] for p in prog.entry
            if p.kind == "tensor" and p.direction != "In"}


def mismatch(got: np.ndarray, want: Val) -> str | None:
    """None when ``got`` matches ``want``; else a short description of the worst elements.

    Exact values (no error bound) must be equal (NaN where NaN); others may differ by
    their bound plus compare.py's default tolerance of the dtype; an infinite or NaN
    bound is a don't-care.
    """
    if got.shape != want.v.shape:
        return f"shape {got.shape} != {want.v.shape}"
    if not is_float(want.dtype):
        bad = got.astype(np.int64) != want.v.astype(np.int64)
    else:
        g, w = got.astype(np.float64), want.v.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        if want.err is None:
            bad = ~same
        else:
            rtol, atol = TOLERANCE[want.dtype]
            with np.errstate(all="ignore"):
                near = np.abs(g - w) <= want.err + atol + rtol * np.abs(w)
            bad = ~(same | near | ~np.isfinite(want.err))
    if not bad.any():
        return None
    idx = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:4]]
    err = want.err
    parts = [f"{ix}: got {got[ix]!r} want {want.v[ix]!r}"
             + ("" if err is None else f" (bound {err[ix]:.3g})") for ix in idx]
    return f"{int(bad.sum())}/{bad.size} elements differ: " + "; ".join(parts)
