"""`compile(program, config)`: run the passes for the config's arch; the artifact in memory.

Compilation reads only `config.arch` for its decisions; the execution mode is
recorded in the manifest (the runtime refuses an artifact of another platform)
but changes nothing else.  The output is deterministic: the same program and
arch give a byte-identical artifact, so the harness can cache it by content.
"""

from __future__ import annotations

import atexit
import functools
import gc
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_pypto._version import __version__
from pytest_pypto.arch import MODE_NAMES, spec
from pytest_pypto.compiler import (
    auto_tile_l0,
    batching,
    capacity,
    codegen_tasks,
    cores,
    coverage,
    directions,
    memref_slots,
    memspace,
    structure,
    tensor_lowering,
    typecheck,
)
from pytest_pypto.compiler.codegen import kernel_source
from pytest_pypto.compiler.codegen_orchestration import (
    orchestration_source,
    uses_explicit_scheduling,
)
from pytest_pypto.compiler.directions import returned_params
from pytest_pypto.compiler.listing import (
    header,
    kernel_listing,
    orchestration_listing,
    render_program,
)
from pytest_pypto.compiler.passes import KernelFacts, Pass, PassContext, PassManager
from pytest_pypto.compiler.walk import expressions_fixed
from pytest_pypto.config import RunConfig
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir import printer
from pytest_pypto.ir.artifact import (
    SIM_BACKEND,
    ArgInfo,
    ArtifactInMemory,
    CompiledProgram,
    KernelInfo,
    Manifest,
    Text,
)
from pytest_pypto.ir.clone import clone_program
from pytest_pypto.ir.registry import REGISTRY, OpSpec
from pytest_pypto.ir.run_script import RUN_SCRIPT, render_run_script
from pytest_pypto.ir.types import Direction, DynVar, ScalarType, TensorType
from pytest_pypto.language.deferred import DeferredProgram

PASSES: list[Pass] = [
    Pass("check_unsupported", structure.check_unsupported, keeps_exprs=True),
    Pass("select_entry", structure.select_entry, keeps_exprs=True),
    Pass("check_placement", structure.check_placement, reports_rewrites=True),
    Pass("flatten_calls", structure.flatten_calls, reports_rewrites=True),
    Pass("lower_tensor_ops", tensor_lowering.lower_tensor_ops, reports_rewrites=True),
    Pass("check_directions", directions.check_directions, keeps_exprs=True),
    Pass("check_memref_slots", memref_slots.check_memref_slots, keeps_exprs=True),
    Pass("auto_tile_l0", auto_tile_l0.auto_tile_l0, reports_rewrites=True),
    Pass("infer_memory_spaces", memspace.infer_memory_spaces),
    Pass("check_types_for_arch", typecheck.check_types_for_arch, keeps_exprs=True),
    Pass("check_bounds", typecheck.check_bounds, keeps_exprs=True),
    Pass("check_capacity", capacity.check_capacity, keeps_exprs=True),
    Pass("classify_cores", cores.classify_cores, keeps_exprs=True),
]


@functools.cache
def ir_printer() -> Callable[[n.Program], str]:
    """The language's IR printer when it is there, else the compiler's plain rendering
    (looked up once: every compile asks twice)."""
    for name in ("print_program", "format_program", "program_to_str", "render_program"):
        fn = getattr(printer, name, None)
        if callable(fn):
            return fn
    return render_program


def lower(
    program: n.Program,
    config: RunConfig | None = None,
    *,
    registry: Mapping[str, OpSpec] | None = None,
    dump_dir: Path | None = None,
) -> tuple[n.Program, PassContext]:
    """Run every pass on a copy of ``program`` (ir/clone.py): the checked IR and the decisions."""
    __tracebackhide__ = True  # a failing test shows its own line and the diagnostic
    if not isinstance(program, n.Program):
        if isinstance(program, DeferredProgram):
            raise program.error()  # the module-level program's parse error, deferred
        raise TypeError(
            f"expected a program decorated with @pl.program, got {type(program).__name__} "
            f"({program!r:.60})"
        )
    if config is None:
        config = RunConfig()
    ctx = PassContext(
        arch=spec(config.arch),
        registry=registry if registry is not None else REGISTRY.as_dict(),
        source_lines=tuple(program.source_lines),
        assembler_plans_memory=config.assembler_plans_memory,
    )
    work = PassManager(PASSES).run(
        clone_program(program), ctx, dump_dir=dump_dir, printer=ir_printer()
    )
    return work, ctx


_scratch_root: Path | None = None
_scratch_count = itertools.count()


