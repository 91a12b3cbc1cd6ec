"""The example programs the CSL back end tests render (small meshes, small sizes: fast), compiled and
rendered once per test session."""

from functools import lru_cache
from pathlib import Path

import mica
from mica.affine.retype import with_float_dtype
from mica.emit_csl import render
from mica.pipeline import LOWERING
from mica.targets import get_target
from mica.tiling.operators import map_operators, stream_schedules
from mica.tiling.split import split_operators

import samples

TWO_OPS = samples.chain3(16, "float")

JACOBI = samples.jacobi_2d(14, "float")


SYMMETRISE = samples.symmetrise(12)

MVT = samples.mvt(24, "float")

#: a gemv leaves t on the line of cores its reduction ends at; the map placed beside it reads t there
GEMV_THEN_MAP = """
void gs(float A[24][40], float x[40], float t[24], float y[24]) {
  for (int i = 0; i < 24; i++) { t[i] = 0; for (int k = 0; k < 40; k++) t[i] += A[i][k] * x[k]; }
  for (int i = 0; i < 24; i++) y[i] = t[i] * t[i] + 1.0f;
}"""

#: a KV cache's new row appended by the cores that computed it (k along row 0) and owned 7 rows down the
#: columns (K laid out as the heavier scores operator reads it): a routed write of one shift per column; the
#: scores' reduction combines as a binary tree, and s is turned to the other axis for nothing here
KV_APPEND = """
void kv(float W[64][64], float h[64], float K[64][64], float q[64], float s[64]) {
  float k[64];
  for (int d = 0; d < 64; d++) { k[d] = 0.0f; for (int j = 0; j < 64; j++) k[d] += W[d][j] * h[j]; }
  for (int d = 0; d < 64; d++) K[63][d] = k[d];
  for (int l = 0; l < 64; l++) { s[l] = 0.0f; for (int d = 0; d < 64; d++) s[l] += q[d] * K[l][d]; }
}"""

#: the two slabs of GEMV_THEN_MAP on an 8x6 mesh: side by side along x (t moves 5 hops east) or along y
LINE_MOVES = {"E": [((0, 0), (5, 6)), ((5, 0), (3, 6))], "S": [((0, 0), (8, 3)), ((0, 3), (8, 3))]}


def streamed(target: str, mesh=(4, 4), m: int = 16, n: int = 4):
    """T = A B; D = T C (A m x n) cut into 2 pieces along T's rows, each operator on a slab of its own (the
    first streamed plan the search tries)."""
    op = mica.affine.from_c(samples.matmul_chain(m, n))
    how, sched = next(stream_schedules(op, mesh, get_target(target), LOWERING))
    return mica.compile_affine(op, mesh=mesh, target=target, schedule=sched)


def line_move(direction: str, target: str):
    """GEMV_THEN_MAP with its operators on the two slabs of ``LINE_MOVES[direction]``."""
    op = mica.affine.from_c(GEMV_THEN_MAP)
    sched, _ = map_operators(op, split_operators(op), (8, 6), get_target(target), LOWERING,
                             places=LINE_MOVES[direction])
    return mica.compile_affine(op, mesh=(8, 6), target=target, schedule=sched)


def jacobi_halo(mesh: tuple[int, int], target: str):
    op = mica.affine.from_c(JACOBI, params={"tsteps": 3, "n": 14})
    return mica.compile_affine(op, mesh=mesh, target=target, schedule=mica.plans.halo(op, mesh))


