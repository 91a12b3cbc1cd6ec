"""Operators streaming from slab to slab: a program cut into pieces along one dimension
(:mod:`mica.affine.pieces`), each piece's operators on their own slab of the mesh, so the producer's slab
works on piece k + 1 while the consumer's works on piece k; and arrays pinned to a line of cores moved
between rectangles. Every run is compared with numpy or the program run sequentially, and its modelled
cycles with the emulator's."""

import numpy as np
import pytest

import mica
from mica.affine.pieces import cut_program
from mica.meshir.ir import Exchange, Shift
from mica.tiling.split import split_operators
from mica.pipeline import LOWERING
from mica.tiling.operators import map_operators, stream_schedules
from mica.targets import get_target
from mica.testing import run_program
from mica.tiling.schedule import Schedule

import samples

chain = samples.matmul_chain


GEMV_THEN_MAP = """
void gs(float A[24][40], float x[40], float t[24], float y[24]) {
  for (int i = 0; i < 24; i++) { t[i] = 0; for (int k = 0; k < 40; k++) t[i] += A[i][k] * x[k]; }
  for (int i = 0; i < 24; i++) y[i] = t[i] * t[i] + 1.0f;
}"""

# Columns, in place: every column j of x is updated by its own column of A; cut along j (dimension 1).
COLUMNS = """
void cols(double A[6][10], double x[6][10], double s[10], double alpha) {
  for (int j = 0; j < 10; j++) { s[j] = 0; for (int i = 0; i < 6; i++) s[j] += A[i][j] * x[i][j]; }
  for (int i = 0; i < 6; i++) for (int j = 0; j < 10; j++) x[i][j] = x[i][j] + alpha * s[j] * A[i][j];
}"""


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    out = {a: rng.standard_normal(prog.array(a).shape).astype(np.float32 if prog.array(a).dtype == "f32"
                                                               else np.float64) for a in prog.inputs}
    out.update({n: 0.5 for n, _ in prog.scalars})
    return out


@pytest.mark.parametrize("src, array, dim, count", [
    (chain(12, 5), "T", 0, 3),
    (chain(10, 4), "D", 0, 4),          # uneven: blocks of 3, 3, 3, 1
    (COLUMNS, "s", 0, 3),
    (GEMV_THEN_MAP, "y", 0, 24),
])
def test_pieces_compute_what_the_program_computes(src, array, dim, count):
    """Cut inputs, pieces run one after another, outputs pasted back: the same values, exactly (each
    element is computed by the same operations in the same order)."""
    prog = mica.affine.from_c(src)
    pieces = cut_program(prog, array, dim, count)
    assert pieces.count == min(count, prog.array(array).shape[dim])
    ins = _inputs(prog)
    want = run_program(prog, ins)
    got = pieces.join(run_program(pieces.program, pieces.split(ins)))
    assert sorted(got) == sorted(prog.outputs)
    for name in prog.outputs:
        assert got[name].tobytes() == want[name].tobytes(), name


@pytest.mark.parametrize("m, n, mesh", [(64, 8, (8, 8)), (36, 6, (5, 7))])
def test_streamed_chain_matches_numpy_and_the_model(m, n, mesh):
    """Every streamed candidate the search considers compiles, runs correctly in the emulator, agrees
    with its modelled cycles, and survives JSON and a retarget to another mesh."""
    op = mica.affine.from_c(chain(m, n))
    tgt = get_target("wse2")
    found = list(stream_schedules(op, mesh, tgt, LOWERING))
    assert found
    for how, sched in found:
        assert not isinstance(sched, Exception), how
        assert sched.pieces[:2] == ("T", 0) and len(sched.phases) == 2 * sched.pieces[2]
        assert {p.origin for p in sched.phases[0::2]} == {(0, 0)} and sched.placed
        compiled = mica.compile_affine(op, mesh=mesh, schedule=Schedule.from_json(sched.to_json()))
        assert f"{sched.pieces[2]} pieces along dimension 0 of T, streamed" in str(compiled.schedule)
        ins = _inputs(op)
        res = compiled.run(ins)
        t = ins["A"] @ ins["B"]
        np.testing.assert_allclose(res.outputs["T"], t, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(res.outputs["D"], t @ ins["C"], rtol=1e-4, atol=1e-3)
        # The model starts an operator after every earlier one that shares its bounding box of cores, the
        # emulator's per-core clocks as soon as the core's own part is done: within a tenth.
        assert res.stats.cycles == pytest.approx(compiled.cost.total_cycles, rel=0.1)
        wider = compiled.retarget((mesh[0] * 2, mesh[1]))
        assert wider.schedule.pieces == sched.pieces and wider.schedule.phases[1].origin != (0, 0)
        np.testing.assert_allclose(wider.run(ins).outputs["D"], res.outputs["D"], rtol=1e-4, atol=1e-3)


def test_back_ends_write_pieces_through_slices_of_the_programs_arrays(tmp_path):
    """CSL and Metalium emit a streamed plan (executed in tests/emit_csl and tests/emit_metalium): the host
    loads piece k of A from A's rows of piece k and stores T's pieces into T's rows."""
    op = mica.affine.from_c(chain(16, 4))
    how, sched = next(stream_schedules(op, (4, 4), get_target("wse2"), LOWERING))
    compiled = mica.compile_affine(op, mesh=(4, 4), schedule=sched)
    assert compiled.pieces.sources()["A_s1"] == ("A", 0, 8, 16)
    for kind in ("csl", "metalium", "c"):
        assert compiled.emit(kind, tmp_path / kind)
    run_py = (tmp_path / "csl" / "run.py").read_text()
    assert "to_pes(arrays['A'][8:16]" in run_py and "from_pes(flat, got['T'][8:16]" in run_py
    assert "part[(size_t)i * 4 + j] = arr_A[(size_t)(i + 8) * 4 + (j + 0)]" in (tmp_path / "metalium" / "host.cpp").read_text()


@pytest.mark.parametrize("places, direction, hops", [
    ([((0, 0), (5, 6)), ((5, 0), (3, 6))], "E", 5),
    ([((0, 0), (8, 3)), ((0, 3), (8, 3))], "S", 3),
])
def test_an_array_pinned_to_a_line_moves_in_one_shift(places, direction, hops):
    """A gemv leaves t on the column (row) of cores its reduction ends at; the map beside it reads t from
    its own first column (row): the routers pass every block the whole way in one shift."""
    op = mica.affine.from_c(GEMV_THEN_MAP)
    sched, _ = map_operators(op, split_operators(op), (8, 6), get_target("wse2"), LOWERING, places=places)
    assert any(h.pin for h in sched.phases[0].homes if h.array == "t")
    compiled = mica.compile_affine(op, mesh=(8, 6), schedule=sched)
    moves = [c for e in compiled.mesh_program.body if isinstance(e, Exchange) for c in e.ops
             if isinstance(c, Shift) and c.array == "t"]
    assert [(c.direction, c.distance) for c in moves] == [(direction, hops)]
    ins = _inputs(op, seed=3)
    res = compiled.run(ins)
    t = ins["A"] @ ins["x"]
    np.testing.assert_allclose(res.outputs["t"], t, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(res.outputs["y"], t * t + 1, rtol=1e-4, atol=1e-3)
    assert res.stats.cycles == pytest.approx(compiled.cost.total_cycles, rel=0.05)
