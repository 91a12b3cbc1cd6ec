"""Exact k-nearest-neighbour search over a database kept on the mesh, queries in batches.

:func:`knn_source` writes the C a user would write for one batch, ``void knn(<T> db[N][D], float qs[Q][D],
float dist[Q][K], int idx[Q][K])`` (``<T>`` ``float``, or ``_Float16`` for a database stored as f16: half
the SRAM, read as f32, arithmetic in f32), and :class:`KnnIndex` compiles it once for a mesh, loads the
database resident (``resident=("db",)``) and answers :meth:`KnnIndex.search` batch after batch; only the
queries and the ``Q*K`` answers cross the host boundary::

    with KnnIndex(db, k=5, metric="l2", mesh=(8, 8), batch=8) as index:
        dist, idx = index.search(queries)         # (m, 5) each, any number m of queries

**Metrics and order.** ``"l2"``: ``dist[q][j]`` is the squared Euclidean distance ``sum_e (qs[q][e] -
db[n][e])^2`` of the ``j``-th nearest row ``n = idx[q][j]``, rows in ascending ``(distance, index)`` order.
``"ip"``: ``dist[q][j]`` is the inner product ``sum_e qs[q][e] * db[n][e]`` (the score itself, not negated),
rows in descending score order. Ties: of rows with equal distance (equal score) the smaller index comes
first, so the answer is the first ``k`` rows of a stable sort (``np.lexsort((arange(N), dist))``; for
``"ip"`` ``np.lexsort((arange(N), -score))``). A row whose distance is NaN (a NaN in the query or in the
row) or infinite is never chosen; a slot left without a row (fewer than ``k`` rows with a finite distance)
holds ``inf`` (``-inf`` for ``"ip"``) and index ``-1``.

**The formulation.** The distances ``d[q][n]`` are a GEMM-shaped loop nest (``q``, ``n`` parallel, ``e`` a
sum), then ``K`` rounds; round ``r`` is a (value, index) arg-min pair over ``n`` (arg-max for ``"ip"``)
written as two ternary statements, index first, strict ``<`` keeping the first index on ties
(:func:`mica.affine.deps.reductions`), and round ``r > 0`` first knocks the previous pick out of ``d``:
``d[q][n] = n == idx[q][r-1] ? INFINITY : d[q][n]``. Removing the lexicographically smallest
``(distance, index)`` pair each round is exactly the lexicographic order: round ``r`` picks the ``r``-th
pair. The compiler spreads every round: each core picks the best of its block of ``n`` and the partial
picks are combined by a tree across cores (:func:`mica.lower.reduce.reduction_chains`, which keeps the
sequential tie rule by combining blocks in order) — the "local top-k merged by a tree" of the issue, one
rank per round. An explicit shard loop (each of ``S`` shards picks its own ``K`` rows, then ``K`` rounds over
the ``S*K`` candidates) was measured against this one: for 4,096 x 128 (f16), 8 queries, ``k = 5`` on 8x8
WSE-2 both compute on all 64 cores and model 167,947 (this one) and 168,267 cycles (sharded, ``S = 64``),
and the sharded program compiles three times slower (16 s against 5 s: twice the loop nests, and guards for
``N`` not a multiple of ``S``), so the flat rounds are kept. (A lexicographic mask ``d > pv || d == pv && n > pi`` instead of the
knock-out also spreads but needs a masked copy of ``d`` per round.)

**Costs.** ``K`` rounds each read every distance once: ``O(Q*N*(D + K))`` work per batch, spread over the
cores that hold ``db``; :attr:`KnnIndex.program` ``.cost`` is the model's figure per batch.

Public API: :class:`KnnConfig`, :func:`knn_source`, :class:`KnnIndex`, :class:`SearchStats`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, InputError
from ..pipeline import compile_affine
from ..targets import get_target

METRICS = ("l2", "ip")


@dataclass(frozen=True)
class KnnConfig:
    """One batch of exact k-NN search: ``n`` database rows of width ``dim``, ``batch`` queries, ``k``
    answers per query, ``metric`` ``"l2"`` (squared Euclidean, ascending) or ``"ip"`` (inner product,
    descending), and ``dtype`` the database's storage type (``"f32"`` or ``"f16"``)."""

    n: int
    dim: int
    k: int
    batch: int = 8
    metric: str = "l2"
    dtype: str = "f32"

    def __post_init__(self):
        for f in ("n", "dim", "k", "batch"):
            v = getattr(self, f)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ArgumentError(f"KnnConfig.{f} must be a positive int, got {v!r}")
            object.__setattr__(self, f, int(v))
        if self.k > self.n:
            raise ArgumentError(f"KnnConfig: k = {self.k} is more than the {self.n} database rows")
        if self.metric not in METRICS:
            raise ArgumentError(f"KnnConfig.metric must be 'l2' or 'ip', got {self.metric!r}")
        if self.dtype not in ("f32", "f16"):
            raise ArgumentError(f"KnnConfig.dtype must be 'f32' or 'f16', got {self.dtype!r}")

    @property
    def worst(self) -> float:
        """The value of a slot without a row: ``inf`` for ``"l2"``, ``-inf`` for ``"ip"``."""
        return np.inf if self.metric == "l2" else -np.inf


