# SPDX-License-Identifier: Apache-2.0
"""`runtime.lanes`: a Group's task kernel and its members run side by side (issue 23 item 2).
The kernels here are plain Python functions standing in for generated ones."""

from __future__ import annotations

import pytest

from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ops.cross_core import LANE
from pytest_pypto.runtime.lanes import group_kernel, run_group
from pytest_pypto.runtime.loader import Kernel


def _kernel(name, fn, directions, returns=()):
    n = len(directions)
    return Kernel(name=name, func_id=0, core_type="aiv", fn=fn,
                  arg_names=tuple(f"{name}{i}" for i in range(n)), directions=tuple(directions),
                  kinds=tuple("scalar" if d == "Scalar" else "tensor" for d in directions),
                  dtypes=("FP32",) * n, shapes=((4,),) * n, returns=tuple(returns))


def test_a_group_parameter_read_by_one_kernel_and_written_by_the_other_is_inout():
    cube = _kernel("cube", lambda *a: (), ["In", "Out", "Scalar"])
    vec = _kernel("vec", lambda *a: (), ["Out", "Out", "Scalar"])
    k = group_kernel("grp", 7, [(cube, (0, 1, 2)), (vec, (0, 1, 2))], 3, (1,), (8, 4))
    assert k.directions == ("InOut", "Out", "Scalar")
    assert (k.name, k.func_id, k.core_type, k.returns) == ("grp", 7, "mix", (1,))
    assert k.arg_names == ("cube0", "cube1", "cube2")


def test_members_take_turns_through_a_pipe_with_one_slot():
    log = []

    def producer():
        LANE.endpoint.init_pipe(0, 1, 1)
        for i in range(3):
            LANE.endpoint.push("C2V", 0, i, "push")
            log.append(f"pushed {i}")

    def consumer():
        LANE.endpoint.init_pipe(0, 1, 1)
        for _ in range(3):
            v = LANE.endpoint.pop("C2V", 0, "pop")
            log.append(f"popped {v}")
            LANE.endpoint.free("C2V", 0, "free")

    run_group([(_kernel("p", producer, []), []), (_kernel("c", consumer, []), [])], (8, 4))
    # one slot: the producer waits for each free before its next push
    assert log == ["pushed 0", "popped 0", "pushed 1", "popped 1", "pushed 2", "popped 2"]


def test_a_member_failing_stops_the_group_with_its_own_error():
    def waits():
        LANE.endpoint.init_pipe(0, 2, None)
        LANE.endpoint.pop("V2C", 0, "pop")

    def fails():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_group([(_kernel("a", waits, []), []), (_kernel("b", fails, []), [])], (8, 4))


def test_a_pipe_nobody_declared_is_an_error_naming_it():
    def pops():
        LANE.endpoint.pop("V2C", 5, "tile.tpop_from_aiv")

    with pytest.raises(SimulationError, match="pipe 5 \\(V2C\\), which no"):
        run_group([(_kernel("a", pops, []), []), (_kernel("b", lambda: None, []), [])], (8, 4))
