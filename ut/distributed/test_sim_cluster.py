"""The simulated ranks' scheduler (docs/design/distributed.md §4): deterministic rank
order, seeded shuffles, waits that hand over, deadlocks and rank errors."""

from __future__ import annotations

import pytest

from pytest_pypto.runtime.devices_sim import DeadlockError, SimCluster


def _order(shuffle: int | None) -> list[int]:
    seen: list[int] = []
    cluster = SimCluster(range(5), shuffle=shuffle)
    cluster.run({r: [lambda r=r: seen.append(r)] for r in range(5)})
    return seen


def test_ranks_run_in_rank_order_by_default() -> None:
    assert _order(None) == [0, 1, 2, 3, 4]


def test_a_shuffle_seed_gives_a_reproducible_other_order() -> None:
    orders = {tuple(_order(seed)) for seed in range(8)}
    assert len(orders) > 1
    assert _order(3) == _order(3)
    assert all(sorted(o) == [0, 1, 2, 3, 4] for o in orders)


def test_a_waiting_rank_lets_the_others_run_until_its_condition_holds() -> None:
    cluster = SimCluster([0, 1])
    flag: list[int] = []
    trace: list[str] = []

    def waiter() -> None:
        trace.append("0 waits")
        cluster.block_until(lambda: bool(flag), "flag")
        trace.append("0 resumes")

    def setter() -> None:
        trace.append("1 sets")
        flag.append(1)

    cluster.run({0: [waiter], 1: [setter]})
    assert trace == ["0 waits", "1 sets", "0 resumes"]


def test_waits_nobody_satisfies_are_one_deadlock_error_naming_every_rank() -> None:
    cluster = SimCluster([0, 1, 2])
    never = [lambda r=r: cluster.block_until(lambda: False, f"signal {r}") for r in range(2)]
    with pytest.raises(DeadlockError) as info:
        cluster.run({0: [never[0]], 1: [never[1]], 2: [lambda: None]})
    text = str(info.value)
    assert "rank(s) 0, 1 wait" in text
    assert "rank 0: signal 0" in text and "rank 1: signal 1" in text
    assert "finished: rank(s) 2" in text


def test_a_rank_that_fails_is_reported_instead_of_the_deadlock_it_causes() -> None:
    cluster = SimCluster([0, 1])

    def boom() -> None:
        raise ValueError("rank 1 broke")

    with pytest.raises(ValueError, match="rank 1 broke"):
        cluster.run({0: [lambda: cluster.block_until(lambda: False, "never")], 1: [boom]})


def test_rendezvous_waits_for_every_rank() -> None:
    cluster = SimCluster([0, 1, 2])
    trace: list[str] = []

    def job(r: int) -> None:
        trace.append(f"{r} in")
        cluster.rendezvous(r, "k", "meet")
        trace.append(f"{r} out")

    cluster.run({r: [lambda r=r: job(r)] for r in range(3)})
    assert trace[:3] == ["0 in", "1 in", "2 in"]
    assert sorted(trace[3:]) == ["0 out", "1 out", "2 out"]


def test_ranks_take_turns_dispatch_by_dispatch_in_the_order_the_host_issued_them() -> None:
    # a host issuing "consume round 0" then "publish round 1" on every rank: no rank's
    # round-1 publish runs before every rank's round-0 consume (docs/design/distributed.md §4)
    seen: list[str] = []
    cluster = SimCluster([0, 1, 2])
    cluster.run({r: [lambda r=r, j=j: seen.append(f"{j}@{r}") for j in ("consume0", "publish1")]
                 for r in range(3)})
    assert seen == ["consume0@0", "consume0@1", "consume0@2",
                    "publish1@0", "publish1@1", "publish1@2"]


def test_a_lone_rank_runs_its_dispatches_in_order() -> None:
    seen: list[int] = []
    SimCluster([0, 1]).run({1: [lambda j=j: seen.append(j) for j in range(4)]})
    assert seen == [0, 1, 2, 3]
