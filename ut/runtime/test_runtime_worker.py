"""Worker: platforms, artifact loading and caching, cores, blocking reads, `pytest_pypto.run`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from runtime_artifacts import K, S, T

import pytest_pypto
from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import CompiledProgram, read_manifest
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.protocol import DeviceFailure
from pytest_pypto.runtime.worker import OnboardExecutionError, SimRun, Worker
from ut.helpers import line_of

F = [16, 32]


def _copy(artifact, platform="a2a3sim"):
    return artifact(
        platform=platform,
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration="""
            out = rt.submit("copy", (x, out), returns=(1,))
            return (out,)
        """,
    )


@pytest.mark.parametrize(("compiled_for", "worker"), [("a5sim", "a2a3sim"), ("a2a3sim", "a5sim")])
def test_artifact_of_another_platform_is_refused_naming_both(artifact, compiled_for, worker):
    art = _copy(artifact, compiled_for)
    with pytest.raises(SimulationError) as info:
        Worker(worker).run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))
    assert f"compiled for platform '{compiled_for}'" in info.value.message
    assert f"this worker runs '{worker}'" in info.value.message
    assert f"RunConfig(platform='{worker}')" in info.value.hint


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_onboard_worker_explains_what_is_missing(platform):
    with pytest.raises(OnboardExecutionError) as info:
        Worker(platform)
    assert isinstance(info.value, SimulationError)
    assert f"platform '{platform}'" in info.value.message
    assert "Ascend NPU" in info.value.message and "onboard runtime" in info.value.message
    assert f"'{platform}sim'" in info.value.hint


def test_unknown_platform_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'a2a3sim', 'a2a3', 'a5sim', 'a5'"):
        Worker("a3sim")


def test_a5sim_runs_its_own_artifact_and_records_the_platform(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    out = np.zeros(F, np.float32)
    run = Worker("a5sim").run(_copy(artifact, "a5sim"), x, out)
    np.testing.assert_array_equal(out, x)
    assert (run.platform, run.sim_backend) == ("a5sim", "numpy-functional")
    deps = run.deps()
    assert (deps["platform"], deps["arch"]) == ("a5sim", "a5")
    assert run.deps_path().name == "deps.json" and run.deps_path().parent == run.run_dir()
    assert run.kernel_seconds > 0.0


def _mix(artifact, n, core_type, platform="a2a3sim"):
    return artifact(
        platform=platform,
        entry_args=[T("x", [8 * n, 16]), T("out", [8 * n, 16], direction="Out")],
        kernels=[K("blk", [T("a", [8, 16]), T("o", [8, 16], direction="Out")], "o[...] = a",
                   core_type=core_type)],
        orchestration=f"""
            for i in range({n}):
                rt.submit("blk", (rt.slice(x, [8, 16], [8 * i, 0]),
                                  rt.slice(out, [8, 16], [8 * i, 0])))
            return (out,)
        """,
    )


def test_mix_tasks_take_one_aic_and_two_aiv_of_one_cluster(artifact):
    x = np.arange(5 * 8 * 16, dtype=np.float32).reshape(40, 16)
    out = np.zeros_like(x)
    run = Worker("a2a3sim").run(_mix(artifact, 5, "mix"), x, out, config=RunConfig(sim_clusters=2))
    np.testing.assert_array_equal(out, x)
    placed = [(t["step"], tuple(t["slots"])) for t in run.tasks]
    assert placed == [
        (0, ("aic0", "aiv0", "aiv1")),
        (0, ("aic1", "aiv2", "aiv3")),
        (1, ("aic0", "aiv0", "aiv1")),
        (1, ("aic1", "aiv2", "aiv3")),
        (2, ("aic0", "aiv0", "aiv1")),
    ]
    assert run.deps()["cores"] == {"clusters": 2, "aic": 2, "aiv": 4}


@pytest.mark.parametrize(("core_type", "per_step"), [("aiv", 16), ("aic", 8), ("mix", 8)])
def test_default_core_counts_come_from_the_arch_table(artifact, core_type, per_step):
    n = 20
    x = np.zeros([8 * n, 16], np.float32)
    run = Worker("a5sim").run(_mix(artifact, n, core_type, "a5sim"), x, np.zeros_like(x))
    steps = [t["step"] for t in run.tasks]
    assert steps.count(0) == per_step  # docs/design/arch.md §4: 8 clusters = 8 AIC + 16 AIV
    assert all(len(t["slots"]) == (3 if core_type == "mix" else 1) for t in run.tasks)


def test_dependent_task_is_placed_after_its_producer(artifact, rng):
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[
            K("k1", [T("a", F), T("t", F, direction="Out")], "t[...] = a + 1", "aic"),
            K("k2", [T("t", F), T("o", F, direction="Out")], "o[...] = t * 2", "aiv"),
        ],
        orchestration="""
            tmp = rt.create_tensor([16, 32], "FP32")
            rt.submit("k1", (x, tmp))
            out = rt.submit("k2", (tmp, out), returns=(1,))
            return (out,)
        """,
    )
    run = Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))
    assert [(t["step"], t["slots"]) for t in run.tasks] == [(0, ["aic0"]), (1, ["aiv0"])]


def _read_then_use(artifact):
    """A blocking scalar read of an intermediate feeds the next task as a Scalar."""
    return artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[
            K("colmax", [T("a", F), T("t", [1, 32], direction="Out")],
              "t[...] = a.max(axis=0, keepdims=True)"),
            K("scale", [T("a", F), S("s"), T("o", F, direction="Out")], "o[...] = a / s"),
        ],
        orchestration="""
            t = rt.create_tensor([1, 32], "FP32")
            t = rt.submit("colmax", (x, t), returns=(1,))
            m = rt.read(t, (0, 3))
            out = rt.submit("scale", (x, m, out), returns=(2,))
            return (out,)
        """,
    )


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_read_waits_for_the_producer(artifact, rng, seed):
    x = rng.uniform(1, 2, F).astype(np.float32)
    out = np.zeros(F, np.float32)
    run = Worker("a2a3sim").run(_read_then_use(artifact), x, out,
                                config=RunConfig(schedule_seed=seed))
    np.testing.assert_allclose(out, x / x[:, 3].max(), rtol=1e-6)
    assert run.tasks[1]["args"][1]["value"] == pytest.approx(float(x[:, 3].max()))


def test_write_lands_before_later_tasks_and_after_earlier_ones(artifact):
    art = artifact(
        entry_args=[T("out", F, direction="Out")],
        kernels=[
            K("fill", [T("o", F, direction="Out")], "o[...] = 1.0"),
            K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a"),
        ],
        orchestration="""
            t = rt.create_tensor([16, 32], "FP32")
            rt.submit("fill", (t,))
            rt.write(t, (2, 5), 9.0)
            out = rt.submit("copy", (t, out), returns=(1,))
            return (out,)
        """,
    )
    out = np.zeros(F, np.float32)
    Worker("a2a3sim").run(art, out)
    expected = np.ones(F, np.float32)
    expected[2, 5] = 9.0
    np.testing.assert_array_equal(out, expected)


def test_write_into_an_in_parameter_is_refused(artifact):
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration="""
            rt.write(x, (0, 0), 1.0)
            return (out,)
        """,
    )
    with pytest.raises(SimulationError, match="entry parameter 'x', which is declared In"):
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))


@pytest.mark.parametrize(
    ("orchestration", "pattern"),
    [
        ("rt.slice(x, [16, 16], [0, 40])",
         r"starts outside dimension 1: offset 40 is not in 0..32"),
        ("rt.slice(x, [16, 16], [0, 20], [16, 16])",  # a valid extent past the source
         r"past the end of dimension 1: offset 20 \+ valid extent 16 > source extent 32"),
        ("rt.read(x, (16, 0))", "index 16 is out of range for dimension 0 of extent 16"),
        ("rt.submit('nope', (x, out))", "kernel 'nope', which the artifact does not have"),
        ("rt.submit('copy', (x,))", "got 1 arguments, but the kernel takes 2 \\(a, o\\)"),
        ("rt.submit('copy', (rt.slice(x, [8, 32], [0, 0]), out))",
         r"argument 'a' of kernel 'copy' expects Tensor\[\[16, 32\], FP32\], but the "
         r"orchestration passed Tensor\[\[8, 32\], FP32\]"),
        ("rt.submit('copy', (1.0, out))", "argument 'a' of kernel 'copy' must be a tensor"),
        ("rt.reshape(rt.slice(x, [16, 16], [0, 0]), [256])", "non-contiguous window"),
        ("rt.reshape(x, [100])", "element counts differ"),
    ],
)
def test_orchestration_misuse_is_a_simulation_error(artifact, orchestration, pattern):
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration=f"{orchestration}\nreturn (out,)",
    )
    with pytest.raises(SimulationError, match=pattern):
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))


def test_reshape_and_transpose_views_alias_the_root(artifact, rng):
    art = artifact(
        entry_args=[T("x", [4, 8]), T("out", [8, 4], direction="Out")],
        kernels=[K("copy", [T("a", [8, 4]), T("o", [8, 4], direction="Out")], "o[...] = a")],
        orchestration="""
            out = rt.submit("copy", (rt.transpose(x, 0, 1), out), returns=(1,))
            flat = rt.reshape(out, [32])
            assert rt.dim(flat, 0) == 32 and rt.read(flat, 4) == rt.read(out, (1, 0))
            return (out,)
        """,
    )
    x = rng.standard_normal([4, 8]).astype(np.float32)
    out = np.zeros([8, 4], np.float32)
    Worker("a2a3sim").run(art, x, out)
    np.testing.assert_array_equal(out, x.T)


def test_kernels_are_built_once_per_artifact(artifact):
    calls = []

    def bind(op):
        calls.append(op)
        return lambda *a, **k: None

    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")],
                   "bind('tile.noop')\no[...] = a")],
        orchestration="""
            out = rt.submit("copy", (x, out), returns=(1,))
            return (out,)
        """,
    )
    # the kernel body calls bind only to prove bind is in scope; make() itself binds nothing
    src = (art / "kernels" / "copy.py").read_text()
    (art / "kernels" / "copy.py").write_text(
        src.replace("def make(bind):\n", "def make(bind):\n    noop = bind('tile.noop')\n")
        .replace("bind('tile.noop')\n        o", "noop()\n        o")
    )
    worker = Worker("a2a3sim", bind=bind)
    for _ in range(3):
        out = np.zeros(F, np.float32)
        worker.run(art, np.ones(F, np.float32), out)
        np.testing.assert_array_equal(out, 1.0)
    assert calls == ["tile.noop"]


def test_rewritten_manifest_rebuilds_the_artifact(artifact):
    art = _copy(artifact)
    worker = Worker("a2a3sim")
    out = np.zeros(F, np.float32)
    worker.run(art, np.ones(F, np.float32), out)
    (art / "kernels" / "copy2.py").write_text(
        "def make(bind):\n    def copy(a, o):\n        o[...] = a * 2\n        return (o,)\n"
        "    return copy\n"
    )
    raw = json.loads((art / "kernel_config.json").read_text())
    raw["kernels"][0]["source"] = "kernels/copy2.py"
    (art / "kernel_config.json").write_text(json.dumps(raw))
    worker.run(art, np.ones(F, np.float32), out)
    np.testing.assert_array_equal(out, 2.0)


def test_kernel_returning_a_fresh_array_is_written_back(artifact):
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("neg", [T("a", F), T("o", F, direction="Out")], "o = -a")],
        orchestration="""
            out = rt.submit("neg", (x, out), returns=(1,))
            return (out,)
        """,
    )
    out = np.zeros(F, np.float32)
    Worker("a2a3sim").run(art, np.full(F, 2.0, np.float32), out)
    np.testing.assert_array_equal(out, -2.0)


def test_missing_manifest_is_explained(tmp_path):
    with pytest.raises(SimulationError, match="kernel_config.json is missing"):
        Worker("a2a3sim").run(tmp_path)


def test_registry_ops_run_through_the_default_binder(artifact, rng):
    """A tiled add written against the kernel ABI with real registry ops."""
    art = artifact(
        entry_args=[T("x", [64, 32]), T("y", [64, 32]), T("out", [64, 32], direction="Out")],
        kernels=[K("add", [T("a", [64, 32]), T("b", [64, 32]), T("o", [64, 32], "FP32", "Out")],
                   """
                   for r in range(0, 64, 16):
                       ta = load(a, offsets=(r, 0), shapes=(16, 32), out=VEC)
                       tb = load(b, offsets=(r, 0), shapes=(16, 32), out=VEC)
                       o = store(tadd(ta, tb, out=VEC), o, offsets=(r, 0))
                   """)],
        orchestration="""
            out = rt.submit("add", (x, y, out), returns=(2,))
            return (out,)
        """,
    )
    path = art / "kernels" / "add.py"
    path.write_text(path.read_text().replace(
        "def make(bind):\n",
        "from pytest_pypto.ir.dtypes import FP32\nfrom pytest_pypto.ir.types import TileType\n"
        "VEC = TileType((16, 32), FP32, 'Vec')\n\n"
        "def make(bind):\n    load = bind('tile.load')\n    tadd = bind('tile.add')\n"
        "    store = bind('tile.store')\n",
    ))
    x, y = (rng.standard_normal([64, 32]).astype(np.float32) for _ in range(2))
    out = np.zeros_like(x)
    Worker("a2a3sim").run(art, x, y, out)
    np.testing.assert_array_equal(out, x + y)


def test_unknown_op_in_generated_code_names_it(artifact):
    art = _copy(artifact)
    path = art / "kernels" / "copy.py"
    path.write_text(path.read_text().replace(
        "def make(bind):\n", "def make(bind):\n    bind('tile.frobnicate')\n"))
    with pytest.raises(SimulationError, match="binds op 'tile.frobnicate'"):
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))


def test_public_run_dispatches_a_compiled_program(artifact, rng):
    art = _copy(artifact, "a5sim")
    compiled = CompiledProgram(art, read_manifest(art))
    x = rng.standard_normal(F).astype(np.float32)
    out = np.zeros(F, np.float32)
    run = pytest_pypto.run(compiled, x, out, config=RunConfig(platform="a5sim"))
    assert isinstance(run, SimRun)
    np.testing.assert_array_equal(out, x)
    assert pytest_pypto.run(compiled, x, out, config=RunConfig(platform="a5sim",
                                                               codegen_only=True)) is compiled
    with pytest.raises(SimulationError, match="compiled for platform 'a5sim'"):
        pytest_pypto.run(compiled, x, out)  # default config: a2a3sim
    with pytest.raises(DeviceFailure, match="no available runtime serves a5"):
        pytest_pypto.run(compiled, x, out, config=RunConfig(platform="a5"))


def test_save_kernels_keeps_run_records_under_the_kernels_dir(artifact, tmp_path):
    cfg = RunConfig(save_kernels=True, save_kernels_dir=str(tmp_path / "keep"))
    run = Worker("a2a3sim").run(_copy(artifact), np.zeros(F, np.float32),
                                np.zeros(F, np.float32), config=cfg)
    assert run.deps_path().is_file()
    assert (tmp_path / "keep" / "runs") in run.run_dir().parents


def test_run_time_bounds_error_points_at_the_users_line(artifact, tmp_path):
    """An op's run-time check in a kernel becomes a SimulationError at the user's file:line."""
    user = tmp_path / "user_kernel.py"
    user.write_text("line one\n        t = pl.load(x, [r, 0], [8, 32])\n")
    art = artifact(
        entry_args=[T("x", F), S("r", "INDEX"), T("out", [8, 32], direction="Out")],
        kernels=[K("tail", [T("a", F), S("r", "INDEX"), T("o", [8, 32], direction="Out")],
                   "t = load(a, offsets=(r, 0), shapes=(8, 32), out=None)\no[...] = t.data")],
        orchestration="""
            out = rt.submit("tail", (x, r, out), returns=(2,))
            return (out,)
        """,
    )
    path = art / "kernels" / "tail.py"
    src = path.read_text()
    load_line = line_of(src, "load(a", contains=True)
    path.write_text(src.replace(
        "def make(bind):\n",
        f"SPANS = {{{load_line + 1}: ({str(user)!r}, 2, 13)}}\n\n"
        "def make(bind):\n    load = bind('tile.load')\n",
    ))
    with pytest.raises(SimulationError) as info:
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), 12, np.zeros([8, 32], np.float32))
    err = info.value
    assert "past the end of dimension 0: offset 12 + extent 8 > source extent 16" in err.message
    assert "task 0, kernel 'tail'" in err.message
    assert (err.file, err.line, err.column) == (str(user), 2, 13)
    assert "pl.load(x, [r, 0], [8, 32])" in str(err)  # the rendered snippet


def test_orchestration_error_points_at_the_users_line(artifact, tmp_path):
    user = tmp_path / "user_orch.py"
    user.write_text("a\nb\n        w = x[0:16, 20:36]\n")
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration="w = rt.slice(x, [16, 16], [0, 20], [16, 16])\nreturn (out,)",
    )
    path = art / "orchestration.py"
    src = path.read_text()
    line = line_of(src, "rt.slice", contains=True)
    path.write_text(f"SPANS = {{{line + 1}: [{str(user)!r}, 3, 13]}}\n" + src)
    with pytest.raises(SimulationError, match="offset 20 \\+ valid extent 16 > source extent 32") \
            as info:
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))
    assert (info.value.file, info.value.line) == (str(user), 3)


def test_failed_run_records_the_partial_graph(artifact):
    art = artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration="""
            out = rt.submit("copy", (x, out), returns=(1,))
            v = rt.read(out, (0, 0))
            rt.slice(x, [16, 16], [0, 40])
            return (out,)
        """,
    )
    with pytest.raises(SimulationError) as info:
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), np.zeros(F, np.float32))
    note = info.value.notes[-1]
    assert note.startswith("1 of 1 submitted tasks ran before the error; graph: ")
    record = json.loads(open(note.rsplit(": ", 1)[1]).read())
    assert record["failed"] is True and record["execution_order"] == [0]
    assert "= note: 1 of 1 submitted tasks ran" in str(info.value)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_write_waits_for_pending_readers(artifact, seed):
    """rt.write must not change data a submitted (not yet run) task still reads."""
    art = artifact(
        entry_args=[T("out", F, direction="Out")],
        kernels=[
            K("fill", [T("o", F, direction="Out")], "o[...] = 1.0"),
            K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a"),
        ],
        orchestration="""
            t = rt.create_tensor([16, 32], "FP32")
            rt.submit("fill", (t,))
            out = rt.submit("copy", (t, out), returns=(1,))
            rt.write(t, (0, 0), 5.0)
            return (out,)
        """,
    )
    out = np.zeros(F, np.float32)
    Worker("a2a3sim").run(art, out, config=RunConfig(schedule_seed=seed))
    np.testing.assert_array_equal(out, 1.0)
