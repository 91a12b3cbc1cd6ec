"""The search over loop folds (mica.tiling.folded): a long loop that the plan spreads along one axis while the
other idles is folded in two and spread over both; the folded plan computes what the C computes, bit for bit,
and takes and gives arrays in the shapes the C declares."""

import numpy as np
import pytest

import mica
from mica.errors import InputError
from mica.testing import run_c
from mica.tiling.folded import one_axis_loops

AXPY = """
void axpy(int N, float a, float x[N], float y[N]) {
  for (int i = 0; i < N; i++) y[i] = a * x[i] + y[i];
  for (int j = 0; j < N; j++) { x[j] = x[j] * 2.0f + (float)j; for (int k = 0; k < 3; k++) y[j] += x[j]; }
}"""

#: a 1-D softmax over a long row: a max and a sum reduced over the folded loop, across both mesh axes
SOFTMAX_ROW = """
void row(int N, float s[N], float p[N], float m[1], float z[1]) {
  m[0] = -INFINITY;
  for (int l = 0; l < N; l++) m[0] = fmaxf(m[0], s[l]);
  z[0] = 0.0f;
  for (int l = 0; l < N; l++) { p[l] = expf(s[l] - m[0]); z[0] += p[l]; }
  for (int l = 0; l < N; l++) p[l] = p[l] / z[0];
}"""


def _folded(prog) -> str:
    return next((r for r in prog.schedule.reasons if "folded into" in r), "")


def test_a_long_vector_loop_spreads_over_the_whole_wafer():
    """2^20 elements: one line of 994 cores as written; folded, about a quarter of a million cores."""
    prog = mica.compile_affine(AXPY, mesh=(750, 994), params={"N": 1 << 20})
    assert "folded into 1024 x 1024" in _folded(prog)
    assert prog.cost.cores >= 200_000
    assert prog.program.user_shape("x") == (1 << 20,) and prog.program.array("x").shape == (1024, 1024)


# CI: 8x8 and 16x2 (where the row softmax stays unfolded); 5x3 and 3x7 with -m slow
@pytest.mark.parametrize("mesh", [(8, 8), (16, 2), pytest.param((5, 3), marks=pytest.mark.slow),
                                  pytest.param((3, 7), marks=pytest.mark.slow)], ids=lambda m: f"{m[0]}x{m[1]}")
def test_folded_programs_match_the_c(mesh):
    rng = np.random.default_rng(1)
    for src, fn, params, arrays in ((AXPY, "axpy", {"N": 3000}, ("x", "y")),
                                    (SOFTMAX_ROW, "row", {"N": 6000}, ("s",))):
        prog = mica.compile_affine(src, mesh=mesh, params=params)
        # on 16x2 the other axis holds two cores: folding the row softmax gains less than the search asks
        assert _folded(prog) or (mesh == (16, 2) and fn == "row"), prog.schedule.reasons
        ins = {n: rng.uniform(-2, 2, params["N"]).astype(np.float32) for n in arrays}
        ins.update({"a": 0.75} if fn == "axpy" else {})
        got = prog.run(ins).outputs
        want = run_c(src, fn, ins, params)
        for name, value in want.items():
            assert got[name].shape == value.shape
            if name in ("z", "p"):      # a sum combined across cores: reassociated, as every spread sum is
                np.testing.assert_allclose(got[name], value, rtol=1e-5, err_msg=f"{fn} {name} on {mesh}")
            else:                       # element-wise and max: exact
                np.testing.assert_array_equal(got[name], value, err_msg=f"{fn} {name} on {mesh}")
        if _folded(prog):
            assert prog.cost.cores > max(mesh)    # more cores than the longest line holds


def test_inputs_in_either_shape_and_errors_in_the_declared_one():
    prog = mica.compile_affine(AXPY, mesh=(8, 8), params={"N": 4096})
    assert _folded(prog)
    x = np.arange(4096, dtype=np.float32)
    y = np.ones(4096, np.float32)
    a = prog.run({"x": x, "y": y, "a": 2.0}).outputs
    b = prog.run({"x": x.reshape(prog.program.array("x").shape), "y": y.reshape(prog.program.array("y").shape),
                  "a": 2.0}).outputs
    for name in ("x", "y"):
        assert a[name].shape == (4096,)
        np.testing.assert_array_equal(a[name], b[name])
    with pytest.raises(InputError, match=r"has shape \(4095,\), expected \(4096,\)"):
        prog.run({"x": x[:-1], "y": y, "a": 2.0})


def test_a_folded_array_stays_on_the_mesh_in_its_declared_shape():
    src = """
    void scale(int N, float w[N], float x[N], float y[N]) {
      for (int i = 0; i < N; i++) y[i] = w[i] * x[i] + y[i];
    }"""
    prog = mica.compile_affine(src, mesh=(8, 8), params={"N": 2048}, resident=("w",))
    assert _folded(prog)
    rng = np.random.default_rng(2)
    w, x = (rng.standard_normal(2048).astype(np.float32) for _ in range(2))
    want = np.zeros(2048, np.float32)
    for _ in range(2):
        want = run_c(src, "scale", {"w": w, "x": x, "y": want}, {"N": 2048})["y"]
    with prog.load({"w": w}) as dev:
        y = np.zeros(2048, np.float32)
        for _ in range(2):
            y = dev.run({"x": x, "y": y}).outputs["y"]
        np.testing.assert_array_equal(y, want)
        assert dev.read("w").shape == (2048,)
        np.testing.assert_array_equal(dev.read("w"), w)
        dev.write("w", 2 * w)
        np.testing.assert_array_equal(dev.read("w"), 2 * w)


def test_plans_that_use_both_axes_are_not_refolded():
    """A matmul's plan already spreads over both axes: nothing to fold, the program is untouched."""
    prog = mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(4, 4))
    assert not one_axis_loops(prog.program, prog.schedule) and not prog.program.folded


def test_a_saved_plan_refolds_the_program_it_is_forced_on(tmp_path):
    """The plan's JSON carries its folds: forced on the C as written, it folds the program alike and computes
    the same; a saved compiled program loads and runs; a fold that does not apply is a ScheduleError."""
    prog = mica.compile_affine(AXPY, mesh=(8, 8), params={"N": 4096})
    assert prog.schedule.folds == (("S0", "i", 64),)
    again = mica.Schedule.from_json(prog.schedule.to_json())
    assert again.folds == prog.schedule.folds
    forced = mica.compile_affine(AXPY, mesh=(8, 8), params={"N": 4096}, schedule=again)
    assert forced.program == prog.program and forced.cost.total_cycles == prog.cost.total_cycles
    rng = np.random.default_rng(4)
    ins = {"x": rng.standard_normal(4096).astype(np.float32), "y": rng.standard_normal(4096).astype(np.float32),
           "a": 0.5}
    want = prog.run(ins).outputs
    loaded = mica.load(prog.save(tmp_path / "axpy.mica"))
    for got in (forced.run(ins).outputs, loaded.run(ins).outputs):
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])
    with pytest.raises(mica.errors.ScheduleError, match="does not fold by 64"):
        mica.compile_affine(AXPY, mesh=(8, 8), params={"N": 4000}, schedule=again)
