"""A program cut into pieces along one dimension, so that its operators can stream from piece to piece.

Take ``tmp = A B; D = tmp C`` (2mm). Row ``i`` of ``D`` needs only row ``i`` of ``tmp``, which needs only
row ``i`` of ``A``. Cut every statement's ``i`` loop into ``pieces`` ranges and every array indexed by ``i``
into the matching row blocks, and the program becomes ``pieces`` independent copies of itself:
``tmp_s0 = A_s0 B; D_s0 = tmp_s0 C; tmp_s1 = A_s1 B; ...``. With the producer's copies on one rectangle of
the mesh and the consumer's on another (:func:`mica.tiling.operators.search_operators`), the producer works on
piece ``s + 1`` while the consumer works on piece ``s``: the operators stream.

The dimension is a **class**: loops and array dimensions tied by subscripts that are exactly a loop
variable (``A[i][k]`` ties ``A``'s dimension 0 to loop ``i`` of that statement). A class can be cut when

* every statement has exactly one loop in it;
* every array a statement writes has exactly one dimension in the class, of extent ``n``, and every access
  to it subscripts that dimension with the statement's class loop: each piece then writes and reads its own
  block, so no dependence crosses pieces and running the pieces one after another (each in program
  order) computes what the program computes;
* an array the program only reads is cut the same way when it can be, and otherwise stays whole (every
  piece reads it).

Spaces: piece ``k`` covers ``[lo, hi)`` of the class; its statement ``S_s{k}`` has the domain
``{ S_s{k}[..., l - lo, ...] : S[..., l, ...] in the domain and lo <= l < hi }`` (the class loop ``l`` runs
from 0, so a mapping of piece 0 fits every piece), every subscript reads ``l + lo`` for ``l``, and a cut
array ``X_s{k}`` holds the block ``[lo, hi)`` of ``X`` (its class subscript is ``l`` again). :class:`Pieces` keeps the bookkeeping to cut the user's inputs and paste the outputs back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..errors import ScheduleError
from .expr import Expr, Index, Read
from .isl_names import imap, iset, rename_dims
from .program import Access, Array, Program, Statement


@dataclass(frozen=True)
class Pieces:
    """``program`` is ``source`` cut into ``len(bounds)`` pieces along array ``array``'s dimension ``dim``.

    ``cut`` maps every cut array to the dimension it is cut along; piece ``k`` holds indices
    ``bounds[k] = (lo, hi)`` of it in the array ``piece_name(name, k)``."""

    source: Program
    program: Program
    array: str
    dim: int
    cut: tuple[tuple[str, int], ...]
    bounds: tuple[tuple[int, int], ...]

    @property
    def count(self) -> int:
        return len(self.bounds)

    def sources(self) -> dict[str, tuple[str, int, int, int]]:
        """Every piece array of ``program`` -> ``(source array, cut dimension, lo, hi)``: the slice of the
        source program's array it holds (what host code loads a piece from and stores it into)."""
        return {piece_name(a, k): (a, d, lo, hi) for a, d in self.cut for k, (lo, hi) in enumerate(self.bounds)}

    def split(self, arrays: dict) -> dict:
        """The piece program's arrays from the source program's (numpy arrays by name): cut arrays as
        copies of their blocks, whole ones as they are."""
        import numpy as np
        cut = dict(self.cut)
        out = {}
        for name, value in arrays.items():
            if name not in cut:
                out[name] = value
                continue
            index = [slice(None)] * value.ndim
            for k, (lo, hi) in enumerate(self.bounds):
                index[cut[name]] = slice(lo, hi)
                out[piece_name(name, k)] = np.ascontiguousarray(value[tuple(index)])
        return out

    def join(self, arrays: dict) -> dict:
        """The source program's outputs from the piece program's: cut arrays pasted back together."""
        import numpy as np
        cut = dict(self.cut)
        out = {}
        for name in self.source.outputs:
            if name in cut:
                out[name] = np.concatenate([arrays[piece_name(name, k)] for k in range(self.count)],
                                           axis=cut[name])
            else:
                out[name] = arrays[name]
        return out


