"""The harness's one compile path: `compile_cached`.

``pypto_runner.compile`` (and ``run``/``check`` on a program), ``pytest_pypto.run`` on
a program, `@pl.jit` calls and ``CompiledProgram`` construction all compile here:
through a compile cache (harness/cache.py; None: an uncached compile, as outside
pytest), counted for the coverage ledger under ``--pypto-codegen-only``
(harness/codegen_only.py), and copied to ``config.save_kernels_dir`` when one is set
(hit or miss: where output goes is not part of the cache key).  Every path ends in
`pytest_pypto.compiler.api.compile`, which is also the package's public
``pytest_pypto.compile`` (no cache, the artifact where the caller says).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_pypto.harness.cache import CompileCache
from pytest_pypto.harness.codegen_only import note_compiled

__all__ = ["compile_cached", "copy_artifact"]


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
        copy_artifact(compiled, Path(config.save_kernels_dir))
    return compiled


def copy_artifact(artifact: Any, target: Path) -> None:
    """Put an artifact's files into ``target`` (created; files replaced): a
    `CompiledProgram` (written straight from memory when it is there) or a directory."""
    save_to = getattr(artifact, "save_to", None)
    if save_to is not None:
        save_to(target)
        return
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(artifact, target, dirs_exist_ok=True)
