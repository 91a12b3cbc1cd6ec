"""Ownership, per-step needs and communication sets, derived with isl; pattern classification and hop proofs.

Spaces used throughout (all relations are plain ``isl.Map`` without parameters):

* placement ``{ S[loops] -> M[t, x, y] }``: statement instance to (step, core column, core row);
* ownership ``{ core[x, y] -> A[a...] }``: what each core holds of array A (its home box);
* need ``{ M[t, x, y] -> A[a...] }``: what core (x, y) reads of A at step t;
* communication ``{ M[t, x, y] -> core[x', y'] }``: core (x', y') must send to (x, y) before step t
  (the data is ``need(M) ∩ own(core)``); self-pairs removed.

:func:`classify` turns a need and an ownership into a :class:`CommPlan`: ``local`` (nothing moves),
``row`` (a root core per row, a function of t only, multicasts its whole home box along the row) or
``column``. The plan's ``max_hops`` is the maximum of ``|x - x'| + |y - y'|`` over the communication set,
computed by isl, not sampled.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..affine.isl_names import aff_coefficients, imap, iset, max_of, rename_dims, single_affine_of
from ..affine.program import Access, Array, Statement
from ..errors import AffineError, CommError
from ..meshir.ir import BoxDim, Lin, Region
from ..tiling.schedule import Schedule
from ..tiling.spacetime import kb_clause, placement_map




def box_constraints(box: tuple[BoxDim, ...], pins: dict[str, int] | None = None) -> list[str]:
    """Constraints of array index ``a<d>`` inside the box (a ``kb`` coordinate stays a free name)."""
    cons = [d.isl(f"a{i}") for i, d in enumerate(box)]
    for axis, c in (pins or {}).items():
        cons.append(f"{axis} = {c}")
    return cons


def ownership_map(array: Array, box: tuple[BoxDim, ...], region: Region, pins: dict[str, int]) -> isl.Map:
    """``{ core[x, y] -> A[a...] }``: each core of ``region`` holds the box of ``array``."""
    dims = ", ".join(f"a{i}" for i in range(array.rank))
    cons = box_constraints(box, pins) + [f"{region.x0} <= x < {region.x1}", f"{region.y0} <= y < {region.y1}"]
    return imap(f"{{ core[x, y] -> {array.name}[{dims}] : {' and '.join(cons)} }}", CommError)


def box_map(array: Array, box: tuple[BoxDim, ...], skew=None) -> isl.Map:
    """``{ M[t, x, y] -> A[a...] }``: the box a buffer with coordinates (t, x, y) holds (for a box with a
    ``kb`` coordinate, on the ``skew.n`` x ``skew.n`` cores and steps of the skew)."""
    dims = ", ".join(f"a{i}" for i in range(array.rank))
    cons = box_constraints(box) or ["true"]
    if any(d.coord == "kb" for d in box):
        n = skew.n
        body = " and ".join(cons)
        cons = [f"0 <= t < {n} and 0 <= x < {n} and 0 <= y < {n}", kb_clause(skew.kind, n, body)]
    return imap(f"{{ M[t, x, y] -> {array.name}[{dims}] : {' and '.join(cons)} }}", CommError)


def need_map(stmt: Statement, access: Access, sched: Schedule) -> isl.Map:
    """``{ M[t, x, y] -> A[a...] }``: the elements of the accessed array each core reads at each step."""
    return stmt.access_map(access).apply_domain(placement_map(stmt, sched))


@dataclass(frozen=True)
class CommPlan:
    """How the data an access needs reaches the cores that read it (see module docstring)."""

    kind: str                   # "local" | "row" | "column"
    array: str
    ref: str
    root: Lin | None = None     # the sending core's x (row) or y (column) as a function of t
    max_hops: int = 0
    recv_box: tuple[BoxDim, ...] = ()
    relation: str = ""          # { M[t, x, y] -> core[x', y'] } (sources of remote data)
    source: str = ""            # the buffer the data is read from or sent from ("": the array's home)
    in_step: bool = False       # sent inside the step loop even when the box does not move with t (produced data)
    pack: str = ""              # a kernel that fills the source buffer from the home just before the send

    @property
    def buffer(self) -> str:
        """The buffer the data is read from or sent from: ``source``, else the array's home."""
        return self.source or self.array


