"""PyPTO's RunConfig (compat/runconfig.py): our RunConfig plus PyPTO's other fields."""

from __future__ import annotations

import dataclasses
import pickle

from pytest_pypto.compat.pypto.pypto_core.passes import MemoryPlanner
from pytest_pypto.compat.pypto.runtime import RunConfig as PyptoRunConfig
from pytest_pypto.compat.runconfig import PYPTO_ONLY_FIELDS, RunConfig
from pytest_pypto.config import RunConfig as OurRunConfig


def test_pypto_fields_accepted_and_reported() -> None:
    cfg = RunConfig(
        platform="a5sim", device_id=3, enable_dep_gen=True, enable_l2_swimlane=2, dump_args=1,
        enable_pmu=4, memory_planner=None, aicpu_thread_num=2,
    )
    assert (cfg.enable_chip_swimlane, cfg.enable_dump_args, cfg.enable_pmu) == (2, 1, 4)
    assert cfg.enable_dep_gen and cfg.device_id == 3 and cfg.platform == "a5sim"
    assert cfg.accepted_without_effect() == {"enable_pmu": 4, "aicpu_thread_num": 2}
    assert cfg.dump_args == 1  # the argument dump has its meaning (runtime/argdump.py)
    assert RunConfig(enable_dump_args=True).dump_args == 1
    assert dataclasses.replace(cfg, save_kernels_dir="w").enable_dump_args == 1
    assert RunConfig().accepted_without_effect() == {}
    assert "enable_dep_gen" not in PYPTO_ONLY_FIELDS  # it has its meaning (deps.json)
    assert "enable_chip_swimlane" not in PYPTO_ONLY_FIELDS  # so has it (runtime/swimlane.py)
    assert {"strategy", "memory_planner", "ring_heap"} <= set(PYPTO_ONLY_FIELDS)


def test_it_is_the_class_pypto_code_imports_and_one_of_ours() -> None:
    assert PyptoRunConfig is RunConfig
    assert issubclass(RunConfig, OurRunConfig)


def test_only_ptoas_makes_the_assembler_plan_memory() -> None:
    cfg = RunConfig(platform="a2a3sim", memory_planner=MemoryPlanner.PTOAS)
    assert cfg.assembler_plans_memory
    cfg.memory_planner = MemoryPlanner.PYPTO
    assert not cfg.assembler_plans_memory
    cfg.memory_planner = "ptoas"  # the enum's value works too
    assert cfg.assembler_plans_memory
    assert cfg.accepted_without_effect() == {"memory_planner": "ptoas"}


def test_from_config_keeps_every_field_of_ours() -> None:
    ours = OurRunConfig(platform="a5", rtol=1e-3, atol=1e-4, seed=7, precise=True,
                        save_kernels_dir="/tmp/k")
    theirs = RunConfig.from_config(ours)
    assert type(theirs) is RunConfig and theirs is not ours
    for f in dataclasses.fields(OurRunConfig):
        assert getattr(theirs, f.name) == getattr(ours, f.name), f.name
    assert theirs.platform == "a5" and theirs.strategy is None
    assert RunConfig.from_config(theirs) is theirs


def test_replace_and_pickle_keep_the_class_and_its_fields() -> None:
    cfg = RunConfig(platform="a2a3sim", enable_pmu=2, memory_planner=MemoryPlanner.PTOAS)
    moved = dataclasses.replace(cfg, platform="a5sim")
    assert type(moved) is RunConfig and moved.platform == "a5sim" and moved.enable_pmu == 2
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.assembler_plans_memory and back.platform == "a2a3sim"
