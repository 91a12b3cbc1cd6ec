"""Emulator throughput against numpy on this machine, in the same run.

    python -m pytest bench/test_emulator.py --benchmark-only
"""

import os

import numpy as np
import pytest

import mica

N = 512
RESULTS = {}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32))


def test_numpy_matmul(benchmark, data):
    A, B = data
    benchmark(lambda: A @ B)
    RESULTS["numpy"] = benchmark.stats.stats.mean


@pytest.mark.parametrize("threads", [1, 2])
def test_emulated_matmul_16x16(benchmark, data, threads):
    A, B = data
    prog = mica.compile_affine(mica.ops.matmul(N, N, N), mesh=(16, 16))
    prog.run({"A": A, "B": B}, threads=threads)            # build and cache the kernels first
    res = benchmark(lambda: prog.run({"A": A, "B": B}, threads=threads))
    np.testing.assert_allclose(res.outputs["C"], A @ B, rtol=1e-3, atol=1e-3)
    RESULTS[threads] = benchmark.stats.stats.mean
    flops = 2.0 * N ** 3
    benchmark.extra_info["emulated_gflops"] = flops / RESULTS[threads] / 1e9
    if "numpy" in RESULTS:
        benchmark.extra_info["fraction_of_numpy"] = RESULTS["numpy"] / RESULTS[threads]
    if 1 in RESULTS and 2 in RESULTS:
        benchmark.extra_info["speedup_2_over_1_threads"] = RESULTS[1] / RESULTS[2]
