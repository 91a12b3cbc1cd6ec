"""Compile time at wafer scale against a small mesh, in the same run.

    python -m pytest bench/test_compile_time.py --benchmark-only -s

The claim: compile time does not grow with the number of cores (analysis is per region class).
512^3 fits WSE-2's 48 KB per core on both meshes; 4096^3 only fits on the big one.
"""

import pytest

import mica

import samples

RESULTS = {}


@pytest.mark.parametrize("n, mesh", [(512, (16, 16)), (512, (750, 994)), (4096, (750, 994))],
                         ids=["512-16x16", "512-750x994", "4096-750x994"])
def test_compile_matmul(benchmark, n, mesh):
    op = mica.ops.matmul(n, n, n)
    prog = benchmark(lambda: mica.compile_affine(op, mesh=mesh, target="wse2"))
    assert prog.mesh_program.region.cores > 1
    if benchmark.disabled:             # --benchmark-disable: the compile ran once, untimed
        return
    RESULTS[(n, mesh)] = benchmark.stats.stats.mean
    benchmark.extra_info["modelled_cycles"] = prog.cost.total_cycles
    benchmark.extra_info["cores"] = prog.mesh_program.region.cores
    small, big = RESULTS.get((512, (16, 16))), RESULTS.get((512, (750, 994)))
    if small and big and n == 512 and mesh == (750, 994):
        benchmark.extra_info["ratio_750x994_over_16x16"] = big / small
        print(f"\ncompile 512^3: 16x16 {small * 1e3:.1f} ms, 750x994 {big * 1e3:.1f} ms, ratio {big / small:.2f}")


def test_emit_kernels_at_wafer_scale(benchmark):
    op = mica.ops.matmul(4096, 4096, 4096)
    benchmark(lambda: mica.compile_affine(op, mesh=(750, 994)).kernels)


MM2 = samples.symmetrised_product("mm2")


@pytest.mark.parametrize("n, mesh", [(512, (16, 16)), (512, (750, 994)), (2048, (750, 994))],
                         ids=["512-16x16", "512-750x994", "2048-750x994"])
def test_compile_two_operators_with_a_mirror(benchmark, n, mesh):
    """Two matmuls, the second reading the first's result both ways (a transposition on the mesh):
    operators searched one by one, so compile time stays flat in the number of cores too."""
    src = MM2.replace("N", str(n))
    prog = benchmark.pedantic(lambda: mica.compile_affine(src, mesh=mesh), rounds=1, iterations=1)
    assert len(prog.schedule.phases) == 2 and any(t.role == "mirror" for t in prog.mesh_program.tensors)
    if benchmark.disabled:
        return
    RESULTS[("mm2", n, mesh)] = benchmark.stats.stats.mean
    benchmark.extra_info["modelled_cycles"] = prog.cost.total_cycles
    benchmark.extra_info["cores"] = prog.mesh_program.region.cores
    small, big = RESULTS.get(("mm2", 512, (16, 16))), RESULTS.get(("mm2", 512, (750, 994)))
    if small and big and (n, mesh) == (512, (750, 994)):
        benchmark.extra_info["ratio_750x994_over_16x16"] = big / small
        print(f"\ncompile 2 x 512^3 with a mirror: 16x16 {small:.2f} s, 750x994 {big:.2f} s, ratio {big / small:.2f}")
    if n == 2048:
        print(f"\ncompile 2 x 2048^3 with a mirror on 750x994: {benchmark.stats.stats.mean:.2f} s, "
              f"{prog.cost.total_cycles:,.0f} modelled cycles on {prog.mesh_program.region.cores:,} cores")
