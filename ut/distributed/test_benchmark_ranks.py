"""`benchmark` of a multi-chip program (compat/execution.py): per-rank and per-dispatch
series of the simulator's wall-clock, one value per measured round."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pytest_pypto.compat.execution import benchmark
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from ut.distributed import programs as p


def _compiled(ranks: int):
    return ir.compile(p.RankOffset, platform="a5sim",
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


@pytest.mark.parametrize("ranks", [2, 3])
def test_each_rank_gets_one_sample_per_round_and_the_headline_is_their_max(ranks) -> None:
    x = torch.randn(ranks, 4, p.N)
    y = torch.zeros(ranks, 4, p.N)
    stats = benchmark(_compiled(ranks), [x, y], rounds=4, warmup=1)
    want = x.numpy() + np.arange(ranks, dtype=np.float32).reshape(ranks, 1, 1)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)  # the program really ran
    device, host = stats.per_rank("device"), stats.per_rank("host")
    assert sorted(device) == list(range(ranks)) and sorted(host) == list(range(ranks))
    assert all(len(v) == 4 and min(v) > 0 for v in device.values())
    union = stats.per_round("union")
    for k in range(4):
        assert stats.device_wall_us[k] == max(v[k] for v in device.values())
        # the ranks run one after another: the span over all of them holds each one
        assert union[k] >= sum(v[k] for v in device.values()) - 1e-6
    assert set(stats.per_dispatch("device")) == {(r, 0) for r in range(ranks)}
    assert "pid=1 slot=0" in stats.format_mean_tree(pid=1, slot=0)


def test_a_multi_chip_program_refuses_a_device_choice() -> None:
    with pytest.raises(ValueError, match="fixed at compile time"):
        benchmark(_compiled(2), [torch.zeros(2, 4, p.N)] * 2, rounds=1, device_id=1)
