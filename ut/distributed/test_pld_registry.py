"""The pld ops are registry entries reachable by PyPTO's spellings (docs/design/distributed.md §3)."""

from __future__ import annotations

import pytest

import pytest_pypto.language.distributed as pld
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.language.surface import OpStub

SPELLINGS = {
    "tensor.pld_comm_ctx": ("pld", "get_comm_ctx"),
    "tensor.pld_rank": ("pld", "rank"),
    "tensor.pld_nranks": ("pld", "nranks"),
    "tensor.pld_notify": ("pld.system", "notify"),
    "tensor.pld_wait": ("pld.system", "wait"),
    "tensor.pld_defer_wait": ("pld.system", "defer_wait"),
    "tile.pld_remote_load": ("pld.tile", "remote_load"),
    "tile.pld_remote_store": ("pld.tile", "remote_store"),
    "tensor.pld_put": ("pld.tensor", "put"),
    "tensor.pld_get": ("pld.tensor", "get"),
    "tensor.pld_remote_store": ("pld.tensor", "remote_store"),
    "tensor.pld_allreduce": ("pld.tensor", "allreduce"),
    "tensor.pld_reduce_scatter": ("pld.tensor", "reduce_scatter"),
    "tensor.pld_broadcast": ("pld.tensor", "broadcast"),
    "tensor.pld_allgather": ("pld.tensor", "allgather"),
    "tensor.pld_all_to_all": ("pld.tensor", "all_to_all"),
    "tensor.pld_all_to_all_v": ("pld.tensor", "all_to_all_v"),
    "tensor.pld_barrier": ("pld.tensor", "barrier"),
}


@pytest.mark.parametrize("op", sorted(SPELLINGS))
def test_each_pld_spelling_reaches_its_op(op) -> None:
    namespace, name = SPELLINGS[op]
    found = REGISTRY.by_namespace(namespace, name)
    assert [s.name for s in found] == [op]
    assert found[0].doc and found[0].execute is not None
    holder = pld if namespace == "pld" else getattr(pld, namespace.split(".")[1])
    stub = getattr(holder, name)
    assert isinstance(stub, OpStub) and stub.namespace == namespace


def test_host_calls_outside_a_run_say_where_they_belong() -> None:
    from pytest_pypto.language.surface import NotRunnable  # lazy: one name for one test

    with pytest.raises(NotRunnable, match="host orchestrator"):
        pld.world_size()
    with pytest.raises(NotRunnable, match="host orchestrator"):
        pld.tensor.allreduce(None)
