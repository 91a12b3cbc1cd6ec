"""The polyhedral benchmark kernels at PolyBench/C's SMALL dataset (``POLYBENCH_SMALL``: about 128 KB of data,
more than one core holds), compiled for 8x8 and run against the same C compiled natively. At these sizes no
kernel fits one core, so each must keep its data spread: a plan that works at the manifest's small sizes and
not at these is a plan that only works on the shapes of its tests."""

import sys
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.testing import run_c

sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))
from frontend_util import MANIFEST, POLYBENCH_SMALL, kernel_function, make_inputs, sized_kernel  # noqa: E402

RTOL, ATOL = 1e-9, 1e-12

#: Kernels checked here in CI (the emulator runs each in a few seconds); ``-m slow`` checks the rest that have
#: a plan at this size.
QUICK = ("symm", "gramschmidt", "trisolv", "cholesky", "gemver", "ludcmp")


def _check(name: str, mesh: tuple[int, int]) -> mica.CompiledProgram:
    src, params = sized_kernel(name, POLYBENCH_SMALL[name])
    fn, spec = kernel_function(name), MANIFEST[name]
    prog = from_c(src, fn, params=params)
    ins = make_inputs(src, fn, params, spec, seed=3)
    want = run_c(src, fn, ins, params)
    compiled = mica.compile_affine(prog, mesh=mesh)
    given = {k: v for k, v in ins.items() if k in set(prog.inputs) | {n for n, _ in prog.scalars}}
    res = compiled.run(given, threads=2)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
    for arr, value in want.items():
        np.testing.assert_allclose(res.outputs[arr], value, rtol=RTOL, atol=ATOL, err_msg=f"{name} {arr} on {mesh}")
    return compiled


@pytest.mark.parametrize("name", QUICK)
def test_small_dataset_spreads_and_matches_native_c(name):
    compiled = _check(name, (8, 8))
    assert compiled.cost.cores > 1


@pytest.mark.slow
def test_adi_at_its_small_size_runs_in_a_phase_loop_on_every_core():
    """ADI's 115 KB fit no core; its time loop runs around its two sweeps, each mapped over its own dimension
    (mica.affine.repeat), on all 64 cores of 8x8, against the native C (about a minute; the fast version of this
    check is tests/native/test_phase_loop.py)."""
    compiled = _check("adi", (8, 8))
    assert compiled.schedule.repeat and compiled.cost.cores == 64
