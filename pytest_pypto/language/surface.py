# SPDX-License-Identifier: Apache-2.0
"""The Python-level objects behind `pl.*` spellings.

Kernel bodies are parsed, never run, so most of these objects only need to exist
(the parser recognizes them by identity) and to fail loudly if someone calls them
from plain Python.  Annotation forms (`pl.Tensor[...]`) must also work when Python
evaluates a method signature at class-definition time, so they accept any
subscript and return an inert record.
"""

from __future__ import annotations

import enum
from typing import Any


class FunctionType(enum.Enum):
    """PyPTO's function kinds (docs/design/language.md §4); the value is the IR `Function.kind`."""

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    Inline = "Inline"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Spmd = "Spmd"
    Graph = "Graph"


TIER1_FUNCTION_TYPES = frozenset({"Opaque", "Orchestration", "InCore"})
TIER2_FUNCTION_TYPES = frozenset({"Inline"})
# Hand-written cross-core kernels: a Group runs its AIC and AIV kernels as one task
# (docs/design/language.md §14).
CROSS_CORE_FUNCTION_TYPES = frozenset({"AIC", "AIV", "Group"})
ITERATORS = ("range", "parallel", "unroll", "pipeline")  # the pl.* functions a for loop iterates


class AtomicType(enum.Enum):
    """`atomic=` of `pl.store`; the IR records the value string."""

    None_ = "None_"
    Add = "Add"


class MaskPattern(enum.IntEnum):
    """`pl.tile.MaskPattern`: the column masks of gather_mask / scatter_mask (PyPTO's 1..7;
    bits read right to left, so P0101 marks columns 0, 2, 4, ...)."""

    P0101 = 1  # every 2nd column from 0
    P1010 = 2  # every 2nd column from 1
    P0001 = 3  # every 4th column from 0
    P0010 = 4  # every 4th column from 1
    P0100 = 5  # every 4th column from 2
    P1000 = 6  # every 4th column from 3
    P1111 = 7  # every column


class PadValue(enum.Enum):
    """Pad values of tiles (docs/design/language.md §15); the IR records the value string."""

    null = "null"
    zero = "zero"
    min = "min"
    max = "max"


class TileLayout(enum.Enum):
    """Box layouts of a `pl.TileView` (blayout / slayout): recorded, never simulated."""

    none_box = "none_box"
    row_major = "row_major"
    col_major = "col_major"


class CompactMode(enum.Enum):
    """Partial-tile compact mode of a `pl.TileView`: recorded, never simulated."""

    null = "null"
    normal = "normal"


class TileView:
    """`pl.TileView(...)` in a `pl.Tile[...]` annotation: an inert record of PyPTO's view.

    ``valid_shape`` (ints, or Scalars known at run time) and ``pad`` mean what they mean
    on a tile (docs/design/language.md §15): the annotation checks them against the value's type.
    The
    layout keywords (``stride``, ``start_offset``, ``blayout``, ``slayout``, ``fractal``,
    ``compact``) describe the device's storage only; they are accepted and kept here.
    """

    def __init__(
        self,
        valid_shape: Any = None,
        stride: Any = None,
        start_offset: Any = None,
        blayout: TileLayout = TileLayout.row_major,
        slayout: TileLayout = TileLayout.none_box,
        fractal: int = 512,
        pad: PadValue = PadValue.null,
        compact: CompactMode = CompactMode.null,
    ) -> None:
        self.valid_shape = None if valid_shape is None else tuple(valid_shape)
        self.stride = None if stride is None else tuple(stride)
        self.start_offset = start_offset
        self.blayout = blayout
        self.slayout = slayout
        self.fractal = fractal
        self.pad = pad
        self.compact = compact

    def __repr__(self) -> str:
        return f"pl.TileView(valid_shape={self.valid_shape!r}, pad={self.pad!r})"


class Level(enum.Enum):
    """`pl.at(level=...)`: only CORE_GROUP is in scope (Tier 1), the rest is Tier 3.

    PyPTO's hierarchy levels, so that a program naming another level parses and is
    reported as Tier 3 rather than as a misspelt attribute.
    """

    AIV = "AIV"
    AIC = "AIC"
    CORE = "CORE"
    CORE_GROUP = "CORE_GROUP"
    CHIP_DIE = "CHIP_DIE"
    CHIP = "CHIP"
    HOST = "HOST"
    CLUSTER_0 = "CLUSTER_0"
    CLUSTER_1 = "CLUSTER_1"
    CLUSTER_2 = "CLUSTER_2"
    GLOBAL = "GLOBAL"


