"""Matrix-vector products (``y[i] += A[i][k] * x[k]`` and its transposed, batched, ``-=`` and commuted forms)
run through the row-interleaved kernel (``mica_matvec_<dtype>_<op>``) and give results bit-identical to the
plain loop nests isl prints, in f32, f64, f16 and bf16 (rounded after every update), on meshes whose tiles
leave row remainders; and match the natively compiled C (the 16-bit ones, numpy rounding the same way)."""

from __future__ import annotations

import types

import ml_dtypes
import numpy as np
import pytest

import mica
from mica.emit_c.kernels import emit_kernel_module
from mica.native_sim.execute import execute
from mica.testing import run_c

C_TYPE = {"f32": "float", "f64": "double", "f16": "_Float16", "bf16": "__bf16"}
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}

# name -> (array declarations, body); T the element type, M rows, K the reduced extent, H heads
FORMS = {
    "ik+=": ("T A[M][K], T x[K], T y[M]",
             "for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) y[i] += A[i][k] * x[k];"),
    "x*A+y": ("T A[M][K], T x[K], T y[M]",
              "for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) y[i] = x[k] * A[i][k] + y[i];"),
    "At-=": ("T A[K][M], T x[K], T y[M]",
             "for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) y[i] -= A[k][i] * x[k];"),
    "heads": ("T A[H][M][K], T x[H][K], T y[H][M]",
              "for (int h = 0; h < H; h++) for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) "
              "y[h][i] += A[h][i][k] * x[h][k];"),
}


def _source(form: str, dtype: str, m: int, k: int, h: int = 3) -> str:
    decl, body = FORMS[form]
    sizes = {"M": str(m), "K": str(k), "H": str(h)}
    for name, value in sizes.items():
        decl = decl.replace(f"[{name}]", f"[{value}]")
        body = body.replace(f"< {name}", f"< {value}")
    return f"void f({decl.replace('T ', C_TYPE[dtype] + ' ')}) {{ {body} }}"


def _inputs(prog, dtype: str, rng) -> dict:
    out = {}
    for name in prog.inputs:
        v = rng.uniform(-1, 1, prog.array(name).shape).astype(np.float32)
        flat = v.reshape(-1)
        flat[::13] = 0.0
        flat[4::17] = -0.0
        if dtype in ("f32", "f64"):
            flat[6::211] = np.inf               # infinities and the NaNs they make follow the same path
        out[name] = v.astype(NP[dtype])
    return out


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a.astype(np.float64))
    if not np.array_equal(nan, np.isnan(b.astype(np.float64))):
        return False
    return np.array_equal(np.ascontiguousarray(a[~nan]).view(np.uint8), np.ascontiguousarray(b[~nan]).view(np.uint8))