def knn_source(cfg: KnnConfig) -> str:
    """The C source of ``knn`` for one batch of ``cfg`` (see the module text). Deterministic: equal
    configurations give equal text (so a compiled program's schedule replays)."""
    N, D, Q, K = cfg.n, cfg.dim, cfg.batch, cfg.k
    ctype = "_Float16" if cfg.dtype == "f16" else "float"
    l2 = cfg.metric == "l2"
    worst, better = ("INFINITY", "<") if l2 else ("-INFINITY", ">")
    term = "(qs[q][e] - db[n][e]) * (qs[q][e] - db[n][e])" if l2 else "qs[q][e] * db[n][e]"
    o = [f"/* Generated by mica.models.knn: exact {K}-NN ({cfg.metric}) of {Q} queries over {N} rows. */",
         "#include <math.h>",
         f"void knn({ctype} db[{N}][{D}], float qs[{Q}][{D}], float dist[{Q}][{K}], int idx[{Q}][{K}]) {{",
         f"  float d[{Q}][{N}];",
         f"  for (int q = 0; q < {Q}; q++)",
         f"    for (int n = 0; n < {N}; n++) {{",
         "      d[q][n] = 0.0f;",
         f"      for (int e = 0; e < {D}; e++) d[q][n] += {term};",
         "    }"]
    for r in range(K):
        if r:
            o += [f"  for (int q = 0; q < {Q}; q++)     /* knock round {r - 1}'s pick out */",
                  f"    for (int n = 0; n < {N}; n++) d[q][n] = n == idx[q][{r - 1}] ? {worst} : d[q][n];"]
        o += [f"  for (int q = 0; q < {Q}; q++) {{     /* round {r}: the best (distance, index) left */",
              f"    dist[q][{r}] = {worst};",
              f"    idx[q][{r}] = -1;",
              f"    for (int n = 0; n < {N}; n++) {{",
              f"      idx[q][{r}] = d[q][n] {better} dist[q][{r}] ? n : idx[q][{r}];",
              f"      dist[q][{r}] = d[q][n] {better} dist[q][{r}] ? d[q][n] : dist[q][{r}];",
              "    }",
              "  }"]
    o.append("}")
    return "\n".join(o) + "\n"


@dataclass(frozen=True)
class SearchStats:
    """The last :meth:`KnnIndex.search`: ``queries`` answered, ``batches`` run (the last one padded),
    the emulator's modelled ``cycles`` summed over the batches, the most ``computing_cores`` of a batch, and
    the bytes that crossed the host boundary (queries in, answers out)."""

    queries: int
    batches: int
    cycles: float
    computing_cores: int
    host_bytes: int

    def queries_per_second(self, clock_ghz: float) -> float:
        """Answered queries per second at ``clock_ghz`` from the modelled cycles (padding counts as work)."""
        return self.queries / (self.cycles / (clock_ghz * 1e9)) if self.cycles else float("nan")


