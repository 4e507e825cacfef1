"""``--pypto-codegen-only`` as a CI gate: every kernel compiles for its cell, none runs.

Under the switch a test compiles its kernels with its cell's arch rules (onboard cells
included: no NPU and no onboard runtime are needed, nor looked up) and its **first
dispatch** ends it as a skip, ``codegen-only: compiled <program> for <arch>
(<platform>), not run``.  A skip, not a pass, and at the dispatch, because what a test
does after it dispatches reads the kernel's outputs: a README-style test (``run`` then
``assert_close``) would otherwise compare uninitialised memory and fail as a mismatch,
and a pass would claim a check that never happened.  A test that only compiles
(``pypto_runner.compile``) passes; a compile error fails it (``compile-error``).
PyPTO's ``test_runner.run(case)`` returns a passing ``RunResult`` after compiling, as
PyPTO's harness does under ``--codegen-only``.

"Inside a test" is the session binding of `pytest_pypto.harness.jit` (the innermost
running pytest session) plus the item the plugin marks as running
(`running`); outside pytest, and for a ``RunConfig(codegen_only=True)`` in a session
without the switch, a dispatch returns what the API documents (the `CompiledProgram`,
or None for a call), never a skip.

Every program compiled (or held back at a dispatch) under the switch is noted per
process (`note_compiled`) and folded by the controller into the coverage ledger; xdist
workers ship theirs in ``workeroutput[COMPILED_OUTPUT]``.

pytest is imported only once a session is bound (it is loaded then), so
``pytest_pypto.run`` outside pytest never imports it.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Iterator
from typing import Any

__all__ = [
    "COMPILED_OUTPUT",
    "compiled_entries",
    "gate_on",
    "held",
    "note_compiled",
    "running",
    "skip_reason",
]

# xdist workeroutput key: the worker's compiled entries (see `compiled_entries`).
COMPILED_OUTPUT = "pypto_codegen_compiled"
_stash_keys: list[Any] = []  # [running item, compiled entries], made on first use


def _keys() -> list[Any]:
    if not _stash_keys:
        import pytest

        _stash_keys.extend((pytest.StashKey[Any](), pytest.StashKey[dict]()))
    return _stash_keys


def _session() -> Any:
    jit = sys.modules.get("pytest_pypto.harness.jit")  # (cheaper than an import statement)
    if jit is None:
        from pytest_pypto.harness import jit
    return jit.current_session()


def gate_on(pconfig: Any = None) -> bool:
    """Whether the pytest session (default: the innermost running one) runs with
    ``--pypto-codegen-only``."""
    pconfig = _session() if pconfig is None else pconfig
    if pconfig is None:
        return False
    from pytest_pypto.harness.session import settings

    return settings(pconfig).codegen_only


@contextlib.contextmanager
def running(item: Any) -> Iterator[None]:
    """Mark ``item`` as the running test of its session (setup, call and teardown)."""
    stash, key = item.config.stash, _keys()[0]
    before = stash.get(key, None)
    stash[key] = item
    try:
        yield
    finally:
        stash[key] = before


def _running_test(pconfig: Any) -> Any:
    return pconfig.stash.get(_keys()[0], None)


def _manifest(compiled: Any) -> Any:
    manifest = getattr(compiled, "manifest", None)
    if manifest is None:  # an artifact directory
        from pytest_pypto.ir.artifact import read_manifest

        manifest = read_manifest(compiled)
    return manifest


def skip_reason(compiled: Any) -> str:
    """The skip reason of a test whose first dispatch was of ``compiled`` (a
    `CompiledProgram` or an artifact directory)."""
    manifest = _manifest(compiled)
    return (
        f"codegen-only: compiled {manifest.program} for {manifest.arch} "
        f"({manifest.platform}), not run"
    )


def held(compiled: Any, config: Any = None) -> bool:
    """Whether a dispatch of ``compiled`` is held back, i.e. nothing is run.

    Inside a test of a ``--pypto-codegen-only`` session this does not return: the test
    ends as a skip (`skip_reason`).  Elsewhere it is True in such a session (nothing is
    ever dispatched under the switch) or when ``config.codegen_only``; the caller then
    returns its codegen-only value.  False: dispatch.
    """
    __tracebackhide__ = True
    pconfig = _session()
    if pconfig is not None and gate_on(pconfig):
        note_compiled(compiled, pconfig)
        if _running_test(pconfig) is not None:
            import pytest

            pytest.skip(skip_reason(compiled))
        return True
    return bool(getattr(config, "codegen_only", False))


def note_compiled(compiled: Any, pconfig: Any = None) -> None:
    """Count ``compiled`` for its cell in the running codegen-only session (no-op
    without one).  A program is counted once per cell however often it compiles."""
    pconfig = _session() if pconfig is None else pconfig
    if pconfig is None or not gate_on(pconfig):
        return
    manifest = _manifest(compiled)
    text = getattr(compiled, "ir_text", "") or str(getattr(compiled, "artifact_dir", lambda: compiled)())
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    found = pconfig.stash.setdefault(_keys()[1], {})
    found[(manifest.platform, manifest.program, digest)] = len(manifest.kernels)


def compiled_entries(pconfig: Any) -> list[list[Any]]:
    """This process's compiled programs: ``[platform, program, digest, kernels]`` each
    (plain lists, so xdist can ship them)."""
    found = pconfig.stash.get(_keys()[1], {})
    return [[*key, kernels] for key, kernels in sorted(found.items())]