def is_local(need: isl.Map, own: isl.Map) -> bool:
    """Every core owns all it needs: ``need ⊆ (M[t, x, y] -> core[x, y]) ∘ own``."""
    return need.is_subset(imap("{ M[t, x, y] -> core[x, y] }").apply_range(own))


def _root_of(rel: isl.Map, src_dim: str, what: str, blocks: int = 0) -> Lin:
    """The source coordinate ``src_dim`` of ``rel`` as an affine function of ``t`` alone; with ``blocks = d``
    also ``floor(t / d)`` (the core owning step t's element when each core owns ``d`` consecutive ones:
    checked with isl first, as the receivers may lie on one line where isl would name the root by theirs)."""
    if blocks > 1:
        root = Lin(0, (("t", 1),), blocks)
        src = f"core[{root}, ys]" if src_dim == "x" else f"core[xs, {root}]"
        if rel.is_subset(imap(f"{{ M[t, x, y] -> {src} }}".replace(" / ", "/"))):
            return root
    keep = "x" if src_dim == "y" else "y"
    m = imap(f"{{ M[t, x, y] -> R[t, {keep}] }}")
    # { R[t, keep] -> core[x', y'] } then the single source coordinate.
    by_line = rename_dims(rel.apply_domain(m), "in", ("t", keep))
    pa = single_affine_of(by_line, src_dim)
    if pa is None:
        raise CommError(f"{what}: the sending core is not a single function of the step", detail=str(rel))
    affs = {str(a) for _, a in pa.get_pieces()}
    if len(affs) != 1:
        raise CommError(f"{what}: the sending core is piecewise in the step", detail=str(pa))
    _, aff = pa.get_pieces()[0]
    try:
        coeffs, const, den = aff_coefficients(aff)
    except AffineError:
        block = _step_block(aff) if blocks > 1 else None
        if block is None:
            raise CommError(f"{what}: the sending core is not an affine function of the step "
                            f"(it involves an integer division)", detail=str(aff)) from None
        return block
    if den != 1 or any(k not in ("t",) for k in coeffs):
        raise CommError(f"{what}: the sending core depends on the receiver, not only on the step",
                        detail=str(aff))
    return Lin(const, (("t", coeffs["t"]),) if coeffs.get("t") else ())


def _step_block(aff: isl.Aff) -> Lin | None:
    """``aff`` as ``floor(t / d)`` (a :class:`Lin` with ``div = d``) when it is exactly that, else None."""
    if aff.dim(isl.dim_type.div) != 1 or aff.get_coefficient_val(isl.dim_type.div, 0).to_python() != 1:
        return None
    if aff.get_constant_val().to_python() != 0 or any(
            aff.get_coefficient_val(isl.dim_type.in_, i).to_python() for i in range(aff.dim(isl.dim_type.in_))):
        return None
    num = aff.get_div(0)               # the division's argument, (t)/d, in the same local space
    if any(num.get_coefficient_val(isl.dim_type.div, i).to_python() for i in range(num.dim(isl.dim_type.div))):
        return None
    den = num.get_denominator_val()
    coeffs = {num.get_dim_name(isl.dim_type.in_, i): num.get_coefficient_val(isl.dim_type.in_, i).mul(den).to_python()
              for i in range(num.dim(isl.dim_type.in_))}
    den = den.to_python()
    if {k: c for k, c in coeffs.items() if c} != {"t": 1} or not num.get_constant_val().is_zero() or den < 2:
        return None
    return Lin(0, (("t", 1),), int(den))


def _hops(rel: isl.Map) -> int:
    """max |x - x'| + max |y - y'| over ``{ M[t, x, y] -> core[x', y'] }`` (0 when empty)."""
    s = rename_dims(rel.wrap().flatten().set_tuple_name("P"), "set", ("t", "x", "y", "xs", "ys"))
    if s.is_empty():
        return 0
    dx = max(max_of(s, "x - xs"), max_of(s, "xs - x"))
    dy = max(max_of(s, "y - ys"), max_of(s, "ys - y"))
    return int(dx + dy)


