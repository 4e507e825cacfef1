# SPDX-License-Identifier: Apache-2.0
"""Documentation checks of this repository (loaded by lint/lint.toml's `modules`).

`ops-doc`: docs/ops.md is generated from the op registry; the check regenerates it
in memory and fails, naming the ops that differ and the command that refreshes the
file, when the committed text is stale.  `arch-doc`: the same for docs/arch.md,
generated from the arch table.  Their `files` are the page and the sources it is
generated from, so the lint cache reruns a check whenever one of them changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import ModuleType

from pytest_pypto.lint.framework import CheckError, ProjectContext, Violation, check


def _renderer(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as e:  # project code: any failure means "cannot check"
        raise CheckError(f"cannot import the page renderer {name}: "
                         f"{type(e).__name__}: {e}") from None


@check(
    "ops-doc",
    scope="project",
    files=["docs/ops.md", "pytest_pypto/ir/**/*.py", "pytest_pypto/arch.py"],
    markers=["guard"],
    hint="docs/ops.md is generated: run `python -m pytest_pypto.ir.opdoc > docs/ops.md`",
    options={"path": "docs/ops.md", "renderer": "pytest_pypto.ir.opdoc"},
)
def ops_doc(ctx: ProjectContext) -> Iterator[Violation]:
    def stale(renderer: ModuleType, text: str) -> str | None:
        diff = renderer.stale_ops(text)
        if not diff:
            return None
        more = f" and {len(diff) - 12} more" if len(diff) > 12 else ""
        return f"differs in: {', '.join(diff[:12])}{more}"

    yield from _generated_page(ctx, stale)


@check(
    "arch-doc",
    scope="project",
    files=["docs/arch.md", "pytest_pypto/arch.py", "pytest_pypto/ir/**/*.py"],
    markers=["guard"],
    hint="docs/arch.md is generated: run `python -m pytest_pypto.ir.archdoc > docs/arch.md`",
    options={"path": "docs/arch.md", "renderer": "pytest_pypto.ir.archdoc"},
)
def arch_doc(ctx: ProjectContext) -> Iterator[Violation]:
    def stale(renderer: ModuleType, text: str) -> str | None:
        return None if text == renderer.arch_markdown() else "the arch table or the registry changed"

    yield from _generated_page(ctx, stale)


def _generated_page(
    ctx: ProjectContext, stale: Callable[[ModuleType, str], str | None]
) -> Iterator[Violation]:
    """A generated page (options ``path``, ``renderer``) that is missing, or stale by
    ``stale(renderer, its text)`` (why, or None), with the command that refreshes it."""
    renderer = _renderer(ctx.options["renderer"])
    path = ctx.options["path"]
    command = renderer.REFRESH_COMMAND
    if not (ctx.root / path).is_file():
        yield Violation(path, 1, f"{path} is missing; generate it: {command}")
        return
    why = stale(renderer, ctx.read_text(path))
    if why:
        yield Violation(path, 1, f"{path} is stale ({why}); regenerate it: {command}")
