"""The race detector across ranks (docs/design/distributed.md §5): window accesses of
different ranks that nothing orders are a RaceError naming both sides; notify/wait,
barriers, host-level collectives and atomic adds order or excuse them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.harness import context
from pytest_pypto.ir.errors import RaceError
from ut.distributed import race_programs as rp
from ut.helpers import line_of

SOURCE = Path(rp.__file__)


def _compile(program, ranks: int, shuffle: int | None = None):
    compiled = ir.compile(program, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=list(range(ranks))))
    compiled.shuffle = shuffle
    return compiled


def _data(ranks: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(ranks, 1, rp.N), torch.zeros(ranks, 1, rp.N)


def _at(marker: str) -> str:
    return f"race_programs.py:{line_of(SOURCE, marker)}"


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_remote_store_and_a_local_read_with_no_signal_race(ranks) -> None:
    x, y = _data(ranks)
    with pytest.raises(RaceError) as info:
        _compile(rp.StoreThenRead, ranks)(x, y)
    text = str(info.value)
    assert "race(s) between ranks on window memory" in text
    assert "pld.tile.remote_store" in text and "parameter 'w'" in text
    assert _at("RACY-STORE") in text and _at("RACY-READ") in text
    assert "elements [0:1, 0:32] (float32)" in text
    assert re.search(r"window buffer \d+, rank \d's slice", text)
    assert "pld.system.notify" in info.value.hint and "pld.tensor.barrier" in info.value.hint
    # every rank's read races with its previous rank's store (one pair per rank)
    assert len(info.value.races) == ranks
    assert info.value.span is not None and info.value.span.file.endswith("race_programs.py")


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_notify_after_the_store_and_a_wait_before_the_read_order_them(ranks) -> None:
    x, y = _data(ranks)
    _compile(rp.StoreSignalRead, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.roll(x.numpy(), 1, axis=0))


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_notify_sent_before_the_store_orders_nothing(ranks) -> None:
    x, y = _data(ranks)
    with pytest.raises(RaceError) as info:
        _compile(rp.NotifyTooEarly, ranks)(x, y)
    text = str(info.value)
    assert _at("LATE-STORE") in text and _at("EARLY-READ") in text


@pytest.mark.parametrize("ranks", [2, 4])
def test_put_then_barrier_then_read_is_clean(ranks) -> None:
    x, y = _data(ranks)
    _compile(rp.PutBarrierRead, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.roll(x.numpy(), 1, axis=0))


@pytest.mark.parametrize("ranks", [2, 4])
def test_two_ranks_writing_one_peer_region_race(ranks) -> None:
    x, y = _data(ranks)
    with pytest.raises(RaceError) as info:
        _compile(rp.ALL_WRITE_PLAIN, ranks)(x, y)
    text = str(info.value)
    assert "window buffer" in text and "rank 0's slice" in text
    assert text.count(_at("SHARED-STORE")) >= 2  # both writers, at the same line
    writers = {int(r) for r in re.findall(r"rank (\d) \(dispatch 0, kernel 'plain': "
                                          r"pld.tile.remote_store", text)}
    assert len(writers) == ranks  # each writer races with another one


@pytest.mark.parametrize("ranks", [2, 4])
def test_unordered_stores_of_disjoint_columns_do_not_race(ranks) -> None:
    x, y = _data(ranks)
    _compile(rp.DisjointColumns, ranks)(x, y)
    want = np.zeros(rp.N, np.float32)
    for r in range(ranks):
        want[8 * r:8 * r + 8] = x.numpy()[r, 0, :8]
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(want, y.shape))


@pytest.mark.parametrize("ranks", [2, 4])
def test_atomic_add_stores_from_every_rank_do_not_race(ranks) -> None:
    x, y = _data(ranks)
    _compile(rp.ALL_WRITE_ATOMIC, ranks)(x, y)
    total = x.numpy().sum(axis=0)
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(total, y.shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_host_level_collective_orders_the_dispatches_around_it(ranks) -> None:
    x, y = _data(ranks)
    _compile(rp.PUBLISH_COLLECT_READ, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(x.numpy().max(axis=0), y.shape))


@pytest.mark.parametrize("ranks", [2, 4])
def test_dispatches_of_one_round_on_different_ranks_are_not_ordered(ranks) -> None:
    x, y = _data(ranks)
    with pytest.raises(RaceError) as info:
        _compile(rp.PUBLISH_WHILE_READ, ranks)(x, y)
    text = str(info.value)
    assert "pld.tile.remote_load" in text and "kernel 'publish_step'" in text
    assert len(info.value.races) == ranks // 2  # one writer-reader pair per two ranks


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_later_round_of_dispatches_follows_the_earlier_one(ranks) -> None:
    # the simulator runs a batch round by round (distributed.md §4), the detector agrees
    x, y = _data(ranks)
    _compile(rp.PUBLISH_THEN_READ, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.roll(x.numpy(), -1, axis=0))


@pytest.mark.parametrize("seed", [1, 7, 2024])
def test_the_race_is_found_whatever_order_the_ranks_run_in(seed) -> None:
    x, y = _data(4)
    with pytest.raises(RaceError) as info:
        _compile(rp.StoreThenRead, 4, shuffle=seed)(x, y)
    assert len(info.value.races) == 4
    assert _at("RACY-STORE") in str(info.value)
    x, y = _data(4)
    _compile(rp.StoreSignalRead, 4, shuffle=seed)(x, y)  # and the ordered one stays clean
    np.testing.assert_array_equal(y.numpy(), np.roll(x.numpy(), 1, axis=0))


def test_no_race_check_turns_the_check_off(monkeypatch) -> None:
    session = context.current()
    assert session is not None
    monkeypatch.setattr(session, "settings", session.settings._replace(no_race_check=True))
    x, y = _data(2)
    _compile(rp.StoreThenRead, 2)(x, y)  # runs to the end: rank 1 read rank 0's row
    np.testing.assert_array_equal(y.numpy()[1], x.numpy()[0])
