"""The arena of a program of several operators: buffers of operators that never run at once share bytes
(:func:`mica.lower.phases.lay_out`), so a program fits when its busiest operator does."""

import numpy as np
import pytest

import mica
from mica.errors import SramError
from mica.meshir.ir import ARENA_ALIGN, BoxDim, Region, RegionTensor
from mica.lower.phases import lay_out

import samples


def _t(name: str, elems: int) -> RegionTensor:
    return RegionTensor(name, name, "f32", 4, Region("work", 0, 1, 0, 1), (BoxDim(None, elems, elems),), "recv", "")


def _overlap(a, b, spans) -> bool:
    (l1, h1), (l2, h2) = spans[a.name], spans[b.name]
    return l1 <= h2 and l2 <= h1


def test_buffers_whose_spans_overlap_never_share_bytes():
    ts = [_t("home", 100), _t("ring0", 64), _t("lane1", 300), _t("recv1", 7), _t("recv2", 50), _t("out", 33)]
    spans = {"home": (0, 3), "ring0": (0, 0), "lane1": (1, 1), "recv1": (1, 2), "recv2": (2, 2), "out": (2, 3)}
    laid, size = lay_out(ts, spans)
    assert all(t.offset % ARENA_ALIGN == 0 for t in laid)
    for i, a in enumerate(laid):
        assert a.offset + a.alloc_bytes <= size
        for b in laid[i + 1:]:
            if _overlap(a, b, spans):
                assert a.offset + a.alloc_bytes <= b.offset or b.offset + b.alloc_bytes <= a.offset, (a.name, b.name)
    # ring0 (operator 0 only) and lane1 (operator 1 only) share bytes; the arena is the busiest operator's
    by_name = {t.name: t for t in laid}
    assert by_name["lane1"].offset == by_name["ring0"].offset
    peak = max(sum(t.alloc_bytes for t in laid if spans[t.name][0] <= k <= spans[t.name][1]) for k in range(4))
    assert size == peak < sum(t.alloc_bytes for t in laid)


def test_when_every_span_overlaps_buffers_lie_one_after_another():
    ts = [_t(f"b{i}", 10 * i + 1) for i in range(5)]
    laid, size = lay_out(ts, {t.name: (0, 2) for t in ts})
    offsets, at = [], 0
    for t in ts:
        offsets.append(at)
        at += t.alloc_bytes
    assert [t.offset for t in laid] == offsets and size == at


GRAM = samples.symmetrised_product("gram")


def test_a_program_fits_when_its_busiest_operator_does():
    """Two matmuls, 112^2 f32 on 4x4 (28x28 blocks): the first's rings and the second's transposition
    lanes and panels never live at once; laid one after another they would not fit."""
    n = 112
    src = GRAM.replace("N", str(n))
    compiled = mica.compile_affine(src, mesh=(4, 4))
    mp = compiled.mesh_program
    assert mp.region.cores == 16 and len(compiled.schedule.phases) == 2
    together = sum(t.alloc_bytes for t in mp.tensors)
    assert mp.arena_bytes <= compiled.target.sram_bytes < together
    rng = np.random.default_rng(5)
    A, B, C = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(3))
    got = compiled.run({"A": A, "B": B, "C": C}).outputs
    T = A.astype(np.float64) @ B
    np.testing.assert_allclose(got["T"], T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got["D"], T + T.T + T.T @ C, rtol=1e-4, atol=1e-2)
    # the emulator's SRAM peak is the arena the layout computed, not the sum of the buffers
    assert compiled.run({"A": A, "B": B, "C": C}).stats.summary()["sram_peak_bytes"] == mp.arena_bytes


def test_a_program_whose_busiest_operator_does_not_fit_says_so():
    with pytest.raises(SramError, match="bytes of SRAM per core"):
        mica.compile_affine(GRAM.replace("N", "144"), mesh=(4, 4))
