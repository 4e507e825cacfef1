"""``--pypto-codegen-only`` as a CI gate: every kernel compiles for its cell, none runs.

Under the switch a test compiles its kernels with its cell's arch rules (onboard cells
included: no NPU and no onboard runtime are needed, nor looked up) and its **first
dispatch** ends it as a skip, ``codegen-only: compiled <program> for <arch>
(<platform>), not run``.  A skip, not a pass, and at the dispatch, because what a test
does after it dispatches reads the kernel's outputs: a README-style test (``run`` then
``assert_close``) would otherwise compare uninitialised memory and fail as a mismatch,
and a pass would claim a check that never happened.  A test that only compiles
(``pypto_runner.compile``) passes; a compile error fails it (``compile-error``).
The compat runner's ``run(case)`` (PyPTO's test runner) returns a passing ``RunResult``
after compiling, as PyPTO's harness does under ``--codegen-only``.

The gate has one door, `held`, and one caller of it, the dispatch
(`pytest_pypto.harness.dispatch.dispatch`): ``pypto_runner.run``/``check``,
``pytest_pypto.run``, `@pl.jit` calls and ``CompiledProgram(...)`` calls all pass
there.  "Inside a test" is the bound session context (`harness.context.current`) with
a running test item (the plugin sets it around each test); outside pytest, and for a
``RunConfig(codegen_only=True)`` in a session without the switch, a dispatch returns
what the API documents (the `CompiledProgram`, or None for a call), never a skip.

Every program compiled (or held back at a dispatch) under the switch is noted in the
session context (`note_compiled`); the plugin folds them into the coverage ledger.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pytest_pypto.harness import context as _context
from pytest_pypto.ir.artifact import read_manifest

__all__ = ["gate_on", "held", "note_compiled", "skip_reason"]


def gate_on(session: Any = None) -> bool:
    """Whether the session (default: the innermost running one) runs with
    ``--pypto-codegen-only``."""
    session = _context.current() if session is None else session
    return session is not None and session.codegen_only


def _manifest(compiled: Any) -> Any:
    manifest = getattr(compiled, "manifest", None)
    return read_manifest(compiled) if manifest is None else manifest  # None: a directory


def skip_reason(compiled: Any) -> str:
    """The skip reason of a test whose first dispatch was of ``compiled`` (a
    `CompiledProgram` or an artifact directory)."""
    manifest = _manifest(compiled)
    return (
        f"codegen-only: compiled {manifest.program} for {manifest.arch} "
        f"({manifest.platform}), not run"
    )


def held(compiled: Any, config: Any = None, *, ends_test: bool = True) -> bool:
    """Whether a dispatch of ``compiled`` is held back, i.e. nothing is run.

    Inside a test of a ``--pypto-codegen-only`` session this does not return (unless
    ``ends_test`` is False: the compat runner's ``run(case)``): the test ends as a skip
    (`skip_reason`).  Elsewhere it is True in such a session (nothing is ever
    dispatched under the switch) or when ``config.codegen_only``; the caller then
    returns its codegen-only value.  False: dispatch.
    """
    __tracebackhide__ = True
    session = _context.current()
    if gate_on(session):
        note_compiled(compiled, session)
        if ends_test and session.running is not None:
            session.skip(skip_reason(compiled))
        return True
    return bool(getattr(config, "codegen_only", False))


def note_compiled(compiled: Any, session: Any = None) -> None:
    """Count ``compiled`` for its cell in the running codegen-only session (no-op
    without one).  A program is counted once per cell however often it compiles."""
    session = _context.current() if session is None else session
    if not gate_on(session):
        return
    manifest = _manifest(compiled)
    text = getattr(compiled, "ir_text", "") or str(getattr(compiled, "artifact_dir", lambda: compiled)())
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    session.compiled[(manifest.platform, manifest.program, digest)] = len(manifest.kernels)