@lru_cache(maxsize=None)
def program(name: str, target: str):
    mm = mica.ops.matmul(16, 16, 16)
    gv = mica.ops.gemv(16, 16)
    if name == "matmul_interleaved":
        return mica.compile_affine(mm, mesh=(4, 4), target=target)
    if name == "matmul_interleaved_single":
        # the searched plan above double-buffers; this one keeps one slot (ring shifts land beside the buffer)
        return mica.compile_affine(mm, mesh=(4, 4), target=target, schedule=mica.plans.interleaved(mm, (4, 4)))
    if name == "matmul_summa_double":
        mesh = (4, 4) if target == "wse2" else (2, 2)
        return mica.compile_affine(mm, mesh=mesh, target=target, schedule=mica.plans.summa(mm, mesh, buffers=2))
    if name == "matmul_summa":
        # WSE-3 binds each fabric queue to one colour for the whole program: a 4x4 SUMMA (a moving root,
        # one colour per root) needs 8 input queues on every core, and is relayed hop by hop instead
        # (test_relay.py); 2x2 keeps its multicasts.
        mesh = (4, 4) if target == "wse2" else (2, 2)
        return mica.compile_affine(mm, mesh=mesh, target=target, schedule=mica.plans.summa(mm, mesh))
    if name == "gemv_ktree":
        return mica.compile_affine(gv, mesh=(4, 4), target=target, schedule=mica.plans.ktree(gv, (4, 4)))
    if name == "gemv_levels":
        # a binary tree over 8 cores: its second level shifts 2 hops from every 4th core (pass-through routes)
        g8 = mica.ops.gemv(16, 64)
        return mica.compile_affine(g8, mesh=(8, 2), target=target, schedule=mica.plans.levels(g8, (8, 2)))
    if name == "kv_append":
        # (WSE-3: 4x4, whose colours fit the fabric queues it binds one colour each)
        mesh = (8, 8) if target == "wse2" else (4, 4)
        return mica.compile_affine(mica.affine.from_c(KV_APPEND), mesh=mesh, target=target)
    if name == "gemv_chain":
        return mica.compile_affine(gv, mesh=(4, 4), target=target, schedule=mica.plans.chain(gv, (4, 4)))
    if name == "two_ops":
        mesh = (4, 4) if target == "wse2" else (2, 2)
        return mica.compile_affine(mica.affine.from_c(TWO_OPS, params={"n": 16}), mesh=mesh, target=target)
    if name == "matmul_cannon_partial":
        op = mica.ops.matmul(10, 9, 11)
        return mica.compile_affine(op, mesh=(3, 3), target=target, schedule=mica.plans.cannon(op, (3, 3)))
    if name == "jacobi_halo":
        # halo exchanges: lock-step sweeps, one-hop shifts on MeshIR colours 0..3 reused by every exchange
        return jacobi_halo((3, 3), target)
    if name == "jacobi_halo_5x4":
        # past 3x3 (not golden): every core has neighbours on all four sides in both directions' parities
        return jacobi_halo((5, 4), target)
    if name == "symmetrise_mirror":
        # T = A B, then D = T + T^T: T is transposed on the fabric into a mirror home (one-hop conveyor)
        return mica.compile_affine(mica.affine.from_c(SYMMETRISE), mesh=(4, 4), target=target)
    if name == "symmetric_routed":
        # C[j][i] = C[i][j] writes the mirror core's block: staged, transposed on the fabric, copied home
        # (WSE-3: 2x2, whose SUMMA panels need fewer colours than its fabric queues bind)
        mesh = (4, 4) if target == "wse2" else (2, 2)
        return mica.compile_affine(mica.affine.from_c(samples.symmetric_rank_k(12, 8, "float")), mesh=mesh,
                                   target=target)
    if name == "mvt_side_by_side":
        # the search puts mvt's two gemvs side by side on disjoint slabs: boxes away from core (0, 0)
        return mica.compile_affine(mica.affine.from_c(MVT), mesh=(6, 4), target=target)
    if name == "mm3_side_by_side":
        # E = A B (an interleaved ring) and F = C D (SUMMA) side by side, then G = E F on the first slab: F's
        # blocks ride the conveyor (on WSE-3 the multicasts are relayed: its queues bind one colour each)
        return mica.compile_affine(mica.affine.from_c(samples.mm3(12).replace("double", "float")), mesh=(6, 3),
                                   target=target)
    if name == "chain_streamed":
        return streamed(target)
    if name == "line_move_east":
        return line_move("E", target)
    if name == "line_move_south":
        return line_move("S", target)
    if name == "gramschmidt_step_owner":
        # polybench gramschmidt (f32), as written: sweeps whose steps multicast what the step's owner computed
        # (roots floor(t / tile)); its norm is a reduction and its division has no DSD operation, so two of
        # its kernels keep scalar loops (named in plan.json with the reason)
        src = (Path(__file__).parents[1] / "frontend" / "kernels" / "gramschmidt.c").read_text()
        op = with_float_dtype(mica.affine.from_c(src, params={"m": 26, "n": 20}), "f32")
        return samples.step_owner_compile(op, (4, 3), target, searched_for=target)
    if name == "sweeps_phase":
        # ADI-shaped sweeps in a phase loop: the layout changes between them inside a loop around both
        return samples.phase_sweeps(target, (4, 4) if target == "wse2" else (3, 5), n=22)
    raise KeyError(name)


GOLDEN = ("matmul_interleaved", "matmul_summa", "matmul_summa_double", "gemv_ktree", "two_ops", "jacobi_halo",
          "gramschmidt_step_owner")
ALL = GOLDEN + ("gemv_chain", "matmul_cannon_partial", "jacobi_halo_5x4", "matmul_interleaved_single",
                "symmetrise_mirror", "symmetric_routed", "mvt_side_by_side", "line_move_east", "line_move_south", "chain_streamed",
                "sweeps_phase", "gemv_levels", "kv_append")


@lru_cache(maxsize=None)
def _rendered(name: str, target: str):
    return render(program(name, target))


def rendered(name: str, target: str) -> dict[str, str]:
    """The emitted files of an example (a fresh dict: tests may corrupt their copy)."""
    return dict(_rendered(name, target))
