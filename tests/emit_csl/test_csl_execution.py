"""The emitted CSL, executed: ``csl_interp`` runs layout.csl (parameters, routes) and pe_program.csl on
every core with wavelets moving hop by hop through the layout's routes, tasks, block/unblock joins and
asynchronous DSD operations; the results must match the original program. Inputs go in and results come
out through run.py's own per-PE layout functions."""

import json

import numpy as np
import pytest

from mica.emit_csl import render

from .crosscheck import crosscheck
from .csl_interp import CslError, Fabric
from .programs import ALL, program, rendered


def execute(compiled, files, values=None, arrays=None, scalars=None):
    """(what the emitted files compute, run.py's reference) on random inputs; ``values`` are the runtime
    parameters' values, checked and packed by run.py's own ``runtime_values`` and written to ``rparams`` on
    every PE of the program region, as run.py's memcpy_h2d does; ``arrays`` the inputs (default random);
    ``scalars`` the scalar arguments' values (written to ``scalars`` on every PE, as run.py does)."""
    mp = compiled.mesh_program
    w, h = mp.mesh
    fab = Fabric(files, w, h)
    ns = {"__name__": "run_py"}
    exec(compile(files["run.py"].replace("from cerebras.sdk.runtime.sdkruntimepybind import", "# "),
                 "run.py", "exec"), ns)
    rng = np.random.default_rng(0)
    prog = compiled.program
    arrays = arrays if arrays is not None else {a.name: rng.standard_normal(a.shape).astype(np.float32) if a.name in prog.inputs
              else np.zeros(a.shape, np.float32) for a in prog.arrays}
    plan = json.loads(files["plan.json"])
    bufs = {b["name"]: b for b in plan["buffers"]}
    def view(record, arrays):
        """The array a host transfer moves: a piece's slice of its program array, else the array."""
        if "piece_of" not in record:
            return arrays[record["array"]]
        a, d, lo, hi = record["piece_of"]
        return arrays[a][(slice(None),) * d + (slice(lo, hi),)]

    for ld in plan["host"]["loads"]:
        b = bufs[ld["buffer"]]
        x0, x1, y0, y1 = ld["region"]
        flat = ns["to_pes"](view(ld, arrays), [tuple(d) for d in b["dims"]], x0, x1, y0, y1, b["elems"])
        flat = flat.reshape(y1 - y0, x1 - x0, -1)
        for y in range(y0, y1):
            for x in range(x0, x1):
                # a double buffer's host data goes into its first slot (memcpy copies elems per PE)
                fab.cores[(x, y)].globals["buf_" + ld["buffer"]][:b["elems"]] = flat[y - y0, x - x0]
    if mp.runtime:
        rparams = ns["runtime_values"](values)
        r = mp.region
        for y in range(r.y0, r.y1):
            for x in range(r.x0, r.x1):
                fab.cores[(x, y)].globals["rparams"][:] = rparams
    if scalars:
        for m in fab.cores.values():
            for k, name in enumerate(mp.scalars):
                m.globals["scalars"][k] = np.float32(scalars[name])
    fab.run()
    # as run.py calls it: floats in double, integer arrays in Python ints
    want = ns["reference"]({k: v.astype(np.float64 if v.dtype.kind == "f" else object) for k, v in arrays.items()},
                           {**(scalars or {}), **(values or {})})
    got = {}
    for st in plan["host"]["stores"]:
        b = bufs[st["buffer"]]
        x0, x1, y0, y1 = st["region"]
        flat = np.stack([np.stack([fab.cores[(x, y)].globals["buf_" + st["buffer"]][:b["elems"]] for x in range(x0, x1)])
                         for y in range(y0, y1)])
        name = st["piece_of"][0] if "piece_of" in st else st["array"]
        got.setdefault(name, np.zeros(want[name].shape, np.int32 if b["dtype"] == "i32" else np.float32))
        ns["from_pes"](flat.reshape(-1), view(st, got), [tuple(d) for d in b["dims"]], x0, x1, y0, y1, b["elems"])
    return got, want


@pytest.mark.parametrize("target", ["wse2", "wse3"])
@pytest.mark.parametrize("name", ALL)
def test_emitted_csl_computes_the_program(name, target):
    compiled = program(name, target)
    got, want = execute(compiled, rendered(name, target))
    assert got
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k]).max())))


