"""Model vs emulator: the cost model's modelled cycles (``prog.cost``) against the emulator's timing model
(``res.stats.cycles``), on the benchmark set, in the same run.

    python -m pytest bench/test_model_agreement.py --benchmark-only -s

Each benchmark times one emulated run, stores both figures and their ratio in ``extra_info`` and asserts
the 10% bound (on modelled cycles, which are deterministic; wall time is only reported). The printed
table is the figure for the notes. Stencils run both on one core and with the halo-exchange plan.
"""

import numpy as np
import pytest

import mica

import samples

JACOBI_1D = samples.jacobi_1d(400, name="jacobi1d")
JACOBI_2D = samples.jacobi_2d(48, name="jacobi2d", compact=True)
GEMV_ADD_GEMV = samples.chain3(256)
MM2 = samples.mm2(96)
TRANSPOSED_CHAIN = samples.transposed_chain(96)
GRAM = samples.gram(96)
ATAX = samples.atax(120, 140)


def _plan(op, mesh, plan, target="wse2", buffers=1):
    sched = mica.plans.REFERENCE_PLANS[plan](op, mesh, **({"buffers": buffers} if buffers != 1 else {}))
    return mica.compile_affine(op, mesh=mesh, target=target, schedule=sched)


def _one_core(op, mesh=(8, 8)):
    """Stencils: no halo-exchange mapping yet, so the whole program runs on one core."""
    from mica.tiling.mapping import derive_schedule
    return mica.compile_affine(op, mesh=mesh, schedule=derive_schedule(op, mesh, assignment=[], family="one-core"))


def _halo(op, mesh):
    return mica.compile_affine(op, mesh=mesh, schedule=mica.plans.halo(op, mesh))


CASES = {
    "matmul 512^3 summa 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "summa"),
    "matmul 512^3 cannon 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "cannon"),
    "matmul 512^3 interleaved 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "interleaved"),
    "matmul 500^3 interleaved 16x16": lambda: _plan(mica.ops.matmul(500, 500, 500), (16, 16), "interleaved"),
    "matmul 512^3 summa+db 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "summa", buffers=2),
    "matmul 512^3 cannon+db 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "cannon", buffers=2),
    "matmul 512^3 interleaved+db 16x16": lambda: _plan(mica.ops.matmul(512, 512, 512), (16, 16), "interleaved",
                                                       buffers=2),
    "matmul 100^3 interleaved+db 32x32": lambda: _plan(mica.ops.matmul(100, 100, 100), (32, 32), "interleaved",
                                                       buffers=2),
    "matmul 96^3 summa+db 32x32": lambda: _plan(mica.ops.matmul(96, 96, 96), (32, 32), "summa", buffers=2),
    "gemv batch 512x16x512 summa+db 16x16": lambda: _plan(mica.ops.matmul(512, 16, 512), (16, 16), "summa",
                                                          buffers=2),
    "matmul 256^3 summa 8x8 wormhole": lambda: _plan(mica.ops.matmul(256, 256, 256), (8, 8), "summa", "wormhole"),
    "matmul 96^3 summa 32x32": lambda: _plan(mica.ops.matmul(96, 96, 96), (32, 32), "summa"),
    "matmul 96^3 cannon 32x32": lambda: _plan(mica.ops.matmul(96, 96, 96), (32, 32), "cannon"),
    "matmul 100^3 interleaved 32x32": lambda: _plan(mica.ops.matmul(100, 100, 100), (32, 32), "interleaved"),
    "gemv 4096 chain 64x64": lambda: _plan(mica.ops.gemv(4096, 4096), (64, 64), "chain"),
    "gemv 4096 ktree 64x64": lambda: _plan(mica.ops.gemv(4096, 4096), (64, 64), "ktree"),
    "gemv 1024 ktree 128x32": lambda: _plan(mica.ops.gemv(1024, 1024), (128, 32), "ktree"),
    "add 1024x1024 32x32": lambda: mica.compile_affine(mica.ops.add((1024, 1024)), mesh=(32, 32)),
    "mm2 96 8x8 wormhole (two matmuls)": lambda: mica.compile_affine(
        mica.affine.from_c(MM2, params={"n": 96}), mesh=(8, 8), target="wormhole"),
    "gemv-add-gemv 256 16x16 (three ops)": lambda: mica.compile_affine(
        mica.affine.from_c(GEMV_ADD_GEMV, params={"n": 256}), mesh=(16, 16)),
    "matmul -> transposed read -> matmul 96^2 8x8 (T transposed on the mesh)": lambda: mica.compile_affine(
        TRANSPOSED_CHAIN, mesh=(8, 8)),
    "matmul -> T + Tt + Tt T 96^2 8x8 (T mirrored on the mesh)": lambda: mica.compile_affine(GRAM, mesh=(8, 8)),
    "atax 120x140 8x8 (nest distributed, 3 ops)": lambda: mica.compile_affine(
        mica.affine.from_c(ATAX, params={"m": 120, "n": 140}), mesh=(8, 8)),
    "jacobi-1d 400x20 (one core)": lambda: _one_core(mica.affine.from_c(JACOBI_1D, params={"tsteps": 20, "n": 400})),
    "jacobi-2d 48x10 (one core)": lambda: _one_core(mica.affine.from_c(JACOBI_2D, params={"tsteps": 10, "n": 48})),
    "jacobi-1d 400x20 halo 16x1": lambda: _halo(mica.affine.from_c(JACOBI_1D, params={"tsteps": 20, "n": 400}), (16, 1)),
    "jacobi-2d 48x10 halo 6x4": lambda: _halo(mica.affine.from_c(JACOBI_2D, params={"tsteps": 10, "n": 48}), (6, 4)),
}

