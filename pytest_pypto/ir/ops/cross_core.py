# SPDX-License-Identifier: Apache-2.0
"""Cross-core pipes of hand-written AIC/AIV kernels (docs/design/language.md §14).

PyPTO's `pl.system.*` ops, also spelled `pl.*`; kernel-only, so tile-level entries.

A ``pl.FunctionType.Group`` task runs one AIC and one AIV kernel together; they talk
through pipes.  A pipe has an id (``id=``, default 0) and a direction: C2V (cube
pushes with `tpush_to_aiv`, vector pops with `tpop_from_aic` and frees with
`tfree_to_aic`) or V2C (the mirror ops).  ``aic/aiv_initialize_pipe`` declare it:
``dir_mask`` 1 = C2V, 2 = V2C, 3 = both; ``slot_num`` slots per direction (default:
the arch's `pipe_slots_one_way` / `pipe_slots_each_way`).  A push takes a free slot (it waits while every
slot holds a tile not yet freed), a pop takes the oldest pushed tile (it waits while
there is none), a free gives the oldest popped slot back.

`reserve_buffer` / `import_peer_buffer` name the slot buffer (an INT32 address) the
two sides share; the simulator keeps the tiles in the pipe itself, so the address is
the requested base (0 for `AUTO`).

The numpy semantics need the peer: while a Group task runs, the runtime
(runtime/lanes.py) installs each kernel's endpoint in `LANE` for the thread running
it.  A pipe op in a kernel run alone (no Group) is an error naming the op.
"""

from __future__ import annotations

import threading
from typing import Any

from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ops._rules import dims, static_shape, tile
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import ScalarType, TileType, Type
from pytest_pypto.ir.values import TileValue

AUTO = -1  # `pl.AUTO`: let the toolchain place a reserved buffer

# (op, direction, role): C2V = cube -> vector, V2C = vector -> cube.
PUSH_OPS = {"tile.tpush_to_aiv": "C2V", "tile.tpush_to_aic": "V2C"}
POP_OPS = {"tile.tpop_from_aic": "C2V", "tile.tpop_from_aiv": "V2C"}
FREE_OPS = {"tile.tfree_to_aic": "C2V", "tile.tfree_to_aiv": "V2C"}
# Where a popped tile lands: the consumer's side of the pipe.
POP_SPACE = {"C2V": "Vec", "V2C": "Mat"}


class _Lane(threading.local):
    endpoint: Any = None


LANE = _Lane()  # the running kernel's pipe endpoint (runtime/lanes.py sets it per thread)


def _endpoint(op: str) -> Any:
    endpoint = LANE.endpoint
    if endpoint is None:
        raise SimulationError(
            f"{op} runs in a kernel launched on its own: a cross-core pipe needs its peer",
            hint="call the AIC and AIV kernels from one pl.FunctionType.Group function",
        )
    return endpoint


# ------------------------------------------------------------------ buffers


def _int32(info: CallInfo) -> Type:
    return ScalarType(dtypes.INT32)


def _reserve_type(info: CallInfo) -> Type:
    size = info.values.get("size")
    if not isinstance(size, int) or size <= 0:
        raise OpTypeError(f"The operator {info.op} requires a positive size in bytes, got {size!r}")
    base = info.values.get("base")
    if not isinstance(base, int) or (base < 0 and base != AUTO):
        raise OpTypeError(
            f"The operator {info.op} requires base to be pl.AUTO or an address >= 0, got {base!r}"
        )
    return _int32(info)


