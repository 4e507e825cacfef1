# SPDX-License-Identifier: Apache-2.0
"""Counter-based random numbers: tile.random (TRANDOM, a5 only; docs/design/language.md §21).

The generator is Philox4x32 with PyPTO's keywords: a 64-bit key ``(key0, key1)``, a
128-bit counter ``(counter0..counter3)`` and ``rounds`` (7 or 10).  Element ``p`` of
the valid region in row-major order takes word ``p % 4`` of the Philox block whose
counter is ``counter + p // 4`` (128-bit add with carry), so the same seeds always
give the same tile.  The device's lane/round schedule is not reproduced: values are
Philox's, not bit-identical to the hardware (PyPTO's own test checks determinism,
not device bits).  Only the valid region is written; the rest stays undefined.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.dtypes import UINT32
from pytest_pypto.ir.ops._rules import dims, np, require_dtype, static_shape
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer

RANDOM_DTYPES = ("INT32", "UINT32")
RANDOM_ROUNDS = (7, 10)
_SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")

# Philox4x32 constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
_MUL0, _MUL1 = 0xD2511F53, 0xCD9E8D57
_WEYL0, _WEYL1 = 0x9E3779B9, 0xBB67AE85
_M32 = 0xFFFFFFFF


def _random_type(info: CallInfo) -> TileType:
    for name in _SEEDS:
        t = info.types.get(name)
        if not isinstance(t, ScalarType) or not t.dtype.is_int:
            got = getattr(getattr(t, "dtype", None), "name", None) or getattr(t, "kind", "nothing")
            raise OpTypeError(
                f"The operator {info.op} requires {name} to be an integer scalar, but got {got}",
                "pass an int literal or an integer Scalar",
            )
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2D shape, but got {dims(shape)}")
    dtype = info.values.get("dtype")
    require_dtype(info, dtype, RANDOM_DTYPES, hint="TRANDOM writes 32-bit words; pl.cast after")
    rounds = info.values.get("rounds", 10)
    if rounds not in RANDOM_ROUNDS:
        raise OpTypeError(f"The operator {info.op} requires rounds 7 or 10, but got {rounds!r}")
    valid = info.values.get("valid_shape")
    if valid is None:
        valid = shape
    elif len(valid) != len(shape):
        raise OpTypeError(
            f"The operator {info.op} requires valid_shape of rank {len(shape)}, but got "
            f"{dims(valid)}"
        )
    for d, (v, s) in enumerate(zip(valid, shape)):
        if v is not None and not 0 <= v <= s:
            raise OpTypeError(
                f"The operator {info.op} requires 0 <= valid_shape <= shape, but got "
                f"valid_shape {dims(valid)} for shape {dims(shape)} (dimension {d})"
            )
    return TileType(shape, dtype, valid=tuple(valid))


def philox4x32(key: tuple[int, int], counters: Any, rounds: int) -> Any:
    """Philox4x32-``rounds`` of an array of 128-bit counters, shape (n, 4) uint64 words."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0 = np.uint64(key[0] & _M32)
    k1 = np.uint64(key[1] & _M32)
    m32 = np.uint64(_M32)
    for _ in range(rounds):
        p0 = np.uint64(_MUL0) * c[0]
        p1 = np.uint64(_MUL1) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & m32
        hi1, lo1 = p1 >> np.uint64(32), p1 & m32
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        k0 = (k0 + np.uint64(_WEYL0)) & m32
        k1 = (k1 + np.uint64(_WEYL1)) & m32
    return np.stack(c, axis=1)


def _random_execute(key0, key1, counter0, counter1, counter2, counter3, *, shape,
                    valid_shape=None, dtype=None, rounds=10, out=None, **_):
    dtype = out.dtype if out is not None else (dtype or UINT32)

    shape = tuple(int(s) for s in shape)
    valid = shape if valid_shape is None else tuple(int(v) for v in valid_shape)
    count = valid[0] * valid[1]
    blocks = (count + 3) // 4
    base = sum((int(c) & _M32) << (32 * i) for i, c in enumerate((counter0, counter1, counter2,
                                                                  counter3)))
    ctr = np.empty((blocks, 4), dtype=np.uint64)
    for i in range(4):  # 128-bit counter + block number, word i (blocks < 2**32: no overflow)
        low = (base >> (32 * i)) & _M32
        ctr[:, i] = low
    step = np.arange(blocks, dtype=np.uint64)
    total = ctr[:, 0] + step
    ctr[:, 0] = total & np.uint64(_M32)
    carry = total >> np.uint64(32)
    for i in range(1, 4):
        total = ctr[:, i] + carry
        ctr[:, i] = total & np.uint64(_M32)
        carry = total >> np.uint64(32)
    words = philox4x32((int(key0), int(key1)), ctr, int(rounds)).reshape(-1)[:count]
    values = words.astype(np.uint32).view(dtype.np).reshape(valid)
    data = new_buffer(shape, dtype)
    data[: valid[0], : valid[1]] = values
    return TileValue(data, valid, dtype, (out.space if out is not None else None) or "Vec")


register(OpSpec(
    name="tile.random",
    params=(
        *(ParamSpec(name, "scalar") for name in _SEEDS),
        ParamSpec("shape", "shape"),
        ParamSpec("valid_shape", "index_list", default=None),
        ParamSpec("dtype", "dtype", default=UINT32),
        ParamSpec("rounds", "int", default=10),
    ),
    type_rule=_random_type,
    mem=MemRule(result="Vec"),
    execute=_random_execute,
    spellings=("tile.random",),  # pl.random is the tensor form (tensor_index.py)
    tier=2,
    doc="Fill a new Vec tile's valid region with Philox4x32 counter-based random 32-bit words "
        "(INT32 or UINT32, default UINT32) from key (key0, key1), counter (counter0..3) and "
        "the element position; rounds 7 or 10. Deterministic; not bit-identical to the "
        "device's lane schedule. a5 only.",
))
