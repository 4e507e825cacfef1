# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""A file always collects: a module-level program that fails to parse raises when used,
and `@pl.jit` functions are specialised when called, never run as plain Python."""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import numpy as np
import pytest

import pytest_pypto

# Loaded before the in-process pytester run below, which drops the modules it imported
# (a second copy of the IR classes would break isinstance checks).
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.language as pl
import pytest_pypto.runtime.worker  # noqa: F401
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.cases import DataType, PTOTestCase, TensorSpec
from pytest_pypto.harness.runner import Runner
from pytest_pypto.ir.errors import (
    InvalidOperationError,
    ParserSyntaxError,
    PyptoError,
)
from pytest_pypto.ir.printer import print_program
from pytest_pypto.language.deferred import DeferredProgram

A2 = RunConfig(platform="a2a3sim")

# The same broken program twice: at module level (deferred) and inside build()
# (raised at decoration): their errors must agree but for the line.
TEMPLATE = '''\
import pytest_pypto.language as pl


@pl.program
class Broken:
    @pl.function(type=pl.FunctionType.InCore{kw})
    def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
        {stmt}


def build():
    @pl.program
    class Broken:
        @pl.function(type=pl.FunctionType.InCore{kw})
        def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
            {stmt}

    return Broken
'''

# (id, decorator keywords, body statement, the text that is reported, error type)
CONSTRUCTS = [
    ("not-yet-built", "", "with pl.at(level=pl.Level.CORE_GROUP): pass", "pl.at(",
     InvalidOperationError),
    ("unknown-op", "", "t = pl.no_such_op(x)", "pl.no_such_op(", InvalidOperationError),
    ("bad-keyword", ", bogus=1", "pass", "bogus=1", InvalidOperationError),
    ("python-del", "", "del x", "del x", ParserSyntaxError),
]


def _import(path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import ``path`` as a fresh module (registered while the test runs, as an import does)."""
    name = f"_pypto_deferred_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _where(path: Path, text: str) -> int:
    """The first line of ``path`` containing ``text`` (the module-level program's)."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _write(tmp_path: Path, kw: str, stmt: str) -> Path:
    path = tmp_path / "kernels_mod.py"
    path.write_text(TEMPLATE.format(kw=kw, stmt=stmt))
    return path


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path, int]:
    """The module with `with pl.at(...)` at module level: (module, its file, the line)."""
    path = _write(tmp_path, "", "with pl.at(level=pl.Level.CORE_GROUP): pass")
    return _import(path, monkeypatch), path, _where(path, "pl.at(")


def _our_decoration_frames(exc: BaseException) -> list[str]:
    """Frames of the parser or of `@pl.program` in ``exc``'s traceback (stale ones)."""
    language = Path(pl.__file__).parent
    return [
        f"{frame.filename}:{frame.lineno}"
        for frame in traceback.extract_tb(exc.__traceback__)
        if Path(frame.filename).parent == language and Path(frame.filename).name != "deferred.py"
    ]


@pytest.mark.parametrize(
    ("kw", "stmt", "reported", "error"),
    [c[1:] for c in CONSTRUCTS],
    ids=[c[0] for c in CONSTRUCTS],
)
def test_module_imports_and_compiling_raises_the_decoration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kw: str, stmt: str, reported: str,
    error: type[PyptoError],
) -> None:
    path = _write(tmp_path, kw, stmt)
    module = _import(path, monkeypatch)  # imports: the error is deferred
    assert isinstance(module.Broken, DeferredProgram)
    assert repr(module.Broken).startswith("<pl.program Broken: failed to parse")
    with pytest.raises(error) as compiled:
        pytest_pypto.compile(module.Broken, config=A2)
    exc = compiled.value
    line = _where(path, reported)
    assert (exc.file, exc.line) == (str(path), line)
    assert f"--> {path}:{line}:" in str(exc)
    assert f"{line} | " in str(exc) and reported in str(exc)  # the snippet of the user's line
    with pytest.raises(PyptoError) as immediate:  # the same program inside a function
        module.build()
    here = immediate.value
    assert type(exc) is type(here) is error
    assert (exc.message, exc.hint, exc.notes) == (here.message, here.hint, here.notes)
    assert here.line != line and here.file == str(path)
    assert _our_decoration_frames(exc) == []  # no stale parser frames in the traceback


