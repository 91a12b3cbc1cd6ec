"""Exact k-NN search on the mesh (mica.models.knn) against a numpy reference written here: L2 and inner
product, k = 1 and k = 5, databases with duplicate rows (ties) and a row count no mesh divides, on 4x4, 2x5,
3x2 and 8x8; the plan spreads; bad input is refused and leaves the database on the mesh as it was.

The data are small integers, so every distance and score is exact in float32 whatever order the mesh sums
in: ties are real ties and the comparison is exact."""

import numpy as np
import pytest

from mica.errors import ArgumentError, InputError
from mica.models.knn import KnnConfig, KnnIndex, knn_source

N, DIM = 203, 8                      # 203 = 7 * 29: no mesh below divides it


def reference(db, queries, k, metric):
    """The first ``k`` rows of a stable sort by distance (ascending, ``l2``) or score (descending, ``ip``),
    smaller index first on ties; NaN distances are never chosen (their slots: worst value, index -1)."""
    db, queries = db.astype(np.float64), queries.astype(np.float64)
    if metric == "l2":
        key = ((queries[:, None, :] - db[None, :, :]) ** 2).sum(-1)
    else:
        key = -(queries @ db.T)
    dist = np.full((len(queries), k), np.inf if metric == "l2" else -np.inf)
    idx = np.full((len(queries), k), -1)
    for q, row in enumerate(key):
        order = [n for n in np.lexsort((np.arange(len(row)), row)) if np.isfinite(row[n])][:k]
        idx[q, :len(order)] = order
        dist[q, :len(order)] = row[order] if metric == "l2" else -row[order]
    return dist, idx


def data(seed, n=N, dim=DIM, m=11):
    """Integer-valued rows with duplicates (rows 10, 50 and 120 equal where they exist; 7 and 8 equal) and queries, one of
    them equal to a duplicated row (its nearest rows tie at distance 0)."""
    rng = np.random.default_rng(seed)
    db = rng.integers(-3, 4, (n, dim)).astype(np.float32)
    for row in (50, 120):
        if row < n:
            db[row] = db[10]
    db[8] = db[7]
    qs = rng.integers(-3, 4, (m, dim)).astype(np.float32)
    qs[3] = db[10]
    return db, qs


#: (mesh, metric, k, batch): each compiled once for the module.
CASES = {"4x4-l2-k5": ((4, 4), "l2", 5, 4), "2x5-ip-k5": ((2, 5), "ip", 5, 3), "3x2-l2-k1": ((3, 2), "l2", 1, 4),
         "8x8-ip-k1": ((8, 8), "ip", 1, 8)}


@pytest.fixture(scope="module", params=sorted(CASES))
def index(request):
    mesh, metric, k, batch = CASES[request.param]
    db, qs = data(1)
    with KnnIndex(db, k=k, metric=metric, mesh=mesh, batch=batch) as ix:
        yield request.param, ix, db, qs


def test_search_matches_numpy_and_spreads(index):
    name, ix, db, qs = index
    cfg = ix.config
    dist, idx = ix.search(qs)                      # 11 queries: the last batch is padded
    want_d, want_i = reference(db, qs, cfg.k, cfg.metric)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_array_equal(dist, want_d)
    assert dist.shape == idx.shape == (len(qs), cfg.k) and idx.dtype == np.int64
    assert ix.last.queries == len(qs) and ix.last.batches == -(-len(qs) // cfg.batch)
    # the plan spreads: the model and the emulator agree on the cores that compute
    cores = ix.program.cost.cores
    assert cores > 1 and ix.last.computing_cores == cores
    if ix.mesh == (8, 8):
        assert cores >= 16
    assert ix.last.cycles > 0 and ix.modelled_queries_per_second() > 0
    # only the queries and the answers cross the host boundary (the database stays on the mesh)
    assert ix.last.host_bytes <= ix.last.batches * cfg.batch * (DIM * 4 + cfg.k * 8)


def test_ties_take_the_smaller_index_first(index):
    name, ix, db, qs = index
    dist, idx = ix.search(db[10])                 # one 1-D query equal to rows 10, 50 and 120
    if ix.config.metric == "l2":
        assert list(idx[:3]) == [10, 50, 120][:ix.config.k] and not dist[:3].any()
    else:
        want_d, want_i = reference(db, db[10][None], ix.config.k, "ip")
        np.testing.assert_array_equal(idx, want_i[0])


def test_bad_input_is_refused_and_leaves_the_database_intact(index):
    name, ix, db, qs = index
    before = ix.database()
    for bad, message in ((qs[:, :DIM - 1], r"shape \(11, 7\); expected \(m, 8\)"),
                         (np.zeros((2, 3, DIM), np.float32), "expected"),
                         (qs.astype(np.complex64), "dtype complex64"),
                         (np.array(["a"] * DIM), "dtype <U1")):
        with pytest.raises(InputError, match=message):
            ix.search(bad)
    np.testing.assert_array_equal(ix.database(), before)
    np.testing.assert_array_equal(ix.database(), db)
    # NaN passes through: a query with a NaN has no finite distance, the others are unaffected
    nan = qs[:3].copy()
    nan[1, 2] = np.nan
    dist, idx = ix.search(nan)
    worst = np.inf if ix.config.metric == "l2" else -np.inf
    assert (idx[1] == -1).all() and (dist[1] == worst).all()
    want_d, want_i = reference(db, qs[[0, 2]], ix.config.k, ix.config.metric)
    np.testing.assert_array_equal(idx[[0, 2]], want_i)


def test_an_index_checks_its_arguments_before_compiling():
    db, _ = data(2, n=12)
    for kw, err, message in ((dict(k=0), ArgumentError, "k must be a positive int"),
                             (dict(k=13), ArgumentError, "k = 13 is more than the 12 database rows"),
                             (dict(k=2, metric="cos"), ArgumentError, "metric must be 'l2' or 'ip'"),
                             (dict(k=2, batch=0), ArgumentError, "batch must be a positive int")):
        with pytest.raises(err, match=message):
            KnnIndex(db, mesh=(2, 2), **kw)
    for bad, message in ((db.astype(np.float64), "db has dtype float64"), (db.astype(np.int32), "dtype int32"),
                         (db[0], "2-D"), (list(db), "numpy array")):
        with pytest.raises(InputError, match=message):
            KnnIndex(bad, k=2, mesh=(2, 2))


def test_f16_database_and_source():
    """A float16 database is stored as f16 on the mesh (half the SRAM); its values are exact in f16 here, so
    the answers equal the f32 reference's."""
    db, qs = data(3, n=61, m=5)
    with KnnIndex(db.astype(np.float16), k=4, metric="l2", mesh=(2, 5), batch=5) as ix:
        assert ix.program.program.array("db").dtype == "f16"
        dist, idx = ix.search(qs)
        assert ix.database().dtype == np.float16
    want_d, want_i = reference(db, qs, 4, "l2")
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_array_equal(dist, want_d)
    src = knn_source(KnnConfig(n=61, dim=8, k=3, batch=2, metric="ip", dtype="f16"))
    assert "_Float16 db[61][8]" in src and "d[q][n] = n == idx[q][1] ? -INFINITY : d[q][n]" in src
    assert src == knn_source(KnnConfig(n=61, dim=8, k=3, batch=2, metric="ip", dtype="f16"))
