"""Bad input: each case raises a MicaError subclass whose message names the problem."""

import numpy as np
import pytest

import mica
from mica.errors import InputError, MeshError, MicaError, SramError, TargetError
from mica.pipeline import _explain_sram
from mica.targets import get_target


@pytest.mark.parametrize("mesh, words", [
    ((0, 4), "width must be positive"), ((4, -1), "height must be positive"),
    ((751, 10), "larger than wse2's usable grid 750x994"), ((10, 995), "larger than"),
    ((2.5, 3), "must be an integer"), ("16x16", "mesh must be"), ((4,), "mesh must be"),
])
def test_bad_mesh(mesh, words):
    with pytest.raises(MeshError, match=words):
        mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=mesh)


def test_unknown_target():
    with pytest.raises(TargetError, match="unknown target 'tpu'.*wse2"):
        mica.compile_affine(mica.ops.add(8), mesh=(2, 2), target="tpu")


@pytest.fixture(scope="module")
def prog():
    return mica.compile_affine(mica.ops.scaled_add((6, 4)), mesh=(2, 2))


def _ok():
    return {"A": np.zeros((6, 4), np.float32), "B": np.zeros((6, 4), np.float32), "alpha": 2.0}


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("A"), "input 'A' is missing"),
    (lambda d: d.pop("alpha"), "scalar 'alpha' is missing"),
    (lambda d: d.update(A=np.zeros((4, 6), np.float32)), r"input 'A' has shape \(4, 6\), expected \(6, 4\)"),
    (lambda d: d.update(B=np.zeros((6, 4), np.float64)), "input 'B' has dtype float64, expected float32"),
    (lambda d: d.update(A=[[0.0] * 4] * 6), "input 'A' must be a numpy array"),
    (lambda d: d.update(Z=np.zeros(3)), r"unexpected inputs \['Z'\]"),
    (lambda d: d.update(alpha="two"), "scalar 'alpha' must be a number"),
])
def test_bad_inputs(prog, change, words):
    ins = _ok()
    change(ins)
    with pytest.raises(InputError, match=words):
        prog.run(ins)


def test_bad_thread_count(prog):
    with pytest.raises(InputError, match="threads must be a positive integer"):
        prog.run(_ok(), threads=0)


def test_sram_overflow_names_bytes_and_limit():
    # 2048^3 on a 4x4 mesh: 512x512 f32 tiles are far beyond 48 KB, and the error says so.
    with pytest.raises(SramError) as info:
        mica.compile_affine(mica.ops.matmul(2048, 2048, 2048), mesh=(4, 4), target="wse2")
    msg = str(info.value)
    assert "bytes per core" in msg and "49152 bytes of SRAM" in msg and "C 1048576 B" in msg
    assert "fits on the full 750x994 grid" in msg


def test_sram_overflow_even_on_the_full_mesh():
    with pytest.raises(SramError, match="does not fit even on the full 8x8 grid"):
        mica.compile_affine(mica.ops.add((4096, 4096)), mesh=(8, 8), target="wormhole")


def test_sram_overflow_of_a_program_that_cannot_spread_does_not_blame_the_mesh():
    # Every read of A reaches across the array: nothing spreads, one core must hold it all, so the message
    # must not suggest that a larger mesh would fit it (nor that the full grid does not).
    op = mica.affine.from_c("""
void rec(float A[200][200]) {
  for (int i = 0; i < 200; i++) for (int j = 0; j < 200; j++) A[i][j] = A[j][i] * 0.5f + A[i][199 - j];
}""")
    exc = SramError("rec on one core needs 160000 bytes; target wse2 has 49152 bytes of SRAM per core")
    _explain_sram(exc, op, (8, 8), get_target("wse2"))
    assert "no loop of rec spreads over cores" in str(exc) and "a larger mesh does not help" in str(exc)
    assert "full" not in str(exc)


def test_every_error_is_a_mica_error():
    for cls in (MeshError, TargetError, InputError, SramError, mica.SimError, mica.CommError,
                mica.ScheduleError, mica.AffineError, mica.NotAffineError, mica.EmitError, mica.MeshIRError):
        assert issubclass(cls, MicaError)


def test_forced_schedule_for_another_mesh_is_rejected():
    s = mica.compile_affine(mica.ops.add((8, 8)), mesh=(2, 2)).schedule
    with pytest.raises(mica.ScheduleError, match="forced schedule is for mesh"):
        mica.compile_affine(mica.ops.add((8, 8)), mesh=(4, 4), schedule=s)


def test_forced_schedule_round_trips_through_json():
    op = mica.ops.matmul(30, 20, 10)
    p = mica.compile_affine(op, mesh=(3, 2))
    again = mica.compile_affine(op, mesh=(3, 2), schedule=mica.Schedule.from_json(p.schedule.to_json()))
    assert again.meshir == p.meshir and again.cost == p.cost