class Role(enum.Enum):
    """`pl.function(level=pl.Level.HOST, role=...)`: a host function's role in a multi-chip
    program: the Orchestrator dispatches, a SubWorker is a Python task it runs on the host
    (docs/design/distributed.md §2, §8)."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


class SplitMode(enum.Enum):
    """`pl.split(mode)` inside `pl.at(optimizations=...)`."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"


class NotRunnable(RuntimeError):
    """Raised when a DSL-only object is called from plain Python."""


class AnnotationForm:
    """What `pl.Tensor[...]` etc. evaluate to in plain Python: an inert record.

    The parser never uses these objects; it re-reads the annotation from the source.
    """

    def __init__(self, form: str, args: Any) -> None:
        self.form = form
        self.args = args
        if form == "Scalar":
            self.dtype = args  # PyPTO's ScalarType.dtype (pl.TaskId.dtype is pl.TASK_ID)

    def __repr__(self) -> str:
        return f"pl.{self.form}[{self.args!r}]"


class _AnnotationMeta(type):
    def __getitem__(cls, args: Any) -> AnnotationForm:
        return AnnotationForm(cls.__name__, args)

    def __repr__(cls) -> str:
        return f"pl.{cls.__name__}"


class Tensor(metaclass=_AnnotationMeta):
    """`pl.Tensor[[d0, d1], dtype]`: a DDR buffer parameter or value."""


class Tile(metaclass=_AnnotationMeta):
    """`pl.Tile[[d0, d1], dtype, pl.Mem.X]`: an on-chip buffer."""


class Scalar(metaclass=_AnnotationMeta):
    """`pl.Scalar[dtype]`: a register value."""


class Out(metaclass=_AnnotationMeta):
    """`pl.Out[pl.Tensor[...]]`: a parameter written, not read."""


class InOut(metaclass=_AnnotationMeta):
    """`pl.InOut[pl.Tensor[...]]`: a parameter read and written."""


class Tuple(metaclass=_AnnotationMeta):
    """`pl.Tuple[T1, T2]`: a multi-value return annotation."""


class Array(metaclass=_AnnotationMeta):
    """`pl.Array[extent, dtype]`: an on-core array (local to a kernel)."""


ANNOTATION_FORMS = (Tensor, Tile, Scalar, Out, InOut, Tuple, Array)


class OpaqueHandle:
    """Base of PyPTO's opaque handle classes: the annotation of a handle variable
    (``ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()``, language/annots.py);
    ops produce the handles, a kernel never constructs one (docs/design/language.md §11)."""


class PrefetchAsyncContext(OpaqueHandle):
    """An asynchronous GM->L2 prefetch context (`pl.prefetch.make_context()`)."""


class AsyncEvent(OpaqueHandle):
    """The completion event of one prefetch (`pl.prefetch.async_prefetch(src, ctx)`)."""


class AsyncSession(OpaqueHandle):
    """The session of a prefetch context (`pl.prefetch.session(ctx)`), waited on with an
    event."""


class DslFunction:
    """A `pl.` function that exists only inside kernel bodies (pl.range, pl.yield_...)."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotRunnable(
            f"pl.{self.name} is kernel code: it is parsed by @pl.program, never called from Python"
        )

    def __repr__(self) -> str:
        return f"pl.{self.name}"


class _OpReference:
    """`OpStub.__doc__`: the op's reference, rendered from its registry entries on first
    access (language/opref.py), so importing `pl` renders nothing."""

    def __init__(self, class_doc: str) -> None:
        self.class_doc = class_doc

    def __get__(self, stub: Any, owner: Any = None) -> str:
        if stub is None:
            return self.class_doc
        text = stub.__dict__.get("_reference")
        if text is None:
            from pytest_pypto.language.opref import reference  # lazy: opdoc loads every op module

            text = stub.__dict__["_reference"] = reference(stub.namespace, stub.op_name)
        return text

    def __set__(self, stub: Any, value: str) -> None:
        """DslFunction's placeholder text is ignored: the rendered reference wins."""


class OpStub(DslFunction):
    __doc__ = _OpReference(
        "`pl.X` / `pl.tile.X` / `pl.tensor.X` for a registry op; the parser binds it."
    )

    def __init__(self, name: str, namespace: str = "") -> None:
        super().__init__(f"{namespace}.{name}" if namespace else name, f"The op pl.{name}.")
        self.op_name = name
        self.namespace = namespace

    @property
    def __signature__(self) -> Any:
        """`inspect.signature(pl.X)`: every keyword of every form, from the registry."""
        from pytest_pypto.language.opref import signature_of  # lazy: opdoc loads every op module

        return signature_of(self.namespace, self.op_name)


