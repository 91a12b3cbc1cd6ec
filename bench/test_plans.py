"""Modelled cycles of the derived plans (figures, not timings): printed and stored in extra_info.

    python -m pytest bench/test_plans.py --benchmark-only -s
"""

import pytest

import mica


@pytest.mark.parametrize("n, mesh", [(512, (16, 16)), (4096, (750, 994))])
def test_matmul_plan_cost(benchmark, n, mesh):
    prog = benchmark(lambda: mica.compile_affine(mica.ops.matmul(n, n, n), mesh=mesh))
    benchmark.extra_info.update(prog.cost.as_dict())
    print(f"\nmatmul {n}^3 on {mesh}: {prog.cost}")


@pytest.mark.parametrize("mesh", [(64, 64), (512, 512)])
def test_gemv_plan_cost(benchmark, mesh):
    prog = benchmark(lambda: mica.compile_affine(mica.ops.gemv(4096, 4096), mesh=mesh))
    benchmark.extra_info.update(prog.cost.as_dict())
    print(f"\ngemv 4096 on {mesh}: {prog.cost}")
