"""REGISTRY.by_namespace: memoised answers equal a plain scan and follow later registrations."""

from __future__ import annotations

import dataclasses

from pytest_pypto.ir import registry as reg
from pytest_pypto.ir.registry import REGISTRY


def _scan(namespace: str, name: str) -> list[str]:
    """The reference: every entry whose spellings reach `pl[.namespace].name`, in order."""
    return [
        spec.name for spec in REGISTRY.values()
        if name in spec.spellings or (namespace and f"{namespace}.{name}" in spec.spellings)
    ]


def test_every_spelling_answers_like_a_scan_twice():
    words = {sp.rpartition(".")[2] for spec in REGISTRY.values() for sp in spec.spellings}
    assert len(words) > 50
    for _ in range(2):  # the second round is answered from the memo
        for word in sorted(words) + ["no_such_op"]:
            for namespace in ("", "tile", "tensor"):
                got = [s.name for s in REGISTRY.by_namespace(namespace, word)]
                assert got == _scan(namespace, word), (namespace, word)


def test_answers_are_fresh_lists():
    first = REGISTRY.by_namespace("", "add")
    first.clear()
    assert [s.name for s in REGISTRY.by_namespace("", "add")] == _scan("", "add") != []


def test_an_op_registered_later_is_found_and_gone_once_removed():
    assert REGISTRY.by_namespace("tile", "zz_probe_op") == []  # memoised as "none"
    template = REGISTRY["tile.add"]
    probe = dataclasses.replace(template, name="tile.zz_probe_op", spellings=("tile.zz_probe_op",))
    reg.register(probe)
    try:
        assert REGISTRY.by_namespace("tile", "zz_probe_op") == [probe]
        assert REGISTRY.by_namespace("", "zz_probe_op") == []  # tile-only spelling
    finally:
        del reg._REGISTRY[probe.name]
    assert REGISTRY.by_namespace("tile", "zz_probe_op") == []