CONSUMERS: dict[str, Callable[[Any, Path], Any]] = {
    "compile": lambda p, tmp: pytest_pypto.compile(p, config=A2),
    "run": lambda p, tmp: pytest_pypto.run(p, np.zeros((16, 64), np.float32), config=A2),
    "cache_key": lambda p, tmp: cache_key(p, A2),
    "cache compile": lambda p, tmp: CompileCache(tmp / "cache").compile(p, A2),
    "uncached compile": lambda p, tmp: CompileCache(None).compile(p, A2),
    "print_program": lambda p, tmp: print_program(p),
    "functions": lambda p, tmp: p.functions,
    "name": lambda p, tmp: p.name,
}


@pytest.mark.parametrize("use", list(CONSUMERS.values()), ids=list(CONSUMERS))
def test_every_consumer_raises_the_parse_error(
    broken: tuple[ModuleType, Path, int], tmp_path: Path, use: Callable[[Any, Path], Any]
) -> None:
    module, path, line = broken
    with pytest.raises(InvalidOperationError, match="pl.at is not supported") as info:
        use(module.Broken, tmp_path)
    assert (info.value.file, info.value.line) == (str(path), line)
    assert _our_decoration_frames(info.value) == []
    assert not (tmp_path / "cache").exists() or not any(
        p.name != ".locks" for p in (tmp_path / "cache").iterdir()
    )  # nothing was published for a program that is not there


def test_each_use_raises_a_fresh_error(broken: tuple[ModuleType, Path, int]) -> None:
    """The harness appends notes to what it catches; a second cell must not see them."""
    module, _, _ = broken
    with pytest.raises(InvalidOperationError) as first:
        pytest_pypto.compile(module.Broken, config=A2)
    first.value.notes = (*first.value.notes, "platform: a2a3sim")
    with pytest.raises(InvalidOperationError) as second:
        pytest_pypto.compile(module.Broken, config=RunConfig(platform="a5sim"))
    assert second.value is not first.value
    assert "platform: a2a3sim" not in second.value.notes
    assert second.value.message == first.value.message


def test_private_attributes_stay_inert(broken: tuple[ModuleType, Path, int]) -> None:
    """pytest's collection and copy probe private names: those must not raise the error."""
    module, _, _ = broken
    assert getattr(module.Broken, "_pytestfixturefunction", None) is None
    assert not hasattr(module.Broken, "__wrapped__")
    assert module.Broken.class_name == "Broken"


def _case(program: Any) -> PTOTestCase:
    class Case(PTOTestCase):
        def get_program(self) -> Any:
            return program

        def define_tensors(self) -> list[TensorSpec]:
            return [TensorSpec("x", [16, 64], DataType.FP32, init_value=1.0, is_output=True)]

        def compute_expected(self, tensors: dict[str, Any], params: Any = None) -> None:
            pass

    return Case()


@pytest.mark.parametrize("cache", ["cached", "uncached"])
def test_runner_reports_a_compile_error(
    broken: tuple[ModuleType, Path, int], tmp_path: Path, cache: str
) -> None:
    module, path, line = broken
    store = CompileCache(tmp_path / "cache" if cache == "cached" else None)
    runner = Runner(A2, rng_factory=lambda: np.random.default_rng(0), cache=store,
                    context=("platform: a2a3sim",))
    with pytest.raises(InvalidOperationError) as ran:
        runner.run(module.Broken, np.zeros((16, 64), np.float32))
    assert ran.value.failure_class == "compile-error"
    with pytest.raises(InvalidOperationError) as checked:
        runner.check(_case(module.Broken))
    assert checked.value.failure_class == "compile-error"
    assert checked.value.line == line and "platform: a2a3sim" in checked.value.notes
    result = runner.run_case(_case(module.Broken))
    assert not result.passed and result.failure_class == "compile-error"
    assert f"{path}:{line}:" in result.error


def test_program_inside_a_function_raises_at_decoration(line_of: Callable[[str], int]) -> None:
    with pytest.raises(InvalidOperationError, match="pl.at is not supported") as info:
        @pl.program
        class Inner:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
                with pl.at(level=pl.Level.CORE_GROUP):  # inner-at
                    pass

    assert info.value.line == line_of("inner-at")