def scratch_dir(program: object) -> Path:
    """Where an artifact compiled without ``output_dir`` is written if it ever is: a
    fresh name (program, process, counter) under one per-process temporary root
    removed at exit.  Only the root is created here; nothing is written into it."""
    global _scratch_root
    if _scratch_root is None:
        _scratch_root = Path(tempfile.mkdtemp(prefix="pypto-artifacts-"))
        atexit.register(shutil.rmtree, _scratch_root, True)
    name = getattr(program, "name", None) or "program"
    return _scratch_root / f"{name}-{os.getpid()}-{next(_scratch_count):05d}"


def compile(  # noqa: A001  (PyPTO's name)
    program: n.Program,
    config: RunConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    registry: Mapping[str, OpSpec] | None = None,
    batch_loops: bool | None = None,
    accepted: Mapping[str, object] | None = None,
    write: bool | None = None,
) -> CompiledProgram:
    """Compile ``program`` for ``config.arch``: the artifact, in memory.

    ``output_dir`` is the artifact's directory (None: a fresh temporary one).  Its
    files are written there now when ``write`` (None: when ``output_dir`` is given or
    passes are dumped), else only when something calls ``artifact_dir()``.  Pass dumps
    (``config.dump_passes``) are written into ``<output_dir>/passes`` while compiling
    either way.  The user's program is never mutated (the passes work on a copy).
    ``batch_loops`` turns batched loop execution (compiler/batching.py) on or off;
    None reads ``PYPTO_BATCH_LOOPS`` (default on).  Either way the numerics are
    identical; only speed changes.  ``accepted``: PyPTO compile keywords with no
    effect here, recorded in the manifest.
    """
    __tracebackhide__ = True  # a failing test shows its own line and the diagnostic
    if config is None:
        config = RunConfig()
    elif not isinstance(config, RunConfig):
        platform = config if isinstance(config, str) else "a2a3sim"
        raise TypeError(
            f"compile(): config must be a RunConfig, got {type(config).__name__} "
            f"({config!r:.40}); e.g. config=RunConfig(platform='{platform}')"
        )
    home = Path(output_dir) if output_dir is not None else scratch_dir(program)
    if write is None:
        write = output_dir is not None or bool(config.dump_passes)
    with _gc_paused():
        work, ctx = lower(
            program, config, registry=registry,
            dump_dir=home / "passes" if config.dump_passes else None,
        )
        if batch_loops is None:
            batch_loops = batching.enabled_by_env()
        memory = generate_artifact(
            work, ctx, config, home, batch_loops=batch_loops, accepted=accepted
        )
        ctx.expr_memo.clear()  # freed while the collector is still off
    compiled = CompiledProgram(memory=memory, ir_text=functools.partial(ir_printer(), work))
    if write:
        compiled.artifact_dir()  # written now
    return compiled