def classify(array: Array, ref: str, need: isl.Map, own: isl.Map, home_box: tuple[BoxDim, ...],
             what: str, blocks: bool = False) -> CommPlan:
    """The communication pattern that brings ``need`` (``{M[t,x,y] -> A}``) from ``own`` (``{core -> A}``).

    With ``blocks`` the root may also be ``floor(t / d)`` — the core owning step t's element of a home laid
    out in blocks, one step per element (a sweep reading what an earlier statement of the step produced on
    its owner): the receive buffer then holds block ``floor(t / d)`` (a ``t`` box dimension with ``per = d``).

    Raises :class:`CommError` (naming ``what``) when the set is not a supported pattern.
    """
    if is_local(need, own):
        return CommPlan("local", array.name, ref)     # every core holds what it reads (a copy on each, say)
    # Which core sends what to whom: { M[t, x, y] -> core[x', y'] } with the self-pairs removed.
    sources = need.apply_range(own.reverse())
    self_pairs = imap("{ M[t, x, y] -> core[x, y] }")
    remote = sources.subtract(self_pairs)
    uncovered = need.subtract(sources.apply_range(own)) if not need.is_empty() else need
    if not uncovered.is_empty():
        raise CommError(f"{what}: some elements {array.name} needs are owned by no core",
                        detail=str(uncovered))
    if remote.is_empty():
        return CommPlan("local", array.name, ref)
    rel_text = str(remote)
    same_row = imap("{ M[t, x, y] -> core[xs, y] }")
    same_col = imap("{ M[t, x, y] -> core[x, ys] }")
    if remote.is_subset(same_row):
        kind, axis, src_dim = "row", "x", "x"
    elif remote.is_subset(same_col):
        kind, axis, src_dim = "column", "y", "y"
    else:
        raise CommError(f"{what}: data moves in both mesh directions; only row/column multicasts are "
                        f"supported here", detail=rel_text)
    tiles = [d.tile for d in home_box if d.coord == axis]
    root = _root_of(remote, src_dim, what, tiles[0] if blocks and len(tiles) == 1 else 0)
    # The receive buffer holds the root's whole home box: the multicast axis coordinate becomes the root.
    recv_box = []
    for d in home_box:
        if d.coord == axis:
            if root.terms == (("t", 1),) and root.const == 0:
                recv_box.append(BoxDim("t", d.tile, d.extent, per=root.div))
            elif not root.terms and root.const == 0:
                recv_box.append(BoxDim(None, min(d.tile, d.extent), d.extent))
            else:
                raise CommError(f"{what}: the root core of {array.name}'s panel ({root}) does not follow "
                                f"the step one-to-one", detail=rel_text)
        else:
            recv_box.append(d)
    recv_box = tuple(recv_box)
    # Exactness: the root's box is what the receiver needs (no more, no less, where it needs anything).
    receivers = need.domain()
    root_txt = str(root).replace(" ", "")
    rmap_text = (f"{{ M[t, x, y] -> core[{root_txt}, y] }}" if kind == "row"
                 else f"{{ M[t, x, y] -> core[x, {root_txt}] }}")
    delivered = imap(rmap_text).intersect_domain(receivers).apply_range(own)
    holds = box_map(array, recv_box).intersect_domain(receivers)
    if not delivered.is_equal(holds):
        raise CommError(f"{what}: the root's home box of {array.name} is not the panel the receivers hold",
                        detail=f"delivered {delivered}\nheld {holds}")
    if not need.is_subset(holds):
        raise CommError(f"{what}: the receivers read {array.name} outside the received panel",
                        detail=str(need.subtract(holds)))
    return CommPlan(kind, array.name, ref, root, _hops(remote), recv_box, rel_text)