# A test file with a good and a broken module-level program and a module-level @pl.jit
# function: it collects, and only the tests that use the broken things fail.
MIXED = """\
import numpy as np
import pytest_pypto.language as pl


@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Tensor[[16, 64], pl.FP32],
            out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [16, 64]), pl.load(y, [0, 0], [16, 64]))
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Tensor[[16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = self.add(x, y, out)
        return out


@pl.program
class Broken:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
        t = pl.no_such_op(x)


@pl.jit
def jitted(x):
    return x


def test_good(pypto_runner):
    x = np.ones((16, 64), np.float32)
    out = np.empty((16, 64), np.float32)
    pypto_runner.run(Add, x, x, out)
    assert (out == 2).all()


def test_uses_broken(pypto_runner):
    pypto_runner.run(Broken, np.zeros((16, 64), np.float32))


def test_calls_jit():
    jitted("not an array")
"""



@pytest.fixture
def clean_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner session that sees no PYPTO_* or NPU variable of the outer one."""
    for name in list(os.environ):
        if name.startswith("PYPTO_") or name == "ASCEND_RT_VISIBLE_DEVICES":
            monkeypatch.delenv(name)
    empty = pytester.path / "no-dev"
    empty.mkdir()
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(empty))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(pytester.path / "locks"))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester


def test_a_broken_program_fails_its_test_not_the_collection(
    clean_pytester: pytest.Pytester,
) -> None:
    path = clean_pytester.makepyfile(test_mixed=MIXED)
    result = clean_pytester.runpytest("--pypto-arch=a2a3", "--junitxml=out.xml")
    result.assert_outcomes(passed=1, failed=2, errors=0)
    result.stdout.no_fnmatch_line("*ERROR collecting*")
    line = _where(path, "pl.no_such_op(")
    result.stdout.fnmatch_lines(
        [
            "E*InvalidOperationError: Error: module 'pytest_pypto.language' has no attribute"
            " 'no_such_op'*",
            f"E * --> {path}:{line}:*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E*TypeError: @pl.jit function 'jitted': argument 'x' is a str; pass a torch"
            " tensor or numpy array for a tensor parameter, or an int, float or bool for a scalar",
        ]
    )
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_mixed.py::test_uses_broken[[]a2a3sim[]]*",
            "FAILED test_mixed.py::test_calls_jit *",
        ]
    )
    root = ET.parse(clean_pytester.path / "out.xml").getroot()
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert {name: tc.find("failure") is not None for name, tc in cases.items()} == {
        "test_good[a2a3sim]": False,
        "test_uses_broken[a2a3sim]": True,
        "test_calls_jit": True,
    }
    props = {p.get("name"): p.get("value") for p in cases["test_uses_broken[a2a3sim]"].iter("property")}
    assert props["pypto_failure_class"] == "compile-error"


# Decorated at module level: this file importing at all is part of the test.
@pl.jit  # jit-bare
def kernel_bare(x):
    return x


@pl.jit()  # jit-call
def kernel_call(x):
    return x


@pl.jit.incore  # jit-incore
def kernel_incore(x):
    return x


@pytest.mark.parametrize(
    ("fn", "kind"),
    [(kernel_bare, "orchestration"), (kernel_call, "orchestration"), (kernel_incore, "incore")],
    ids=["bare", "called", "incore"],
)
def test_jit_functions_are_wrapped_not_run(fn: Any, kind: str) -> None:
    name = fn.__wrapped__.__name__
    assert fn.__name__ == name and not isinstance(fn, FunctionType)  # wrapped, not returned
    assert isinstance(fn, pl.JITFunction) and fn._func_type == kind
    fn._cache.clear()  # PyPTO's tests reset the specialisation cache before calling
    assert fn._cache == {}
    if kind == "incore":  # a dependency runs only as part of a @pl.jit entry
        with pytest.raises(TypeError, match=f"@pl.jit.incore function '{name}' is a dependency"):
            fn(np.zeros(4))
        assert fn._cache == {}  # nothing was specialised


def test_jit_host_makes_a_host_orchestrator_and_jit_stays_importable() -> None:
    from pytest_pypto.language import jit
    from pytest_pypto.language.distributed_host import HostJitFunction

    assert jit is pl.jit

    @pl.jit.host
    def launcher(x):
        return x

    assert isinstance(launcher, HostJitFunction)  # docs/design/distributed.md §2
    assert launcher.__name__ == "launcher"


def test_jit_in_kernel_code_is_a_parse_error() -> None:
    with pytest.raises(ParserSyntaxError, match=r"'pl\.jit' cannot be called in kernel code"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
                t = pl.jit(x)
