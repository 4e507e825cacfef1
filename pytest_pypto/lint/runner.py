# SPDX-License-Identifier: Apache-2.0
"""Running one configured check over its files, through the cache."""

from __future__ import annotations

import gc
import traceback
from collections.abc import Sequence

from pytest_pypto.lint.cache import LintCache, digest
from pytest_pypto.lint.files import FileSet, select
from pytest_pypto.lint.framework import (
    CheckError,
    FileContext,
    ProjectContext,
    UnparsableFile,
    Violation,
)
from pytest_pypto.lint.manifest import Enabled

# Marks a whole-file-list key (a file digest never contains it, so it cannot collide
# with a per-file key).
_BATCH = "\0batch"


class CheckCrashed(Exception):
    """The check itself raised: a tool error, reported as an error and never cached."""


class Result:
    """A check's violations and how many cache entries it hit or missed."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.hits = 0
        self.misses = 0


def files_for(en: Enabled, fileset: FileSet) -> list[str]:
    """The session files a configured check looks at."""
    return select(fileset.files, en.files, en.exclude)


def run(
    en: Enabled, fileset: FileSet, cache: LintCache, paths: Sequence[str] | None = None
) -> Result:
    """Run `en` on `paths` (default: all its files); cached entries are reused.

    A per-file check keeps one entry per file (an edit reruns only that file) plus
    one entry for the whole file list, keyed by every (path, digest) pair: a warm
    run whose files are all unchanged reads that single entry instead of one per file.

    The cyclic garbage collector is paused meanwhile, and what the run left alive is
    then frozen (`gc.freeze`) until `release_shared`: the session's shared trees are
    hundreds of thousands of objects that every collection would traverse again
    (which doubled a cold run); they hold no reference cycles, so reference counting
    frees them once released.  A process that froze objects itself is left alone.
    """
    global _FROZEN, _LEFT_ALONE
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _run(en, fileset, cache, paths)
    finally:
        if paused:
            if _FROZEN or (not _LEFT_ALONE and gc.get_freeze_count() == 0):
                gc.freeze()
                _FROZEN = True
            else:  # (counting the frozen objects walks them all: asked once per release)
                _LEFT_ALONE = True
            gc.enable()


_FROZEN = False  # this module froze the collector's view of the heap (run)
_LEFT_ALONE = False  # the process had frozen objects itself: not ours to freeze (run)


def release_shared(fileset: FileSet) -> None:
    """Drop the session's shared trees and thaw what `run` froze."""
    global _FROZEN, _LEFT_ALONE
    fileset.release_parses()
    _LEFT_ALONE = False
    if _FROZEN:
        _FROZEN = False
        gc.unfreeze()


def _run(en: Enabled, fileset: FileSet, cache: LintCache, paths: Sequence[str] | None) -> Result:
    assert en.spec is not None
    paths = files_for(en, fileset) if paths is None else list(paths)
    config_key = en.config_key
    res = Result()
    if en.spec.scope == "project":
        key = digest(config_key, *(f"{p}={fileset.digest(p)}" for p in paths))
        cached = cache.get(en.id, key)
        if cached is not None:
            res.hits += 1
            res.violations = cached
            return res
        ctx = ProjectContext(
            fileset.root, en.id, en.options, en.option_texts, files=paths, shared=fileset
        )
        found = _call(en, ctx, None)
        cache.put(en.id, key, found)
        res.misses += 1
        res.violations = found
        return res
    digests = [fileset.digest(p) for p in paths]
    batch_key = None
    if len(paths) > 1:
        batch_key = digest(config_key, _BATCH, *(f"{p}={d}" for p, d in zip(paths, digests)))
        cached = cache.get(en.id, batch_key)
        if cached is not None:
            res.hits = len(paths)
            res.violations = cached
            return res
    for path, file_digest in zip(paths, digests):
        key = digest(config_key, path, file_digest)
        cached = cache.get(en.id, key)
        if cached is not None:
            res.hits += 1
            res.violations.extend(cached)
            continue
        ctx = FileContext(
            fileset.root, en.id, en.options, en.option_texts, path=path, shared=fileset
        )
        found = _call(en, ctx, path)
        cache.put(en.id, key, found)
        res.misses += 1
        res.violations.extend(found)
    if batch_key is not None:
        cache.put(en.id, batch_key, res.violations)
    return res


def _call(en: Enabled, ctx: FileContext | ProjectContext, path: str | None) -> list[Violation]:
    """The check's violations on `ctx`.

    A file whose `tree` the check asked for but that does not parse yields the
    violation `path:LINE: cannot parse: why` (after whatever the check found before),
    even when the check caught UnparsableFile itself: it never silently passes.
    """
    assert en.spec is not None
    out: list[Violation] = []
    unparsable: UnparsableFile | None = None
    try:
        for p, n, m in en.spec.fn(ctx) or ():
            out.append(Violation(str(p), int(n), str(m)))
    except UnparsableFile as e:
        unparsable = e
    except CheckError as e:
        where = f" on {path}" if path else ""
        raise CheckCrashed(f"lint check {en.id!r} could not run{where}: {e}") from None
    except Exception as e:
        tb_ = e.__traceback__
        while tb_ is not None and tb_.tb_frame.f_code.co_filename == __file__:
            tb_ = tb_.tb_next  # show the check's frames, not the runner's
        tb = "".join(traceback.format_exception(type(e), e, tb_))
        where = f" on {path}" if path else ""
        raise CheckCrashed(f"lint check {en.id!r} crashed{where}:\n{tb}") from None
    if isinstance(ctx, FileContext) and ctx.parse_error is not None:
        unparsable = ctx.parse_error
    if unparsable is not None:
        out.append(unparsable.violation())
    return out
