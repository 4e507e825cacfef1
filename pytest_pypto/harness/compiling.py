"""The harness's one compile path: `compile_cached`.

``pypto_runner.compile`` (and ``run``/``check`` on a program), ``pytest_pypto.run`` on
a program, `@pl.jit` calls and ``CompiledProgram`` construction all compile here:
through a compile cache (harness/cache.py; None: an uncached compile, as outside
pytest), counted for the coverage ledger under ``--pypto-codegen-only``
(harness/codegen_only.py), and copied to ``config.save_kernels_dir`` when one is set
(hit or miss: where output goes is not part of the cache key).  A copy that fails
(a full disk, a read-only directory) leaves the compile and the test's result as
they are: the first failure of a process is a warning naming the directory and the
OS error (`SaveKernelsWarning`), later ones are counted in `save_failures`
(docs/design/plugin.md §9).  Every path ends in
`pytest_pypto.compiler.api.compile`, which is also the package's public
``pytest_pypto.compile`` (no cache, the artifact where the caller says).
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_pypto.harness.cache import CompileCache
from pytest_pypto.harness.codegen_only import note_compiled

__all__ = ["SaveKernelsWarning", "compile_cached", "copy_artifact", "save_failures"]

# (directory, why) of every kept artifact this process could not save; the first warned
save_failures: list[tuple[str, str]] = []


class SaveKernelsWarning(UserWarning):
    """Compiled kernels could not be saved where the options keep them (said once)."""


def compile_cached(
    program: Any, config: Any, *, cache: CompileCache | None = None, specs: Sequence[Any] = ()
) -> Any:
    """``program`` compiled for ``config`` (a `CompiledProgram`) through ``cache``.

    ``specs``: a case's tensor specs, part of the cache key.
    """
    __tracebackhide__ = True  # a failing test shows its own line and the diagnostic
    compiled = (cache if cache is not None else CompileCache(None)).compile(
        program, config, specs=specs
    )
    note_compiled(compiled)  # the coverage ledger's count under --pypto-codegen-only
    if config.save_kernels_dir:
        target = Path(config.save_kernels_dir)
        try:
            copy_artifact(compiled, target)
        except OSError as exc:
            _save_failed(target, exc)
    return compiled


def _save_failed(target: Path, exc: OSError) -> None:
    """Note that ``target`` could not be written; warn about the first such failure."""
    why = _short(exc)
    save_failures.append((str(target), why))
    if len(save_failures) == 1:
        warnings.warn(
            SaveKernelsWarning(
                f"pypto could not save the compiled kernels to {target} ({why}); the tests' "
                f"results stand, and later failures to save kernels are not reported"
            ),
            stacklevel=3,
        )


def _short(exc: OSError) -> str:
    """One line about ``exc``: a `shutil.Error` (one entry per file that failed) as its
    first file's error and how many more failed."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        failed = exc.args[0]
        if failed:
            first = failed[0]
            text = str(first[-1]) if isinstance(first, tuple) else str(first)
            more = f" (and {len(failed) - 1} more files)" if len(failed) > 1 else ""
            return f"shutil.Error: {text[:200]}{more}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def copy_artifact(artifact: Any, target: Path) -> None:
    """Put an artifact's files into ``target`` (created; files replaced): a
    `CompiledProgram` (written straight from memory when it is there) or a directory.

    An artifact in memory whose directory cannot be copied (a cache entry deleted or
    made unreadable since it was verified) is written from memory instead (without
    the pass dumps, which are files only)."""
    save_to = getattr(artifact, "save_to", None)
    if save_to is not None:
        try:
            save_to(target)
        except OSError:
            memory = getattr(artifact, "memory", None)
            if memory is None or not memory.on_disk or os.path.isdir(memory.home):
                raise
            memory.write(target)
        return
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(artifact, target, dirs_exist_ok=True)
