"""The programs the Metalium back-end tests emit: small meshes and sizes, compiled once per session."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import mica

import samples

MM2 = samples.mm2(64, "float")


def _matmul_interleaved():
    op = mica.ops.matmul(64, 64, 64)
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.interleaved(op, (4, 4)))


def _matmul_summa():
    op = mica.ops.matmul(64, 64, 64)
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.summa(op, (4, 4)))


def _matmul_summa_blackhole():
    op = mica.ops.matmul(96, 80, 64)
    return mica.compile_affine(op, mesh=(5, 3), target="blackhole", schedule=mica.plans.summa(op, (5, 3)))


def _matmul_summa_double():
    op = mica.ops.matmul(64, 64, 64)
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.summa(op, (4, 4), buffers=2))


def _matmul_interleaved_double():
    op = mica.ops.matmul(64, 64, 64)
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole",
                               schedule=mica.plans.interleaved(op, (4, 4), buffers=2))


def _matmul_cannon_double_partial():
    # a Cannon ring (guarded: no shift at t = 0) on partial boxes of more than one tile
    op = mica.ops.matmul(100, 70, 90)
    return mica.compile_affine(op, mesh=(3, 3), target="wormhole", schedule=mica.plans.cannon(op, (3, 3), buffers=2))


def _gemv_ktree():
    op = mica.ops.gemv(64, 64)
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.ktree(op, (4, 4)))


def _mm2():
    return mica.compile_affine(mica.affine.from_c(MM2, params={"n": 64}), mesh=(4, 4), target="wormhole")


def _matmul_partial():
    # sizes that do not divide the mesh: partial boxes and edge classes; boxes of more than one tile
    op = mica.ops.matmul(100, 70, 90)
    return mica.compile_affine(op, mesh=(3, 2), target="wormhole", schedule=mica.plans.summa(op, (3, 2)))


def _matmul_wse2():
    op = mica.ops.matmul(48, 48, 48)
    return mica.compile_affine(op, mesh=(3, 3), target="wse2", schedule=mica.plans.interleaved(op, (3, 3)))


CHAIN3 = samples.chain3(256, "float")


def _chain3():
    # gemv -> element-wise -> gemv, mapped operator by operator
    return mica.compile_affine(mica.affine.from_c(CHAIN3, params={"n": 256}), mesh=(4, 4), target="wormhole")


TRIANGLE = '''
void tri(int n, float A[70][70], float B[70][70], float C[70][70]) {
  for (int i = 0; i < n; i++) for (int j = 0; j <= i; j++) C[i][j] = A[i][j] + 2.0f * B[i][j];
}'''


def _triangle():
    # no whole-box tile routine: a stencil of two views gathered on the reader, tile passes, a scatter into the
    # triangle (partial boxes of 35 x 35 elements, 2 x 2 tiles per core)
    return mica.compile_affine(mica.affine.from_c(TRIANGLE, params={"n": 70}), mesh=(2, 2), target="wormhole")


TRIANGLE_SQRT = TRIANGLE.replace("2.0f * B[i][j]", "2.0f * sqrtf(fabsf(B[i][j]))")


def _triangle_sqrt():
    # square roots: no tile routine in evaluation order, so the generic path (scalar loops on the reader)
    return mica.compile_affine(mica.affine.from_c(TRIANGLE_SQRT, params={"n": 70}), mesh=(2, 2), target="wormhole")


def _gemv_wse3():
    op = mica.ops.gemv(48, 40)
    return mica.compile_affine(op, mesh=(3, 4), target="wse3", schedule=mica.plans.ktree(op, (3, 4)))


JACOBI = samples.jacobi_2d(34, "float")

#: halo exchange for stencils arrives with ``mica.plans.halo``; until then the stencil program is left out
HAVE_HALO = hasattr(mica.plans, "halo")


def _jacobi():
    prog = mica.affine.from_c(JACOBI, params={"tsteps": 3, "n": 34})
    return mica.compile_affine(prog, mesh=(4, 4), target="wormhole", schedule=mica.plans.halo(prog, (4, 4)))


def _jacobi_bf16():
    # bf16 stencil passes: each pass packs a rounded bf16 tile (the reference rounds once per statement)
    prog = mica.affine.from_c(samples.jacobi_2d(34, "__bf16"), params={"tsteps": 3, "n": 34})
    return mica.compile_affine(prog, mesh=(4, 4), target="wormhole", schedule=mica.plans.halo(prog, (4, 4)))


def _mvt_side_by_side():
    # the search puts mvt's two gemvs side by side on the two halves: boxes away from core (0, 0)
    return mica.compile_affine(mica.affine.from_c(samples.mvt(128, "float")), mesh=(4, 4), target="wormhole")


def _line_move(direction: str):
    from emit_csl.programs import line_move
    return lambda: line_move(direction, "wormhole")


def _matmul_summa_8x8():
    # a moving root on every one of Wormhole's 8 columns and rows: NoC multicasts need no colours
    op = mica.ops.matmul(256, 256, 256)
    return mica.compile_affine(op, mesh=(8, 8), target="wormhole", schedule=mica.plans.summa(op, (8, 8)))


def _chain_streamed():
    # T = A B; D = T C in 2 pieces along T's rows, streamed from slab to slab (host stages piece slices)
    from emit_csl.programs import streamed
    return streamed("wormhole", (4, 4), 256, 64)


def _mm3_side_by_side():
    # E = A B (interleaved ring) beside F = C D (SUMMA), F's blocks conveyed to G = E F's slab: 10
    # semaphores unless the last phase's valid flags reuse the first's
    src = samples.mm3(128).replace("double", "float")
    return mica.compile_affine(mica.affine.from_c(src), mesh=(8, 4), target="wormhole")


def _matmul_summa_bf16():
    # bf16: Float16_b tiles, host staging through tt-metal's bfloat16, a bf16 reference check
    op = mica.ops.matmul(64, 64, 64, dtype="bf16")
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.summa(op, (4, 4)))


def _gemv_ktree_bf16():
    # bf16 multicasts, shifts, element-wise adds and fills
    op = mica.ops.gemv(64, 64, dtype="bf16")
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=mica.plans.ktree(op, (4, 4)))


def _triangle_bf16():
    # bf16 on the generic path: scalar loops reading bf16 elements as f32 and rounding what they store
    src = TRIANGLE.replace("float", "__bf16")
    return mica.compile_affine(mica.affine.from_c(src, params={"n": 70}), mesh=(2, 2), target="wormhole")


STENCIL_FORMS = """
void forms(float A[40][40], float B[40][40], float C[40][40]) {
  for (int i = 1; i < 39; i++)
    for (int j = 1; j <= i; j++)
      C[i][j] = (A[i][j + 1] - A[i][j]) * (B[i][j] + 1.0f) - (-A[i - 1][j] / 4.0f) * (3.0f - B[i + 1][j - 1]);
}"""


def _stencil_forms():
    # a stencil over a triangle with every pass kind: sub/mul/add tiles, a second result CB, SFPU add, mul by
    # -1, div and rsub by constants
    return mica.compile_affine(mica.affine.from_c(STENCIL_FORMS), mesh=(2, 2), target="wormhole")


def step_owner(name: str, mesh: tuple[int, int]):
    """A polybench sweep whose steps multicast from the owner of the step's element (searched for WSE-2, where
    it spreads over the mesh; compiled for Wormhole with that schedule), f32."""
    from mica.affine.retype import with_float_dtype
    src, fn, params = samples.step_owner_kernel(name)
    prog = mica.affine.from_c(src, fn, params=params)
    prog = with_float_dtype(prog, "f32")
    return samples.step_owner_compile(prog, mesh, "wormhole")


ATTENTION = (Path(__file__).resolve().parents[2] / "examples" / "attention.c").read_text()


def _attention(target: str, mesh: tuple[int, int], dtype: str = "f32", **sizes):
    """Decode attention (examples/attention.c: rank-3 K and V caches, a running fmaxf, expf, sums), searched
    for the target; sizes that leave partial tiles and partial boxes."""
    def build():
        prog = mica.affine.from_c(ATTENTION, "attention", defines={k: str(v) for k, v in sizes.items()})
        if dtype != "f32":
            from mica.affine.retype import with_float_dtype
            prog = with_float_dtype(prog, dtype)
        return mica.compile_affine(prog, mesh=mesh, target=target)
    return build


def _online_attention():
    """Decode attention with the online softmax's (running max, rescaled sum) pair, under the plan WSE-2's search
    finds on 4x4 (the pair combined across the cores of each head's line; Wormhole's search keeps the pair's
    loop on one core)."""
    from native.test_online_softmax import ONLINE_ATTENTION
    op = mica.affine.from_c(ONLINE_ATTENTION, "attention", params={"H": 3, "L": 50, "D": 12})
    plan = mica.compile_affine(op, mesh=(4, 4), target="wse2").schedule
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=plan)


#: a GEMV then a scaling of its result into the next step's input, 3 times: a phase loop whose body reduces
#: across cores and changes layouts both ways
PHASE_GEMV = """
void power(float A[64][64], float x[64], float y[64]) {
  for (int t = 0; t < 3; t++) {
    for (int i = 0; i < 64; i++) { y[i] = 0.0f; for (int j = 0; j < 64; j++) y[i] += A[i][j] * x[j]; }
    for (int i = 0; i < 64; i++) x[i] = y[i] * 0.125f;
  }
}"""


def _phase_gemv():
    from mica.pipeline import LOWERING
    from mica.targets import get_target
    from mica.tiling.operators import phase_loop_plan
    prog = mica.affine.from_c(PHASE_GEMV)
    return mica.compile_affine(prog, mesh=(4, 4), target="wormhole",
                               schedule=phase_loop_plan(prog, (4, 4), get_target("wormhole"), LOWERING))


#: the programs whose plans run a phase loop (a loop around whole operators)
PHASE = ("sweeps_phase_wormhole", "sweeps_phase_blackhole", "gemv_phase_wormhole")

def _gemv_levels():
    # a binary tree over 8 cores of a row: its second level shifts 2 hops from every 4th core
    op = mica.ops.gemv(64, 256)
    return mica.compile_affine(op, mesh=(8, 2), target="wormhole", schedule=mica.plans.levels(op, (8, 2)))


def _kv_append():
    # a KV cache's new row written 3 rows down the columns that computed it (a routed write) and s turned to the
    # other axis (the search's plan for WSE-2 on 4x4, emitted for Wormhole: on 8x8 its binary trees need 11
    # semaphores per core, more than tt-metal's 8)
    from emit_csl.programs import KV_APPEND
    op = mica.affine.from_c(KV_APPEND)
    plan = mica.compile_affine(op, mesh=(4, 4), target="wse2").schedule
    return mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=plan)


PROGRAMS = {
    "gemv_levels_wormhole": _gemv_levels,
    "kv_append_wormhole": _kv_append,
    "sweeps_phase_wormhole": lambda: samples.phase_sweeps("wormhole", (4, 4)),
    "sweeps_phase_blackhole": lambda: samples.phase_sweeps("blackhole", (5, 3), n=30, steps=2),
    "gemv_phase_wormhole": _phase_gemv,
    "attention_wormhole": _attention("wormhole", (3, 5), H=4, L=100, D=24),
    "online_attention_wormhole": _online_attention,
    "attention_8x8_wormhole": _attention("wormhole", (8, 8), H=8, L=200, D=40),
    "attention_blackhole": _attention("blackhole", (5, 3), H=3, L=70, D=36),
    "attention_bf16_wormhole": _attention("wormhole", (4, 4), "bf16", H=4, L=96, D=32),
    "trisolv_step_owner_wormhole": lambda: step_owner("trisolv", (4, 3)),
    "matmul_summa_bf16_wormhole": _matmul_summa_bf16,
    "gemv_ktree_bf16_wormhole": _gemv_ktree_bf16,
    "triangle_bf16_wormhole": _triangle_bf16,
    "mm3_side_by_side_wormhole": _mm3_side_by_side,
    "chain_streamed_wormhole": _chain_streamed,
    "matmul_summa_8x8_wormhole": _matmul_summa_8x8,
    "mvt_side_by_side_wormhole": _mvt_side_by_side,
    "line_move_east_wormhole": _line_move("E"),
    "line_move_south_wormhole": _line_move("S"),
    "gemv_ktree_wse3_on_wormhole": _gemv_wse3,
    "triangle_wormhole": _triangle,
    "triangle_sqrt_wormhole": _triangle_sqrt,
    "stencil_forms_wormhole": _stencil_forms,
    "chain3_wormhole": _chain3,
    "matmul_interleaved_wormhole": _matmul_interleaved,
    "matmul_summa_wormhole": _matmul_summa,
    "matmul_summa_blackhole": _matmul_summa_blackhole,
    "gemv_ktree_wormhole": _gemv_ktree,
    "mm2_wormhole": _mm2,
    "matmul_partial_wormhole": _matmul_partial,
    "matmul_wse2_on_wormhole": _matmul_wse2,
    "matmul_summa_double_wormhole": _matmul_summa_double,
    "matmul_interleaved_double_wormhole": _matmul_interleaved_double,
    "matmul_cannon_double_partial_wormhole": _matmul_cannon_double_partial,
}

if HAVE_HALO:
    PROGRAMS["jacobi2d_wormhole"] = _jacobi
    PROGRAMS["jacobi2d_bf16_wormhole"] = _jacobi_bf16

#: the bf16 programs (Float16_b tiles)
BF16 = ("matmul_summa_bf16_wormhole", "gemv_ktree_bf16_wormhole", "triangle_bf16_wormhole",
        "attention_bf16_wormhole") + (
    ("jacobi2d_bf16_wormhole",) if HAVE_HALO else ())

#: the programs with checked-in golden outputs
GOLDEN = ("matmul_interleaved_wormhole", "matmul_summa_wormhole", "matmul_summa_blackhole",
          "gemv_ktree_wormhole", "mm2_wormhole", "chain3_wormhole", "matmul_summa_double_wormhole",
          "trisolv_step_owner_wormhole", "triangle_sqrt_wormhole") + (("jacobi2d_wormhole",) if HAVE_HALO else ())


@lru_cache(maxsize=None)
def compiled(name: str):
    return PROGRAMS[name]()


@lru_cache(maxsize=None)
def rendered(name: str) -> dict[str, str]:
    from mica.emit_metalium import render
    return render(compiled(name))


#: every math function the front end accepts, on the generic path's software forms (GELU in its tanh and erf
#: forms, a log, an RMSNorm-style powf(..., -0.5f), a power with a negative base and an integer exponent)
MATH_CALLS = """
void act(float x[40][36], float w[36], float g[40][36], float e[40][36], float l[40][36], float p[40][36],
         float r[40]) {
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 36; j++) {
      g[i][j] = 0.5f * x[i][j] * (1.0f + tanhf(0.7978845608f * (x[i][j] + 0.044715f * x[i][j] * x[i][j] * x[i][j])));
      e[i][j] = 0.5f * x[i][j] * (1.0f + erff(x[i][j] * 0.70710678f));
      l[i][j] = logf(fabsf(x[i][j]) + 0.25f) + sqrtf(fabsf(x[i][j])) - expf(-x[i][j]);
      p[i][j] = powf(x[i][j] - 0.5f, 3.0f) + powf(fabsf(x[i][j]), w[j]);
    }
  for (int i = 0; i < 40; i++) {
    r[i] = 0.0f;
    for (int j = 0; j < 36; j++)
      r[i] += x[i][j] * x[i][j];
    r[i] = powf(r[i] / 36.0f + 1e-5f, -0.5f);
  }
}
"""


def _math_calls():
    return mica.compile_affine(mica.affine.from_c(MATH_CALLS, "act"), mesh=(3, 2), target="wormhole")


PROGRAMS["math_calls_wormhole"] = _math_calls
