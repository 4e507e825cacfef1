"""``--pypto-codegen-only`` (harness/codegen_only.py) in a session: the running test
is marked in the session context, so its first dispatch skips it; what each process
compiled is folded into the coverage ledger (xdist workers ship theirs).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_pypto.plugin import workers
from pytest_pypto.plugin.context import context_of
from pytest_pypto.plugin.keys import COMPILED_OUTPUT
from pytest_pypto.plugin.ledger import ledger_of
from pytest_pypto.plugin.options import settings


def _gated(config: pytest.Config) -> Any:
    """The session context when the switch is on (else None)."""
    return context_of(config) if settings(config).codegen_only else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    """Mark ``item`` as the running test of its session (setup, call and teardown)."""
    context = _gated(item.config)
    if context is None:
        return (yield)
    before, context.running = context.running, item
    try:
        return (yield)
    finally:
        context.running = before


def _collect(config: pytest.Config) -> list[list[Any]] | None:
    context = _gated(config)
    return None if context is None else context.compiled_entries()


def _fold(config: pytest.Config, worker: str, entries: list[list[Any]]) -> None:
    ledger = ledger_of(config)
    if ledger is not None:
        ledger.add_compiled(entries)


workers.route(workers.Traffic(COMPILED_OUTPUT, _collect, _fold))


@pytest.hookimpl(tryfirst=True)  # before the ledger's --pypto-require check
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller's own compiles (none under xdist) into its ledger."""
    context = _gated(session.config)
    ledger = ledger_of(session.config)
    if context is not None and ledger is not None:
        ledger.add_compiled(context.compiled_entries())