register(OpSpec(
    name="tile.reserve_buffer",
    params=(ParamSpec("name", "str", keyword_only=True), ParamSpec("size", "int", keyword_only=True),
            ParamSpec("base", "int", default=AUTO, keyword_only=True)),
    type_rule=_reserve_type, mem=MemRule(),
    execute=lambda *, name, size, base=AUTO, out=None: max(int(base), 0),
    spellings=("reserve_buffer", "system.reserve_buffer"),
    doc="Reserve a named cross-core slot buffer of size bytes at base (pl.AUTO: placed by the "
        "toolchain); its INT32 address (the base, 0 for pl.AUTO).",
))
register(OpSpec(
    name="tile.import_peer_buffer",
    params=(ParamSpec("name", "str", keyword_only=True),
            ParamSpec("peer_func", "str", keyword_only=True)),
    type_rule=_int32, mem=MemRule(),
    execute=lambda *, name, peer_func, out=None: 0,
    spellings=("import_peer_buffer", "system.import_peer_buffer"),
    doc="The slot buffer the peer kernel peer_func reserved under name, as an INT32 address.",
))


# -------------------------------------------------------------------- pipes


def _init_type(info: CallInfo) -> None:
    mask = info.values.get("dir_mask")
    if mask not in (1, 2, 3):
        raise OpTypeError(
            f"The operator {info.op} requires dir_mask 1 (C2V), 2 (V2C) or 3 (both), got {mask!r}"
        )
    size = info.values.get("slot_size")
    if not isinstance(size, int) or size <= 0:
        raise OpTypeError(f"The operator {info.op} requires a positive slot_size, got {size!r}")
    slots, local = info.values.get("slot_num"), info.values.get("local_slot_num")
    for name, v in (("slot_num", slots), ("local_slot_num", local)):
        if v is not None and (not isinstance(v, int) or v <= 0):
            raise OpTypeError(f"The operator {info.op} requires a positive {name}, got {v!r}")
    if slots is not None and local is not None and local > slots:
        raise OpTypeError(
            f"The operator {info.op} requires local_slot_num <= slot_num, got {local} > {slots}"
        )
    return None


def _init_arch(arch: Any, info: CallInfo) -> None:
    if info.values.get("local_slot_num") is not None and not arch.pipe_local_slot_num:
        raise OpArchError(
            f"The operator {info.op} takes no local_slot_num on the '{arch.name}' backend",
            "drop local_slot_num= (slot_num= sizes the pipe here)",
        )


def _init_execute(side: str):
    def run(c2v_consumer_buf=0, v2c_consumer_buf=0, *, dir_mask, slot_size, slot_num=None,
            local_slot_num=None, id=None, out=None):  # noqa: A002 - PyPTO's keyword
        _endpoint(f"tile.{side}_initialize_pipe").init_pipe(
            int(id or 0), int(dir_mask), None if slot_num is None else int(slot_num))
    return run


for _side in ("aic", "aiv"):
    register(OpSpec(
        name=f"tile.{_side}_initialize_pipe",
        params=(
            ParamSpec("c2v_consumer_buf", "scalar", default=0),
            ParamSpec("v2c_consumer_buf", "scalar", default=0),
            ParamSpec("dir_mask", "int", keyword_only=True),
            ParamSpec("slot_size", "int", keyword_only=True),
            ParamSpec("slot_num", "int", default=None, keyword_only=True),
            ParamSpec("local_slot_num", "int", default=None, keyword_only=True),
            ParamSpec("id", "int", default=None, keyword_only=True),
        ),
        type_rule=_init_type, mem=MemRule(), arch_rule=_init_arch,
        execute=_init_execute(_side),
        spellings=(f"{_side}_initialize_pipe", f"system.{_side}_initialize_pipe"),
        doc=f"Declare pipe id on the {_side.upper()} side: dir_mask 1 = C2V, 2 = V2C, 3 = both; "
            "slot_num slots per direction (default: the arch's pipe_slots_one_way / pipe_slots_each_way); "
            "local_slot_num only where the arch takes it.",
    ))


def _push_type(info: CallInfo) -> None:
    tile(info, "tile")
    split = info.values.get("split")
    if split not in (0, 1, 2, 3, 4):
        raise OpTypeError(f"The operator {info.op} requires split 0-4, got {split!r}")
    return None


