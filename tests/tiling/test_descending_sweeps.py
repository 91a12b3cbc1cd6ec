"""Sweeps that count down. A back substitution is sequential in its row loop as written; by its column loop it
is a sweep whose steps are parallel over the rows, but that loop must run from the last column to the first, and
the row's sum is then accumulated in the other order. :func:`mica.affine.align.alignments` finds that alignment
(``down``, the sum's statement listed in ``reordered``: the freedom a reduction over cores takes), the mapping
makes it a sweep counting down (``StepMap.down``), legality orders its steps from the last to the first, and
MeshIR's step loop runs that way in the emulator (``Loop.down``). At n = 120 the matrix fits no core and only
that plan exists: it runs on several meshes, non-divisible ones included, within rounding of numpy."""

from dataclasses import replace

import numpy as np
import pytest

import mica
from mica.affine.align import aligned_program, alignments
from mica.affine.from_c import from_c
from mica.affine.privatise import privatise
from mica.errors import ScheduleError
from mica.meshir.ir import Loop
from mica.tiling.legality import check_legal
from mica.tiling.mapping import derive_schedule

import samples

BACK = samples.BACK_SUBSTITUTION

FORWARD = """
void forward(int n, double A[n][n], double b[n], double y[n]) {
  double w;
  for (int i = 0; i < n; i++) {
    w = b[i];
    for (int j = 0; j < i; j++)
      w -= A[i][j] * y[j];
    y[i] = w;
  }
}
"""


def _program(src: str, fn: str, n: int):
    return privatise(from_c(src, fn, params={"n": n}))


def _reference(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    n = len(y)
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, n):
            w -= A[i][j] * x[j]
        x[i] = w / A[i][i]
    return x


def test_a_back_substitution_aligns_by_its_columns_counting_down():
    (al,) = alignments(_program(BACK, "back", 6))
    assert (al.loop, al.down, al.reordered) == ("j", True, ("S1",))
    assert dict(al.choices) == {"S0": "<", "S1": "j", "S2": "i"}
    assert al.order == ("S2", "S1")                # x[j] = w[j] / A[j][j] before the updates that read x[j]
    assert "counting down" in al.describe() and "in another order" in al.describe()
    p = aligned_program(_program(BACK, "back", 6), al)
    # the column loop counts down; the rows keep the direction the source gives them
    assert [(s.name, s.loops, s.order) for s in p.statements] == [
        ("S0", ("i",), (0, "-i", 0)), ("S2", ("j",), (1, "-j", 0)), ("S1", ("j", "i"), (1, "-j", 1, "-i", 0))]


def test_a_forward_substitution_keeps_its_exact_alignment():
    (al,) = alignments(_program(FORWARD, "forward", 6))
    assert (al.loop, al.down, al.reordered) == ("j", False, ())


def test_an_integer_accumulation_is_never_reordered():
    src = BACK.replace("double", "int").replace("w / A[i][i]", "w")
    assert alignments(_program(src, "back", 6)) == ()


def test_the_steps_must_run_from_the_last():
    """The aligned nest's sweep is legal counting down and refused counting up (x[j] would be read before
    the step that divides it has run)."""
    (al,) = alignments(_program(BACK, "back", 12))
    p = aligned_program(_program(BACK, "back", 12), al)
    nest = p.replace(statements=tuple(s for s in p.statements if s.name != "S0"))
    sched = derive_schedule(nest, (4, 1), assignment=[("i", "x")])
    assert sched.step is not None and sched.step.sweep and sched.step.down
    check_legal(nest, sched)
    with pytest.raises(ScheduleError):
        check_legal(nest, sched.copy(step=replace(sched.step, down=False)))


@pytest.mark.parametrize("mesh", [(8, 8), (5, 3), (3, 7)])
def test_back_substitution_too_large_for_a_core_spreads_counting_down(mesh):
    n = 120                                     # A is 115,200 B: no core of 48 KB holds it
    compiled = mica.compile_affine(from_c(BACK, "back", params={"n": n}), mesh=mesh)
    assert compiled.cost.cores > 1
    assert any("counting down" in r for r in compiled.schedule.reasons)
    loops = [op for op, _ in compiled.mesh_program.walk() if isinstance(op, Loop)]
    assert any(op.down for op in loops)
    rng = np.random.default_rng(7)
    A = rng.uniform(0.5, 1.5, (n, n)) + n * np.eye(n)
    y = rng.uniform(0.5, 1.5, n)
    res = compiled.run({"A": A, "y": y, "x": np.zeros(n)}, threads=2)
    np.testing.assert_allclose(res.outputs["x"], _reference(A, y), rtol=1e-12, atol=1e-15)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
    assert 1 / 1.6 <= res.stats.cycles / compiled.cost.total_cycles <= 1.6
