"""The prefetch hint of mica_rt.h: before each kernel call the emulator names the arena of the core the
same thread runs next (NULL after the last one of its chunk), and a hint changes no result."""

from __future__ import annotations

import numpy as np
import pytest

import mica
from mica.emit_c.build import compile_shared
from mica.native_sim import runtime
from mica.native_sim.opcode import Box, BoxDim, Compute, Rect, encode
from mica.native_sim.runtime import NativeMesh, include_flags, load_kernels

RECORDING_C = r"""
#include <stdint.h>
#include <string.h>
#include "mica_rt.h"

static _Thread_local const uint8_t *hinted;
static _Thread_local int64_t hinted_bytes;
void mica_prefetch_hint(const uint8_t *next, int64_t bytes) { hinted = next; hinted_bytes = bytes; }

/* Writes, as int64 at offsets 0, 8, 16: its own arena's address, the hinted one and the hinted size. */
static void k_record(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
    (void)x; (void)y; (void)v; (void)s;
    int64_t rec[3] = {(int64_t)(uintptr_t)a, (int64_t)(uintptr_t)hinted, hinted_bytes};
    memcpy(a, rec, sizeof rec);
}

static const mica_kernel_fn table[] = {k_record};
int32_t mica_kernel_count(void) { return 1; }
mica_kernel_fn mica_kernel_get(int32_t i) { return i == 0 ? table[0] : 0; }
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_hint_names_the_next_arena_of_the_chunk(threads):
    width, height, arena = 40, 30, 64          # 1,200 cores: on 2 threads the compute is split in chunks
    with load_kernels(compile_shared(RECORDING_C, name="prefetch_record", flags=include_flags())) as lib, \
            NativeMesh(width, height, 1, 1024) as mesh:
        assert lib.prefetch is not None
        mesh.reserve((0, width, 0, height), arena)
        mesh.commit()
        mesh.run(encode([Compute(1, ((0, Rect.const(0, width, 0, height)),))]), lib, threads=threads)
        box = Box(0, 8, (BoxDim(2, 1, height), BoxDim(1, 1, width), BoxDim.whole(3)))
        rec = mesh.host_store(box, (0, width, 0, height), (height, width, 3), np.int64).reshape(-1, 3)
    own, hinted, size = rec[:, 0], rec[:, 1], rec[:, 2]
    follows = hinted[:-1] == own[1:]          # row-major order: the hint is the next core's arena
    ends = hinted == 0                        # the last core of a chunk: no successor
    assert (follows | ends[:-1]).all() and ends[-1]
    assert (size[~ends] == arena).all() and (size[ends] == 0).all()
    assert ends.sum() == 1 if threads == 1 else ends.sum() > 1


def test_blocked_kernels_with_and_without_the_hint_agree(monkeypatch):
    """The generated contractions prefetch what the hint names: the outputs are bit-identical either way."""
    prog = mica.compile_affine(mica.ops.matmul(256, 192, 128), mesh=(4, 4))
    rng = np.random.default_rng(5)
    ins = {"A": rng.standard_normal((256, 128), dtype=np.float32),
           "B": rng.standard_normal((128, 192), dtype=np.float32)}
    with_hint = prog.run(ins, threads=2)
    monkeypatch.setattr(runtime.KernelLib, "_prefetch_hint", lambda self: None)
    without = prog.run(ins, threads=2)
    np.testing.assert_array_equal(with_hint.outputs["C"], without.outputs["C"])
    assert with_hint.stats.raw == without.stats.raw
    assert "void mica_prefetch_hint(" in prog.kernel_module.source