def _push_execute(op: str):
    def run(tile, *, split, lane_stride=None, id=None, out=None):  # noqa: A002
        value = TileValue(tile.data.copy(), tuple(tile.valid), tile.dtype, tile.space, tile.pad)
        _endpoint(op).push(PUSH_OPS[op], int(id or 0), value, op)
    return run


def _pop_type(info: CallInfo) -> Type:
    shape, dtype = info.values.get("shape"), info.values.get("dtype")
    if shape is None or dtype is None:
        raise OpTypeError(
            f"The operator {info.op} requires the popped tile's shape and dtype",
            "annotate the target (t: pl.Tile[[M, N], pl.FP32, ...] = pl.tpop_...) or pass "
            "shape= and dtype=",
        )
    shape = static_shape(info, "shape", shape)
    valid = info.values.get("valid_shape")
    if valid is not None and len(valid) != len(shape):
        raise OpTypeError(f"The operator {info.op} got valid_shape {dims(valid)} for shape "
                          f"{dims(shape)}")
    return TileType(shape, dtype, POP_SPACE[POP_OPS[info.op]],
                    tuple(valid) if valid is not None else None)


def _pop_execute(op: str):
    def run(*, shape=None, dtype=None, valid_shape=None, split=0, lane_stride=None, id=None,
            out=None):  # noqa: A002
        value = _endpoint(op).pop(POP_OPS[op], int(id or 0), op)
        want = tuple(int(s) for s in out.shape)
        if value.shape != want:
            raise SimulationError(
                f"{op} pops a tile of shape {list(want)} from pipe {int(id or 0)}, but the peer "
                f"pushed one of shape {list(value.shape)}",
                hint="pop with the shape the peer pushes",
            )
        data = value.data if value.dtype == out.dtype else value.data.astype(out.dtype.np)
        valid = tuple(value.valid)
        if valid_shape is not None:
            valid = tuple(min(int(v), int(p)) for v, p in zip(valid_shape, valid))
        return TileValue(data, valid, out.dtype, out.space, value.pad)
    return run


def _free_type(info: CallInfo) -> None:
    tile(info, "tile")
    return None


def _free_execute(op: str):
    def run(tile, *, split=None, id=None, out=None):  # noqa: A002
        _endpoint(op).free(FREE_OPS[op], int(id or 0), op)
    return run


for _op, _dir in PUSH_OPS.items():
    _peer = "AIV" if _dir == "C2V" else "AIC"
    register(OpSpec(
        name=_op,
        params=(ParamSpec("tile", "tile"), ParamSpec("split", "int", keyword_only=True),
                ParamSpec("lane_stride", "int", default=None, keyword_only=True),
                ParamSpec("id", "int", default=None, keyword_only=True)),
        type_rule=_push_type,
        mem=MemRule(operands={"tile": ("Acc", "Mat")} if _dir == "C2V" else {"tile": ("Vec",)}),
        execute=_push_execute(_op),
        spellings=(_op.split(".")[1], "system." + _op.split(".")[1]),
        doc=f"Push a copy of tile into pipe id towards the {_peer} kernel; waits while every "
            "slot of the pipe holds a tile its consumer has not freed.",
    ))
for _op, _dir in POP_OPS.items():
    register(OpSpec(
        name=_op,
        params=(ParamSpec("shape", "shape", default=None, keyword_only=True),
                ParamSpec("dtype", "dtype", default=None, keyword_only=True),
                ParamSpec("valid_shape", "index_list", default=None, keyword_only=True),
                ParamSpec("split", "int", default=0, keyword_only=True),
                ParamSpec("lane_stride", "int", default=None, keyword_only=True),
                ParamSpec("id", "int", default=None, keyword_only=True)),
        type_rule=_pop_type, mem=MemRule(result=POP_SPACE[_dir]),
        execute=_pop_execute(_op),
        spellings=(_op.split(".")[1], "system." + _op.split(".")[1]),
        doc=f"Pop the oldest tile of pipe id into {POP_SPACE[_dir]} (shape and dtype from the "
            "annotation or shape=/dtype=); waits while the pipe is empty.",
    ))
