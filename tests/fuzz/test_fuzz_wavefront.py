"""Differential fuzzing of wavefronts: random in-place updates with uniform dependences (random neighbour
offsets, an optional time loop, random sizes and meshes), every wavefront plan MICA offers for them forced and
run in the emulator against the C compiled natively, bit for bit (a wavefront keeps the order of every
update on its core). A plan MICA refuses must say why with a MicaError; most must run (asserted), so the
check cannot pass by refusing everything. The long soak is ``-m slow``."""

import random

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.errors import MicaError
from mica.tiling.mapping import derive_schedule, wavefront_candidates
from mica.testing import run_c


def random_program(rng: random.Random) -> tuple[str, dict]:
    """A random in-place update ``A[i][j] = (sum of neighbours) * c + B[i][j]`` over a 2D grid, maybe inside
    a time loop, whose reads reach at most one element in every direction."""
    n, m = rng.randint(3, 14), rng.randint(3, 14)
    offsets = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)]
    terms = rng.sample(offsets, rng.randint(1, 5))
    if all(t == (0, 0) for t in terms):
        terms.append((-1, 0))
    idx = {-1: " - 1", 0: "", 1: " + 1"}
    rhs = " + ".join(f"A[i{idx[di]}][j{idx[dj]}]" for di, dj in terms)
    scale = 1.0 / (len(terms) + 1)
    body = f"A[i][j] = ({rhs}) * {scale!r} + B[i][j];"
    nest = (f"for (int i = 1; i <= {n}; i++)\n    for (int j = 1; j <= {m}; j++)\n      {body}")
    params = {}
    head = f"void k(double A[{n + 2}][{m + 2}], double B[{n + 2}][{m + 2}]"
    if rng.random() < 0.4:
        params = {"T": rng.randint(1, 3)}
        head = head.replace("void k(", "void k(int T, ")
        nest = "for (int t = 0; t < T; t++)\n  " + nest.replace("\n", "\n  ")
    return f"{head}) {{\n  {nest}\n}}\n", params


def check(seed: int) -> tuple[int, int]:
    """(plans run, plans refused) for the random program of ``seed`` on a random mesh; raises on a wrong
    answer or an error that is not a MicaError."""
    rng = random.Random(seed)
    src, params = random_program(rng)
    mesh = (rng.randint(1, 5), rng.randint(1, 5))
    prog = from_c(src, params=params)
    data = np.random.default_rng(seed)
    ins = {a: data.random(prog.array(a).shape) for a in prog.inputs}
    want = run_c(src, None, ins, params)
    ran = refused = 0
    for assignment in wavefront_candidates(prog):
        try:
            sched = derive_schedule(prog, mesh, assignment=assignment, wave=True)
            compiled = mica.compile_affine(prog, mesh=mesh, target="generic", schedule=sched)
        except MicaError:
            refused += 1
            continue
        res = compiled.run(ins)
        assert res.stats.summary()["computing_cores"] == compiled.cost.cores, (seed, src, assignment)
        for name, value in want.items():
            np.testing.assert_array_equal(res.outputs[name], value, err_msg=f"seed {seed}, {assignment}\n{src}")
        ran += 1
    return ran, refused


def test_random_wavefronts_match_native_c():
    ran = refused = 0
    for seed in range(24):
        r, f = check(seed)
        ran, refused = ran + r, refused + f
    assert ran >= 24, (ran, refused)


@pytest.mark.slow
def test_random_wavefronts_soak():
    ran = 0
    for seed in range(1000, 3000):
        ran += check(seed)[0]
    assert ran >= 2000
