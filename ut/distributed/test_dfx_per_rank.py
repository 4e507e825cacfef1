"""Per-rank DFX output of a multi-chip run (docs/design/distributed.md §9): each
dispatch's own task record, scope counts and swimlane under
``<output_dir>/dfx_outputs/rank{r}/d{k}/``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.compat.runconfig import RunConfig
from ut.distributed import programs as p


def _compile(program, ranks: int, out):
    return ir.compile(program, platform="a2a3sim", output_dir=str(out),
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


@pytest.mark.parametrize("ranks", [2, 4])
def test_deps_and_scope_stats_per_rank_are_that_ranks_own_run(ranks, tmp_path) -> None:
    compiled = _compile(p.RankOffset, ranks, tmp_path / "out")
    x = torch.randn(ranks, 4, p.N)
    y = torch.zeros(ranks, 4, p.N)
    compiled(x, y, config=RunConfig(platform="a2a3sim", enable_dep_gen=True,
                                    enable_scope_stats=True))
    want = x.numpy() + np.arange(ranks, dtype=np.float32).reshape(ranks, 1, 1)
    np.testing.assert_array_equal(y.numpy(), want)
    base = tmp_path / "out" / "dfx_outputs"
    assert sorted(d.name for d in base.iterdir()) == [f"rank{r}" for r in range(ranks)]
    for r in range(ranks):
        leaf = base / f"rank{r}" / "d0"
        assert sorted(d.name for d in (base / f"rank{r}").iterdir()) == ["d0"]
        deps = json.loads((leaf / "deps.json").read_text())
        tasks = deps["tasks"]
        assert [t["kernel"] for t in tasks] == ["shift"]
        scalars = {a["name"]: a["value"] for a in tasks[0]["args"] if "value" in a}
        assert scalars == {"r": r}  # rank r's own dispatch, not a copy of another's
        lines = (leaf / "scope_stats" / "scope_stats.jsonl").read_text().splitlines()
        meta, scopes = json.loads(lines[0]), [json.loads(s) for s in lines[1:]]
        assert meta["rank"] == r and meta["dispatch"] == 0 and meta["program"] == "chip"
        assert sum(s["tasks"] for s in scopes) == len(tasks)
        assert json.loads((leaf / "dispatch_program.json").read_text())["program"] == "chip"
        assert not (leaf / "chip_swimlane_records.json").exists()


def test_each_dispatch_of_a_rank_gets_its_own_directory(tmp_path) -> None:
    compiled = _compile(p.ALLREDUCE_SUM, 2, tmp_path / "out")
    x = torch.randn(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    compiled(x, y, config=RunConfig(platform="a2a3sim", enable_dep_gen=True))
    for r in range(2):
        rank_dir = tmp_path / "out" / "dfx_outputs" / f"rank{r}"
        assert sorted(d.name for d in rank_dir.iterdir()) == ["d0", "d1"]
        ran = [json.loads((rank_dir / d / "dispatch_program.json").read_text())["program"]
               for d in ("d0", "d1")]
        assert ran == ["publish", "consume"]
        kernels = [json.loads((rank_dir / d / "deps.json").read_text())["tasks"][0]["kernel"]
                   for d in ("d0", "d1")]
        assert kernels == ["publish_step", "consume_step"]


def test_swimlane_per_rank_co_enables_the_task_record(tmp_path) -> None:
    compiled = _compile(p.RankOffset, 2, tmp_path / "out")
    compiled(torch.randn(2, 4, p.N), torch.zeros(2, 4, p.N),
             config=RunConfig(platform="a2a3sim", enable_chip_swimlane=True))
    for r in range(2):
        leaf = tmp_path / "out" / "dfx_outputs" / f"rank{r}" / "d0"
        records = json.loads((leaf / "chip_swimlane_records.json").read_text())
        deps = json.loads((leaf / "deps.json").read_text())
        assert [t["task_id"] for t in records["tasks"]] == [t["id"] for t in deps["tasks"]]
        assert records["chip_swimlane_level"] == 4
        assert not (leaf / "scope_stats").exists()


def test_no_dfx_switch_writes_nothing(tmp_path) -> None:
    compiled = _compile(p.RankOffset, 2, tmp_path / "out")
    compiled(torch.randn(2, 4, p.N), torch.zeros(2, 4, p.N),
             config=RunConfig(platform="a2a3sim"))
    assert not (tmp_path / "out" / "dfx_outputs").exists()