class _gc_paused:  # noqa: N801  (used as a function: ``with _gc_paused():``)
    """The cyclic garbage collector off while compiling.

    The IR copy and the passes allocate millions of small objects for a long kernel,
    and the collector's full passes over them (and over everything else alive)
    were about half of the compile time of a 16k-op kernel (bench/bench_compile.py).
    IR trees hold no reference cycles, so reference counting frees them anyway;
    collection resumes, with anything left over, when compiling ends.  (A class, not
    a generator context manager: it is entered once per compile.)
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


def dyn_names(program: n.Program) -> dict[DynVar, str]:
    """A unique, stable manifest name per ``pl.dynamic`` object of the parameters:
    ``name@k``, k counting distinct objects in order of first appearance (functions in
    program order, as the IR printer numbers them).  Two ``pl.dynamic("M")`` calls are
    two dims, so the runtime must not bind them together by their shared name."""
    names: dict[DynVar, str] = {}
    for fn in program.functions.values():
        for p in fn.params:
            if isinstance(p.type, TensorType):
                for d in p.type.shape:
                    if isinstance(d, DynVar) and d not in names:
                        names[d] = f"{d.name}@{len(names)}"
    return names


def _arg(p: n.Param, fully_written: bool = False,
         dyn: dict[DynVar, str] | None = None) -> ArgInfo:
    t = p.type
    if isinstance(t, ScalarType):
        return ArgInfo(p.name, "scalar", Direction.SCALAR.value, t.dtype.name)
    assert isinstance(t, TensorType)
    direction = p.direction if p.direction is not Direction.SCALAR else Direction.IN
    dyn = dyn or {}
    shape = [d if isinstance(d, int) else dyn.get(d, str(d)) for d in t.shape]
    return ArgInfo(p.name, "tensor", direction.value, t.dtype.name, shape, fully_written)


def _extra(
    entry: n.Function, config: RunConfig, accepted: Mapping[str, object] | None
) -> dict[str, object]:
    """Manifest extras: the pass list, the entry's span (run-time staging errors), and
    PyPTO selections accepted without effect on this toolchain (README, migrating)."""
    extra: dict[str, object] = {"passes": [p.name for p in PASSES]}
    if uses_explicit_scheduling(entry):
        extra["explicit_scheduling"] = True
    if entry.span is not None:
        extra["entry_span"] = [entry.span.file, entry.span.line, entry.span.col]
    recorded = {**config.accepted_without_effect(), **(accepted or {})}
    if recorded:
        extra["accepted_without_effect"] = {
            k: v if isinstance(v, (str, int, float, bool)) else repr(v)
            for k, v in recorded.items()
        }
    return extra


def generate_artifact(
    program: n.Program,
    ctx: PassContext,
    config: RunConfig,
    home: Path,
    *,
    batch_loops: bool = True,
    accepted: Mapping[str, object] | None = None,
) -> ArtifactInMemory:
    """Codegen: kernels, orchestration and the manifest; listings rendered on first use."""
    with expressions_fixed(ctx.expr_memo):  # codegen rewrites no expression
        return _generate(program, ctx, config, home, batch_loops, accepted)


def _generate(
    program: n.Program,
    ctx: PassContext,
    config: RunConfig,
    home: Path,
    batch_loops: bool,
    accepted: Mapping[str, object] | None,
) -> ArtifactInMemory:
    platform = config.platform
    sim_backend = SIM_BACKEND if config.is_sim else None
    texts: dict[str, Text] = {}
    infos: list[KernelInfo] = []
    func_ids: dict[str, int] = {}
    written: dict[str, set[int]] = {}
    dyn = dyn_names(program)
    returns: dict[str, list[int]] = {}  # returned_params memo: the IR is final here
    for func_id, fn in enumerate(structure.kernels(program)):
        func_ids[fn.name] = func_id
        facts = ctx.facts(fn.name)
        head = header(f"kernel {fn.name}", platform, sim_backend)
        plans = batching.plan_kernel(fn, ctx.registry, batch_loops)
        texts[f"kernels/{fn.name}.py"] = kernel_source(
            fn, ctx.registry, head[2:], plans, functools.partial(codegen_tasks.task_variant, fn))
        texts[f"kernels/{fn.name}.txt"] = functools.partial(
            _kernel_listing, fn, facts, func_id, platform, sim_backend, plans, ctx.registry
        )
        written[fn.name] = coverage.fully_written_params(fn, plans)
        infos.append(KernelInfo(
            name=fn.name,
            func_id=func_id,
            core_type=facts.core_type,
            args=[_arg(p, i in written[fn.name], dyn) for i, p in enumerate(fn.params)],
            source=f"kernels/{fn.name}.py",
            listing=f"kernels/{fn.name}.txt",
            returns=returned_params(fn, memo=returns),
        ))
    entry = program.functions[ctx.entry]  # type: ignore[index]
    head = header(f"orchestration of {program.name}", platform, sim_backend)
    texts["orchestration.py"] = orchestration_source(
        program, entry, ctx.registry, head[2:], returns, pipe_slots=(ctx.arch.pipe_slots_one_way, ctx.arch.pipe_slots_each_way))
    texts["orchestration.txt"] = functools.partial(
        orchestration_listing, program, entry, func_ids, ctx.kernels, platform, sim_backend
    )
    entry_written = coverage.entry_fully_written(entry, written)
    manifest = Manifest(
        program=program.name,
        platform=platform,
        arch=ctx.arch.name,
        mode=MODE_NAMES[config.execution_mode],
        toolchain_version=__version__,
        sim_backend=sim_backend,
        entry=entry.name,
        entry_args=[_arg(p, i in entry_written, dyn) for i, p in enumerate(entry.params)],
        entry_returns=returned_params(entry, program, memo=returns),
        kernels=infos,
        extra=_extra(entry, config, accepted),
    )
    texts[RUN_SCRIPT] = functools.partial(render_run_script, manifest)
    return ArtifactInMemory(manifest, texts, home)


def _kernel_listing(
    fn: n.Function, facts: KernelFacts, func_id: int, platform: str, sim_backend: str | None,
    plans: Mapping[int, batching.LoopPlan], registry: Mapping[str, OpSpec],
) -> str:
    why = codegen_tasks.variant_reason(fn, registry)
    return kernel_listing(
        fn, facts, func_id, platform, sim_backend, [p.describe() for p in plans.values()],
        "yes (docs/design/runtime.md §6)" if why is None else f"none: {why}",
    )
