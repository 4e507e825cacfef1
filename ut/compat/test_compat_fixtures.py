"""The compat plugin in real pytest sessions: PyPTO's fixtures, scopes, options, names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_pypto.plugin.paths import kept_name

KIT = Path(__file__).with_name("pypto_kit.py")
COMPAT = 'pytest_plugins = ["pytest_pypto.compat"]\n'


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(COMPAT)
    shutil.copy(KIT, pytester.path / "pypto_kit.py")
    pytester.syspathinsert()
    return pytester


def test_platform_parametrized_tests_run_once_per_requested_cell(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_p="""
        import pytest
        from pytest_pypto.compat.harness import PLATFORMS, ONBOARD_PLATFORMS
        from pypto_kit import TorchAdd

        @pytest.mark.parametrize("platform", PLATFORMS)
        def test_add(test_runner, platform):
            result = test_runner.run(TorchAdd(platform=platform))
            assert result.passed, result.error
            assert result.platform == platform

        @pytest.mark.parametrize("platform", ONBOARD_PLATFORMS)
        def test_board(test_runner, platform):
            raise AssertionError("never runs on a sim-only session")
        """
    )
    result = suite.runpytest("--pypto-arch=all", "-v", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines_random(
        [
            "*test_p.py::test_add[[]a2a3sim[]] PASSED*",
            "*test_p.py::test_add[[]a5sim[]] PASSED*",
            "*cell a2a3 not requested*",
        ]
    )
    assert "a2a3sim-a2a3sim" not in result.stdout.str()


@pytest.mark.parametrize("load", ["conftest", "--pypto-alias"])
def test_a_platform_parameter_names_the_cell_of_a_kernel_fixture_test(
    suite: pytest.Pytester, load: str
) -> None:
    # test_runner with a platform parameter: the parameter is the cell (not multiplied), so
    # the cell property and the markers see it (the plugin's cells never name them).
    suite.makepyfile(
        test_n="""
        import pytest

        @pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
        @pytest.mark.pypto_arch("a5")
        def test_cell(test_runner, platform, request):
            assert dict(request.node.user_properties)["pypto_platform"] == platform
        """
    )
    args = ["--pypto-arch=all", "-v", "-rs"]
    if load != "conftest":  # the alias loads the compat plugin at configure time
        suite.makeconftest("")
        args.append(load)
    result = suite.runpytest(*args)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines_random(
        ["*test_cell[[]a5sim[]] PASSED*", "*runs only on a5 (pypto_arch marker)*cell a2a3sim*"]
    )


def test_session_scoped_runner_serves_suite_fixtures(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_s="""
        import pytest
        from pypto_kit import TorchAdd

        @pytest.fixture(scope="module")
        def shared(test_runner):
            return test_runner

        @pytest.fixture(scope="session")
        def cfg(test_config):
            return test_config

        def test_runner_from_module_fixture(shared, test_runner):
            assert shared is test_runner
            assert shared.run(TorchAdd()).passed

        def test_config_per_cell(cfg, pypto_platform):
            assert cfg.platform == pypto_platform
        """
    )
    result = suite.runpytest("--pypto-arch=all", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines_random(
        [
            "*test_runner_from_module_fixture[[]a5sim[]] PASSED*",
            "*test_config_per_cell[[]a2a3sim[]] PASSED*",
        ]
    )


def test_a_case_runs_on_the_tests_cell(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_c="""
        from pypto_kit import TorchAdd

        def test_cell(test_runner, request):
            result = test_runner.run(TorchAdd())
            assert result.platform == request.node.callspec.params["pypto_platform"]
        """
    )
    suite.runpytest("--pypto-arch=all").assert_outcomes(passed=2)


def test_pypto_option_spellings(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_o="""
        def test_opts(test_config, pytestconfig):
            assert test_config.platform == "a5sim"
            assert test_config.enable_dep_gen is True
            assert test_config.enable_chip_swimlane == 4 and test_config.enable_dump_args == 2
            assert test_config.memory_planner.name == "PTOAS"
            assert test_config.codegen_only is True
        """
    )
    result = suite.runpytest(
        "--platform=a5sim", "--enable-dep-gen", "--enable-chip-swimlane", "--dump-args", "2",
        "--memory-planner=ptoas", "--codegen-only", "-v",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_opts[[]a5sim[]] PASSED*"])
    bad = suite.runpytest("--platform=a7sim")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--platform: invalid value 'a7sim'*a2a3sim*"])


def test_failed_case_is_classified_and_reported(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_f="""
        from pypto_kit import TorchAdd

        def test_off(test_runner):
            result = test_runner.run(TorchAdd(off=1.0))
            assert result.passed, result.error
        """
    )
    result = suite.runpytest("--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*output 'c':*mismatch*", "*reproduce: pytest*"])
    assert "--pypto-alias" not in result.stdout.str()
    assert 'name="pypto_failure_class" value="mismatch"' in (suite.path / "out.xml").read_text()
    # a suite run in zero-edit mode gets a reproduce line that keeps the alias
    aliased = suite.runpytest("--pypto-alias")
    aliased.stdout.fnmatch_lines(["*reproduce: pytest*--pypto-alias*"])


def test_pypto_names_import_at_their_paths(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_n="""
        import pytest
        from pytest_pypto.compat.pypto import LogLevel, ir, backend
        from pytest_pypto.compat.pypto.pypto_core import LogLevel as CoreLogLevel, ir as core_ir
        from pytest_pypto.compat.pypto.runtime import configure_log
        from pytest_pypto.compat.pypto.backend import BackendType, set_backend_type, reset_for_testing
        from pytest_pypto.compat.pypto.backend.pto_backend import PartialCodegenError
        from pytest_pypto.compat.pypto.ir.compiled_program import CompiledProgram
        from pytest_pypto.compat.pypto.ir.pass_manager import OptimizationStrategy, PassManager
        from pytest_pypto.compat.pypto.pypto_core.passes import MemoryPlanner
        from pytest_pypto.compat.pypto.runtime import ChipWorker, DistributedWorker, RunConfig, RunResult, run, compile_program
        from pytest_pypto.compat.pypto.runtime.runner import RunConfig as RC2
        from pytest_pypto.compat.pypto.runtime.distributed_runner import execute_distributed
        from pytest_pypto.compat.pypto.runtime.tensor_spec import ScalarSpec, TensorSpec
        from pytest_pypto.compat.harness import (
            PLATFORMS, SIM_PLATFORMS, ONBOARD_PLATFORMS, SIM_PLATFORM_IDS, ONBOARD_PLATFORM_IDS,
            ALL_PLATFORM_IDS, DataType, PTOTestCase, platform_to_backend,
        )
        from pytest_pypto.ir.errors import CompileError, UnsupportedFeatureError
        from pypto_kit import AddProgram

        def test_names(tmp_path):
            assert RC2 is RunConfig and PartialCodegenError is CompileError
            assert CoreLogLevel is LogLevel and core_ir is ir and LogLevel.ERROR.name == "ERROR"
            assert configure_log(level="error") is None  # accepted, no effect
            reset_for_testing()
            set_backend_type(BackendType.Ascend950)
            compiled = ir.compile(AddProgram, str(tmp_path / "out"),
                                  memory_planner=MemoryPlanner.PTOAS, skip_ptoas=True)
            reset_for_testing()
            assert isinstance(compiled, CompiledProgram) and compiled.platform == "a5sim"
            accepted = compiled.manifest.extra["accepted_without_effect"]
            assert accepted == {"memory_planner": "PTOAS", "skip_ptoas": True}
            assert ir.compile(AddProgram, platform="a2a3sim").platform == "a2a3sim"
            assert OptimizationStrategy.Default.value == "Default"

        def test_tier3_names_fail_when_used():
            import pytest_pypto.compat.pypto.language.distributed as pld
            from pytest_pypto.compat.pypto import passes
            from pytest_pypto.compat.pypto.debug import torch_codegen
            from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
            from pytest_pypto.compat.pypto.runtime.device_runner import execute_on_device

            assert passes.MemoryPlanner is MemoryPlanner
            # multi-chip programs run on simulated devices (docs/design/distributed.md)
            assert repr(pld.DistributedTensor[[4, 4], pld.world_size]).startswith("pl.Tensor")
            assert DistributedConfig(device_ids=[0, 1]).device_ids == [0, 1]
            for name, use in [
                ("execute_distributed", lambda: execute_distributed(None)),
                ("torch_codegen", lambda: torch_codegen.generate),
                ("execute_on_device", lambda: execute_on_device("w")),
            ]:
                with pytest.raises(UnsupportedFeatureError, match=name + ".*tier 3"):
                    use()
        """
    )
    suite.runpytest().assert_outcomes(passed=2)


def test_pypto_path_options_and_case_selections(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_k="""
        from pytest_pypto.compat.pypto.pypto_core.passes import MemoryPlanner
        from pypto_kit import TorchAdd

        def test_kept(test_runner, device_ids):
            assert device_ids == [0, 1]  # a sim session simulates the devices --device names
            case = TorchAdd(memory_planner=MemoryPlanner.DSA_RP)
            assert case.get_memory_planner() is MemoryPlanner.DSA_RP
            assert test_runner.run(case).passed
        """
    )
    result = suite.runpytest("--save-kernels", "--kernels-dir=kept", "--dump-passes", "--device=0-1")
    result.assert_outcomes(passed=1)
    kept = suite.path / "kept" / kept_name("test_k.py::test_kept[a2a3sim]")
    manifest = __import__("json").loads((kept / "kernel_config.json").read_text())
    assert manifest["extra"]["accepted_without_effect"] == {"memory_planner": "DSA_RP"}
    assert sorted(p.name for p in (kept / "passes").iterdir())[0].startswith("01_")


def test_runtime_entry_points_with_pyptos_specs(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_r="""
        import numpy as np
        import torch
        from pytest_pypto.compat.pypto.runtime import RunConfig, ScalarSpec, TensorSpec, compile_program, run
        from pypto_kit import AddProgram, C, R

        def test_run(tmp_path):
            a, b = torch.ones(R, C), torch.full((R, C), 2.0)
            c = np.zeros((R, C), np.float32)
            run(AddProgram, a, b, c, config=RunConfig(platform="a5sim"))
            assert (c == 3.0).all()
            out = torch.zeros(R, C)  # a torch Out tensor receives the result in place
            run(AddProgram, a, b, out, config=RunConfig(platform="a2a3sim"))
            assert bool((out == 3.0).all())
            compiled = compile_program(AddProgram, tmp_path / "w", backend_type=RunConfig(platform="a5").arch)
            assert compiled.platform == "a5sim" and (tmp_path / "w" / "kernel_config.json").is_file()

        def test_specs():
            spec = TensorSpec("x", [2, 2], torch.bfloat16)  # PyPTO's runtime spec: torch dtypes
            assert spec.dtype is torch.bfloat16  # kept as given: PyPTO code maps it itself
            made = spec.create_tensor()
            assert made.dtype is torch.bfloat16 and made.shape == (2, 2) and not made.any()
            assert bool((TensorSpec("y", [3], torch.int32, init_value=7).create_tensor() == 7).all())
            ones = TensorSpec("z", [2], torch.float32, init_value=torch.ones).create_tensor()
            assert ones.tolist() == [1.0, 1.0]
            scalar = ScalarSpec("n", 7, "int32")  # PyPTO's (name, value, ctype)
            assert (scalar.value, scalar.dtype.name) == (7, "INT32")
        """
    )
    suite.runpytest().assert_outcomes(passed=2)


def test_a_module_level_unsupported_program_does_not_stop_collection(
    suite: pytest.Pytester,
) -> None:
    suite.makepyfile(
        test_m="""
        import pytest_pypto.compat.pypto.language as pl
        from pypto_kit import TorchAdd

        @pl.program
        class Later:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    pass

        class UsesLater(TorchAdd):
            def get_program(self):
                return Later

        def test_good(test_runner):
            assert test_runner.run(TorchAdd()).passed

        def test_uses_it(test_runner):
            result = test_runner.run(UsesLater())
            assert result.passed, result.error
        """
    )
    result = suite.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=1)
    assert "ERROR collecting" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*pl.at is not supported*", "*test_m.py:8:*"])
