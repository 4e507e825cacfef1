"""The fuzz property: write a generated program, import it, compile and run it on both
sim platforms, and hold it to the reference or to its designed error.

`check_program` raises AssertionError (a mismatch, a wrong or missing error, a
modified input), `FuzzTimeout` (a hang), or lets any other exception through; each
is a failure that hypothesis shrinks.  The generated source is attached to the
failing example with `hypothesis.note`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_ref import NP, mismatch, run_program
from fuzz_spec import Program, is_float, render
from hypothesis import currently_in_test_context, note

import pytest_pypto
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import PyptoError

PLATFORMS = (("a2a3", "a2a3sim"), ("a5", "a5sim"))
TIMEOUT_S = 30.0  # per program, both platforms
BATCH_ENV = "PYPTO_BATCH_LOOPS"
WORKDIR = Path(tempfile.mkdtemp(prefix="pypto-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


class FuzzTimeout(Exception):
    """A generated program did not finish within TIMEOUT_S."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise FuzzTimeout in this thread after ``seconds`` (main thread only: SIGALRM)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise FuzzTimeout(f"no result after {seconds:.0f} s (a hang)")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def batch_loops(on: bool) -> Iterator[None]:
    """Compile with the batched loop path on or off (README: PYPTO_BATCH_LOOPS)."""
    old = os.environ.get(BATCH_ENV)
    os.environ[BATCH_ENV] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(BATCH_ENV, None)
        else:
            os.environ[BATCH_ENV] = old


# --------------------------------------------------------------------------- data


def _floats(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
            specials: bool) -> np.ndarray:
    x = rng.standard_normal(shape) * rng.choice([1.0, 4.0, 50.0])
    if rng.random() < 0.3:
        x = np.round(x * 2) / 2  # exact halves: the ties of every cast mode
    x = np.clip(x, -300.0, 300.0)  # inside FP8E4M3FN's range
    if specials and x.size and rng.random() < 0.2:
        flat = x.reshape(-1)
        idx = rng.integers(0, flat.size, size=max(1, flat.size // 50))
        flat[idx] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], size=idx.size)
    with np.errstate(all="ignore"):
        return x.astype(np.float32).astype(NP[dtype])


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    info = np.iinfo(NP[dtype])
    lo, hi = [(-3, 3), (-100, 100), (int(info.min), int(info.max))][rng.integers(0, 3)]
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(NP[dtype])


def make_arrays(prog: Program) -> dict[str, Any]:
    """Entry arguments by name: random In/InOut contents, garbage in Out arrays."""
    rng = np.random.default_rng(prog.data_seed)
    specials = prog.label != "fp8_cast"
    out: dict[str, Any] = {}
    for p in prog.entry:
        if p.kind == "scalar":
            value = prog.scalars[p.name]
            # A Python float bound to a Scalar[FP16/BF16] is rounded to it by staging
            # (was a toolchain bug: it reached the kernel unrounded); both forms go in.
            out[p.name] = NP[p.dtype](value) if prog.numpy_scalars else value
            continue
        rows = prog.dyn[p.rows] if isinstance(p.rows, str) else p.rows
        shape = (rows, p.cols)
        if is_float(p.dtype):
            out[p.name] = _floats(rng, shape, p.dtype, specials)
        else:
            out[p.name] = _ints(rng, shape, p.dtype)
    return out


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


# ------------------------------------------------------------------------- running


def _import(path: Path) -> Any:
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _designed(exc: PyptoError, want: tuple[str, ...] | None, path: Path, line: int | None,
              where: str) -> None:
    """``exc`` must be one of the expected classes and point at the mutated line."""
    names = {c.__name__ for c in type(exc).__mro__}
    head = f"{where}: {type(exc).__name__} at {exc.file}:{exc.line}: {exc.message}"
    assert want is not None, f"{head}\n(the program is valid: it must compile and run)"
    assert names & set(want), f"{head}\n(expected one of {want})"
    assert exc.file is not None and Path(exc.file).resolve() == path.resolve(), (
        f"{head}\n(expected the generated file {path})")
    assert exc.line == line, f"{head}\n(expected line {line})"


def _discard(compiled: Any) -> None:
    """Remove an artifact's directory if it was written (an in-memory artifact is only
    written when something calls ``artifact_dir()``: calling it here would write it)."""
    memory = getattr(compiled, "memory", None)
    if compiled is not None and (memory is None or memory.on_disk):
        shutil.rmtree(compiled.artifact_dir(), ignore_errors=True)


def _run_one(program: Any, prog: Program, arrays: dict[str, Any], arch: str,
             platform: str, path: Path, line: int | None) -> None:
    want = prog.expect[arch]
    args = []
    ins: dict[str, tuple[np.ndarray, str]] = {}
    for p in prog.entry:
        value = arrays[p.name]
        if p.kind == "tensor":
            value = value.copy()
            if p.direction == "In":
                ins[p.name] = (value, _digest(value))
            elif p.direction == "Out":
                value[...] = np.asarray(arrays[p.name])[::-1, ::-1]  # garbage, not poison
        args.append(value)
    config = RunConfig(platform=platform)
    compiled = None
    try:
        with batch_loops(prog.batch_loops):
            compiled = pytest_pypto.compile(program, config)
        pytest_pypto.run(compiled, *args, config=config)
    except PyptoError as exc:
        _designed(exc, want, path, line, platform)
        return
    finally:
        _discard(compiled)
    assert want is None, (f"{platform}: ran, but {prog.label} must raise one of {want} "
                          f"at line {line}")
    for name, (value, digest) in ins.items():
        assert _digest(value) == digest, f"{platform}: In array {name!r} was modified"
    ref = run_program(prog, arrays, arch)
    got = {p.name: a for p, a in zip(prog.entry, args) if p.kind == "tensor"}
    for name, want_val in ref.items():
        bad = mismatch(got[name], want_val)
        assert bad is None, f"{platform}: output {name!r} differs from the reference: {bad}"


def check_program(prog: Program) -> None:
    """The property of one generated program (module docstring)."""
    src, lines = render(prog)
    if currently_in_test_context():
        note(f"program ({prog.label}; expect {prog.expect}):\n{src}")
    path = WORKDIR / f"fz_{hashlib.sha1(src.encode()).hexdigest()[:16]}.py"
    path.write_text(src)
    line = lines.get(prog.mut_sid) if prog.mut_sid is not None else None
    arrays = make_arrays(prog)
    with time_limit(TIMEOUT_S), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            try:
                program = getattr(_import(path), prog.name)
            except PyptoError as exc:
                for arch, platform in PLATFORMS:
                    _designed(exc, prog.expect[arch], path, line, f"parse ({platform})")
                return
            for arch, platform in PLATFORMS:
                _run_one(program, prog, arrays, arch, platform, path, line)
        finally:
            sys.modules.pop(path.stem, None)
