"""Every kernel of tests/frontend/kernels: from_c parses it, and the affine Program run sequentially
(mica.testing.run_program) equals the original C compiled natively (mica.testing.run_c)."""

import numpy as np
import pytest

from frontend_util import MANIFEST, kernel_function, kernel_source, make_inputs
from mica.affine.deps import PARALLEL, REDUCTION, SEQUENTIAL, loop_kinds
from mica.affine.from_c import from_c
from mica.testing import assert_matches, run_c, run_program

NAMES = sorted(MANIFEST)


def _prog(name):
    spec = MANIFEST[name]
    return from_c(kernel_source(name), kernel_function(name), params=spec["params"], filename=f"{name}.c")


def test_manifest_covers_every_kernel_file():
    from frontend_util import KERNEL_DIR
    assert {p.stem for p in KERNEL_DIR.glob("*.c")} == set(MANIFEST)
    assert len(MANIFEST) == 30


@pytest.mark.parametrize("name", NAMES)
def test_kernel_matches_native_c(name):
    spec = MANIFEST[name]
    src, fn = kernel_source(name), kernel_function(name)
    prog = _prog(name)
    assert prog.name == fn
    assert prog.source == src
    assert [s.name for s in prog.statements] == [f"S{k}" for k in range(len(prog.statements))]
    lines = src.split("\n")
    for s in prog.statements:          # each statement remembers the C line of its assignment
        assert s.line > 0 and ("=" in lines[s.line - 1] or "++" in lines[s.line - 1])
    ins = make_inputs(src, fn, spec["params"], spec, seed=1)
    want = run_c(src, fn, ins, spec["params"])
    assert set(want) == set(prog.outputs)
    got = run_program(prog, ins)
    assert_matches(got, want, rtol=1e-12)
    for k in want:
        assert np.isfinite(want[k]).all()


EXPECTED_IO = {
    "gemm": (("C", "A", "B"), ("C",)),
    "2mm": (("A", "B", "C", "D"), ("tmp", "D")),
    "atax": (("A", "x"), ("y",)),
    "gramschmidt": (("A", "R"), ("A", "R", "Q")),   # R: only the upper triangle is written
    "durbin": (("r",), ("y",)),
    "adi": (("u", "v", "p", "q"), ("u", "v", "p", "q")),
    "deriche": (("imgIn",), ("imgOut", "y1", "y2")),
    "trisolv": (("L", "b"), ("x",)),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_IO))
def test_inputs_and_outputs(name):
    prog = _prog(name)
    assert (prog.inputs, prog.outputs) == EXPECTED_IO[name]


def test_temporaries_are_zero_d_arrays_and_not_outputs():
    prog = _prog("durbin")
    z, alpha, s = prog.array("z"), prog.array("alpha"), prog.array("sum")
    assert z.shape == (30,) and alpha.shape == () and s.shape == ()
    assert not {"z", "alpha", "beta", "sum"} & set(prog.inputs + prog.outputs)
    assert _prog("doitgen").array("sum").shape == (12,)


def test_scalars_and_gemm_structure():
    prog = _prog("gemm")
    assert prog.scalars == (("alpha", "f64"), ("beta", "f64"))
    s0, s1 = prog.statements
    assert s0.loops == ("i", "j") and s1.loops == ("i", "k", "j")
    assert s0.order == (0, "i", 0, "j", 0) and s1.order == (0, "i", 1, "k", 0, "j", 0)
    assert loop_kinds(prog)["S1"] == {"i": PARALLEL, "k": REDUCTION, "j": PARALLEL}


def test_decreasing_loops_use_negated_iterators():
    prog = _prog("nussinov")
    assert all(s.order[:2] == (0, "-i") for s in prog.statements)
    sched = prog.schedule_map()
    assert not sched.is_empty()
    assert loop_kinds(prog)["S4"]["i"] == SEQUENTIAL    # table[k + 1][j] comes from a larger i
