"""mica.meshir.ir.distinct_exchange_names: repeated exchange names (two operators' reductions of the same
arrays) are told apart in program order, everything else kept; a program without repeats is returned as is."""

import mica
from mica.affine.from_c import from_c
from mica.meshir.ir import Exchange, distinct_exchange_names
from mica.models.knn import KnnConfig, knn_source


def _names(mp):
    return [op.name for op, _ in mp.walk() if isinstance(op, Exchange)]


def test_repeated_names_get_suffixes_in_program_order():
    cfg = KnnConfig(n=40, dim=6, batch=3, k=3, metric="l2", dtype="f32")
    mp = mica.compile_affine(from_c(knn_source(cfg), "knn"), mesh=(4, 1)).mesh_program
    before = _names(mp)
    assert len(set(before)) < len(before)             # each round reduces dist and idx under one name
    after = _names(distinct_exchange_names(mp))
    assert len(set(after)) == len(after) == len(before)
    seen: dict = {}
    for old, new in zip(before, after):
        seen[old] = seen.get(old, 0) + 1
        assert new == (old if seen[old] == 1 else f"{old}#{seen[old]}")
    out = distinct_exchange_names(mp)
    assert out.kernels == mp.kernels and out.tensors == mp.tensors
    assert [type(op) for op, _ in out.walk()] == [type(op) for op, _ in mp.walk()]


def test_a_program_without_repeats_is_returned_unchanged():
    mp = mica.compile_affine(mica.ops.matmul(16, 16, 16), mesh=(4, 4)).mesh_program
    assert len(set(_names(mp))) == len(_names(mp))
    assert distinct_exchange_names(mp) is mp
