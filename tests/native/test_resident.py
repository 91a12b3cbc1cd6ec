"""Programs that live on the mesh: runtime parameters given to every run (one compile for every token
position), arrays kept on the mesh between runs (weights loaded once, a KV cache updated in place), the host
traffic of a step, and the errors that leave the kept state intact. Every output is compared with numpy and
with the C compiled natively."""

import json
import shutil

import numpy as np
import pytest

import mica
from mica.errors import InputError, ScheduleError, SimError
from mica.meshir.ir import Exchange, Multicast, walk_ops
from mica.testing import run_c

import samples

L, D = 24, 8

#: One decode step of single-head attention over a KV cache: append the token's key and value at row pos,
#: max-subtracted softmax over the rows 0..pos, the weighted sum of the values. The projection from the
#: token's hidden state x through Wk / Wv / Wq is part of the step (weights on the mesh).
DECODE = f"""
#include <math.h>
#define L {L}
#define D {D}
void decode(int pos, float Wq[D][D], float Wk[D][D], float Wv[D][D], float K[L][D], float V[L][D],
            float x[D], float out[D]) {{
  float q[D]; float s[L]; float m = -1e30f; float z = 0.0f;
  for (int i = 0; i < D; i++) {{
    q[i] = 0.0f;
    for (int j = 0; j < D; j++) q[i] += Wq[i][j] * x[j];
  }}
  for (int i = 0; i < D; i++) {{
    K[pos][i] = 0.0f;
    V[pos][i] = 0.0f;
    for (int j = 0; j < D; j++) {{ K[pos][i] += Wk[i][j] * x[j]; V[pos][i] += Wv[i][j] * x[j]; }}
  }}
  for (int l = 0; l <= pos; l++) {{
    s[l] = 0.0f;
    for (int d = 0; d < D; d++) s[l] += q[d] * K[l][d];
  }}
  for (int l = 0; l <= pos; l++) m = fmaxf(m, s[l]);
  for (int l = 0; l <= pos; l++) {{ s[l] = expf(s[l] - m); z += s[l]; }}
  for (int d = 0; d < D; d++) {{
    out[d] = 0.0f;
    for (int l = 0; l <= pos; l++) out[d] += s[l] * V[l][d];
    out[d] = out[d] / z;
  }}
}}
"""

