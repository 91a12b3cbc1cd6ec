"""A plan's mesh axes swapped (:func:`mica.tiling.schedule.transposed`): a plan for ``w x h`` made into one for
``h x w`` computes the same values, and the operator search tries the greedy mapping on the transposed mesh
when the mesh itself leaves a later operator without a plan."""

from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.testing import run_c
from mica.tiling.schedule import transposed

import samples
from frontend.frontend_util import MANIFEST, kernel_source, make_inputs


@pytest.mark.parametrize("source, params, mesh", [
    (samples.transposed_chain(12), {}, (4, 3)),
    (samples.mvt(20), {}, (5, 2)),
    (samples.jacobi_2d(14), {"tsteps": 2, "n": 14}, (3, 2)),
    # deriche's 21 nests take half a minute (test_the_operator_search_maps_... below keeps one in CI)
    pytest.param(kernel_source("deriche"), MANIFEST["deriche"]["params"], (4, 3), marks=pytest.mark.slow),
], ids=["chain", "mvt", "jacobi", "deriche"])
def test_a_plan_with_its_axes_swapped_computes_the_same_values(source, params, mesh):
    prog = from_c(source, params=params)
    there = mica.compile_affine(prog, mesh=mesh)
    flipped = transposed(there.schedule)
    assert flipped.mesh == (mesh[1], mesh[0]) and transposed(flipped) == there.schedule
    here = mica.compile_affine(prog, mesh=flipped.mesh, schedule=flipped)
    assert here.cost.cores == there.cost.cores
    ins = make_inputs(source, None, params, seed=3)
    want = run_c(source, None, ins, params)
    got = here.run(ins).outputs
    for name in prog.outputs:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-9, err_msg=name)


def test_a_swapped_plan_keeps_tiles_and_moves_every_axis():
    prog = mica.ops.matmul(30, 20, 25)
    plan = mica.plans.cannon(prog, (4, 4))
    flipped = transposed(plan)
    assert [(s.loop, s.axis, s.tile) for s in flipped.space] == \
        [(s.loop, {"x": "y", "y": "x"}[s.axis], s.tile) for s in plan.space]
    assert all([a for a, _ in h.dims] == [{"x": "y", "y": "x"}.get(a, a) for a, _ in g.dims]
               for h, g in zip(flipped.homes, plan.homes))
    assert flipped.step == plan.step


def test_the_operator_search_maps_a_rectangular_mesh_transposed_when_it_has_no_plan():
    """deriche on 4x3: besides the mapping operator by operator on the mesh itself (whose side-by-side ways
    find no plan), the same greedy mapping is tried on 3x4 and swapped back, and every way of it works. Read from deriche's behaviour record on 4x3, which ``tests/behaviour`` compiles afresh and
    compares with the record in every run (this compile takes two minutes: it is not repeated here)."""
    record = (Path(__file__).parent.parent / "behaviour" / "golden" / "deriche_4x3.txt").read_text()
    ways = record.split("\n== explain\n", 1)[1].split("\n== ", 1)[0]
    flipped = [line for line in ways.splitlines() if "mapped on the 3x4 mesh and its axes swapped" in line]
    assert flipped and all("cycles" in line and "rejected" not in line for line in flipped)
