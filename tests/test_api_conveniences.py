"""What a user passes as Python passes it: numpy integer mesh sizes, dtype aliases, every array of a C
signature to ``run()``, ``mica.testing`` after ``import mica``, a TypeError for a wrong argument type, and a
default mesh that follows the target."""

import ml_dtypes
import numpy as np
import pytest

import mica
from mica.errors import AffineError, ArgumentError, InputError, MicaError


@pytest.mark.parametrize("dtype, name", [
    ("f32", "f32"), ("float32", "f32"), (np.float32, "f32"), (np.dtype("float32"), "f32"), ("double", "f64"),
    (np.float64, "f64"), ("float16", "f16"), (np.int32, "i32"), ("int8", "i8"), (np.dtype(np.uint8), "u8"),
    ("bf16", "bf16"), ("bfloat16", "bf16"), (ml_dtypes.bfloat16, "bf16"), (np.dtype(ml_dtypes.bfloat16), "bf16"),
])
def test_dtype_aliases(dtype, name):
    assert {a.dtype for a in mica.ops.matmul(4, 4, 4, dtype=dtype).arrays} == {name}


@pytest.mark.parametrize("dtype", ["fp8", "float128", np.complex64, float, 3])
def test_unknown_dtypes_list_the_valid_names(dtype):
    with pytest.raises(AffineError, match="unsupported dtype .*MICA's dtypes are f16, bf16, f32, f64, i32"):
        mica.ops.matmul(4, 4, 4, dtype=dtype)


def test_numpy_integer_mesh_sizes_compile_and_run():
    op = mica.ops.matmul(12, 10, 8, dtype="float32")
    prog = mica.compile_affine(op, mesh=(np.int64(3), np.int32(2)))
    assert prog.mesh == (3, 2) and all(type(v) is int for v in prog.mesh)
    rng = np.random.default_rng(0)
    A, B = rng.random((12, 8), np.float32), rng.random((8, 10), np.float32)
    np.testing.assert_allclose(prog.run({"A": A, "B": B}).outputs["C"], A @ B, rtol=1e-5)
    assert prog.retarget(np.array([2, 2])).mesh == (2, 2)


def test_run_takes_every_array_of_the_signature_and_ignores_output_only_contents():
    src = """void k(int n, float A[6][5], float B[6][5], float C[6][5]) {
      for (int i = 0; i < 6; i++) for (int j = 0; j < 5; j++) { B[i][j] = 2 * A[i][j]; C[i][j] += A[i][j]; } }"""
    prog = mica.compile_affine(src, mesh=(2, 2), params={"n": 6})
    assert set(prog.program.inputs) == {"A", "C"} and "B" in prog.program.outputs
    rng = np.random.default_rng(1)
    A, C = rng.random((6, 5), np.float32), rng.random((6, 5), np.float32)
    junk = np.full((6, 5), 7e30, np.float32)                     # B's contents do not matter
    out = prog.run({"A": A, "B": junk, "C": C}).outputs
    want = mica.testing.run_c(src, None, {"A": A, "C": C}, {"n": 6})
    mica.testing.assert_matches(out, want)
    assert (junk == 7e30).all()                                  # and it is left as it was
    with pytest.raises(InputError, match=r"input 'B' has shape \(5, 6\), expected \(6, 5\)"):
        prog.run({"A": A, "B": np.zeros((5, 6), np.float32), "C": C})
    with pytest.raises(InputError, match=r"input 'B' has dtype float64"):
        prog.run({"A": A, "B": np.zeros((6, 5)), "C": C})
    with pytest.raises(InputError, match=r"unexpected inputs \['D'\]; k takes \['A', 'C'\] \(and, ignored, its "
                                         r"outputs \['B'\]\)"):
        prog.run({"A": A, "C": C, "D": A})


def test_wrong_argument_types_are_type_errors_and_mica_errors():
    for bad in (42, None, [1, 2], np.zeros(3)):
        with pytest.raises(TypeError, match="compile_affine expects a mica Program") as info:
            mica.compile_affine(bad, mesh=(2, 2))
        assert isinstance(info.value, ArgumentError) and isinstance(info.value, MicaError)


def test_the_default_mesh_is_the_targets_grid():
    op = mica.ops.add(64)
    assert mica.compile_affine(op, target="wormhole").mesh == mica.get_target("wormhole").grid
    assert mica.compile_affine(op, target="blackhole").mesh == mica.get_target("blackhole").grid


def test_testing_is_reachable_from_the_package():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import mica; print(mica.testing.run_c.__name__)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "run_c"


def test_compile_restores_the_callers_collector_thresholds():
    # compile_affine raises Python's gc thresholds while it runs (mica.pipeline.COMPILE_GC_THRESHOLD) and
    # gives the caller's back, also when the compile fails.
    import gc

    from mica.pipeline import COMPILE_GC_THRESHOLD

    saved = gc.get_threshold()
    try:
        gc.set_threshold(321, 7, 9)
        mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=(2, 2))
        assert gc.get_threshold() == (321, 7, 9)
        with pytest.raises(MicaError):
            mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=(0, 2))
        assert gc.get_threshold() == (321, 7, 9)
        assert COMPILE_GC_THRESHOLD[0] > gc.get_threshold()[0]
    finally:
        gc.set_threshold(*saved)