TABLE = {}


def _inputs(prog):
    rng = np.random.default_rng(0)
    dt = {"f32": np.float32, "f64": np.float64}
    return {n: rng.standard_normal(prog.program.array(n).shape).astype(dt[prog.program.array(n).dtype])
            for n in prog.program.inputs}


@pytest.mark.parametrize("name", list(CASES))
def test_model_vs_emulator(benchmark, name):
    prog = CASES[name]()
    ins = _inputs(prog)
    prog.run(ins)                                  # build and cache the kernels first
    res = benchmark.pedantic(lambda: prog.run(ins), rounds=1, iterations=1)
    model, emu = prog.cost.total_cycles, res.stats.cycles
    ratio = emu / model
    s = res.stats.summary()
    benchmark.extra_info.update({
        "model_cycles": model, "emulator_cycles": emu, "ratio": ratio,
        "model_compute": prog.cost.compute_cycles, "model_comm": prog.cost.comm_cycles,
        "busiest_core": s["busiest_core"], "utilisation": s["utilisation"],
        "contended_messages": s["contended_messages"], "cores": prog.mesh_program.region.cores,
        "plan": prog.schedule.name,
    })
    TABLE[name] = (model, emu, ratio, prog.mesh_program.region.cores, s["utilisation"])
    print(f"\n{name:44s} model {model:14,.0f}  emulator {emu:14,.0f}  ratio {ratio:.3f}  "
          f"({prog.mesh_program.region.cores} cores, utilisation {s['utilisation']:.1%}, "
          f"{s['contended_messages']} contended messages)")
    assert 0.9 <= ratio <= 1.1


@pytest.mark.slow
def test_searched_polybench_plans_model_vs_emulator():
    """The plan the search picks for every PolyBench-style kernel of the tests on 8x8 (the spread table's), its
    modelled cycles against the emulator's timing of the same plan. Step-owner sweeps are where the two part
    (the chain through each step's owner: mica.tiling.cost._chain_roots); the bound is 2x either way.

        python -m pytest bench/test_model_agreement.py -m slow -s -k polybench --benchmark-disable
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "frontend"))
    from frontend_util import MANIFEST, kernel_function, kernel_source, make_inputs
    rows = []
    for name in sorted(MANIFEST):
        spec = MANIFEST[name]
        src, fn, params = kernel_source(name), kernel_function(name), spec["params"]
        compiled = mica.compile_affine(mica.affine.from_c(src, fn, params=params), mesh=(8, 8))
        res = compiled.run(make_inputs(src, fn, params, spec, seed=5), threads=2)
        rows.append((name, compiled.cost.cores, compiled.cost.total_cycles, res.stats.cycles))
    print("\n| kernel | cores | modelled | emulated | emulated / modelled |\n|---|---|---|---|---|")
    for name, cores, model, emu in rows:
        print(f"| {name} | {cores} | {model:,.0f} | {emu:,.0f} | {emu / model:.2f} |")
    assert all(0.5 <= emu / model <= 2.0 for _, _, model, emu in rows), rows
