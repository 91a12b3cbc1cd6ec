"""Derived space-time mappings and the schedule record."""

import pytest

from mica import ops
from mica.errors import ScheduleError
from mica.tiling.mapping import derive_schedule, main_statement
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


def test_plan_decisions_are_typed_fields_that_round_trip_through_json():
    import mica
    from mica.tiling.schedule import Schedule
    op = mica.ops.matmul(32, 32, 32)
    s = mica.plans.interleaved(op, (4, 4), buffers=2)
    assert (s.family, s.searched, s.buffers, s.name) == ("interleaved", False, 2, "interleaved+db")
    back = Schedule.from_json(s.to_json())
    assert back == s and back.family == "interleaved" and back.name == "interleaved+db"
    assert '"name"' not in s.to_json()                 # the label is made from the fields, not stored
    k = mica.plans.ktree(mica.ops.gemv(64, 64), (4, 4), group=3)
    assert (k.family, k.reduce, k.group, k.name) == ("ktree", "tree", 3, "ktree3")


def test_the_named_k_tree_sizes_its_groups_from_the_reduced_cores():
    """MeshGEMV's groups are about the square root of the cores the sum runs over: the blocks of the reduced
    loop j, not those of the larger parallel loop i (30 rows of cores, 22 columns reduced: groups of 4, not 5)."""
    import mica
    op = mica.ops.gemv(900, 64)
    k = mica.plans.ktree(op, (30, 30))
    blocks = {s.loop: -(-{"i": 900, "j": 64}[s.loop] // s.tile) for s in k.space}
    assert blocks == {"i": 30, "j": 22} and k.group == 4 and k.name == "ktree4"
    assert mica.plans.ktree(mica.ops.gemv(16384, 16384, "f16"), (750, 994)).group == 27     # 745 reduced, 964 not


def test_a_stencil_on_summa_steps_becomes_the_halo_family():
    import mica
    src = """void j(float A[12][12], float B[12][12]) {
      for (int t = 0; t < 3; t++) { for (int i = 1; i < 11; i++) for (int j = 1; j < 11; j++)
          B[i][j] = A[i][j-1] + A[i][j+1];
        for (int i = 1; i < 11; i++) for (int j = 1; j < 11; j++) A[i][j] = B[i][j]; } }"""
    op = mica.affine.from_c(src)
    s = mica.plans.summa(op, (3, 3))
    assert s.step is not None and s.step.sweep and s.family == "halo" and s.name == "halo"


def test_schedules_saved_before_the_typed_fields_still_load():
    import json
    import mica
    from mica.tiling.schedule import Schedule
    s = mica.compile_affine(mica.ops.matmul(32, 32, 32), mesh=(4, 4)).schedule
    assert s.searched
    old = json.loads(s.to_json())
    for key in ("family", "searched", "order"):
        del old[key]
    old["name"] = s.name
    assert Schedule.from_json(json.dumps(old)) == s


def test_unknown_plan_family_or_operator_order_is_refused():
    import pytest
    from mica.errors import ScheduleError
    from mica.tiling.schedule import Schedule
    with pytest.raises(ScheduleError, match="unknown plan family 'fancy'"):
        Schedule((2, 2), (), None, (), (), family="fancy")
    with pytest.raises(ScheduleError, match="unknown operator order 'random'"):
        Schedule((2, 2), (), None, (), (), order="random")


def test_a_sweep_runs_its_pinned_step_loop_outermost_and_its_longest_loop_innermost():
    """In a sweep (a step of one iteration of its loop) the step loop is outermost in every local order, and
    where the stride-chosen innermost loop runs less than half as long per call as another, that one goes
    innermost: gramschmidt's ``A[i][j] -= Q[i][k] * R[k][j]`` at step ``k`` on a core holding a few columns j
    runs one vector operation per column over all its rows i."""
    import mica
    from mica.affine.from_c import from_c
    from frontend.frontend_util import MANIFEST, kernel_function, kernel_source

    name = "gramschmidt"
    plan = mica.compile_affine(from_c(kernel_source(name), kernel_function(name), params=MANIFEST[name]["params"]),
                               mesh=(8, 8))
    phases = plan.schedule.phases or (plan.schedule,)
    sweeps = [p for p in phases if p.step is not None and p.step.tile == 1]
    assert sweeps, "the searched plan of gramschmidt on 8x8 is a sweep"
    (sweep,) = sweeps
    orders = dict(sweep.local_order)
    for stmt, order in orders.items():
        if sweep.step.loop in [o.lstrip("-") for o in order]:
            assert order[0].lstrip("-") == sweep.step.loop, (stmt, order)
    # S5/S6 (R[k][j] += Q[i][k] * A[i][j], A[i][j] -= ...): j is mapped (3 per core), i runs all 26 rows
    assert [m.loop for m in sweep.space] == ["j"] and sweep.space[0].tile == 3
    assert orders["S5"] == ("k", "j", "i") and orders["S6"] == ("k", "j", "i")
    # Q[i][k], produced at step k, lives with column k of A[i][j] (the same axis and tile), on the core that
    # produces it: not whole on core (0, 0), whose box every core of the sweep would hold.
    assert sweep.home("Q").dims[1] == sweep.home("A").dims[1] == ("x", 3)


def test_a_local_order_is_kept_only_where_it_keeps_the_statements_dependences():
    from mica.affine.from_c import from_c
    from mica.tiling.mapping import keeps_self_dependences

    skewed = from_c("""void f(float A[8][8]) {
      for (int i = 1; i < 8; i++) for (int j = 0; j < 7; j++) A[i][j] = A[i - 1][j + 1] + 1.0f; }""")
    name = skewed.statements[0].name
    assert keeps_self_dependences(skewed, name, ("i", "j"))
    assert keeps_self_dependences(skewed, name, ("i", "-j"))       # distance (1, -1): any order of j inside i
    assert not keeps_self_dependences(skewed, name, ("j", "i"))     # j outside: (−1, 1) would run backwards
