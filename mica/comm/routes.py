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

from ..errors import CommError
from ..meshir.ir import Lin, Rect, Route, lin

OPPOSITE = {"N": "S", "S": "N", "E": "W", "W": "E"}


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


def shift_routes(direction: str, senders: Rect, receivers: Rect, colour: int) -> tuple[Route, ...]:
    """Routes of a one-hop shift towards ``direction`` from ``senders`` to ``receivers``."""
    if direction not in OPPOSITE:
        raise CommError(f"unknown shift direction {direction!r}")
    return (Route(colour, ("RAMP",), (direction,), senders),
            Route(colour, (OPPOSITE[direction],), ("RAMP",), receivers))


def assign_colours(n_ops: int, budget: int, what: str) -> tuple[int, ...]:
    """Distinct colours for ``n_ops`` patterns active together; :class:`CommError` past ``budget``."""
    if n_ops > budget:
        raise CommError(f"{what}: {n_ops} simultaneous patterns need {n_ops} colours, "
                        f"the target's routers hold {budget}")
    return tuple(range(n_ops))
