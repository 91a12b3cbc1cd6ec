"""The affine program: arrays, statements with isl iteration domains, tagged accesses, expression trees.

A :class:`Program` is what every front end produces (the ``mica.ops`` builders, and later C via
``from_c``) and what the scheduler consumes. Sizes are concrete integers once a program is built.

Spaces:
  * a statement's domain is ``{ S[l0, l1, ...] : ... }`` with ``S`` the statement name and ``l*`` its loop
    names, outermost first;
  * an access relation is ``{ S[l0, ...] -> A[a0, ...] }`` (tagged by :attr:`Access.ref`);
  * the original schedule is ``{ S[l0, ...] -> [c0, l0, c1, l1, ..., cn] }``: textual order as a 2d+1
    vector, padded with zeros to the same length for every statement.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from math import prod

import islpy as isl

from ..errors import AffineError
from ..targets import DTYPE_BYTES, dtype_name
from .expr import Aff, Expr, Scalar
from .isl_names import check_ident, dim_names, iset, imap, umap


@dataclass(frozen=True)
class Array:
    """A named dense array of ``shape`` (row-major) and ``dtype``: ``'f32'``/``'f64'``/``'f16'``, or an integer
    dtype ``'i32'``/``'i16'``/``'i8'``/``'u8'`` (C's integer arithmetic: :mod:`mica.affine.expr`)."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "f32"

    def __post_init__(self):
        check_ident(self.name, "array name")
        try:        # aliases ('float32', np.float32) are stored as MICA's name
            object.__setattr__(self, "dtype", dtype_name(self.dtype))
        except ValueError as exc:
            raise AffineError(f"array {self.name}: {exc}") from None
        if any((not isinstance(n, int)) or n <= 0 for n in self.shape):
            raise AffineError(f"array {self.name}: extents must be positive integers, got {self.shape}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    def box_text(self) -> str:
        """``{ A[a0, ...] : 0 <= a_d < n_d }``."""
        dims = [f"a{d}" for d in range(self.rank)]
        cons = " and ".join(f"0 <= {a} < {n}" for a, n in zip(dims, self.shape)) or "true"
        return f"{{ {self.name}[{', '.join(dims)}] : {cons} }}"


@dataclass(frozen=True)
class Access:
    """One array reference of a statement, tagged ``ref`` (unique in the program)."""

    ref: str
    array: str
    index: tuple[Aff, ...]

    def relation_text(self, stmt: "Statement") -> str:
        """``{ S[loops] -> A[index] }``."""
        return f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> {self.array}[{', '.join(a.text() for a in self.index)}] }}"


def _field_hash(obj) -> int:
    """The hash of ``obj``'s compared fields (what the generated ``__hash__`` of a frozen dataclass returns),
    computed once per object: the passes' caches key on programs and statements hundreds of thousands of
    times per search, and a frozen record's fields never change. Kept out of pickles (``__getstate__``):
    string hashes differ between processes."""
    h = obj.__dict__.get("_hash")
    if h is None:
        h = hash(tuple(getattr(obj, f.name) for f in fields(obj) if f.compare))
        object.__setattr__(obj, "_hash", h)
    return h