def ring_source(n: int, axis: str) -> isl.Map:
    """``{ M[t, x, y] -> core[x', y'] }`` in logical ring coordinates: where core (x, y)'s panel of step
    t >= 1 was at step t - 1 — its ring successor along ``axis``, (l + 1) mod n."""
    c = "x" if axis == "x" else "y"
    src = "core[xs, y]" if axis == "x" else "core[x, ys]"
    return imap(f"{{ M[t, x, y] -> {src} : 1 <= t < {n} and 0 <= x < {n} and 0 <= y < {n} and "
                f"exists (q: {c}s = {c} + 1 - {n}q and 0 <= {c}s < {n}) }}", CommError)


def ring_layout(kind: str, n: int) -> isl.Map:
    """``{ [x] -> [x'] }`` on one line of ``n`` physical cores: x' holds the ring successor of x's logical
    position (the identity layout for ``cannon``, the interleaved one of MeshGEMM otherwise)."""
    if kind == "cannon":
        pos = "l = x"
        back = "xs = ls"
    else:
        pos = f"((x = 2e and l = e) or (x = 2e + 1 and l = {n - 1} - e))"
        back = f"((ls <= {(n - 1) // 2} and xs = 2ls) or (ls > {(n - 1) // 2} and xs = {2 * n - 1} - 2ls))"
    return imap(f"{{ [x] -> [xs] : 0 <= x < {n} and exists (l, ls, e, q: {pos} and ls = l + 1 - {n}q "
                f"and 0 <= ls < {n} and {back}) }}", CommError)


def classify_ring(array: Array, ref: str, need: isl.Map, held: isl.Map, kind: str, n: int,
                  what: str) -> tuple[str, int, str]:
    """For a skewed step, given ``need`` and ``held`` in *logical* ring coordinates (the placement with
    ``l`` the identity): checks that every core reads only what its ring buffer holds, derives where each
    buffer's next contents come from (the core that held them the step before) and proves it is the ring
    successor along one axis. The physical layout (``kind``) is a permutation of each line; the hop bound
    is proven on it. Returns (axis, max hops, the derived relation's text)."""
    if not need.is_subset(held):
        raise CommError(f"{what}: cores read {array.name} outside their ring buffer", detail=str(need.subtract(held)))
    prev = imap("{ M[t, x, y] -> M[t2, x2, y2] : t2 = t - 1 }")
    source = held.apply_range(held.reverse()).intersect(prev)       # { M[t, x, y] -> M[t - 1, x', y'] }
    # A buffer's contents after the shift are what its source held the step before: everything a core holds
    # from step 1 on must come so (a panel whose other dimensions are laid out along the ring's axis -- an
    # array indexed by a spatial loop there -- would arrive from a core holding another block of it).
    later = held.intersect_domain(iset("{ M[t, x, y] : t >= 1 }"))
    if not later.is_subset(source.apply_range(held)):
        raise CommError(f"{what}: the panels of {array.name} a core holds after a shift are not those a "
                        f"neighbour held the step before (its other dimensions are laid out along the ring)",
                        detail=str(later.subtract(source.apply_range(held))))
    came = source.apply_range(imap("{ M[t, x, y] -> core[x, y] }"))
    if came.is_empty():
        return "x", 0, str(came)
    if not came.is_single_valued():
        raise CommError(f"{what}: a ring buffer's next panel of {array.name} would come from several cores",
                        detail=str(came))
    for axis in ("x", "y"):
        expected = ring_source(n, axis).intersect_domain(came.domain())
        if came.is_equal(expected):
            layout = ring_layout(kind, n)
            if not (layout.is_bijective() if n > 1 else True):
                raise CommError(f"{what}: the {kind} ring layout of {n} cores is not a permutation")
            hops = _line_hops(layout)
            return axis, hops, f"{came} (logical); physical successor on each line: {layout}"
    raise CommError(f"{what}: the panels of {array.name} do not move along a ring", detail=str(came))


def _line_hops(layout: isl.Map) -> int:
    """max |x - x'| over a ``{ [x] -> [x'] }`` relation (0 when empty)."""
    s = rename_dims(layout.wrap().flatten().set_tuple_name("P"), "set", ("x", "xs"))
    if s.is_empty():
        return 0
    return int(max(max_of(s, "x - xs"), max_of(s, "xs - x")))
