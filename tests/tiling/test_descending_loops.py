"""Loops the source runs downwards keep their direction inside a core (``-j`` in the local loop order) when
they carry a dependence, so a back substitution spread over its parallel loop is a legal plan; and a program
whose privatised temporaries do not fit falls back to its temporaries as written. Checked against the
natively compiled C on several meshes, non-divisible ones included."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.testing import run_c

from frontend.frontend_util import kernel_source, make_inputs

BACK = """
void back(int n, double p[n][n], double q[n][n], double x[n][n]) {
  for (int i = 0; i < n; i++) {
    x[i][n - 1] = q[i][n - 1];
    for (int j = n - 2; j >= 0; j--)
      x[i][j] = p[i][j] * x[i][j + 1] + q[i][j];
  }
}
"""

MESHES = [(4, 4), (8, 8), (3, 5), (7, 2), (1, 6), (5, 1)]


@pytest.mark.parametrize("mesh", MESHES)
def test_back_substitution_spreads_over_its_parallel_loop(mesh):
    n = 37
    ins = make_inputs(BACK, "back", {"n": n})
    ins["p"] = ins["p"] * 0.5
    want = run_c(BACK, "back", ins, {"n": n})
    compiled = mica.compile_affine(from_c(BACK, "back", params={"n": n}), mesh=mesh)
    res = compiled.run(ins, threads=2)
    assert np.array_equal(res.outputs["x"], want["x"])
    sweep = [order for _, order in _orders(compiled.schedule) if "-j" in order]
    assert sweep, "the downward loop lost its direction"
    assert compiled.cost.cores > 1


def _orders(sched):
    phases = sched.phases or (sched,)
    return [entry for ph in phases for entry in ph.local_order]


@pytest.mark.parametrize("mesh", [(4, 3), (8, 8), (5, 2)])
def test_adi_spreads_its_sweeps(mesh):
    n, tsteps = 12, 2
    src = kernel_source("adi").replace("20 + 0", str(n))
    params = {"tsteps": tsteps, "n": n}
    ins = make_inputs(src, "kernel_adi", params)
    want = run_c(src, "kernel_adi", ins, params)
    compiled = mica.compile_affine(from_c(src, "kernel_adi", params=params), mesh=mesh)
    res = compiled.run(ins, threads=2)
    for arr, value in want.items():
        np.testing.assert_allclose(res.outputs[arr], value, rtol=1e-12, atol=1e-12, err_msg=arr)
    assert compiled.cost.cores > 1


def test_durbin_whose_expanded_temporary_does_not_fit_runs_as_written():
    # z privatised along k is n times larger (114 kB at n = 120, more than a core's 48 kB), and no plan
    # spreads the sweep; as written z takes 960 bytes and the program fits one core.
    n = 120
    src = kernel_source("durbin").replace("30 + 0", str(n))
    params = {"n": n}
    ins = make_inputs(src, "kernel_durbin", params, {"inputs": {"r": [0.0, 0.1]}})
    want = run_c(src, "kernel_durbin", ins, params)
    compiled = mica.compile_affine(from_c(src, "kernel_durbin", params=params), mesh=(8, 8))
    assert any("temporaries as written" in r for r in compiled.schedule.reasons)
    res = compiled.run(ins, threads=2)
    np.testing.assert_allclose(res.outputs["y"], want["y"], rtol=1e-12, atol=1e-12)