def _plain(compiled):
    return types.SimpleNamespace(program=compiled.program, mesh_program=compiled.mesh_program,
                                 target=compiled.target,
                                 kernel_module=emit_kernel_module(compiled.mesh_program, blocked=False))


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_matvec_kernel_is_bit_identical_to_the_plain_nest(form, dtype):
    prog = mica.affine.from_c(_source(form, dtype, 45, 29))
    ins = _inputs(prog, dtype, np.random.default_rng(11))
    seen = False
    # per core: 45 rows (blocks of 32 and 8, a tail of 5), 15 and 12 (tails of 7 and 4), 7 and 3 (a vector
    # tail and scalar rows)
    for mesh in [(1, 1), (3, 2), (4, 4), (7, 2)]:
        compiled = mica.compile_affine(prog, mesh=mesh)
        seen |= any(f"mica_matvec_{dtype}_" in f for _, f in compiled.kernel_module.sources)
        got = compiled.run(ins, threads=2).outputs
        want = execute(_plain(compiled), ins, threads=1).outputs
        for arr in want:
            assert _bits_equal(got[arr], want[arr]), f"{form} {dtype} {arr} on {mesh}"
    assert seen, f"{form} {dtype}: no class ran as a matrix-vector product"


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("mesh", [(1, 1), (5, 3), (2, 7)])
def test_matvec_matches_native_c(dtype, mesh):
    src = _source("ik+=", dtype, 67, 41)
    prog = mica.affine.from_c(src)
    rng = np.random.default_rng(2)
    ins = {n: rng.standard_normal(prog.array(n).shape).astype(NP[dtype]) for n in prog.inputs}
    want = run_c(src, "f", ins)
    got = mica.compile_affine(prog, mesh=mesh).run(ins, threads=2).outputs
    if mesh == (1, 1):                            # one core: k ascending per element, as the C runs it
        assert np.array_equal(got["y"], want["y"])
    else:                                         # k spread over cores: partial sums combined
        np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4 if dtype == "f32" else 1e-12, atol=1e-4)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_matvec_rounds_every_update_like_numpy(dtype):
    m, k = 37, 53
    prog = mica.affine.from_c(_source("ik+=", dtype, m, k))
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (m, k)).astype(NP[dtype])
    x = rng.uniform(-1, 1, k).astype(NP[dtype])
    y = rng.uniform(-1, 1, m).astype(NP[dtype])
    want = y.copy()
    for kk in range(k):
        want = (want.astype(np.float32) + A[:, kk].astype(np.float32) * x[kk].astype(np.float32)).astype(NP[dtype])
    compiled = mica.compile_affine(prog, mesh=(1, 1))
    assert f"mica_matvec_{dtype}_add(" in compiled.kernel_module.source
    got = compiled.run({"A": A, "x": x, "y": y}).outputs["y"]
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_vector_read_where_it_is_written_is_not_a_matvec():
    # y[i] += A[i][k] * y[k] reads the vector it writes: interleaving rows would change what it reads.
    src = ("void f(float A[8][8], float y[8]) { for (int i = 0; i < 8; i++) for (int k = 0; k < 8; k++) "
           "y[i] += A[i][k] * y[k]; }")
    compiled = mica.compile_affine(mica.affine.from_c(src), mesh=(1, 1))
    assert "mica_matvec_" not in compiled.kernel_module.source


MIXED = [("f32", "f16", "f32"), ("f32", "f16", "f16"), ("f32", "bf16", "f32"), ("f32", "f32", "f16")]


@pytest.mark.parametrize("dtypes", MIXED, ids=["_".join(d) for d in MIXED])
@pytest.mark.parametrize("form", ["ik+=", "At-="])
def test_weights_in_16_bits_into_an_f32_vector(dtypes, form):
    # The decode layer's projections: f16 (or bf16) weights, f32 activations and results.
    dc, da, db = dtypes
    decl, body = FORMS[form]
    m, k = 45, 29
    decl = (decl.replace("T A", f"{C_TYPE[da]} A").replace("T x", f"{C_TYPE[db]} x").replace("T y", f"{C_TYPE[dc]} y")
            .replace("[M]", f"[{m}]").replace("[K]", f"[{k}]"))
    src = f"void f({decl}) {{ {body.replace('< M', f'< {m}').replace('< K', f'< {k}')} }}"
    prog = mica.affine.from_c(src)
    rng = np.random.default_rng(4)
    ins = {"A": rng.uniform(-1, 1, prog.array("A").shape).astype(NP[da]),
           "x": rng.uniform(-1, 1, k).astype(NP[db]), "y": rng.uniform(-1, 1, m).astype(NP[dc])}
    ins["A"].reshape(-1)[::13] = 0
    seen = False
    for mesh in [(1, 1), (3, 2), (4, 4), (7, 2)]:
        compiled = mica.compile_affine(prog, mesh=mesh)
        seen |= "mica_matvec_" in compiled.kernel_module.source
        got = compiled.run(ins, threads=2).outputs["y"]
        want = execute(_plain(compiled), ins, threads=1).outputs["y"]
        assert _bits_equal(got, want), (dtypes, form, mesh)
    assert seen
    # One core: the C's own order, every update in f32.
    one = mica.compile_affine(prog, mesh=(1, 1)).run(ins).outputs["y"]
    ref = ins["y"].astype(np.float32).copy()
    A32 = ins["A"].astype(np.float32)
    for kk in range(k):
        col = A32[kk] if form == "At-=" else A32[:, kk]
        ref = ref - col * np.float32(ins["x"][kk]) if form == "At-=" else ref + col * np.float32(ins["x"][kk])
    assert np.array_equal(one, ref)