class KnnIndex:
    """Exact k-NN over the rows of ``db`` (a 2-D float32 or float16 numpy array; float16 is stored as f16
    on the mesh), compiled once for ``mesh`` cores of ``target`` with ``batch`` queries per run and the
    database loaded resident (see the module text). Use it as a context manager, or :meth:`close` it.

    ``k < 1``, ``k > len(db)``, an unknown metric or a ``db`` that is not a 2-D float32/float16 array raise
    before anything is compiled (:class:`~mica.errors.ArgumentError` for ``k``/``metric``/``batch``,
    :class:`~mica.errors.InputError` for ``db``)."""

    def __init__(self, db, k: int, metric: str = "l2", mesh=(8, 8), target="wse2", *, batch: int = 8,
                 threads: int | None = None):
        if not isinstance(db, np.ndarray):
            raise InputError(f"db must be a numpy array of float32 or float16 rows, got {type(db).__name__}")
        if db.ndim != 2 or 0 in db.shape:
            raise InputError(f"db must be a non-empty 2-D array (rows x width), got shape {db.shape}")
        if db.dtype not in (np.float32, np.float16):
            raise InputError(f"db has dtype {db.dtype}; pass float32 (or float16 to store it as f16): "
                             f"db.astype(np.float32)")
        self.config = KnnConfig(n=db.shape[0], dim=db.shape[1], k=k, batch=batch, metric=metric,
                                dtype="f16" if db.dtype == np.float16 else "f32")
        self.target = get_target(target)
        self.program = compile_affine(knn_source(self.config), mesh=mesh, target=self.target, resident=("db",))
        self.mesh = tuple(self.program.mesh_program.mesh)
        self._dev = self.program.load({"db": np.ascontiguousarray(db)}, threads=threads)
        self.last: SearchStats | None = None

    # -- queries ----------------------------------------------------------------------------------------
    def _queries(self, queries) -> tuple[np.ndarray, bool]:
        """``queries`` as a C-contiguous float32 ``(m, dim)`` array and whether one query was given as 1-D;
        raises :class:`InputError` (nothing has run yet)."""
        try:
            a = np.asarray(queries)
        except Exception as exc:            # ragged lists and the like
            raise InputError(f"queries must be an array of shape (m, {self.config.dim}): {exc}") from None
        if a.dtype.kind not in "fiu":
            raise InputError(f"queries have dtype {a.dtype}; expected real numbers (float32)")
        one = a.ndim == 1
        if one:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != self.config.dim:
            raise InputError(f"queries have shape {np.shape(queries)}; expected (m, {self.config.dim}) "
                             f"or ({self.config.dim},): the database rows are {self.config.dim} wide")
        return np.ascontiguousarray(a, dtype=np.float32), one

    def search(self, queries) -> tuple[np.ndarray, np.ndarray]:
        """``(dist, idx)`` of the ``k`` nearest rows of every query: ``(m, k)`` float32 and int64 arrays for
        ``(m, dim)`` queries, ``(k,)`` for one 1-D query (order, ties and empty slots: the module text).
        Runs ``ceil(m / batch)`` batches, the last padded with zero queries whose answers are dropped. Bad
        queries raise :class:`InputError` before anything runs; the database on the mesh never changes."""
        a, one = self._queries(queries)
        cfg = self.config
        m = a.shape[0]
        dist = np.empty((m, cfg.k), np.float32)
        idx = np.empty((m, cfg.k), np.int64)
        cycles, cores, host, batches = 0.0, 0, 0, 0
        for lo in range(0, m, cfg.batch):
            part = a[lo:lo + cfg.batch]
            qs = part if len(part) == cfg.batch else np.concatenate(
                [part, np.zeros((cfg.batch - len(part), cfg.dim), np.float32)])
            res = self._dev.run({"qs": qs})
            dist[lo:lo + len(part)] = res.outputs["dist"][:len(part)]
            idx[lo:lo + len(part)] = res.outputs["idx"][:len(part)]
            cycles += res.stats.cycles
            cores = max(cores, int((res.stats.core_compute > 0).sum()))
            host += res.stats.host_bytes_in + res.stats.host_bytes_out
            batches += 1
        # A slot no finite distance filled (NaN rows, fewer than k candidates) says so the same way on
        # every mesh: the tree's partials start from an index of their own.
        empty = ~np.isfinite(dist)
        dist[empty] = cfg.worst
        idx[empty] = -1
        self.last = SearchStats(m, batches, cycles, cores, host)
        return (dist[0], idx[0]) if one else (dist, idx)

    def database(self) -> np.ndarray:
        """The database as it is on the mesh (a copy; float32 or float16 as given)."""
        return self._dev.read("db")

    def modelled_queries_per_second(self) -> float:
        """Queries per second from the cost model's cycles per batch at the target's clock."""
        return self.config.batch * self.target.clock_ghz * 1e9 / self.program.cost.total_cycles

    # -- lifetime -----------------------------------------------------------------------------------------
    def close(self) -> None:
        dev = getattr(self, "_dev", None)
        if dev is not None:
            dev.close()
        self._dev = None

    def __enter__(self) -> "KnnIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
