"""Communication sets and patterns derived with isl, compared as relations."""

import islpy as isl
import pytest

from mica import ops
from mica.comm.sets import classify, need_map, ownership_map
from mica.tiling.spacetime import placement_map
from mica.errors import CommError
from mica.meshir.ir import BoxDim, Lin, Region
from mica.tiling.mapping import derive_schedule


def test_placement_of_matmul_update():
    p = ops.matmul(8, 8, 8)
    s = derive_schedule(p, (2, 2))            # tiles 4x4, k in 2 steps of 4
    pm = placement_map(p.statement("S1"), s)
    expected = isl.Map("{ S1[i, j, k] -> M[t, x, y] : 0 <= i < 8 and 0 <= j < 8 and 0 <= k < 8 and "
                       "4y <= i < 4y + 4 and 4x <= j < 4x + 4 and 4t <= k < 4t + 4 }")
    assert pm.is_equal(expected)


def test_summa_panels_are_row_and_column_multicasts_from_the_step_root():
    p = ops.matmul(100, 37, 53)
    s = derive_schedule(p, (7, 5))
    st = p.statement("S1")
    A = p.array("A")
    box = (BoxDim("y", 20, 100), BoxDim("x", 11, 53))
    own = ownership_map(A, box, Region("h", 0, 5, 0, 5), {})
    plan = classify(A, "A_r1", need_map(st, st.access("A_r1"), s), own, box, "test")
    assert plan.kind == "row" and plan.root == Lin(0, (("t", 1),))
    assert plan.recv_box == (BoxDim("y", 20, 100), BoxDim("t", 11, 53))
    assert plan.max_hops == 6          # root column 0 to column 6 of a 7-wide row
    # Exactly the expected set: every core not in column t receives from (t, y).
    rel = isl.Map(plan.relation)
    expected = isl.Map("{ M[t, x, y] -> core[t, y] : 0 <= t < 5 and 0 <= x < 7 and 0 <= y < 5 and x != t }")
    assert rel.is_equal(expected)


def test_gemv_vector_is_a_column_multicast_from_row_0():
    p = ops.gemv(16, 12)
    s = derive_schedule(p, (4, 4))
    st = p.statement("S1")
    x = p.array("x")
    box = (BoxDim("x", 3, 12),)
    own = ownership_map(x, box, Region("h", 0, 4, 0, 1), {"y": 0})
    plan = classify(x, "x_r1", need_map(st, st.access("x_r1"), s), own, box, "test")
    assert plan.kind == "column" and plan.root == Lin(0) and plan.max_hops == 3


def test_elementwise_needs_no_communication():
    p = ops.add((10, 10))
    s = derive_schedule(p, (3, 3))
    st = p.statement("S0")
    A = p.array("A")
    box = (BoxDim("y", 4, 10), BoxDim("x", 4, 10))
    own = ownership_map(A, box, Region("h", 0, 3, 0, 3), {})
    assert classify(A, "A_r0", need_map(st, st.access("A_r0"), s), own, box, "t").kind == "local"


def test_unowned_data_is_an_error():
    p = ops.add((10, 10))
    s = derive_schedule(p, (3, 3))
    st = p.statement("S0")
    A = p.array("A")
    box = (BoxDim("y", 4, 10), BoxDim("x", 4, 10))
    own = ownership_map(A, box, Region("h", 0, 2, 0, 3), {})      # column 2 owns nothing
    with pytest.raises(CommError, match="owned by no core"):
        classify(A, "A_r0", need_map(st, st.access("A_r0"), s), own, box, "t")
