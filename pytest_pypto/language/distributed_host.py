# SPDX-License-Identifier: Apache-2.0
"""Host orchestrators of multi-chip programs (docs/design/distributed.md §2).

``@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)`` marks a method that
runs on the host: it allocates window buffers, dispatches chip orchestrations to
ranks (``self.chip_orch(..., device=r)``) and calls host-level collectives.  The
parser does not parse its body: the method runs as Python while the program
executes (pytest_pypto/harness/distributed.py), with ``pl`` and ``pld`` answering for
the host.  This module records which program owns which host methods.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
import types
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

from pytest_pypto.ir.errors import ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.launch import launcher
from pytest_pypto.ir.nodes import Program
from pytest_pypto.language import surface
from pytest_pypto.language.context import FunctionContext, Header, SourceMap

__all__ = ["HostJitFunction", "HostProgram", "function_level", "host_program", "jit_host",
           "register"]


class HostProgram(NamedTuple):
    """A parsed program's host functions: the class, its host orchestrators' names and
    its SubWorkers' names (``role=pl.Role.SubWorker``: Python tasks the orchestrator runs
    on the host, docs/design/distributed.md §8)."""

    cls: type
    hosts: tuple[str, ...]
    sub_workers: tuple[str, ...] = ()
    # host orchestrators with inline chip scopes, as rewritten (language/host_scopes.py)
    rewritten: Mapping[str, Any] = types.MappingProxyType({})

    def function(self, name: str | None = None) -> Any:
        """The host method ``name`` (default: the only / first orchestrator), as plain
        Python."""
        if name is None and not self.hosts:
            raise ParserTypeError(f"program '{self.cls.__name__}' has SubWorkers but no host "
                                  "orchestrator (role=pl.Role.Orchestrator) to run them")
        name = name or self.hosts[0]
        found = self.rewritten.get(name)
        return found if found is not None else self.cls.__dict__[name]

    def abstract(self, name: str) -> bool:
        """Whether SubWorker ``name``'s body is only ``...``: a callback the runner must
        be given (``prepare(callbacks={name: fn})``)."""
        return is_abstract(self.function(name))


_HOSTS: weakref.WeakKeyDictionary[Program, HostProgram] = weakref.WeakKeyDictionary()


def function_level(ctx: FunctionContext, key: str, value: Any, node: ast.AST,
                   header: Header) -> None:
    """``level=`` / ``role=`` of ``pl.function``: HOST level makes a host function."""
    if key == "role":
        if not isinstance(value, surface.Role):
            raise ctx.error(ParserTypeError, "role= must be a pl.Role member", node,
                            hint="role=pl.Role.Orchestrator")
        header.role = value.name
        return
    if not isinstance(value, surface.Level):
        raise ctx.error(ParserTypeError, "level= must be a pl.Level member", node,
                        hint="level=pl.Level.HOST")
    if value is surface.Level.HOST:
        header.kind = "Host"
        return
    raise ctx.error(
        ParserTypeError,
        f"pl.function(level=pl.Level.{value.name}) is not a function level of the bundled "
        "toolchain", node,
        hint="level=pl.Level.HOST with role=pl.Role.Orchestrator marks a host orchestrator; "
        "kernels use type=pl.FunctionType.X",
    )


def check_signature(ctx: FunctionContext, node: ast.FunctionDef, header: Header) -> None:
    """A SubWorker is self-contained: it takes its tensors, never ``self``."""
    if header.role != "SubWorker":
        return
    params = node.args.posonlyargs + node.args.args
    if params and params[0].arg == "self":
        raise ctx.error(ParserSyntaxError,
                        f"SubWorker function '{node.name}' must not declare 'self'", node,
                        hint="a SubWorker runs on the host with only its arguments; remove "
                        "the 'self' parameter")


def is_abstract(fn: Any) -> bool:
    """``fn``'s body is ``...`` (after an optional docstring)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        body = body[1:]
    return (len(body) == 1 and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant) and body[0].value.value is Ellipsis)


def register(program: Program, cls: type, hosts: list[str],
             sub_workers: list[str] | tuple[str, ...] = (),
             rewritten: Mapping[str, ast.FunctionDef] | None = None,
             source: SourceMap | None = None, namespace: Mapping[str, Any] | None = None) -> None:
    """Record ``program``'s host functions; ``rewritten`` hosts (their chip scopes
    outlined) are compiled from their trees, in the program's namespace."""
    made: dict[str, Any] = {}
    for name, tree in (rewritten or {}).items():
        tree = copy.deepcopy(tree)
        if source is not None:  # the tree's lines count from the parsed source's line 1
            ast.increment_lineno(tree, source.first_line - 1)
        scope = dict(namespace or {})
        exec(compile(ast.Module([tree], []), source.file if source else "<host>", "exec"),  # noqa: S102
             scope)
        made[name] = scope[name]
    _HOSTS[program] = HostProgram(cls, tuple(hosts), tuple(sub_workers),
                                  types.MappingProxyType(made))


def host_program(program: Any) -> HostProgram | None:
    """The host orchestrators of ``program`` (None: it has none)."""
    try:
        return _HOSTS.get(program)
    except TypeError:  # not weak-referenceable: not a parsed program
        return None


# The harness's multi-chip runner (pytest_pypto/harness/distributed_program.py installs it when
# it loads): (host function, args, config) -> a compiled multi-chip program.
COMPILE_HOST: list[Any] = []


class HostJitFunction:
    """``@pl.jit.host``: a host orchestrator as a plain function (no program class).

    ``fn.compile(*args, config=RunConfig(platform=..., distributed_config=...))`` gives
    the multi-chip program; calling ``fn(*args, config=...)`` compiles and runs it.
    The chip functions it calls with ``device=r`` are ``@pl.jit`` functions.
    """

    def __init__(self, fn: Any) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn

    def compile(self, *args: Any, config: Any = None) -> Any:
        if not COMPILE_HOST:
            launcher()  # the package face's default launcher loads the harness's runner
        if not COMPILE_HOST:
            raise RuntimeError("@pl.jit.host needs the multi-chip runner: import "
                               "pytest_pypto.harness.distributed_program first")
        return COMPILE_HOST[0](self.fn, args, config)

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        return self.compile(*args, config=config)(*args, config=config)

    def __repr__(self) -> str:
        return f"<pl.jit.host {self.fn.__name__}>"


def jit_host(fn: Any) -> HostJitFunction:
    """The ``pl.jit.host`` decorator."""
    if not callable(fn):
        raise TypeError(f"@pl.jit.host decorates a function, not {fn!r}")
    return HostJitFunction(fn)
