"""The one road from xdist workers to the controller.

A concern that collects something per process and reports it once for the session
(compile-cache counts, codegen-only compiles, kept artifacts) routes a `Traffic`:
``collect`` runs on each worker at session end and its payload (plain data; None:
nothing to send) travels in ``workeroutput``; ``fold`` runs on the controller when
the worker goes down.  Without xdist neither runs: the controller is the only
process and reads its own state.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

__all__ = ["Traffic", "is_worker", "route", "worker_id"]


class Traffic(NamedTuple):
    """What one concern ships: its ``workeroutput`` key and the two ends."""

    key: str
    collect: Callable[[pytest.Config], Any]  # worker: the payload, None to send nothing
    fold: Callable[[pytest.Config, str, Any], None]  # controller: (config, worker id, payload)


_ROUTES: list[Traffic] = []


def route(traffic: Traffic) -> Traffic:
    """Ship ``traffic`` in every session (called once per concern, at its import)."""
    _ROUTES.append(traffic)
    return traffic


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (else: the controller, or no xdist)."""
    return hasattr(config, "workerinput")


def worker_id(node: Any) -> str:
    """The id (``gw3``) of the worker behind an xdist node."""
    return getattr(getattr(node, "gateway", None), "id", "?")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is None:
        return
    for traffic in _ROUTES:
        payload = traffic.collect(session.config)
        if payload is not None:
            output[traffic.key] = payload


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", None) or {}
    for traffic in _ROUTES:
        if traffic.key in output:
            traffic.fold(node.config, worker_id(node), output[traffic.key])