WEIGHTS = ("Wq", "Wk", "Wv")


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    return {w: (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for w in WEIGHTS}


def _numpy_step(w, K, V, x, pos):
    """The reference of one step (float64), updating K and V in place."""
    K[pos] = w["Wk"] @ x
    V[pos] = w["Wv"] @ x
    s = K[:pos + 1].astype(np.float64) @ (w["Wq"] @ x).astype(np.float64)
    p = np.exp(s - s.max())
    return (p / p.sum()) @ V[:pos + 1]


@pytest.fixture(scope="module", params=[(4, 4), (3, 5), (2, 7)], ids=lambda m: f"{m[0]}x{m[1]}")
def decode(request):
    return mica.compile_affine(DECODE, mesh=request.param, runtime={"pos": (0, L)},
                               resident=(*WEIGHTS, "K", "V"))


def test_sixteen_steps_with_weights_and_cache_resident(decode):
    w = _weights()
    K, V = np.zeros((L, D), np.float32), np.zeros((L, D), np.float32)
    rng = np.random.default_rng(1)
    with decode.load({**w, "K": K, "V": V}) as dev:
        assert dev.loaded_bytes == sum(a.nbytes for a in w.values()) + K.nbytes + V.nbytes
        x = rng.standard_normal(D).astype(np.float32)
        for pos in range(16):
            res = dev.run({"pos": pos, "x": x})
            want = _numpy_step(w, K, V, x, pos)
            np.testing.assert_allclose(res.outputs["out"], want, rtol=2e-4, atol=1e-5)
            assert set(res.outputs) == {"out"}           # the cache stays on the mesh
            # only the token crosses: x, once per buffer the plan loads it into (a home and maybe a mirror)
            loads_of_x = sum(1 for op in decode.mesh_program.body if getattr(op, "array", None) == "x"
                             and type(op).__name__ == "HostLoad")
            assert res.stats.host_bytes_in == loads_of_x * x.nbytes == decode.cost.host_bytes_in
            assert res.stats.host_bytes_out == D * 4 == decode.cost.host_bytes_out
            x = (res.outputs["out"] + x).astype(np.float32)
        np.testing.assert_allclose(dev.read("K"), K, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dev.read("V"), V, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(dev.read("Wq"), w["Wq"])
    assert decode.cost.on_mesh == (*WEIGHTS, "K", "V")
    assert "host traffic per run" in str(decode.cost)


def test_one_step_matches_the_native_c_at_each_position(decode):
    w = _weights(3)
    rng = np.random.default_rng(4)
    K = rng.standard_normal((L, D)).astype(np.float32)
    V = rng.standard_normal((L, D)).astype(np.float32)
    x = rng.standard_normal(D).astype(np.float32)
    for pos in (0, L // 2, L - 1):
        ins = {**w, "K": K, "V": V, "x": x, "pos": pos}
        want = run_c(DECODE, None, ins)
        got = decode.run(ins).outputs                    # without load(): every array crosses the host
        for name in ("out", "K", "V"):
            np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=1e-5)


def test_the_work_follows_the_position(decode):
    """The kernels' loop bounds read pos at run time: the emulator's compute grows with the context, and at
    the last position of the range it is what the cost model counts."""
    w = _weights()
    K, V = np.zeros((L, D), np.float32), np.zeros((L, D), np.float32)
    x = np.ones(D, np.float32)
    with decode.load({**w, "K": K, "V": V}) as dev:
        first = dev.run({"pos": 0, "x": x}).stats
        last = dev.run({"pos": L - 1, "x": x}).stats
    assert first.core_compute.sum() < last.core_compute.sum()
    assert last.core_compute.max() == pytest.approx(decode.cost.compute_cycles, rel=0.5)


def test_bad_runs_leave_the_kept_arrays_intact(decode):
    w = _weights()
    K = np.arange(L * D, dtype=np.float32).reshape(L, D)
    V = -K
    x = np.ones(D, np.float32)
    with decode.load({**w, "K": K, "V": V}) as dev:
        with pytest.raises(InputError, match=r"'pos' = 24 is outside its declared range 0 <= pos < 24"):
            dev.run({"pos": L, "x": x})
        with pytest.raises(InputError, match="must be an integer"):
            dev.run({"pos": 1.5, "x": x})
        with pytest.raises(InputError, match="stays on the mesh: change it with write"):
            dev.run({"pos": 0, "x": x, "K": K})
        with pytest.raises(InputError, match="has shape"):
            dev.run({"pos": 0, "x": np.ones(D + 1, np.float32)})
        with pytest.raises(InputError, match="does not stay on the mesh"):
            dev.read("x")
        with pytest.raises(InputError, match="dtype"):
            dev.write("K", K.astype(np.float64))
        np.testing.assert_array_equal(dev.read("K"), K)
        np.testing.assert_array_equal(dev.read("V"), V)
        dev.write("K", np.zeros_like(K))                 # a reset of the cache
        assert not dev.read("K").any()
    with pytest.raises(SimError, match="closed"):
        dev.run({"pos": 0, "x": x})


def test_load_names_what_it_needs(decode):
    w = _weights()
    with pytest.raises(InputError, match="needs K, V"):
        decode.load(w)
    with pytest.raises(InputError, match="x is given to each run"):
        decode.load({**w, "K": np.zeros((L, D), np.float32), "V": np.zeros((L, D), np.float32),
                     "x": np.zeros(D, np.float32)})


def test_a_plan_that_would_move_a_kept_array_is_not_chosen():
    """Cannon's plan shifts A and B around the mesh: kept on the mesh, the next run would find them moved.
    Forced, the plan is refused with the reason; searched, another plan is chosen and stays correct."""
    op = mica.ops.matmul(12, 12, 12)
    with pytest.raises(ScheduleError, match="A is to stay on the mesh but .* writes its buffer") as info:
        mica.compile_affine(op, mesh=(3, 3), schedule=mica.plans.cannon(op, (3, 3)), resident=("A", "B"))
    assert info.value.cause == "on-mesh"
    prog = mica.compile_affine(op, mesh=(3, 3), resident=("A", "B"))
    rng = np.random.default_rng(0)
    A, B = (rng.random((12, 12), dtype=np.float32) for _ in range(2))
    with prog.load({"A": A, "B": B}) as dev:
        for _ in range(2):
            np.testing.assert_allclose(dev.run({}).outputs["C"], A @ B, rtol=1e-5)


def test_resident_names_must_be_inputs_or_outputs():
    with pytest.raises(mica.errors.ArgumentError, match="not an input or an output"):
        mica.compile_affine(mica.ops.matmul(4, 4, 4), mesh=(2, 2), resident=("Q",))


def test_hardware_back_ends_pass_runtime_parameters(decode, tmp_path):
    """CSL and Metalium take runtime parameters (tests/emit_csl/test_csl_runtime.py and
    tests/emit_metalium/test_runtime_params.py run them). The decode step emits as CSL, its softmax included
    (``-INFINITY`` as a bit cast, ``expf`` from ``<math>``, ``fmaxf`` as the PE program's helper), with ``pos``
    in ``rparams``; and as Metalium (``fmaxf``/``expf`` on the generic path, ``pos`` a runtime arg), whose
    host.cpp checks it against the reference in the functional model (when g++ is here). On 4x4 and 3x5 the
    searched plan's communication needs more than a core's 8 semaphores: valid flags are shared by geometries
    that never meet in a phase (two sharing one flag in one exchange hung here), and the rest are global
    semaphores."""
    files = decode.emit("csl", tmp_path / "csl")
    pe = next(f for f in files if f.name == "pe_program.csl").read_text()
    assert "rparams" in pe and "math_lib.exp_f32(" in pe and "mica_fmax_f32(" in pe
    from mica.emit_metalium import render
    files = render(decode)
    sems = json.loads(files["plan.json"])["semaphores"]
    assert (len(sems) > 8) == (decode.mesh != (2, 7)) and all(s.get("kind") == "global" for s in sems[8:])
    text = "".join(files.values())
    assert "rp_pos" in text and "mica_fmaxf(" in text and "mica_expf(" in text
    if shutil.which("g++"):
        from emit_metalium.test_functional import run_emitted
        rc, out = run_emitted(files, tmp_path)
        assert rc == 0 and "MISMATCH" not in out, out


ROPE = samples.RUNTIME_ROPE


@pytest.mark.parametrize("mesh", [(4, 4), (3, 2), (5, 3)])
def test_a_row_the_run_selects_is_gathered_from_its_owner(mesh):
    """cs[pos][e] is read through a gather (cs_pos[e] = 0; cs_pos[e] += cs[pos_at][e], one term at every
    value): the rotation keeps its own loops, spread over the mesh, and matches the native C at every
    position."""
    prog = mica.compile_affine(ROPE, mesh=mesh, runtime={"pos": (0, 16)})
    assert {"cs_pos", "sn_pos"} <= {a.name for a in prog.program.arrays}
    assert prog.cost.cores > 1
    rng = np.random.default_rng(7)
    ins = {"cs": rng.standard_normal((16, 8)).astype(np.float32), "sn": rng.standard_normal((16, 8)).astype(np.float32),
           "q": rng.standard_normal((4, 2, 8)).astype(np.float32)}
    for pos in (0, 9, 15):
        want = run_c(ROPE, None, {**ins, "pos": pos})
        got = prog.run({**ins, "pos": pos}).outputs
        np.testing.assert_allclose(got["qr"], want["qr"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mesh", [(3, 5), (4, 4), (2, 7)], ids=lambda m: f"{m[0]}x{m[1]}")
def test_a_cut_that_would_split_a_kept_array_is_a_rejected_way_not_an_error(mesh):
    """The streamed ways cut the program along an array; a cut through a kept array is listed as rejected
    (it raised out of the search before, so the program had no plan on meshes where streaming is tried)."""
    prog = mica.compile_affine(samples.key_step(L, D), mesh=mesh, runtime={"pos": (0, L)}, resident=("W", "K"))
    assert prog.cost.cores > 1
    assert "would cut K, which stay on the mesh" in prog.explain()
    rng = np.random.default_rng(2)
    W = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    K = np.zeros((L, D))
    with prog.load({"W": W, "K": np.zeros((L, D), np.float32)}) as dev:
        for pos in range(0, L, 3):
            x = rng.standard_normal(D).astype(np.float32)
            K[pos] = W.astype(np.float64) @ x
            got = dev.run({"pos": pos, "x": x, "s": np.zeros(L, np.float32)}).outputs["s"]
            np.testing.assert_allclose(got[:pos + 1], K[:pos + 1] @ x, rtol=1e-4, atol=1e-5)


def _moves(compiled, array):
    """The communication ops of ``compiled``'s mesh program that move ``array``."""
    return [c for op, _ in walk_ops(compiled.mesh_program.body) if isinstance(op, Exchange)
            for c in op.ops if c.array == array]


@pytest.mark.parametrize("mesh,m,n", [((4, 4), 64, 48), ((3, 5), 37, 29), ((5, 3), 20, 33), ((2, 7), 16, 50)],
                         ids=lambda v: f"{v[0]}x{v[1]}" if isinstance(v, tuple) else None)
def test_a_kept_input_vector_is_held_by_every_line_not_multicast_each_run(mesh, m, n):
    """MeshGEMV's setup: the matrix and the input vector stay on the mesh. The vector, kept and only read, is
    loaded once onto every line of cores that reads it (a copy of its block on each), where sent with each run
    it lives on line 0 and is multicast along the lines every run; so nothing of x moves during a run and the
    plan models no more cycles than the sent one (non-divisible sizes included)."""
    op = mica.ops.gemv(m, n)
    kept = mica.compile_affine(op, mesh=mesh, resident=("A", "x"))
    sent = mica.compile_affine(op, mesh=mesh, resident=("A",))
    spread = {sm.axis for sm in kept.schedule.space}
    assert spread == {"x", "y"}
    assert kept.schedule.home("x").pin == ()                           # on every line
    assert sent.schedule.home("x").pin != ()                           # on one line, multicast
    assert not _moves(kept, "x") and {type(c) for c in _moves(sent, "x")} == {Multicast}
    assert kept.cost.total_cycles < sent.cost.total_cycles
    rng = np.random.default_rng(5)
    A = rng.standard_normal((m, n)).astype(np.float32)
    with kept.load({"A": A, "x": np.zeros(n, np.float32)}) as dev:
        for step in range(3):
            x = rng.standard_normal(n).astype(np.float32)
            dev.write("x", x)                                            # a new vector, loaded once more
            res = dev.run({})
            np.testing.assert_allclose(res.outputs["y"], A @ x, rtol=1e-4, atol=1e-4)
            assert res.stats.host_bytes_in == 0
            assert res.stats.summary()["computing_cores"] == kept.cost.cores