def piece_name(name: str, k: int) -> str:
    """Piece ``k``'s copy of the array, statement or access tag ``name``."""
    return f"{name}_s{k}"


class _Classes:
    """Union-find over ``("a", array, dim)`` and ``("s", statement, loop)`` nodes."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, n):
        self.parent.setdefault(n, n)
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _classes(prog: Program) -> _Classes:
    uf = _Classes()
    for s in prog.statements:
        for a in s.accesses:
            for d, ix in enumerate(a.index):
                lp = ix.single_var()
                if lp is not None:
                    uf.union(("a", a.array, d), ("s", s.name, lp))
    return uf


def cut_arrays(prog: Program, array: str, dim: int) -> tuple[dict[str, str], dict[str, int], int]:
    """The class of ``array``'s dimension ``dim``: (class loop of every statement, dimension of every cut
    array, extent ``n`` of ``array`` along it). Every statement writes a cut array through its class loop,
    so the program's bounds check keeps every class loop inside ``[0, n)`` and the pieces' ranges
    partition every domain. Raises :class:`ScheduleError` saying which statement or array keeps the program
    from being cut along it."""
    arr = prog.array(array)
    if not 0 <= dim < arr.rank:
        raise ScheduleError(f"{prog.name}: {array} has no dimension {dim} to cut along")
    n = arr.shape[dim]
    uf = _classes(prog)
    cls = uf.find(("a", array, dim))
    where = f"{prog.name} cut along dimension {dim} of {array}"
    loop_of: dict[str, str] = {}
    for s in prog.statements:
        mine = [lp for lp in s.loops if uf.find(("s", s.name, lp)) == cls]
        if len(mine) != 1:
            how = "no loop" if not mine else f"loops {', '.join(mine)}"
            raise ScheduleError(f"{where}: statement {s.name} has {how} subscripting that dimension "
                                f"(exactly one is needed)")
        loop_of[s.name] = mine[0]
    written = {s.write.array for s in prog.statements}
    cut: dict[str, int] = {}
    for a in prog.arrays:
        dims = [d for d in range(a.rank) if uf.find(("a", a.name, d)) == cls]
        ok = len(dims) == 1 and a.shape[dims[0]] == n and all(
            acc.index[dims[0]].single_var() == loop_of[s.name]
            for s in prog.statements for acc in s.accesses if acc.array == a.name)
        used = any(acc.array == a.name for s in prog.statements for acc in s.accesses)
        if ok and used:
            cut[a.name] = dims[0]
        elif a.name in written:
            raise ScheduleError(f"{where}: {a.name} is written but not every access subscripts one of its "
                                f"dimensions of extent {n} with the statement's loop of that class (pieces "
                                f"would share its elements)")
    return loop_of, cut, n


def cut_program(prog: Program, array: str, dim: int, pieces: int) -> Pieces:
    """``prog`` cut into ``pieces`` (at most the extent; equal blocks, the last one shorter) along the class
    of ``array``'s dimension ``dim`` (see the module docstring); statements are ordered piece by piece,
    each piece in the program's order. Raises :class:`ScheduleError` when the class cannot be cut."""
    if not isinstance(pieces, int) or pieces < 2:
        raise ScheduleError(f"{prog.name}: cutting into pieces needs at least 2 of them, got {pieces!r}")
    loop_of, cut, n = cut_arrays(prog, array, dim)
    kept = sorted(set(cut) & set(prog.on_mesh))
    if kept:
        raise ScheduleError(f"{prog.name}: cutting into pieces would cut {', '.join(kept)}, which stay on the mesh "
                            f"between runs (one buffer each)", cause="on-mesh")
    b = -(-n // min(pieces, n))
    bounds = tuple((lo, min(n, lo + b)) for lo in range(0, n, b))
    tops = sorted({s.order[0] if s.order else 0 for s in prog.statements})
    arrays, statements = [], []
    taken = {a.name for a in prog.arrays} | {s.name for s in prog.statements} | \
        {acc.ref for s in prog.statements for acc in s.accesses}
    for k, (lo, hi) in enumerate(bounds):
        for a in prog.arrays:
            if a.name in cut:
                shape = list(a.shape)
                shape[cut[a.name]] = hi - lo
                arrays.append(Array(_fresh(piece_name(a.name, k), taken, prog), tuple(shape), a.dtype))
        for s in prog.statements:
            statements.append(_piece_statement(s, loop_of[s.name], k, lo, hi, cut, tops, taken, prog))
    arrays += [a for a in prog.arrays if a.name not in cut]

    def names(group):
        return tuple(piece_name(a, k) for a in group if a in cut for k in range(len(bounds))) + \
            tuple(a for a in group if a not in cut)
    out = Program(f"{prog.name}_pieces", tuple(arrays), tuple(statements), names(prog.inputs),
                  names(prog.outputs), prog.scalars, runtime=prog.runtime, on_mesh=prog.on_mesh)
    return Pieces(prog, out, array, dim, tuple(sorted(cut.items())), bounds)


def _fresh(name: str, taken: set, prog: Program) -> str:
    if name in taken:
        raise ScheduleError(f"{prog.name}: cannot cut into pieces, the name {name!r} is already used")
    taken.add(name)
    return name


def _piece_statement(s: Statement, loop: str, k: int, lo: int, hi: int, cut: dict, tops: list, taken: set,
                     prog: Program) -> Statement:
    name = _fresh(piece_name(s.name, k), taken, prog)
    loops = ", ".join(s.loops)
    moved = ", ".join(f"{lp} - {lo}" if lp == loop else lp for lp in s.loops)

    def piece(instances):       # the piece's part of a set of s's instances, its loop from 0
        return rename_dims(instances.intersect(iset(f"{{ {s.name}[{loops}] : {lo} <= {loop} < {hi} }}")).apply(
            imap(f"{{ {s.name}[{loops}] -> {name}[{moved}] }}")), "set", s.loops)
    dom = piece(s.domain_set)
    guard = str(piece(s.guard_set)) if s.guard else ""      # the same piece of the instances that run
    refs: dict[str, str] = {}

    def access(a: Access) -> Access:
        # The piece's loop runs from 0: every subscript reads ``loop + lo`` for ``loop``, and a cut array's
        # subscript along the cut, ``loop`` itself, then loses the ``lo`` its block starts at.
        ref = refs[a.ref] = _fresh(piece_name(a.ref, k), taken, prog)
        index = tuple(ix + ix.coeff(loop) * lo for ix in a.index)
        if a.array not in cut:
            return Access(ref, a.array, index)
        d = cut[a.array]
        return Access(ref, piece_name(a.array, k), tuple(ix + (-lo) if e == d else ix for e, ix in enumerate(index)))
    write = access(s.write)
    reads = tuple(access(a) for a in s.reads)
    order = s.order or (0,)
    order = (k * len(tops) + tops.index(order[0]), *order[1:])
    return replace(s, name=name, domain=str(dom), write=write, reads=reads,
                   expr=_renamed(s.expr, refs, loop, lo), order=order, guard=guard)


def _renamed(e: Expr, refs: dict[str, str], loop: str = "", lo: int = 0) -> Expr:
    """``e`` with every read's reference renamed through ``refs`` and every iterator value
    (:class:`Index`) reading ``loop + lo`` for ``loop`` (the piece's loop runs from 0)."""
    if isinstance(e, Read):
        return Read(refs[e.ref])
    if isinstance(e, Index):
        return Index(e.aff + e.aff.coeff(loop) * lo) if loop else e
    changes = {}
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, Expr):
            changes[f.name] = _renamed(v, refs, loop, lo)
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            changes[f.name] = tuple(_renamed(x, refs, loop, lo) for x in v)
    return replace(e, **changes) if changes else e


def cut_candidates(prog: Program) -> list[tuple[str, int]]:
    """Every ``(array, dim)`` class along which :func:`cut_program` can cut ``prog``, one per class (named
    by the first written array and dimension in it)."""
    seen, out = set(), []
    uf = _classes(prog)
    for s in prog.statements:
        a = prog.array(s.write.array)
        for d in range(a.rank):
            cls = uf.find(("a", a.name, d))
            if cls in seen:
                continue
            seen.add(cls)
            try:
                cut_arrays(prog, a.name, d)
            except ScheduleError:
                continue
            out.append((a.name, d))
    return out
