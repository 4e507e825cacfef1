"""``pypto.passes``' PassContext and per-pass factories, and AutoL0's two alternating
accumulators (docs/design/checks.md §7a): a hand-tiled Mat matmul whose output does not fit
L0C is cut into a grid whose moving loop carries PyPTO's ``pipeline_double_buffer_c`` when
the planner allows it."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto import ir, passes
from pytest_pypto.compat.pypto.backend import BackendType, reset_for_testing, set_backend_type
from pytest_pypto.compat.pypto.passes import MemoryPlanner

DBC = '"pipeline_double_buffer_c": True'
PREFIX = ("inline_functions", "unroll_loops", "ctrl_flow_transform", "convert_to_ssa",
          "simplify", "normalize_stmt_structure", "flatten_call_expr",
          "outline_hierarchy_scopes", "outline_incore_scopes", "outline_cluster_scopes",
          "convert_tensor_to_tile_ops", "optimize_orch_tensors", "lower_composite_ops",
          "flatten_tile_nd_to_2d", "auto_tile_matmul_l0")


def direct_store(M, K, N):
    @pl.program
    class DirectStore:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                   out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            lm = pl.tile.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            rm = pl.tile.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(lm, rm)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.kernel(a, b, out)
            return out

    return DirectStore


@pytest.fixture(autouse=True)
def _a2a3():
    set_backend_type(BackendType.Ascend910B)
    yield
    reset_for_testing()


def through(program, **options):
    with passes.PassContext([], **options):
        for name in PREFIX:
            program = getattr(passes, name)()(program)
    return ir.python_print(program)


def test_every_factory_pypto_tests_call_makes_a_callable_pass():
    for name in PREFIX:
        made = getattr(passes, name)()
        assert callable(made) and made.get_name() == name


def test_a_pass_returns_a_new_program_and_leaves_its_input_alone():
    prog = direct_store(16, 64, 256)
    before = ir.python_print(prog)
    after = passes.auto_tile_matmul_l0()(prog)
    assert after is not prog
    assert ir.python_print(prog) == before
    assert "pl.tile.extract(" in ir.python_print(after) and "pl.tile.extract(" not in before


def test_pass_context_nests_and_restores():
    assert passes.PassContext.current() is None
    with passes.PassContext([], memory_planner=MemoryPlanner.PTOAS) as outer:
        with passes.PassContext([]) as inner:
            assert passes.PassContext.current() is inner
            assert not inner.l0c_double_buffer  # PyPTO's default planner, flag off
        assert passes.PassContext.current() is outer and outer.l0c_double_buffer
    assert passes.PassContext.current() is None


@pytest.mark.parametrize("options", [
    {"memory_planner": MemoryPlanner.PTOAS},
    {"memory_planner": MemoryPlanner.DSA_RP},
    {"memory_planner": MemoryPlanner.PYPTO, "enable_pypto_l0c_double_buffer": True},
])
def test_one_row_grid_alternates_two_accumulators_over_n(options):
    # PyPTO's calibrated a2a3 contract for 16x64x256 FP32: tile (16, 128, 64), dbC=2
    text = through(direct_store(16, 64, 256), **options)
    assert text.count(DBC) == 1
    head = next(line for line in text.splitlines() if DBC in line)
    assert "pl.pipeline(0, 256, 128, stage=2" in head


def test_one_column_grid_alternates_over_m():
    text = through(direct_store(256, 64, 16), memory_planner=MemoryPlanner.DSA_RP)
    head = next(line for line in text.splitlines() if DBC in line)
    assert "pl.pipeline(0, 256, 128, stage=2" in head


def test_interior_of_a_ragged_grid_has_one_marked_loop_inside_a_plain_one():
    # 320x64x320: tile (64, 128, 64); the last 64 columns are the narrower rest
    lines = through(direct_store(320, 64, 320), memory_planner=MemoryPlanner.PTOAS).splitlines()
    marked = [i for i, line in enumerate(lines) if DBC in line]
    assert len(marked) == 1
    outer = next(i for i, line in enumerate(lines) if "pl.range(0, 320, 64" in line)
    assert outer < marked[0]
    assert len(lines[marked[0]]) - len(lines[marked[0]].lstrip()) > \
        len(lines[outer]) - len(lines[outer].lstrip())


def test_pypto_planner_without_the_opt_in_keeps_one_accumulator():
    text = through(direct_store(16, 64, 256), memory_planner=MemoryPlanner.PYPTO)
    assert "pipeline_double_buffer_c" not in text
    text = through(direct_store(16, 64, 256))
    assert "pipeline_double_buffer_c" not in text


def test_a_k_cut_is_a_two_stage_pipeline_from_zero_starting_its_accumulator_at_block_zero():
    # 32x512x64 BF16: the [32, 64] FP32 output fits L0C, [32, 512] BF16 fits Mat, K is cut.
    from pytest_pypto.arch import spec
    from pytest_pypto.compiler.l0_chooser import choose_l0_tile, config_for

    k = choose_l0_tile(config_for(spec("a2a3"), 32, 64, 512, bytes_a=2, bytes_b=2,
                                  acc_dtype="FP32")).k
    assert 512 % k == 0 and k < 512
    lines = through(mat_matmul(32, 512, 64)).splitlines()
    head = [i for i, line in enumerate(lines) if f"pl.pipeline(0, 512, {k}, stage=2" in line]
    assert len(head) == 1
    init = next(line for line in lines if "pl.tile.create([32, 64]" in line)
    assert "pl.Mem.Acc" in init and init.split("=")[0].strip().split(":")[0] in lines[head[0]]
    body = lines[head[0] + 1:]
    branch = next(line for line in body if line.strip().startswith("if "))
    assert branch.strip().endswith("== 0:")
    assert any("pl.tile.matmul_acc(" in line for line in body)


def mat_matmul(M, K, N):
    @pl.program
    class MatMatmul:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                   out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            lm = pl.tile.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            rm = pl.tile.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(lm, rm)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.kernel(a, b, out)
            return out

    return MatMatmul
