"""Halos: homes with ghost zones, and the strip exchanges that fill them before a statement reads them.

A read that reaches into the neighbours' blocks (:func:`mica.lower.reads.plan_read`) gives the array's
home ghost zones (``_Builder.ghosts``, array -> widths ``(low, high)`` per dimension). Ghost zones of
read-only arrays are filled by the host load; those of produced (or resident) arrays by
:func:`halo_exchange` just before the reading statement. :func:`ghost_homes` widens the homes at the end.
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.expr import Read
from ..affine.program import Statement
from ..errors import CommError
from ..comm.halo import ghosted_box, strip_relation, strips
from ..comm.routes import assign_colours, shift_routes
from ..comm.sets import box_map
from ..meshir.ir import BoxDim, Compute, Exchange, Multicast, RegionTensor, Shift, walk_ops
from .builder import _Builder, line_rect, line_region


def initial_ghosts(b: _Builder, ghost_widths: dict[str, tuple[tuple[int, int], ...]] | None) -> None:
    """Sets ``b.ghosts`` to the widths ``ghost_widths`` asks for the homes of this operator (arrays with a
    home in ``b.tensors``, ring arrays excepted); reads add to them. Call after the homes are added."""
    b.ghosts = {a: w for a, w in (ghost_widths or {}).items() if a in b.tensors and a not in b.ring_arrays}


def halo_exchange(b: _Builder, stmt: Statement, halos: dict[str, tuple[tuple[int, int], ...]]) -> list:
    """The ops that fill the ghost zones ``stmt`` reads, just before it: along x then along y, each
    phase packing strips of the senders' homes, one exchange of one-hop shifts (even and odd senders on
    separate colours) and unpacking into the receivers' ghost zones. The y strips span the x ghost zones,
    so diagonal neighbours' elements arrive in two hops. Adds the strip buffers and the pack / unpack
    kernels to ``b``."""
    ops: list = []
    made: set[str] = set()
    for axis in ("x", "y"):
        shifts, packs, unpacks = [], [], []
        for name, widths in sorted(halos.items()):
            _halo_strips(b, stmt, name, widths, axis, made, shifts, packs, unpacks)
        if not shifts:
            continue
        colours = assign_colours(len(shifts), b.target.colours, f"halo exchange before {stmt.name}")
        shifts = [replace(sh, colour=c, routes=shift_routes(sh.direction, sh.senders, sh.receivers, c, 1))
                  for sh, c in zip(shifts, colours)]
        ops += packs + [Exchange(f"halo_{stmt.name}_{axis}", tuple(shifts))] + unpacks
    return ops


def _halo_strips(b: _Builder, stmt: Statement, name: str, widths: tuple[tuple[int, int], ...], axis: str,
                 made: set[str], shifts: list, packs: list, unpacks: list) -> None:
    """Appends to ``shifts`` (colourless yet), ``packs`` and ``unpacks`` the ops moving the strips of
    ``name``'s home along ``axis`` whose relation is ``{ M[t, x, y] -> core[x', y'] }`` of
    :func:`mica.comm.halo.strip_relation`: one shift per strip and sender parity, one pack and one unpack
    kernel per strip (``made`` holds the tags already given kernels)."""
    arr = b.prog.array(name)
    home = b.tensors[name]
    box, _ = b.home_box(name)
    region = b.home_region(name)
    lo_c, hi_c = (region.x0, region.x1) if axis == "x" else (region.y0, region.y1)
    across = (region.y0, region.y1) if axis == "x" else (region.x0, region.x1)
    extended = (tuple(w if d.coord == "x" else (0, 0) for d, w in zip(box, widths))
                if axis == "y" else None)
    for st in strips(box, widths, axis, hi_c - lo_c, extended):
        a, z = lo_c + st.senders[0], lo_c + st.senders[1]
        first = a + (st.parity - a) % 2
        if first >= z:
            continue
        step = -1 if st.direction in ("W", "N") else 1
        send = _strip_tensor(b, name, st.send, "send")
        recv = _strip_tensor(b, name, st.recv, "halo")
        senders = line_rect(axis, across, a, z, 2, st.parity)
        receivers = line_rect(axis, across, a + step, z + step, 2, (st.parity + 1) % 2)
        tag = f"{stmt.name}_{name}_{axis}{st.side}"
        if tag not in made:
            # One pack and one unpack kernel per strip serve both parities.
            made.add(tag)
            pack_at = line_region(f"pack_{tag}", axis, a, z, across)
            unpack_at = line_region(f"unpack_{tag}", axis, a + step, z + step, across)
            pk = b.box_kernel(f"k_pack_{tag}", send, pack_at, Read("r0"), (home,))
            uk = b.box_kernel(f"k_unpack_{tag}", home, unpack_at, Read("r0"), (recv,), domain=recv.box)
            packs.append(Compute(pk.name, pack_at.rect))
            unpacks.append(Compute(uk.name, unpack_at.rect))
        shifts.append(Shift(f"{name} halo {st.side} along {axis}, {'even' if st.parity == 0 else 'odd'} "
                            f"senders", name, send.name, recv.name, st.direction, senders, receivers,
                            0, (), 1, strip_relation(arr, st)))


def _strip_tensor(b: _Builder, array: str, box: tuple[BoxDim, ...], role: str) -> RegionTensor:
    """The buffer of a halo strip (one per array, role and box: strips of the same shape share it), holding
    ``{ M[t, x, y] -> A[a...] }`` of ``box``; added to ``b.tensors`` on first use."""
    for t in b.tensors.values():
        if t.array == array and t.role == role and t.box == box:
            return t
    n = sum(1 for t in b.tensors.values() if t.array == array and t.role == role)
    return b.add_tensor(f"{array}_{role}{n}", array, box, role, str(box_map(b.prog.array(array), box)))


def ghost_homes(b: _Builder, body: list) -> None:
    """Gives the homes of ``b.ghosts`` their ghost zones (every distributed dimension a window), replacing
    them in ``b.tensors`` in place (their ownership ``{ core[x, y] -> A[a...] }`` text is kept). A multicast
    sends its root's whole home box, so an array cannot be both multicast in ``body`` and ghosted: that is
    a :class:`CommError`."""
    both = sorted(set(b.ghosts) & {c.src for op, _ in walk_ops(body) if isinstance(op, Exchange)
                                   for c in op.ops if isinstance(c, Multicast)})
    if both:
        raise CommError(f"{', '.join(both)} would be read both by multicasts and through ghost zones; "
                        f"this plan supports one pattern per array")
    for name, widths in b.ghosts.items():
        t = b.tensors[name]
        b.tensors[name] = replace(t, box=ghosted_box(b.home_box(name)[0], widths))
