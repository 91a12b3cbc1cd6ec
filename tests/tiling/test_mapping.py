"""Derived space-time mappings and the schedule record."""

import pytest

from mica import ops
from mica.errors import ScheduleError
from mica.tiling.mapping import derive_schedule, local_order, main_statement
from mica.tiling.schedule import Schedule


def test_matmul_maps_i_j_to_the_mesh_and_steps_k():
    s = derive_schedule(ops.matmul(100, 37, 53), (7, 5))
    assert [(m.loop, m.axis, m.tile) for m in s.space] == [("i", "y", 20), ("j", "x", 6)]
    # Panels of A come from one of 7 columns, panels of B from one of 5 rows: tile = max(ceil(53/7), ceil(53/5)).
    assert (s.step.loop, s.step.tile, s.step.steps) == ("k", 11, 5)
    assert s.order_of("S1") == ("i", "k", "j")           # unit stride innermost
    assert s.home("A").dims == (("y", 20), ("x", 11))
    assert s.home("B").dims == (("y", 11), ("x", 6))


def test_gemv_maps_the_reduction_loop_across_cores():
    s = derive_schedule(ops.gemv(64, 48), (8, 4))
    assert [(m.loop, m.axis) for m in s.space] == [("i", "y"), ("j", "x")]
    assert s.step is None
    assert s.home("x").pin == (("y", 0),)        # x lives on row 0
    assert s.home("y").pin == (("x", 0),)        # y is combined into column 0
    assert s.order_of("S1") == ("i", "j")


def test_schedule_json_round_trip():
    s = derive_schedule(ops.matmul(64, 64, 64), (8, 8))
    back = Schedule.from_json(s.to_json())
    assert back == s and back.reasons == s.reasons


def test_like_keeps_decisions_and_retiles():
    big = derive_schedule(ops.matmul(512, 512, 512), (750, 994))
    small = derive_schedule(ops.matmul(512, 512, 512), (16, 16), like=big)
    assert [(m.loop, m.axis) for m in small.space] == [(m.loop, m.axis) for m in big.space]
    assert [m.tile for m in small.space] == [32, 32]
    assert small.step.loop == "k" and small.step.tile == 32


def test_malformed_schedule_json_is_a_schedule_error():
    with pytest.raises(ScheduleError):
        Schedule.from_json('{"version": 1, "mesh": [2, 2]}')
    with pytest.raises(ScheduleError):
        Schedule.from_json('{"version": 99}')


def test_main_statement_and_local_order():
    p = ops.matmul(4, 4, 4)
    assert main_statement(p).name == "S1"