@dataclass(frozen=True)
class Statement:
    """``write = expr`` for every point of ``domain`` (that the runtime values select, under a ``guard``).

    ``domain`` is isl text in the space ``S[loops]``. ``guard`` (empty: none) is isl text
    ``[p, ...] -> { S[loops] : ... }`` over the program's runtime parameters (:attr:`Program.runtime`):
    the instances that run for given values of them, a subset of ``domain`` at every value of the declared
    ranges (``domain`` is their union; :mod:`mica.affine.runtime`). A guarded statement's write is a *may*
    write: analyses treat it as possibly not happening (the element keeps its earlier value). ``reads`` lists every access the expression reads
    (the expression's :class:`~mica.affine.expr.Read` leaves name them by ``ref``). ``order`` is the
    statement's 2d+1 original-schedule vector: ints (textual positions) interleaved with loop names.
    """

    name: str
    loops: tuple[str, ...]
    domain: str
    write: Access
    expr: Expr
    reads: tuple[Access, ...] = ()
    order: tuple[int | str, ...] = ()
    line: int = field(default=0, compare=False)   # source line (C front end), 0 if unknown
    guard: str = ""

    def __post_init__(self):
        check_ident(self.name, "statement name")
        for lp in self.loops:
            check_ident(lp, f"loop of {self.name}")
            if lp.startswith("__"):
                raise AffineError(f"statement {self.name}: loop name {lp!r} is reserved (leading '__')")
        if len(set(self.loops)) != len(self.loops):
            raise AffineError(f"statement {self.name}: repeated loop names {self.loops}")
        refs = {a.ref for a in self.reads}
        missing = [r for r in self.expr.refs() if r not in refs]
        if missing:
            raise AffineError(f"statement {self.name}: expression reads unknown references {missing}")

    @cached_property
    def domain_set(self) -> isl.Set:
        s = iset(self.domain)
        if s.get_tuple_name() != self.name or dim_names(s) != self.loops:
            raise AffineError(
                f"statement {self.name}: domain {self.domain!r} is not in space {self.name}[{', '.join(self.loops)}]")
        return s

    def __getstate__(self) -> dict:
        """The fields only: the isl set :attr:`domain_set` caches is parsed again from ``domain`` on first use
        after loading (isl objects are never pickled)."""
        state = dict(self.__dict__)
        state.pop("domain_set", None)
        state.pop("guard_set", None)
        state.pop("_hash", None)
        return state

    def __hash__(self) -> int:
        return _field_hash(self)

    def access(self, ref: str) -> Access:
        for a in (self.write, *self.reads):
            if a.ref == ref:
                return a
        raise AffineError(f"statement {self.name} has no access {ref!r}")

    def access_map(self, access: Access, *, guarded: bool = False) -> isl.Map:
        """``{ S[loops] -> A[index] }`` restricted to the statement's domain, or with ``guarded`` to the
        instances that run (:meth:`instances`: ``[p, ...] -> { S[loops] -> A[index] }``)."""
        return imap(access.relation_text(self)).intersect_domain(self.instances() if guarded else self.domain_set)

    def instances(self) -> isl.Set:
        """The instances that run: the guard (parametric in the runtime parameters it reads), or the domain
        when there is none."""
        g = self.guard_set
        return self.domain_set if g is None else g

    @property
    def accesses(self) -> tuple[Access, ...]:
        return (self.write, *self.reads)

    def scalars(self) -> tuple[str, ...]:
        """The scalar arguments the statement uses: its expression's, and the runtime parameters of its
        guard."""
        return tuple(sorted({e.name for e in self.expr.walk() if isinstance(e, Scalar)} | set(self.guard_params)))

    @cached_property
    def guard_set(self) -> isl.Set | None:
        """The guard as an isl set ``[p, ...] -> { S[loops] }`` (None when the statement has none)."""
        if not self.guard:
            return None
        g = iset(self.guard)
        if g.get_tuple_name() != self.name or dim_names(g) != self.loops:
            raise AffineError(f"statement {self.name}: guard {self.guard!r} is not in space "
                              f"{self.name}[{', '.join(self.loops)}]")
        return g

    @property
    def guard_params(self) -> tuple[str, ...]:
        """The runtime parameters the guard reads (in isl's order)."""
        g = self.guard_set
        if g is None:
            return ()
        return tuple(g.get_dim_name(isl.dim_type.param, i) for i in range(g.dim(isl.dim_type.param)))


