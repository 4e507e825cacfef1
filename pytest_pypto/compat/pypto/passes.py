"""``pypto.passes`` (``from pypto import passes``): PyPTO's pass selections, its
``PassContext`` and its per-pass factories (docs/design/checks.md §7a).

``passes.<name>()`` returns a pass: called with a program it returns a new program,
the input left as it was.  Each factory runs the stretch of our own pipeline
(compiler/api.py) that does PyPTO's pass's work; a factory whose work our parser or
another stretch already did returns the program's copy unchanged.  The pass runs for the
backend ``pypto.backend`` selects, under the innermost ``PassContext``'s options.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.arch import spec
from pytest_pypto.compat.selections import MemoryPlanner, PassDumpLevel, get_backend_type
from pytest_pypto.compiler.api import PASSES
from pytest_pypto.compiler.passes import PassContext as Ours
from pytest_pypto.compiler.passes import PassManager
from pytest_pypto.ir.clone import clone_program
from pytest_pypto.ir.registry import REGISTRY

# PyPTO's pass -> the names of our passes (compiler/api.py) doing its work, in order
_OURS: dict[str, tuple[str, ...]] = {
    "inline_functions": (),
    "unroll_loops": (),
    "ctrl_flow_transform": (),
    "convert_to_ssa": (),
    "simplify": (),
    "normalize_stmt_structure": (),
    "flatten_call_expr": (),
    "outline_hierarchy_scopes": (),
    "outline_incore_scopes": (),
    "outline_cluster_scopes": (),
    "convert_tensor_to_tile_ops": ("check_unsupported", "select_entry", "check_placement",
                                   "flatten_calls", "lower_tensor_ops"),
    "optimize_orch_tensors": (),
    "lower_composite_ops": (),
    "flatten_tile_nd_to_2d": (),
    "auto_tile_matmul_l0": ("auto_tile_l0",),
}

_active: list[PassContext] = []


class PassContext:
    """``with passes.PassContext(instruments, memory_planner=..., ...)``: the options the
    passes run under.  Of them only the accumulator double buffering changes what we do:
    AutoL0 may choose it under the DSA_RP and PTOAS planners, and under PYPTO when
    ``enable_pypto_l0c_double_buffer`` is set (PyPTO's default planner is PYPTO)."""

    def __init__(self, instruments: Any = (), *, memory_planner: MemoryPlanner | None = None,
                 enable_pypto_l0c_double_buffer: bool = False, **options: Any) -> None:
        self.instruments = list(instruments or ())
        self.memory_planner = memory_planner or MemoryPlanner.PYPTO
        self.enable_pypto_l0c_double_buffer = bool(enable_pypto_l0c_double_buffer)
        self.options = options

    @property
    def l0c_double_buffer(self) -> bool:
        return self.memory_planner is not MemoryPlanner.PYPTO or \
            self.enable_pypto_l0c_double_buffer

    @staticmethod
    def current() -> PassContext | None:
        return _active[-1] if _active else None

    def __enter__(self) -> PassContext:
        _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)


class _Pass:
    """One of PyPTO's passes: ``pass_(program)`` is the rewritten copy."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<pass {self.name}>"

    def get_name(self) -> str:
        return self.name

    def __call__(self, program: Any) -> Any:
        ctx_options = PassContext.current() or PassContext()
        ours = [p for name in _OURS[self.name] for p in PASSES if p.name == name]
        ctx = Ours(arch=spec(get_backend_type().arch_name), registry=REGISTRY.as_dict(),
                   source_lines=tuple(program.source_lines),
                   l0c_double_buffer=ctx_options.l0c_double_buffer)
        return PassManager(ours).run(clone_program(program), ctx)


def _factory(name: str) -> Any:
    def make() -> _Pass:
        return _Pass(name)

    make.__name__ = name
    make.__doc__ = f"PyPTO's ``{name}`` pass (module docstring)."
    return make


globals().update({name: _factory(name) for name in _OURS})

__all__ = ["MemoryPlanner", "PassContext", "PassDumpLevel", *_OURS]