def test_a_broken_join_or_route_is_caught_by_execution():
    compiled = program("matmul_interleaved_single", "wse2")
    files = rendered("matmul_interleaved_single", "wse2")
    # without the landing copy the ring shift loses every received block
    pe = files["pe_program.csl"].replace("@mov32(@set_dsd_length(mem_A_ring, n_A_ring_landing)", "@mov32(@set_dsd_length(mem_A_ring_landing, n_A_ring_landing)")
    got, want = execute(compiled, dict(files, **{"pe_program.csl": pe}))
    assert not np.allclose(got["C"], want["C"], rtol=1e-3, atol=1e-3)
    # a receive posted on the wrong colour never completes
    pe = files["pe_program.csl"].replace("fabric_color = color_0,", "fabric_color = color_1,", 1)
    with pytest.raises(CslError, match="not finished|dropped"):
        execute(compiled, dict(files, **{"pe_program.csl": pe}))


@pytest.mark.parametrize("name, target", [("matmul_interleaved_single", "wse3"), ("matmul_cannon_partial", "wse2")])
def test_exchanges_into_themselves_in_rounds_of_landing_chunks(name, target):
    """When SRAM cannot hold a whole landing copy, a ring shift runs in rounds of small chunks."""
    compiled = program(name, target)
    files = render(compiled, landing_elems=5)
    plan = json.loads(files["plan.json"])
    assert all(v["chunk_elems"] == 5 and v["rounds"] > 1 for v in plan["landing"].values())
    assert "lround" in files["pe_program.csl"]
    assert crosscheck(compiled, plan) == []
    got, want = execute(compiled, files)
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k]).max())))


def test_landing_chunks_fit_what_sram_leaves():
    import mica
    op = mica.ops.matmul(1024, 1024, 1024)
    prog = mica.compile_affine(op, mesh=(20, 20), target="wse2", schedule=mica.plans.interleaved(op, (20, 20)))
    arena = prog.mesh_program.arena_bytes
    plan = json.loads(render(prog)["plan.json"])
    land = plan["landing"]
    assert arena + 2 * 4 * max(v["chunk_elems"] for v in land.values()) <= 49152 < 2 * arena
    assert plan["buffer_bytes_total"] <= 49152 and all(v["rounds"] > 1 for v in land.values())


@pytest.mark.parametrize("name, hops", [("mvt_side_by_side", None), ("line_move_east", ("E", 5)),
                                        ("line_move_south", ("S", 3))])
def test_placed_programs_are_what_they_claim(name, hops):
    """The placed examples executed above really hold blocks away from core (0, 0) (operators side by side)
    and, for the line moves, cross between slabs in one multi-hop shift the CSL layout routes."""
    from mica.meshir.ir import Exchange, Shift
    compiled = program(name, "wse2")
    assert compiled.schedule.placed
    mp = compiled.mesh_program
    if hops is None:
        assert {d.origin for t in mp.tensors for d in t.box} - {0}
        return
    moves = [c for op, _ in mp.walk() if isinstance(op, Exchange) and "_move_" in op.name for c in op.ops
             if isinstance(c, Shift)]
    assert [(c.direction, c.distance) for c in moves] == [hops]
    plan = json.loads(rendered(name, "wse2")["plan.json"])
    assert any(ch["pattern"] == moves[0].name for ch in plan["channels"])


@pytest.mark.parametrize("target", ["wse2", pytest.param("wse3", marks=pytest.mark.slow)])
def test_3mm_side_by_side_with_a_conveyor(target):
    """3mm's first two products side by side (a skewed interleaved ring beside a SUMMA), F's blocks carried
    by the conveyor to the slab of G = E F. WSE-2: its exchanges share colours only when the budget runs
    out, so the fabric queues fit. WSE-3 (one queue per colour for the whole program): the multicasts are
    relayed hop by hop as well. Executed, and on WSE-2 cross-checked against the emulator."""
    from mica.meshir.ir import Exchange
    from .crosscheck import crosscheck
    compiled = program("mm3_side_by_side", target)
    assert compiled.schedule.placed
    assert any(isinstance(op, Exchange) and "_move_" in op.name for op, _ in compiled.mesh_program.walk())
    files = rendered("mm3_side_by_side", target)
    plan = json.loads(files["plan.json"])
    if target == "wse2":
        assert crosscheck(compiled, plan) == [] and "relayed_multicasts" not in plan
    else:
        assert plan["relayed_multicasts"] == ["C->C_recv", "D->D_recv", "E->E_recv", "F->F_recv"]
    got, want = execute(compiled, files)
    assert sorted(got) == ["E", "F", "G"]
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k]).max())))
