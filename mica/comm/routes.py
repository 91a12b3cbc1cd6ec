"""Per-router routes for the communication patterns, and colour assignment.

A multicast along a row from root column ``r`` (a function of the step) over columns ``[x0, x1)``:

* the root: ``RAMP -> RAMP|E|W`` (dropping ``E``/``W`` at the region's east/west edge; the root keeps a
  copy through its own ramp so every core reads the panel from the same buffer);
* east of the root: ``W -> E|RAMP``, the last column ``W -> RAMP``;
* west of the root: ``E -> W|RAMP``, the first column ``E -> RAMP``.

Every rectangle's bounds are max/min pairs, so the routes are exact for every value of the step without
unrolling. A column multicast is the same along ``y`` (south = increasing y). A shift sends one hop:
senders ``RAMP -> d``, receivers ``opposite(d) -> RAMP``.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import CommError
from ..meshir.ir import Lin, Rect, Route, ShiftGroup, lin

OPPOSITE = {"N": "S", "S": "N", "E": "W", "W": "E"}
#: The direction of a move along mesh ``axis`` towards larger (True) or smaller (False) coordinates.
TOWARDS = {("x", True): "E", ("x", False): "W", ("y", True): "S", ("y", False): "N"}


def _line_rect(axis: str, lo: tuple, hi: tuple, across: tuple[int, int]) -> Rect:
    if axis == "x":
        return Rect.of(lo, hi, across[0], across[1])
    return Rect.of(across[0], across[1], lo, hi)


def multicast_routes(axis: str, root: Lin, span: tuple[int, int], across: tuple[int, int],
                     colour: int) -> tuple[Route, ...]:
    """Routes of a multicast along ``axis`` (``x``: rows) from ``root`` over ``span = (lo, hi)`` on that
    axis, for every line of ``across = (lo, hi)`` on the other axis."""
    lo, hi = span
    if hi - lo < 1:
        raise CommError(f"multicast over an empty span {span}")
    fwd, back = ("E", "W") if axis == "x" else ("S", "N")
    r = lin(root)
    out: list[Route] = []

    def add(rx, tx, a, b):
        out.append(Route(colour, rx, tx, _line_rect(axis, a, b, across)))

    if hi - lo == 1:
        add(("RAMP",), ("RAMP",), (r,), (r.shifted(1),))
        return tuple(out)
    add((back,), (fwd, "RAMP"), (r.shifted(1), lin(lo)), (lin(hi - 1),))        # forward part
    add((back,), ("RAMP",), (r.shifted(1), lin(hi - 1)), (lin(hi),))            # forward end
    add((fwd,), (back, "RAMP"), (lin(lo + 1),), (r, lin(hi)))                   # backward part
    add((fwd,), ("RAMP",), (lin(lo),), (r, lin(lo + 1)))                        # backward end
    add(("RAMP",), ("RAMP", fwd, back), (r, lin(lo + 1)), (r.shifted(1), lin(hi - 1)))  # root inside
    add(("RAMP",), ("RAMP", fwd), (r, lin(lo)), (r.shifted(1), lin(lo + 1)))    # root at the start
    add(("RAMP",), ("RAMP", back), (r, lin(hi - 1)), (r.shifted(1), lin(hi)))   # root at the end
    return tuple(out)


@lru_cache(maxsize=4096)
def shift_routes(direction: str, senders: Rect, receivers: Rect, colour: int,
                 distance: int = 1) -> tuple[Route, ...]:
    """Routes of a shift ``distance`` hops towards ``direction`` from ``senders`` to ``receivers``; for
    longer shifts, the routers strictly between pass the message on (the receivers' routers take it off the
    fabric: no route ever forwards past them). Senders every ``stride``-th core along the shift's axis
    (``distance < stride``, so paths never share a link) get one pass-through route per router between, each
    on the senders' stride; otherwise the senders are one position per line. Memoised: the same stages recur
    in every candidate plan a search builds."""
    if direction not in OPPOSITE:
        raise CommError(f"unknown shift direction {direction!r}")
    routes = [Route(colour, ("RAMP",), (direction,), senders)]
    sign = 1 if direction in ("E", "S") else -1
    stride = senders.xs if direction in ("E", "W") else senders.ys
    if distance > 1 and stride != 1:
        if distance >= stride:
            raise CommError(f"a {distance}-hop shift from every {stride}-th core would make paths share links")
        for k in range(1, distance):
            off = sign * k
            # The senders' rectangle moved k hops on, kept on the mesh (a router between lies between a
            # sender and its receiver).
            if direction in ("E", "W"):
                lo = tuple(v.shifted(off) for v in senders.x0) + ((Lin(0),) if sign < 0 else ())
                hi = tuple(v.shifted(off) for v in senders.x1) + (receivers.x1 if sign > 0 else ())
                mid = Rect(lo, hi, senders.y0, senders.y1, senders.xs, senders.xp.shifted(off), senders.ys,
                           senders.yp)
            else:
                lo = tuple(v.shifted(off) for v in senders.y0) + ((Lin(0),) if sign < 0 else ())
                hi = tuple(v.shifted(off) for v in senders.y1) + (receivers.y1 if sign > 0 else ())
                mid = Rect(senders.x0, senders.x1, lo, hi, senders.xs, senders.xp, senders.ys,
                           senders.yp.shifted(off))
            routes.append(Route(colour, (OPPOSITE[direction],), (direction,), mid))
    elif distance > 1:
        if direction in ("E", "W"):
            lo = tuple(v.shifted(sign) for v in senders.x0) if sign > 0 else tuple(v.shifted(-distance + 1) for v in senders.x0)
            hi = tuple(v.shifted(distance - 1) for v in senders.x1) if sign > 0 else tuple(v.shifted(-1) for v in senders.x1)
            mid = Rect(lo, hi, senders.y0, senders.y1)
        else:
            lo = tuple(v.shifted(sign) for v in senders.y0) if sign > 0 else tuple(v.shifted(-distance + 1) for v in senders.y0)
            hi = tuple(v.shifted(distance - 1) for v in senders.y1) if sign > 0 else tuple(v.shifted(-1) for v in senders.y1)
            mid = Rect(senders.x0, senders.x1, lo, hi)
        routes.append(Route(colour, (OPPOSITE[direction],), (direction,), mid))
    routes.append(Route(colour, (OPPOSITE[direction],), ("RAMP",), receivers))
    return tuple(routes)


def assign_colours(n_ops: int, budget: int, what: str) -> tuple[int, ...]:
    """Distinct colours for ``n_ops`` patterns active together; :class:`CommError` past ``budget``."""
    if n_ops > budget:
        raise CommError(f"{what}: {n_ops} simultaneous patterns need {n_ops} colours, "
                        f"the target's routers hold {budget}", cause="colours")
    return tuple(range(n_ops))


def _line(axis: str, lo, hi, across: tuple[int, int], stride: int = 1, phase: int = 0) -> Rect:
    if axis == "x":
        return Rect.of(lo, hi, across[0], across[1], xs=stride, xp=phase)
    return Rect.of(across[0], across[1], lo, hi, ys=stride, yp=phase)


def ring_moves(kind: str, n: int) -> list[tuple[int, int, int, int, int]]:
    """The moves of a ring shift on a line of ``n`` cores, grouped so that one colour's routes never
    conflict at a router: ``(lo, hi, stride, phase, offset)`` — every core ``c`` of ``[lo, hi)`` with
    ``c = phase (mod stride)`` sends to ``c + offset``. Data moves from logical ring position l + 1 to l.

    ``cannon``: c -> c - 1 for c >= 1 (two colours by parity), and the wrap-around 0 -> n - 1.
    ``interleaved`` (ring 0, 2, 4, ..., 5, 3, 1): even c >= 2 -> c - 2 and odd c -> c + 2 (two colours
    each, by c mod 4), the turn between the top odd and top even core, and 0 -> 1: at most 2 hops.
    """
    if n <= 1:
        return []
    if kind == "cannon":
        moves = [(1, n, 2, p, -1) for p in (0, 1)]
        moves.append((0, 1, 1, 0, n - 1))
        return [m for m in moves if _count(*m[:4]) > 0]
    moves = [(2, n, 4, p, -2) for p in (0, 2)]                  # evens westward by 2
    moves += [(1, n - 2, 4, p, 2) for p in (1, 3)]              # odds eastward by 2
    if n % 2 == 0:
        moves.append((n - 1, n, 1, 0, -1))                      # top odd -> top even
    else:
        moves.append((n - 2, n - 1, 1, 0, 1))
    moves.append((0, 1, 1, 0, 1))                               # the ring closes: 0 -> 1
    if n == 2:
        moves = [(1, 2, 1, 0, -1), (0, 1, 1, 0, 1)]
    return [m for m in moves if _count(*m[:4]) > 0]


def _count(lo: int, hi: int, stride: int, phase: int) -> int:
    first = lo + (phase - lo) % stride
    return max(0, (hi - 1 - first) // stride + 1) if first < hi else 0


def ring_routes(kind: str, n: int, axis: str, across: tuple[int, int], colours: tuple[int, ...]):
    """(groups, routes) of a ring shift along ``axis`` for every line of ``across``; one colour per move
    set of :func:`ring_moves` (``colours`` must have at least that many)."""
    moves = ring_moves(kind, n)
    if len(colours) < len(moves):
        raise CommError(f"a {kind} ring of {n} needs {len(moves)} colours, {len(colours)} given", cause="colours")
    fwd, back = ("E", "W") if axis == "x" else ("S", "N")
    groups, routes = [], []
    for (lo, hi, stride, phase, off), colour in zip(moves, colours):
        senders = _line(axis, lo, hi, across, stride, phase)
        receivers = _line(axis, lo + off, hi + off, across, stride, phase + off)
        groups.append(ShiftGroup(colour, senders, receivers, off))
        out, into = (fwd, back) if off > 0 else (back, fwd)
        routes.append(Route(colour, ("RAMP",), (out,), senders))
        if _count(lo, hi, stride, phase) == 1 and abs(off) > 1:   # one sender: one pass-through run
            first = lo + (phase - lo) % stride
            a, b = (first + 1, first + off) if off > 0 else (first + off + 1, first)
            routes.append(Route(colour, (into,), (out,), _line(axis, a, b, across)))
        else:
            for k in range(1, abs(off)):                         # pass-through routers on the way
                step = k if off > 0 else -k
                routes.append(Route(colour, (into,), (out,),
                                    _line(axis, lo + step, hi + step, across, stride, phase + step)))
        routes.append(Route(colour, (into,), ("RAMP",), receivers))
    return tuple(groups), tuple(routes)
