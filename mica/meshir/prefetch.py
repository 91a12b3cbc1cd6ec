"""Which prefetched (double-buffered) MeshIR exchanges a back end can emit as a real double buffer, and
the slot convention both hardware back ends follow. MeshIR itself only says *that* an exchange is
prefetched (:class:`~mica.meshir.ir.Exchange` ``prefetch``) and which buffers have two slots; the
emulator addresses slot 0 only. A back end that places the two slots explicitly needs to know, per
buffer, which slot each step reads and writes: :func:`double_buffering` decides it once, and names why an
exchange is left single-buffered when the convention cannot hold.

Public API: :class:`DoubleBuffering`, :func:`double_buffering`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from . import ir


@dataclass(frozen=True)
class DoubleBuffering:
    """The prefetched MeshIR exchanges this back end emits double-buffered, and the rest.

    ``exchanges``: exchange index -> (loop-variable slot, loop count, first iteration it runs at: its guard)
    of the loop it prefetches in;
    ``buffers``: two-slot buffer -> the exchange index that fills it; ``dropped``: exchange name -> why
    it is emitted single-buffered (one slot per buffer, exchange completed before the step's compute).

    Slot convention (per buffer, loop variable ``t`` of the exchange's loop, ``f`` its first iteration):
    the exchange of iteration ``t`` receives into slot ``(t - f + 1) mod 2`` and sends a double-buffered
    source (a ring shift's own buffer) from slot ``(t - f) mod 2``; computes read the slot the latest
    completed exchange filled (``slot_<buffer>``, initially 0: what the host loaded)."""

    exchanges: Mapping
    buffers: Mapping
    dropped: Mapping


def double_buffering(mp: ir.MeshProgram, extra=None) -> DoubleBuffering:
    """Which prefetched exchanges of ``mp`` a back end emits double-buffered. An exchange is
    emitted single-buffered (and recorded as dropped, with the reason) when its loop holds another
    exchange (their completion tasks and queues would overlap), when one of its double buffers is moved
    by another exchange or stored to the host, when it sends a double buffer it does not also receive
    into (no slot convention for it), or when it shifts a ring inside an outer loop of odd length (the
    next outer iteration would find the ring in the other slot). ``extra(op, scope, two)``: a back end's
    own reason to leave exchange ``op`` (loop scope ``scope``: (var, count, Loop) per enclosing loop; its
    double buffers ``two``) single-buffered, or None."""
    exchanges: dict[int, tuple[int, int]] = {}
    buffers: dict[str, int] = {}
    dropped: dict[str, str] = {}
    found: list[tuple[int, ir.Exchange, tuple]] = []
    xi = 0

    def go(ops, scope: tuple):
        nonlocal xi
        for op in ops:
            if isinstance(op, ir.Loop):
                go(op.body, scope + ((op.var, op.count, op),))
            elif isinstance(op, ir.Exchange):
                found.append((xi, op, scope))
                xi += 1
    go(mp.body, ())
    stored = {op.buffer for op in mp.body if isinstance(op, ir.HostStore)}
    for i, op, scope in found:
        if not op.prefetch:
            continue
        if not scope:
            dropped[op.name] = "not inside a loop"
            continue
        var, count, loop = scope[-1]
        dsts = {c.dst for c in op.ops}
        srcs = {c.src for c in op.ops}
        two = {n for n in dsts | srcs if mp.tensor(n).slots == 2}
        others = [x for x in found if x[1] is not op and any(s[2] is loop for s in x[2])]
        moved_elsewhere = sorted(n for n in two for _, x, _ in found if x is not op
                                 for c in x.ops if n in (c.src, c.dst))
        first = _first_active(op, var, count)
        if first is None:
            dropped[op.name] = (f"its guard ({op.guard} > 0) does not hold on a final run of iterations of loop "
                                f"{var} alone (the slot parity counts active iterations)")
        elif others:
            dropped[op.name] = (f"loop {var} also holds exchange {others[0][1].name} (their asynchronous "
                                f"operations would overlap)")
        elif moved_elsewhere:
            dropped[op.name] = f"its double buffer {moved_elsewhere[0]} is moved by another exchange too"
        elif two & stored:
            dropped[op.name] = f"its double buffer {sorted(two & stored)[0]} is stored to the host"
        elif not dsts <= two:
            dropped[op.name] = f"destination {sorted(dsts - two)[0]} has one slot"
        elif (srcs & two) - dsts:
            dropped[op.name] = f"it sends double buffer {sorted((srcs & two) - dsts)[0]} it does not receive into"
        elif (srcs & two) and len(scope) > 1 and (count - first) % 2:
            dropped[op.name] = (f"it shifts a ring {count - first} (odd) times in loop {var} inside loop "
                                f"{scope[-2][0]} (the next outer iteration would start from the other slot)")
        elif extra is not None and extra(op, scope, two) is not None:
            dropped[op.name] = extra(op, scope, two)
        else:
            exchanges[i] = (len(scope) - 1, count, first)
            for n in two:
                buffers[n] = i
    ro = MappingProxyType
    return DoubleBuffering(ro(exchanges), ro(buffers), ro(dropped))


def _first_active(op: ir.Exchange, var: str, count: int) -> int | None:
    """The first iteration of loop ``var`` at which ``op`` runs, when it runs at exactly the iterations
    from there to the end of the loop (an unguarded exchange: 0); else None."""
    if op.guard is None:
        return 0
    if any(v != var for v, _ in op.guard.terms):
        return None
    on = [op.active({var: t}) for t in range(count)]
    if True not in on:
        return None
    first = on.index(True)
    return first if all(on[first:]) else None