@dataclass(frozen=True)
class Program:
    """A whole affine program: arrays, scalar parameters, statements in textual order.

    ``inputs`` are the arrays whose initial contents matter (loaded from the host); ``outputs`` the arrays
    returned to the user (every array a statement writes, unless declared temporary). ``runtime`` lists the
    runtime parameters ``(name, lo, hi)``: ints given to every run, ``lo <= value < hi``, that statements'
    guards read; each is also a scalar (passed to the kernels with the others). ``on_mesh`` names the arrays
    that stay on the mesh between runs (weights loaded once, a cache updated in place): plans keep each in
    one buffer that nothing else overwrites (:mod:`mica.meshir.on_mesh`). ``folded`` gives the shape in which
    the user passes and gets back each array a loop fold reshaped (:mod:`mica.affine.fold`: the row-major
    reshape of that shape to the array's).
    """

    name: str
    arrays: tuple[Array, ...]
    statements: tuple[Statement, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    scalars: tuple[tuple[str, str], ...] = ()
    source: str = field(default="", compare=False)
    runtime: tuple[tuple[str, int, int], ...] = ()
    on_mesh: tuple[str, ...] = ()
    folded: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def __hash__(self) -> int:
        return _field_hash(self)

    def __getstate__(self) -> dict:
        """The fields only (the hash :func:`_field_hash` keeps is not valid in another process)."""
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def __post_init__(self):
        check_ident(self.name, "program name")
        names = [a.name for a in self.arrays]
        if len(set(names)) != len(names):
            raise AffineError(f"program {self.name}: repeated array names {names}")
        if not self.statements:
            raise AffineError(f"program {self.name} has no statements")
        snames = [s.name for s in self.statements]
        if len(set(snames)) != len(snames):
            raise AffineError(f"program {self.name}: repeated statement names {snames}")
        refs = [a.ref for s in self.statements for a in s.accesses]
        if len(set(refs)) != len(refs):
            raise AffineError(f"program {self.name}: access tags must be unique, got {refs}")
        scal = {n for n, _ in self.scalars}
        for n in (*names, *(n for n, _ in self.scalars)):
            if n.startswith("__"):
                raise AffineError(f"program {self.name}: name {n!r} is reserved (leading '__')")
        for n, dt in self.scalars:
            check_ident(n, "scalar name")
            if n in names:
                raise AffineError(f"program {self.name}: {n!r} is both an array and a scalar")
        for s in self.statements:
            for a in s.accesses:
                if a.array not in names:
                    raise AffineError(f"statement {s.name} accesses unknown array {a.array!r}")
                if len(a.index) != self.array(a.array).rank:
                    raise AffineError(
                        f"statement {s.name}: {a.array} has rank {self.array(a.array).rank}, "
                        f"access {a.ref} gives {len(a.index)} subscripts")
                for ix in a.index:
                    bad = [n for n in ix.names if n not in s.loops]
                    if bad:
                        raise AffineError(f"statement {s.name}: subscript {ix} of {a.array} uses unknown names {bad}")
            missing = [n for n in s.scalars() if n not in scal]
            if missing:
                raise AffineError(f"statement {s.name} uses undeclared scalars {missing}")
            unranged = [n for n in s.guard_params if n not in {r[0] for r in self.runtime}]
            if unranged:
                raise AffineError(f"statement {s.name}: its guard reads {unranged}, which are not runtime "
                                  f"parameters of {self.name}")
        for n, lo, hi in self.runtime:
            if n not in scal:
                raise AffineError(f"program {self.name}: runtime parameter {n!r} is not one of its scalars")
            if not (isinstance(lo, int) and isinstance(hi, int) and lo < hi):
                raise AffineError(f"program {self.name}: runtime parameter {n!r} has an empty range "
                                  f"[{lo}, {hi})")
        for n in (*self.inputs, *self.outputs):
            if n not in names:
                raise AffineError(f"program {self.name}: unknown array {n!r} in inputs/outputs")
        for n in self.on_mesh:
            if n not in self.inputs and n not in self.outputs:
                raise AffineError(f"program {self.name}: {n!r} cannot stay on the mesh: it is not an input or an "
                                  f"output (inputs {list(self.inputs)}, outputs {list(self.outputs)})")
        for n, shape in self.folded:
            if n not in names or prod(shape) != prod(self.array(n).shape):
                raise AffineError(f"program {self.name}: folded array {n!r} has no reshape from {shape}")
        self.check_bounds()

    def user_shape(self, name: str) -> tuple[int, ...]:
        """The shape in which ``run()`` takes and gives back array ``name``: its own, or the shape a loop fold
        reshaped (:attr:`folded`)."""
        return dict(self.folded).get(name, self.array(name).shape)

    def array(self, name: str) -> Array:
        for a in self.arrays:
            if a.name == name:
                return a
        raise AffineError(f"program {self.name} has no array {name!r}")

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise AffineError(f"program {self.name} has no statement {name!r}")

    def check_bounds(self) -> None:
        """Proves with isl that every access stays inside its array's declared extent."""
        for s in self.statements:
            dom = s.domain_set
            if dom.is_empty():
                continue
            for a in s.accesses:
                arr = self.array(a.array)
                img = dom.apply(imap(a.relation_text(s)))
                outside = img.subtract(iset(arr.box_text()))
                if not outside.is_empty():
                    pt = outside.sample_point()
                    raise AffineError(
                        f"statement {s.name}: access {a.ref} to {a.array}{list(arr.shape)} goes out of bounds, "
                        f"e.g. at {pt}" + (f" (source line {s.line})" if s.line else ""))

    def schedule_map(self) -> isl.UnionMap:
        """The original (textual) schedule ``{ S[loops] -> [2d+1 vector] }`` over every statement."""
        n = max(len(s.order) for s in self.statements)
        parts = []
        for s in self.statements:
            vec = [str(v) for v in s.order] + ["0"] * (n - len(s.order))
            parts.append(f"{s.name}[{', '.join(s.loops)}] -> [{', '.join(vec)}]")
        return umap("{ " + "; ".join(parts) + " }")

    def runtime_context(self) -> isl.Set:
        """``[p, ...] -> { : lo <= p < hi and ... }``: the declared ranges of the runtime parameters (a
        universe without parameters when there are none). Relations over guarded instances hold only under
        it (outside the ranges a guard is empty)."""
        names = ", ".join(n for n, _, _ in self.runtime)
        cons = " and ".join(f"{lo} <= {n} < {hi}" for n, lo, hi in self.runtime) or "true"
        return iset(f"[{names}] -> {{ : {cons} }}")

    def replace(self, **kw) -> "Program":
        return replace(self, **kw)


def main_statement(prog: Program) -> Statement:
    """The statement with the deepest loop nest (the last one among equals): the one the mapping and the loop
    alignment are built around."""
    best = prog.statements[0]
    for s in prog.statements:
        if len(s.loops) >= len(best.loops):
            best = s
    return best