for _op, _dir in FREE_OPS.items():
    register(OpSpec(
        name=_op,
        params=(ParamSpec("tile", "tile"),
                ParamSpec("split", "int", default=None, keyword_only=True),
                ParamSpec("id", "int", default=None, keyword_only=True)),
        type_rule=_free_type, mem=MemRule(operands={"tile": (POP_SPACE[_dir],)}),
        execute=_free_execute(_op),
        spellings=(_op.split(".")[1], "system." + _op.split(".")[1]),
        doc="Give the oldest popped slot of pipe id back to its producer.",
    ))


# ------------------------------------------------------------------ syncall

SYNCALL_OP = "tile.syncall"
SYNCALL_CORE_TYPES = ("aiv_only", "aic_only", "mix")
_INT32_MAX = (1 << 31) - 1
_WORKSPACE_ELEMENTS = 16  # one exclusive 64-byte cache line of INT32 counters


def _syncall_type(info: CallInfo) -> None:
    mode, core = info.values.get("mode"), info.values.get("core_type")
    workspace = info.types.get("gm_workspace")
    used = info.values.get("used_cores")
    used_given = used is not None or info.types.get("used_cores") is not None
    if mode not in ("hard", "soft"):
        raise OpTypeError(f"The operator {info.op} requires mode 'hard' or 'soft', got {mode!r}")
    if core not in SYNCALL_CORE_TYPES:
        raise OpTypeError(
            f"The operator {info.op} requires core_type one of {', '.join(SYNCALL_CORE_TYPES)}, "
            f"got {core!r}"
        )
    if mode == "hard":
        if workspace is not None or used_given:
            raise OpTypeError(
                f"The operator {info.op} in hard mode takes no gm_workspace / used_cores",
                "pass mode='soft' for the GM-polling barrier",
            )
        return None
    if workspace is None or not used_given:
        raise OpTypeError(
            f"The operator {info.op} in soft mode requires gm_workspace (a shared, zeroed INT32 "
            "tensor) and used_cores (the participant count)",
        )
    if workspace.dtype.name != "INT32" or not all(isinstance(d, int) for d in workspace.shape) \
            or _elements(workspace.shape) < _WORKSPACE_ELEMENTS:
        raise OpTypeError(
            f"The operator {info.op} requires gm_workspace to be an INT32 tensor of at least "
            f"{_WORKSPACE_ELEMENTS} elements, got {workspace.dtype.name}{dims(workspace.shape)}"
        )
    if isinstance(used, int) and not 0 <= used <= _INT32_MAX:
        raise OpTypeError(f"The operator {info.op} requires used_cores in [0, {_INT32_MAX}], "
                          f"got {used}")
    return None


def _elements(shape: Any) -> int:
    count = 1
    for d in shape:
        count *= int(d)
    return count


def _syncall_execute(gm_workspace=None, used_cores=None, *, core_type="mix", mode="hard",
                     out=None):
    endpoint = LANE.endpoint
    if endpoint is not None:  # the blocks of a launch run side by side (runtime/lanes.py)
        endpoint.barrier(SYNCALL_OP)


register(OpSpec(
    name=SYNCALL_OP,
    params=(ParamSpec("core_type", "str", default="mix", keyword_only=True),
            ParamSpec("mode", "str", default="hard", keyword_only=True),
            ParamSpec("gm_workspace", "tensor", default=None, optional=True, keyword_only=True),
            ParamSpec("used_cores", "scalar", default=None, optional=True, keyword_only=True)),
    type_rule=_syncall_type, mem=MemRule(), execute=_syncall_execute,
    spellings=("system.syncall",),
    doc="Barrier across every block of the pl.spmd launch running this kernel: no block goes "
        "past it before all have reached it (mode 'hard', or 'soft' with a zeroed INT32 "
        "gm_workspace of >= 16 elements and used_cores).  The simulator runs such a launch's "
        "blocks side by side; a block that can never arrive is a deadlock error.",
))
