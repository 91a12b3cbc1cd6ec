"""Recurrence expansion (mica.affine.recurrence): temporaries carried from one iteration of a loop to the next
get one element per iteration, and the expanded program computes what the source does — checked against the
natively compiled C on several meshes, non-divisible ones included."""

import sys
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.affine.privatise import privatise
from mica.affine.recurrence import expand_recurrences, recurrences
from mica.testing import run_c

sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))
from frontend_util import MANIFEST, kernel_source, make_inputs  # noqa: E402

#: Two passes: left to right with one constant and one read initialisation, then bottom to top.
FILTER = """
void filt(int N, int M, float a, float b, float X[N][M], float Y[N][M], float Z[N][M]) {
  float s, t;
  for (int i = 0; i < N; i++) {
    s = 0.0f;
    t = X[i][0];
    for (int j = 0; j < M; j++) {
      Y[i][j] = a * X[i][j] + b * s + t;
      s = Y[i][j];
      t = X[i][j];
    }
  }
  for (int j = 0; j < M; j++) {
    s = 1.0f;
    for (int i = N - 1; i >= 0; i--) {
      Z[i][j] = Y[i][j] * 0.5f + s;
      s = Z[i][j] * b;
    }
  }
}
"""


def _filter(n=12, m=10):
    return privatise(from_c(FILTER, "filt", params={"N": n, "M": m}))


def test_carried_temporaries_are_found_per_live_range():
    recs = recurrences(_filter())
    got = sorted((r.array, r.loop, r.down, r.value is not None) for r in recs)
    # s twice (one live range per pass, split into s and s_1 by privatisation; the second counting down), t
    # once (initialised from X: not constant).
    assert got == [("s", "j", False, True), ("s_1", "i", True, True), ("t", "j", False, False)]


def test_expansion_splits_the_first_iteration_and_substitutes_constant_initialisations():
    prog = _filter()
    e = expand_recurrences(prog)
    names = [s.name for s in e.statements]
    first = [s for s in e.statements if s.name.endswith("_0")]
    assert first
    for s in first:
        # The first iteration of the carrying loop: j = 0 left to right, i = N - 1 counting down.
        lp, at = ("j", 0) if s.loops == ("i", "j") else ("i", 11)
        assert s.domain_set.dim_min_val(s.loops.index(lp)).to_python() == at
        assert s.domain_set.dim_max_val(s.loops.index(lp)).to_python() == at
        assert names.index(s.name) + 1 == names.index(s.name[:-2])      # right before the rest
    # The constant initialisations of s are gone (the first iteration reads the constant), t's stays.
    assert not any(st.write.array in ("s", "s_1") for st in e.statements)
    assert not {"s", "s_1"} & {a.name for a in e.arrays}
    assert any(st.write.array == "t" and not st.loops[1:] for st in e.statements)
    # One element per iteration of the carrying loop, after the array's own dimensions.
    shapes = {a.name: a.shape for a in e.arrays}
    assert shapes["t_r"] == shapes["t"] + (10,)
    assert len(names) == len(set(names))


def test_expansion_changes_nothing_without_carried_temporaries():
    prog = from_c("void k(int N, float A[N], float B[N]) { for (int i = 0; i < N; i++) { float t = A[i]; "
                  "B[i] = t * t; } }", "k", params={"N": 8})
    p = privatise(prog)
    assert expand_recurrences(p) is p


@pytest.mark.parametrize("src", [
    # a running sum is a reduction: it stays one element
    "void k(int N, float A[N][N], float B[N]) { float s; for (int i = 0; i < N; i++) { s = 0.0f; "
    "for (int j = 0; j < N; j++) s = s + A[i][j]; B[i] = s; } }",
    # read after its loop: the last value is live out of the loop
    "void k(int N, float A[N][N], float B[N]) { float s; for (int i = 0; i < N; i++) { s = 0.0f; "
    "for (int j = 0; j < N; j++) { A[i][j] = A[i][j] + s; s = A[i][j]; } B[i] = s; } }",
])
def test_what_is_not_a_carried_temporary_is_left_alone(src):
    prog = privatise(from_c(src, "k", params={"N": 8}))
    assert not [r for r in recurrences(prog) if r.array == "s"]


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5), (8, 8), (2, 7), (1, 1), (6, 3)])
def test_expanded_filter_matches_native_c(mesh):
    n, m = 24, 20
    prog = from_c(FILTER, "filt", params={"N": n, "M": m})
    rng = np.random.default_rng(3)
    ins = {"a": 0.5, "b": 0.25, "X": rng.random((n, m), dtype=np.float32)}
    want = run_c(FILTER, "filt", ins, {"N": n, "M": m})
    compiled = mica.compile_affine(expand_recurrences(privatise(prog)), mesh=mesh)
    res = compiled.run(ins, threads=2)
    for arr, value in want.items():
        assert np.array_equal(res.outputs[arr], value), (arr, mesh)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
    if mesh in ((4, 4), (8, 8)) and not compiled.program.folded:
        # The bottom-to-top pass runs as a wavefront from the far end of the mesh (on 8x8 the search folds
        # the row loop instead: mica.tiling.folded).
        step = compiled.schedule.phases[-1].step
        assert step is not None and step.wavefront and min(step.wave) < 0 and step.start > 0


def _deriche(w, h):
    spec = MANIFEST["deriche"]
    src = kernel_source("deriche").replace("24 + 0", str(w)).replace("16 + 0", str(h))
    params = {"w": w, "h": h}
    return src, params, make_inputs(src, "kernel_deriche", params, spec, seed=5)


@pytest.mark.parametrize("mesh", [(8, 8), pytest.param((10, 7), marks=pytest.mark.slow)])
def test_deriche_spreads_as_wavefronts_and_matches_native_c(mesh):
    """At 128x128 (f64) deriche's data do not fit one core; as written every pass pins its rows to one line
    of cores and no plan fits. Expanded, every pass runs on the same 2D blocks, the recurrences as wavefronts
    (the right-to-left and bottom-to-top ones from the far end)."""
    src, params, ins = _deriche(128, 128)
    want = run_c(src, "kernel_deriche", ins, params)
    compiled = mica.compile_affine(from_c(src, "kernel_deriche", params=params), mesh=mesh)
    assert any("mica.affine.recurrence" in r for r in compiled.schedule.reasons)
    assert compiled.cost.cores > mesh[0]
    waves = [p.step for p in compiled.schedule.phases if p.step is not None and p.step.wavefront]
    assert any(min(s.wave) < 0 and s.start > 0 for s in waves)
    res = compiled.run(ins, threads=2)
    for arr, value in want.items():
        assert np.array_equal(res.outputs[arr], value), (arr, mesh)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
