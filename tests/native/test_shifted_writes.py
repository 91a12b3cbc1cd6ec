"""Writes routed to owners a constant distance away along one mesh axis (:func:`mica.lower.routed.stage_shifted_write`):
a KV cache's new row, computed on the line of cores that holds the new token's vector and owned by the cores
further down the columns where the cache is laid out as attention reads it. Against the natively compiled C."""

import numpy as np
import pytest

import mica
from mica.errors import ScheduleError
from mica.meshir.ir import Shift
from mica.testing import assert_matches, run_c
from mica.tiling.mapping import derive_schedule
from mica.tiling.schedule import Home

KV_APPEND = """
void kv(int N, float W[N][N], float h[N], float K[N][N], float q[N], float s[N]) {
  float k[N];
  for (int d = 0; d < N; d++) { k[d] = 0.0f; for (int j = 0; j < N; j++) k[d] += W[d][j] * h[j]; }
  for (int d = 0; d < N; d++) K[N - 1][d] = k[d];
  for (int l = 0; l < N; l++) { s[l] = 0.0f; for (int d = 0; d < N; d++) s[l] += q[d] * K[l][d]; }
}"""

APPEND = """
void append(int L, int D, float k[D], float K[L][D]) {
  for (int d = 0; d < D; d++) K[L - 1][d] = k[d];
}"""


def _inputs(names_shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(sh).astype(np.float32) for n, sh in names_shapes}


@pytest.mark.parametrize("n, mesh", [(64, (8, 8)), (64, (4, 4)), (50, (6, 5)), (37, (5, 3)), (64, (1, 6))])
def test_a_kv_append_spread_with_the_cache_matches_the_c(n, mesh):
    params = {"N": n}
    ins = _inputs((("W", (n, n)), ("h", (n,)), ("K", (n, n)), ("q", (n,))))
    want = run_c(KV_APPEND, "kv", ins, params)
    prog = mica.compile_affine(KV_APPEND, mesh=mesh, params=params)
    res = prog.run(ins)
    assert_matches(res.outputs, want, rtol=1e-5, atol=1e-5)
    assert res.stats.summary()["computing_cores"] == prog.cost.cores
    if mesh in ((8, 8), (4, 4)):
        assert "K_routed" in prog.meshir               # the new row crosses to the rows of cores that own it


@pytest.mark.parametrize("rows, mesh", [(4, (16, 8)), (5, (8, 13)), (1, (8, 4))])
def test_the_new_row_moves_down_its_columns_in_one_shift(rows, mesh):
    """k along row 0 (x/2), K spread over both axes (rows/``rows``, x/2): the last row's owners are
    ``ceil(L / rows) - 1`` rows of cores down; each writing core stages its owner's block and one shift of that
    many hops per column delivers it. Only row L-1 of K changes."""
    L, D = rows * mesh[1], 2 * mesh[0]
    prog_ = mica.affine.from_c(APPEND, params={"L": L, "D": D})
    fixed = {"K": Home("K", (("y", rows), ("x", 2)), ()), "k": Home("k", (("x", 2),), (("y", 0),))}
    sched = derive_schedule(prog_, mesh, assignment=[("d", "x")], blocks={"x": mesh[0]}, fixed_homes=fixed)
    prog = mica.compile_affine(prog_, mesh=mesh, schedule=sched)
    shifts = [c for o, _ in prog.mesh_program.walk() if hasattr(o, "ops") for c in o.ops if isinstance(c, Shift)]
    down = -(-L // rows) - 1
    if down:
        assert len(shifts) == 1 and shifts[0].direction == "S" and shifts[0].distance == down
    else:
        assert shifts == []
    ins = _inputs((("k", (D,)), ("K", (L, D))), seed=rows)
    want = ins["K"].copy()
    want[L - 1] = ins["k"]
    res = prog.run(ins)
    np.testing.assert_array_equal(res.outputs["K"], want)
    assert_matches(res.outputs, run_c(APPEND, "append", ins, {"L": L, "D": D}), rtol=0, atol=0)
    assert prog.cost.total_cycles == pytest.approx(res.stats.summary()["cycles"], rel=0.02)


def test_writes_that_are_not_one_translation_are_still_refused():
    """k in tiles of 2, K's columns in tiles of 3: the owners are not the writers moved by one distance, so
    nothing is routed and the plan is refused, naming the write."""
    L, D = 8, 24
    prog_ = mica.affine.from_c(APPEND, params={"L": L, "D": D})
    fixed = {"K": Home("K", (("y", 2), ("x", 3)), ()), "k": Home("k", (("x", 2),), (("y", 0),))}
    sched = derive_schedule(prog_, (12, 4), assignment=[("d", "x")], blocks={"x": 12}, fixed_homes=fixed)
    with pytest.raises(ScheduleError, match="cores would write elements of K that another core owns"):
        mica.compile_affine(prog_, mesh=(12, 4), schedule=sched)
