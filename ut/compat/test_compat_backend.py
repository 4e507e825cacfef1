# SPDX-License-Identifier: Apache-2.0
"""PyPTO's ``pypto.backend`` SoC model and ptoas helper names (issue 23 item 4)."""

from __future__ import annotations

import pytest

from pytest_pypto.compat.pypto import backend
from pytest_pypto.compat.pypto.pypto_core import ir as core_ir
from pytest_pypto.ir.errors import UnsupportedFeatureError


def _walk_count(bk, core_type) -> int:
    """The count a test computes by walking die -> cluster -> core, as PyPTO's tests do."""
    return sum(
        core_n * cluster_n * die_n
        for die, die_n in bk.soc.die_counts.items()
        for cluster, cluster_n in die.cluster_counts.items()
        for core, core_n in cluster.core_counts.items()
        if core.core_type == core_type
    )


@pytest.mark.parametrize(("cls", "aiv", "aic"), [
    (backend.Backend910B, 48, 24),  # Ascend 910B: 24 clusters of 1 AIC + 2 AIV
    (backend.Backend950, 72, 36),
])
def test_the_soc_model_counts_each_core_kind(cls, aiv, aic):
    bk = cls.instance()
    assert bk is cls.instance()
    assert _walk_count(bk, core_ir.CoreType.VECTOR) == aiv
    assert _walk_count(bk, core_ir.CoreType.CUBE) == aic
    assert bk.get_core_count(core_ir.CoreType.VECTOR) == aiv
    assert bk.soc.total_core_count() == aiv + aic
    assert isinstance(bk, backend.Backend)


def test_ptoas_helpers_import_and_refuse_when_used():
    from pytest_pypto.compat.pypto.backend.pto_backend import (
        _preprocess_ptoas_output,
        _run_ptoas,
    )

    with pytest.raises(UnsupportedFeatureError, match="ptoas"):
        _preprocess_ptoas_output("text")
    with pytest.raises(UnsupportedFeatureError, match="ptoas"):
        _run_ptoas("a.pto", "a.cpp")


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_case_run_with_chip_swimlane_writes_records_pypto_reads(platform, tmp_path,
                                                                  monkeypatch) -> None:
    """``--enable-chip-swimlane`` (RunConfig.enable_chip_swimlane): the run's records land in
    build_output/<case>_<stamp>/dfx_outputs, as PyPTO's swimlane tests look for them."""
    import json

    from pypto_kit import TorchAdd

    from pytest_pypto.compat.runconfig import RunConfig
    from pytest_pypto.harness.runner import Runner
    from pytest_pypto.harness.seeding import make_rng

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)
    off = Runner(RunConfig(platform=platform, seed=1), rng_factory=lambda: make_rng(1))
    off.check(TorchAdd())
    assert not (tmp_path / "build_output").exists()
    config = RunConfig(platform=platform, seed=1, enable_chip_swimlane=4)
    Runner(config, rng_factory=lambda: make_rng(1)).check(TorchAdd())
    (records,) = (tmp_path / "build_output").glob("*/dfx_outputs/chip_swimlane_records.json")
    data = json.loads(records.read_text())
    assert data["chip_swimlane_level"] == 4
    assert len(data["tasks"]) >= 1
    assert all(t["end_time_us"] > t["start_time_us"] for t in data["tasks"])
    (names,) = records.parent.glob("name_map_*.json")
    kernels = set(json.loads(names.read_text())["callable_id_to_name"].values())
    assert kernels == {t["kernel"] for t in data["tasks"]}