class Unsupported:
    """A PyPTO spelling this toolchain does not implement (Tier 2 or Tier 3).

    The parser raises (Tier 2) or records (Tier 3) as soon as a kernel mentions it.
    In plain Python it stays inert so that decorators and signature annotations that
    use it still evaluate; calling it returns another inert marker.
    """

    def __init__(self, name: str, tier: int, reason: str) -> None:
        self.name = name
        self.tier = tier
        self.reason = reason

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator: keep the function for the parser
        return self

    def __getattr__(self, name: str) -> Unsupported:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, item: Any) -> Unsupported:
        return self

    def __repr__(self) -> str:
        return f"pl.{self.name}"


# Region constructs (language/outline.py): recognised by identity in `with` / `for`.
at = DslFunction(
    "at", "`with pl.at(level=pl.Level.CORE_GROUP, name_hint=..., optimizations=[...])`: "
    "the region becomes an outlined InCore kernel, submitted as one task."
)
spmd = DslFunction(
    "spmd", "`with pl.spmd(n):` / `for i in pl.spmd(n):`: one launch of n blocks of a kernel, "
    "each with its block index (pl.get_block_idx())."
)
split = DslFunction("split", "`pl.split(pl.SplitMode.X)` in `optimizations=[...]` of pl.at / pl.spmd.")
cross_core_slot = DslFunction(
    "cross_core_slot", "`pl.cross_core_slot(slot_num=N)` in `optimizations=[...]` of pl.at / pl.spmd."
)
REGION_FUNCTIONS = (at, spmd)
# `for aiv_id in pl.split_aiv(2, mode=...)`: the two AIV lanes (language/split_aiv.py).
split_aiv = DslFunction(
    "split_aiv", "`for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.X):` a region run once per "
    "AIV lane, aiv_id the lane."
)
# `with pl.cluster():` co-scheduling on one cluster (language/cluster.py).
cluster = DslFunction(
    "cluster", "`with pl.cluster(name_hint=...):` the body's AIC and AIV kernels run together "
    "as one Group task."
)
# Explicit scheduling (language/scheduling.py, docs/design/scheduling.md).
class manual_scope:  # noqa: N801  (PyPTO's spelling; a class there too)
    """`with pl.manual_scope():` tasks inside are ordered only by their deps=.

    A class, as in PyPTO (isinstance/issubclass with it work); the parser recognises it
    by identity, and in plain Python it is an inert context manager."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __enter__(self) -> manual_scope:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


class PipeType(enum.Enum):
    """The hardware pipe an explicit cross-core event is raised or awaited on
    (`pl.system.sync_set` / `sync_wait`, ir/ops/sync_events.py)."""

    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    M = "M"
    V = "V"
    S = "S"
    FIX = "FIX"
    ALL = "ALL"


class ScopeMode(enum.Enum):
    """The dependency mode of a `pl.scope`: AUTO tracks dependencies (the default),
    MANUAL leaves every edge to deps= (as `pl.manual_scope`)."""

    AUTO = 0
    MANUAL = 1


class scope:  # noqa: N801  (PyPTO's spelling; a class there too)
    """`with pl.scope(mode=pl.ScopeMode.X):` a runtime scope (language/scheduling.py);
    MANUAL is `pl.manual_scope`, AUTO changes no dependency.  In plain Python an inert
    context manager."""

    def __init__(self, mode: ScopeMode = ScopeMode.AUTO) -> None:
        self.mode = mode

    def __enter__(self) -> scope:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


no_dep = DslFunction(
    "no_dep", "`self.kernel(x, pl.no_dep(t))`: this task's use of t is not tracked."
)
func_attr = DslFunction(
    "func_attr", "`pl.func_attr({...})` first in a body: the function's attributes."
)
submit = DslFunction(
    "submit", "`out, tid = pl.submit(self.kernel, *args, deps=[...])`: a task and its TaskId."
)
spmd_submit = DslFunction(
    "spmd_submit", "`out, tid = pl.spmd_submit(self.kernel, *args, core_num=n, deps=[...])`."
)
task_dummy = DslFunction(
    "task_dummy", "`barrier = pl.system.task_dummy(deps=[...])`: a dependency-only task."
)
task_invalid = DslFunction(
    "task_invalid", "`pl.system.task_invalid()`: the TaskId of no task (as None in deps=)."
)
SUBMIT_FUNCTIONS = (submit, spmd_submit)
dump_tag = DslFunction(
    "dump_tag", "`pl.dump_tag(t)`: mark a tensor for the selective argument dump of its tasks."
)
# pl.max / pl.min, also spelled pl.tile.max / pl.tile.min (Scalar max/min, not reductions).
SCALAR_MINMAX = {
    "max": DslFunction("max", "Scalar maximum (not a reduction: see pl.row_max)."),
    "min": DslFunction("min", "Scalar minimum (not a reduction: see pl.row_min)."),
}
