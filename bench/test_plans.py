"""Modelled cycles of searched plans against the reference plans, in the same run.

    python -m pytest bench/test_plans.py --benchmark-only -s

Each benchmark times the search (compile_affine) and stores the modelled cycles of the chosen plan and
of every reference plan in extra_info; the printed table is the figure for the notes.
"""

import pytest

import mica

import samples

SIDES = [16, 64, 256, 512, 720]


@pytest.mark.parametrize("side", SIDES)
def test_square_matmul_plans(benchmark, side):
    op = mica.ops.matmul(4096, 4096, 4096)
    mesh = (side, side)
    try:
        chosen = benchmark(lambda: mica.compile_affine(op, mesh=mesh))
    except mica.SramError:
        # Refused only where A, B and C together exceed the mesh's SRAM (16x16: 201 MB on 12.6 MB).
        sram = side * side * mica.targets.get_target("wse2").sram_bytes
        assert 3 * 4096 * 4096 * 4 > sram, f"4096^3 fits the {side}x{side} mesh's {sram:,} B but has no plan"
        benchmark.extra_info.update(chosen=None, plan="does not fit the mesh's SRAM")
        return
    row = {"chosen": chosen.cost.total_cycles, "plan": chosen.search_report.best.decisions.describe()}
    names = []
    for name in ("summa", "cannon", "interleaved"):
        for buffers in (1, 2):
            key = name + ("+db" if buffers == 2 else "")
            names.append(key)
            try:
                plan = mica.plans.REFERENCE_PLANS[name](op, mesh, buffers=buffers)
                row[key] = mica.compile_affine(op, mesh=mesh, schedule=plan).cost.total_cycles
            except mica.SramError:
                row[key] = None
    benchmark.extra_info.update(row)
    refs = {k: v for k, v in row.items() if k in names and v}
    assert all(row["chosen"] <= v for v in refs.values())
    print(f"\n{side}x{side}: chosen {row['chosen']:,.0f} ({row['plan']}); " +
          ", ".join(f"{k} {v:,.0f} (x{v / row['chosen']:.2f})" for k, v in refs.items()))


@pytest.mark.parametrize("side", [64, 512])
def test_gemv_reduction_plans(benchmark, side):
    op = mica.ops.gemv(4096, 4096)
    mesh = (side, side)
    chosen = benchmark(lambda: mica.compile_affine(op, mesh=mesh))
    chain = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.chain(op, mesh))
    benchmark.extra_info.update({"chosen": chosen.cost.total_cycles, "chain": chain.cost.total_cycles,
                                 "plan": chosen.search_report.best.decisions.describe()})
    print(f"\ngemv 4096 on {side}x{side}: chosen {chosen.cost.total_cycles:,.0f} "
          f"({chosen.search_report.best.decisions.describe()}), chain {chain.cost.total_cycles:,.0f} "
          f"(x{chain.cost.total_cycles / chosen.cost.total_cycles:.1f})")


@pytest.mark.parametrize("n, mesh", [(1024, (64, 64)), (4096, (750, 994))])
def test_independent_operators_side_by_side(benchmark, n, mesh):
    """mvt's two gemvs share no written array: the searched plan runs them at the same time on two slabs
    of the mesh; the baseline is the best plan that runs them one after another on the whole mesh."""
    src = samples.mvt(n, "float")
    chosen = benchmark(lambda: mica.compile_affine(src, mesh=mesh))
    sequential = mica.compile_affine(src, mesh=mesh, side_by_side=False)
    ratio = sequential.cost.total_cycles / chosen.cost.total_cycles
    benchmark.extra_info.update({"side_by_side": chosen.cost.total_cycles,
                                 "one_after_another": sequential.cost.total_cycles, "ratio": ratio})
    assert chosen.schedule.placed and chosen.cost.total_cycles < sequential.cost.total_cycles
    print(f"\nmvt {n} on {mesh[0]}x{mesh[1]}: side by side {chosen.cost.total_cycles:,.0f} cycles, one after "
          f"another {sequential.cost.total_cycles:,.0f} (x{ratio:.2f}); slabs "
          + ", ".join(p.cores() for p in chosen.schedule.phases))


@pytest.mark.parametrize("m, n, mesh", [(1024, 32, (64, 64)), (8192, 64, (750, 994))])
def test_matmul_feeding_matmul_streamed_or_not(benchmark, m, n, mesh):
    """``T = A B; D = T C``: the search weighs the two matmuls one after another on the whole mesh against
    the program cut into row pieces streamed from the producer's slab to the consumer's; the figures are
    the chosen plan's modelled cycles and the best streamed candidate's (the baseline in the same run)."""
    from mica.lower.phases import build_program
    from mica.pipeline import LOWERING
    from mica.tiling.operators import stream_schedules
    from mica.tiling.cost import estimate
    src = samples.matmul_chain(m, n)
    chosen = benchmark(lambda: mica.compile_affine(src, mesh=mesh))
    op, tgt = chosen.program, chosen.target
    streamed = {}
    for how, sched in stream_schedules(op, mesh, tgt, LOWERING):
        if not isinstance(sched, Exception):
            streamed[how] = estimate(build_program(op, sched, tgt), tgt).total_cycles
    best = min(streamed.values())
    benchmark.extra_info.update({"chosen": chosen.cost.total_cycles, "best_streamed": best,
                                 "streamed": streamed})
    assert chosen.cost.total_cycles <= best
    print(f"\nchain {m}x{n} on {mesh[0]}x{mesh[1]}: chosen {chosen.cost.total_cycles:,.0f} cycles "
          f"({'streamed' if chosen.schedule.pieces else 'one after another'}); best streamed {best:,.0f} "
          f"(x{best / chosen.cost.total_cycles:.2f}): {min(streamed, key=streamed.get)}")
