"""The CSL back end's plan: what it will emit, derived from the MeshIR alone (no decisions of its own beyond
colour, queue and task-ID assignment).

A CSL router holds one *static* route per colour. A MeshIR pattern whose routes move with a loop variable
(a SUMMA multicast from root ``x = t``; the stages of a tree reduction) therefore becomes several
:class:`Channel` records, one per distinct concrete route table (and sender set); a pattern whose routes do
not move (ring shifts, a fixed-root multicast) is one channel used at every iteration. Each channel gets a
hardware colour by colouring a conflict graph of channels (first use first). Two channels may share a colour
when no router lies on both, or -- when they are never active in the same exchange instance -- when

* every router on both holds the same setting for them (the layout's one static route per colour serves
  both, and each channel's wavelets follow exactly its own routes), and
* every core that receives in both receives from the same sender in both (so the messages of the two
  channels reach it through one FIFO path in program order: a sender that runs ahead into a later
  exchange can neither overtake nor block an earlier exchange's message on that colour).

The halo exchanges of a stencil thus reuse a few colours across statements and sweeps, as the MeshIR's
colours do. Queues are assigned by colouring a second graph (see :func:`build_plan`).

The kernel classes are printed here too (:func:`mica.emit_csl.kernels.kernel_functions`, kept in
:attr:`CslPlan.kernels`): the scratch rows their DSD operations need are buffers of the plan, counted in SRAM
with the others.

Public API: :func:`build_plan` -> :class:`CslPlan`; records :class:`Box`, :class:`RouteBox`,
:class:`Channel`, :class:`Buffer`, :class:`Step`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..errors import EmitError
from ..meshir import ir
from ..meshir.prefetch import DoubleBuffering, double_buffering
from . import boxes
from .kernels import KernelSet, kernel_functions

#: Input/output queues the PE programs may use: memcpy owns queue 0 (WSE-2) or 0 and 1 (WSE-3).
USER_QUEUES = (2, 3, 4, 5, 6, 7)
#: IDs reserved by the memcpy infrastructure and the runtime (csl-examples gemm-collectives_2d layout).
RESERVED_IDS = frozenset({21, 22, 23, 27, 28, 29, 30, 31})
#: The smallest landing chunk (elements) worth a round of an exchange.
MIN_CHUNK = 16
#: Routable colour IDs.
ROUTABLE = 24
DTYPES = {"f32": ("f32", 4), "f16": ("f16", 2), "i32": ("i32", 4)}

#: The CSL type a buffer of each MICA dtype is declared with: the narrower integers are held widened in
#: ``i32`` words (memcpy moves 32-bit words; a store wraps the value as C's conversion to the narrow type
#: does, :data:`mica.emit_csl.csltext.INT_HELPERS`).
STORAGE = {"f32": "f32", "f16": "f16", "i32": "i32", "i16": "i32", "i8": "i32", "u8": "i32"}


def storage_type(dtype: str) -> str:
    """The CSL type of a buffer holding an array of ``dtype`` (:data:`STORAGE`)."""
    return STORAGE.get(dtype, dtype)


@dataclass(frozen=True)
class Box:
    """Concrete cores ``x in range(x0, x1, xs)``, ``y in range(y0, y1, ys)`` (x0/y0 are members)."""

    x0: int
    x1: int
    xs: int
    y0: int
    y1: int
    ys: int

    def cells(self):
        return [(x, y) for y in range(self.y0, self.y1, self.ys) for x in range(self.x0, self.x1, self.xs)]

    def mask(self, w: int, h: int) -> np.ndarray:
        m = np.zeros((h, w), dtype=bool)
        m[self.y0:self.y1:self.ys, self.x0:self.x1:self.xs] = True
        return m

    def as_list(self) -> list[int]:
        return [self.x0, self.x1, self.xs, self.y0, self.y1, self.ys]

    def __str__(self) -> str:
        sx = f":{self.xs}" if self.xs != 1 else ""
        sy = f":{self.ys}" if self.ys != 1 else ""
        return f"[{self.x0}:{self.x1}{sx}, {self.y0}:{self.y1}{sy}]"


def concrete(r: ir.Rect, env: dict[str, int], mesh: tuple[int, int]) -> Box | None:
    """The cores of ``r`` at ``env`` clipped to the mesh, or None when there are none."""
    cols, rows = r.members(env)
    w, h = mesh
    cols = [c for c in cols if 0 <= c < w]
    rows = [c for c in rows if 0 <= c < h]
    if not cols or not rows:
        return None
    return Box(cols[0], cols[-1] + 1, r.xs, rows[0], rows[-1] + 1, r.ys)


@dataclass(frozen=True)
class RouteBox:
    """``@set_color_config`` on every core of ``box``: accept from ``rx``, forward to ``tx``."""

    box: Box
    rx: tuple[str, ...]
    tx: tuple[str, ...]


@dataclass(frozen=True)
class Channel:
    """One static route table on one hardware ``colour``: part ``part`` of MeshIR pattern ``pattern`` of
    exchange ``exchange`` (MeshIR colour ``meshir_colour``), moving buffer ``src`` into ``dst``.

    ``uses`` are the loop-variable values (``((var, value), ...)``) at which it carries a message;
    ``senders``/``receivers`` the cores that send/receive then (same at every use by construction)."""

    id: int
    colour: int
    exchange: str
    exchange_index: int
    pattern: str
    part: int
    meshir_colour: int
    src: str
    dst: str
    routes: tuple[RouteBox, ...]
    senders: Box
    receivers: Box
    max_hops: int
    uses: tuple[tuple[tuple[str, int], ...], ...]

    def router_mask(self, w: int, h: int) -> np.ndarray:
        m = np.zeros((h, w), dtype=bool)
        for r in self.routes:
            m |= r.box.mask(w, h)
        return m


@dataclass(frozen=True)
class Buffer:
    """A PE buffer for RegionTensor ``name``: ``elems`` elements of ``dtype``; ``dims`` its box."""

    name: str
    array: str
    dtype: str
    elems: int
    bytes: int
    role: str
    dims: tuple[tuple, ...]   # (coord, tile, extent, padded, offset, span, origin) per dimension (boxes.dims)
    slots: int = 1            # 2: a double buffer, ``slots`` boxes of ``elems`` one after the other

    @property
    def alloc_elems(self) -> int:
        return self.elems * self.slots

    @property
    def alloc_bytes(self) -> int:
        return self.bytes * self.slots


@dataclass(frozen=True)
class Step:
    """One entry of the PE's flattened MeshIR body (the state machine): ``kind`` is ``compute``,
    ``exchange``, ``loop`` (enter; ``target`` is the pc after its end) or ``next`` (end of a loop body;
    ``target`` is the pc of its first body step). ``depth`` is the slot of the loop variable ``var``."""

    pc: int
    kind: str
    text: str
    op: object = None
    var: str = ""
    count: int = 0
    depth: int = 0
    target: int = 0
    slots: tuple[tuple[str, int], ...] = ()          # loop variable -> slot, in scope
    exchange_index: int = -1


@dataclass(frozen=True)
class CslPlan:
    """Everything the renderers print, and what ``plan.json`` records."""

    name: str
    arch: str
    mesh: tuple[int, int]
    sram_bytes: int
    colour_budget: int
    buffers: tuple[Buffer, ...]
    channels: tuple[Channel, ...]
    steps: tuple[Step, ...]
    loads: tuple[ir.HostLoad, ...]
    stores: tuple[ir.HostStore, ...]
    in_queue: Mapping       # hardware colour -> input queue
    out_queue: Mapping      # hardware colour -> output queue
    slots: Mapping          # (exchange_index, pattern, part, "send"|"recv") -> completion slot
    n_slots: int
    task_ids: Mapping       # "step" / "done<k>" -> local task id
    landing: Mapping        # buffer -> landing buffer (patterns whose source and destination coincide)
    classes: tuple          # (class id, rx mask, tx mask, kernel class tuple, cores, example core)
    kernel_classes: Mapping  # kernel name -> tuple of (class function name, Region)
    landing_chunk: Mapping = field(default_factory=lambda: MappingProxyType({}))  # buffer -> landing elements
    rounds: int = 1         # rounds of an exchange into itself (1: the landing buffer holds everything)
    double: "DoubleBuffering | None" = None   # what of the MeshIR's double buffering is emitted
    kernels: "KernelSet | None" = None        # the kernel classes as CSL (their scratch rows are in buffers)

    @property
    def colours_used(self) -> tuple[int, ...]:
        return tuple(sorted({c.colour for c in self.channels}))


def use_ranges(uses) -> list[dict[str, tuple[int, int]]]:
    """Loop-variable values (tuples of (var, value)) as few boxes ``{var: (lo, hi)}``: runs of consecutive
    values of the innermost variable for each value of the outer ones."""
    out: list[dict[str, tuple[int, int]]] = []
    for u in sorted(uses):
        if not u:
            out.append({})
            continue
        outer, (last, v) = u[:-1], u[-1]
        prev = out[-1] if out else None
        if prev is not None and all(prev.get(n) == (x, x + 1) for n, x in outer) and last in prev \
                and prev[last][1] == v and len(prev) == len(u):
            prev[last] = (prev[last][0], v + 1)
        else:
            out.append({**{n: (x, x + 1) for n, x in outer}, last: (v, v + 1)})
    return out


def _iterations(scope):
    names = [v for v, _ in scope]
    for values in product(*(range(n) for _, n in scope)):
        yield dict(zip(names, values))


def parts_of(c) -> list[tuple[int, ir.Rect, ir.Rect, tuple[ir.Route, ...], int]]:
    if isinstance(c, ir.RingShift):
        return [(g.colour, g.senders, g.receivers, tuple(r for r in c.routes if r.colour == g.colour), abs(g.offset))
                for g in c.groups]
    if isinstance(c, (ir.Multicast, ir.Shift)):
        hops = c.distance if isinstance(c, ir.Shift) else c.max_hops
        return [(c.colour, c.senders, c.receivers, tuple(c.routes), hops)]
    raise EmitError(f"CSL back end: communication pattern {type(c).__name__} ({getattr(c, 'name', c)!r}) "
                    f"is not supported")


def families(plan: "CslPlan", xi: int) -> dict[tuple[str, int], list[Channel]]:
    """The channels of exchange ``xi`` by MeshIR pattern part (one entry per part, channels in order)."""
    out: dict[tuple[str, int], list[Channel]] = {}
    for c in plan.channels:
        if c.exchange_index == xi:
            out.setdefault((c.pattern, c.part), []).append(c)
    return out


def box_elems(t: ir.RegionTensor, x: int, y: int, env: dict[str, int]) -> int:
    """Elements of ``t``'s box on core (x, y) at loop values ``env`` (0 when empty)."""
    n = 1
    for d in t.box:
        n *= d.size({"x": x, "y": y}.get(d.coord, env.get(d.coord, 0)))
    return n


def _buffers(mp: ir.MeshProgram, double: DoubleBuffering, sram_bytes: int,
             scratch: dict | None = None) -> tuple[Buffer, ...]:
    """A buffer per RegionTensor, and the scratch rows of the kernels' vector operations (``scratch``: dtype ->
    elements, :class:`~mica.emit_csl.kernels.KernelSet`), all within ``sram_bytes``."""
    out = []
    for t in mp.tensors:
        if t.dtype == "bf16":
            raise EmitError(f"CSL back end: array {t.array} (tensor {t.name}) has dtype bf16, which the WSE cannot "
                            f"compute with: its DSD arithmetic is f32 (@fmacs, @fadds) and f16 (@fmach, @faddh), "
                            f"with no bf16 form; compile the program with f16 or f32 arrays (mica compile --dtype "
                            f"f16)")
        ty = storage_type(t.dtype)
        if ty not in DTYPES:
            raise EmitError(f"CSL back end: tensor {t.name} has dtype {t.dtype}; CSL has f32 and f16 only "
                            f"(compile the program with f32 arrays)")
        elems = t.elems
        out.append(Buffer(t.name, t.array, ty, elems, elems * DTYPES[ty][1], t.role, boxes.dims(t),
                          2 if t.name in double.buffers else 1))
    for ty, elems in sorted((scratch or {}).items()):
        out.append(Buffer(f"scratch_{ty}", "", ty, elems, elems * DTYPES[ty][1], "scratch", ()))
    # MeshIR gives buffers of operators that never run at once the same arena bytes; CSL declares every
    # buffer as its own array, so here they take the sum of their sizes.
    total = sum(b.alloc_bytes for b in out)
    if total > sram_bytes:
        raise EmitError(f"CSL back end: {mp.name}'s buffers take {total} B per PE as separate CSL arrays, more than "
                        f"the {sram_bytes} B of SRAM; MeshIR fits them in {mp.arena_bytes} B by letting operators "
                        f"that never run at once share bytes, which the CSL back end does not do yet")
    return tuple(out)


#: Loop variables a PE keeps (``var lv = @zeros([4]i32)`` in pe_program.csl), as the emulator's slots.
LOOP_SLOTS = 4


def _steps(mp: ir.MeshProgram, double: DoubleBuffering) -> tuple[list[Step], list[ir.HostLoad], list[ir.HostStore], list]:
    if mp.dram:
        raise EmitError(f"CSL back end: {mp.name} streams {', '.join(mp.dram)} from device DRAM (a Tenstorrent plan); "
                        f"the WSE has no device DRAM: every array lives in the PEs' SRAM")
    body = list(mp.body)
    loads, stores = [], []
    while body and isinstance(body[0], ir.HostLoad):
        loads.append(body.pop(0))
    while body and isinstance(body[-1], ir.HostStore):
        stores.insert(0, body.pop())
    steps: list[Step] = []
    exchanges: list[tuple[ir.Exchange, tuple]] = []

    def go(ops, slots: dict[str, int], scope: tuple, phases: int = 0):
        for op in ops:
            pc = len(steps)
            if isinstance(op, (ir.HostLoad, ir.HostStore)):
                raise EmitError(f"CSL back end: {type(op).__name__} of {op.array} in the middle of the program "
                                f"(host transfers run before launch and after it)")
            if isinstance(op, ir.Loop):
                if len(slots) >= LOOP_SLOTS:
                    raise EmitError(f"CSL back end: loop {op.var} nests deeper than {LOOP_SLOTS} loops")
                depth = ir.loop_slot(op, len(slots), phases, LOOP_SLOTS)      # the emulator's slots
                steps.append(Step(pc, "loop", f"for {op.var} in 0..{op.count}", op, op.var, op.count, depth,
                                  0, tuple(slots.items())))
                inner = {**slots, op.var: depth}
                go(op.body, inner, scope + ((op.var, op.count),), phases + op.phase)
                steps.append(Step(len(steps), "next", f"end of for {op.var}", op, op.var, op.count, depth,
                                  pc + 1, tuple(inner.items())))
                steps[pc] = Step(pc, "loop", f"for {op.var} in 0..{op.count}", op, op.var, op.count, depth,
                                 len(steps), tuple(slots.items()))
            elif isinstance(op, ir.Exchange):
                for c in op.ops:
                    parts_of(c)                       # an EmitError naming an unsupported pattern
                exchanges.append((op, scope))
                names = ", ".join(c.name for c in op.ops)
                guard = f" when {op.guard} > 0" if op.guard is not None else ""
                steps.append(Step(pc, "exchange", f"exchange {op.name} ({names}){guard}", op,
                                  slots=tuple(slots.items()), exchange_index=len(exchanges) - 1))
                xi = len(exchanges) - 1
                landed = sorted({c.dst for c in op.ops if c.src == c.dst}) if xi not in double.exchanges else []
                if xi in double.exchanges:
                    how = (f"fetched here at {op_var(scope)} = 0, else prefetched" if double.exchanges[xi][2] == 0
                           else "prefetched in the step before")
                    steps[pc] = Step(pc, "exchange", f"exchange {op.name} ({names}){guard}: wait for this step's "
                                     f"panels ({how})", op, slots=tuple(slots.items()), exchange_index=xi)
                    steps.append(Step(pc + 1, "prefetch", f"prefetch exchange {op.name} of the next step into the "
                                      f"other slots, overlapping this step's compute", op,
                                      slots=tuple(slots.items()), exchange_index=xi))
                if landed:
                    steps.append(Step(pc + 1, "land", f"exchange {op.name}: received {', '.join(landed)} "
                                      f"landed beside the buffer being sent; copy it in", op,
                                      slots=tuple(slots.items()), exchange_index=len(exchanges) - 1))
            elif isinstance(op, ir.Compute):
                mp.kernel(op.kernel)
                steps.append(Step(pc, "compute", f"compute {op.kernel} on {op.rect}", op,
                                  slots=tuple(slots.items())))
            else:
                raise EmitError(f"CSL back end: MeshIR op {type(op).__name__} is not supported")
    go(body, {}, ())
    for st in stores:
        if any(d.padded or d.coord == "kb" for d in mp.tensor(st.buffer).box):
            raise EmitError(f"CSL back end: host_store of {st.array} from ring buffer {st.buffer} (skewed blocks) "
                            f"is not supported")
    return steps, loads, stores, exchanges


def op_var(scope) -> str:
    return scope[-1][0]


def _channels(mp: ir.MeshProgram, exchanges, budget: int, *, mode: str = "first") -> list[Channel]:
    """Channels of every exchange, with hardware colours assigned greedily (first use first): each channel
    takes, among the colours none of its conflicting channels holds,

    * ``first``: the lowest;
    * ``spread``: the lowest no channel holds yet while there is one, else the lowest: channels of
      different exchanges share a colour only when the budget runs out, so the (colour, direction) pairs
      of one exchange do not constrain the fabric queues of another (:func:`_routing`);
    * ``shared``: the one its senders already send on and its receivers already receive on at the most
      cores (each core then uses few (colour, direction) pairs)."""
    raw: dict[tuple, dict] = {}
    order: list[tuple] = []
    for xi, (op, scope) in enumerate(exchanges):
        for env in _iterations(scope):
            if not op.active(env):
                continue
            for c in op.ops:
                for pi, (colour, senders, receivers, routes, hops) in enumerate(parts_of(c)):
                    s = concrete(senders, env, mp.mesh)
                    r = concrete(receivers, env, mp.mesh)
                    if s is None and r is None:
                        continue
                    if s is None or r is None:
                        raise EmitError(f"CSL back end: exchange {op.name}, {c.name} at {env}: senders {s} but "
                                        f"receivers {r}")
                    rb = []
                    for rt in routes:
                        b = concrete(rt.rect, env, mp.mesh)
                        if b is not None:
                            rb.append(RouteBox(b, tuple(rt.rx), tuple(rt.tx)))
                    key = (xi, c.name, pi, tuple(rb), s, r)
                    if key not in raw:
                        raw[key] = dict(exchange=op.name, xi=xi, pattern=c.name, part=pi, mc=colour, src=c.src,
                                        dst=c.dst, routes=tuple(rb), senders=s, receivers=r, hops=hops, uses=[])
                        order.append(key)
                    raw[key]["uses"].append(tuple((v, env[v]) for v, _ in scope))
    w, h = mp.mesh
    n = len(order)
    info = [_RouteTable(raw[key], w, h) for key in order]
    # channels active in one exchange instance (same exchange, a common use)
    uses = [(raw[key]["xi"], set(raw[key]["uses"])) for key in order]

    def conflict(a: int, b: int) -> bool:
        ta, tb = info[a], info[b]
        if not ta.overlaps(tb):
            return False
        if uses[a][0] == uses[b][0] and uses[a][1] & uses[b][1]:
            return True                                  # at the same time on shared routers
        return not ta.compatible(tb)

    chans: list[Channel] = []
    on: dict[int, list[int]] = {}               # colour -> channels on it so far
    pool = [c for c in range(min(budget, ROUTABLE)) if c not in RESERVED_IDS]
    rx_on: dict[int, np.ndarray] = {}           # colour -> cores receiving on it so far (``shared``)
    tx_on: dict[int, np.ndarray] = {}
    for k, key in enumerate(order):
        d = raw[key]
        free = [c for c in pool if not any(conflict(k, j) for j in on.get(c, ()))]
        colour = free[0] if free else None
        if mode == "spread" and free:
            colour = next((c for c in free if c not in on), free[0])
        if mode == "shared" and free:
            rx, tx = d["receivers"].mask(w, h), d["senders"].mask(w, h)

            def reuse(c):
                return int((rx & rx_on[c]).sum() + (tx & tx_on[c]).sum()) if c in rx_on else 0
            colour = max(free, key=lambda c: (reuse(c), -c))
            rx_on[colour] = rx_on.get(colour, np.zeros((h, w), bool)) | rx
            tx_on[colour] = tx_on.get(colour, np.zeros((h, w), bool)) | tx
        if colour is None:
            raise EmitError(f"CSL back end: exchange {d['exchange']}, {d['pattern']}: no colour left within the "
                            f"budget of {budget} (channels that share routers in one exchange, or whose route "
                            f"tables or senders differ on shared routers, need colours of their own; {n} "
                            f"channels in all). Route switching by control wavelets is not emitted yet.")
        on.setdefault(colour, []).append(k)
        chans.append(Channel(k, colour, d["exchange"], d["xi"], d["pattern"], d["part"], d["mc"], d["src"],
                             d["dst"], d["routes"], d["senders"], d["receivers"], d["hops"], tuple(d["uses"])))
    return chans


_BITS = {"RAMP": 1, "N": 2, "E": 4, "S": 8, "W": 16}
_STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}


class _RouteTable:
    """One channel's routers as arrays ``[y, x]`` over the bounding window of its routes (a big mesh with
    many channels stays small): rx and tx direction bits, and (computed on demand) the sender each receiving
    core gets its message from, traced through the channel's own routes."""

    def __init__(self, d: dict, w: int, h: int):
        self.w, self.h = w, h
        bs = [rb.box for rb in d["routes"]]
        self.x0, self.y0 = min(b.x0 for b in bs), min(b.y0 for b in bs)
        self.x1, self.y1 = max(b.x1 for b in bs), max(b.y1 for b in bs)
        shape = (self.y1 - self.y0, self.x1 - self.x0)
        self.rx = np.zeros(shape, np.int8)
        self.tx = np.zeros(shape, np.int8)
        self.mask = np.zeros(shape, bool)
        for rb in d["routes"]:
            b = rb.box
            sl = (slice(b.y0 - self.y0, b.y1 - self.y0, b.ys), slice(b.x0 - self.x0, b.x1 - self.x0, b.xs))
            self.rx[sl] = sum(_BITS[v] for v in rb.rx)
            self.tx[sl] = sum(_BITS[v] for v in rb.tx)
            self.mask[sl] = True
        self.senders = d["senders"]
        self.receivers = d["receivers"]
        self._from = None

    def _common(self, o: "_RouteTable"):
        """The shared window as slices into self's and o's arrays, or None when the windows do not meet."""
        x0, x1, y0, y1 = max(self.x0, o.x0), min(self.x1, o.x1), max(self.y0, o.y0), min(self.y1, o.y1)
        if x0 >= x1 or y0 >= y1:
            return None
        return ((slice(y0 - self.y0, y1 - self.y0), slice(x0 - self.x0, x1 - self.x0)),
                (slice(y0 - o.y0, y1 - o.y0), slice(x0 - o.x0, x1 - o.x0)))

    def overlaps(self, o: "_RouteTable") -> bool:
        c = self._common(o)
        return c is not None and bool((self.mask[c[0]] & o.mask[c[1]]).any())

    def sender_of(self) -> dict:
        """core (x, y) -> the sender whose message it receives, traced through the channel's routes."""
        if self._from is None:
            got = {}
            for sx, sy in self.senders.cells():
                seen, stack = set(), [(sx, sy)]
                while stack:
                    x, y = stack.pop()
                    lx, ly = x - self.x0, y - self.y0
                    if (x, y) in seen or not (0 <= lx < self.mask.shape[1] and 0 <= ly < self.mask.shape[0]) \
                            or not self.mask[ly, lx]:
                        continue
                    seen.add((x, y))
                    t = int(self.tx[ly, lx])
                    if t & _BITS["RAMP"]:
                        got[(x, y)] = (sx, sy)
                    for dname, (dx, dy) in _STEP.items():
                        if t & _BITS[dname]:
                            stack.append((x + dx, y + dy))
            self._from = got
        return self._from

    def compatible(self, o: "_RouteTable") -> bool:
        """Both channels can live on one colour at different times: equal settings on every shared router,
        and every core receiving in both receives from the same sender."""
        c = self._common(o)
        if c is None:
            return True
        both = self.mask[c[0]] & o.mask[c[1]]
        if (self.rx[c[0]][both] != o.rx[c[1]][both]).any() or (self.tx[c[0]][both] != o.tx[c[1]][both]).any():
            return False
        mine, theirs = self.sender_of(), o.sender_of()
        return all(theirs[core] == s for core, s in mine.items() if core in theirs)


def _greedy(items: list, conflicts, pool: tuple, what) -> dict:
    out = {}
    for it in items:
        used = {out[o] for o in out if conflicts(it, o)}
        free = [q for q in pool if q not in used]
        if not free:
            raise EmitError(what(it))
        out[it] = free[0]
    return out


def _assign(items: list, conflicts, pool: tuple, what, budget: int = 200_000) -> dict:
    """Values from ``pool`` for ``items`` such that conflicting items differ: first fit in the given order
    when that succeeds, else an exact search (most constrained item first, bounded by ``budget`` steps).
    Raises :class:`EmitError` with ``what()`` when there is no assignment (or the search gives up)."""
    try:
        return _greedy(items, conflicts, pool, lambda it: "")
    except EmitError:
        pass
    adj = {a: [b for b in items if b != a and conflicts(a, b)] for a in items}
    out: dict = {}
    steps = [0]

    def go() -> bool:
        steps[0] += 1
        if steps[0] > budget:
            return False
        todo = [a for a in items if a not in out]
        if not todo:
            return True
        a = max(todo, key=lambda t: (len({out[b] for b in adj[t] if b in out}), len(adj[t])))
        taken = {out[b] for b in adj[a] if b in out}
        for q in pool:
            if q not in taken:
                out[a] = q
                if go():
                    return True
                del out[a]
        return False
    if not go():
        raise EmitError(what())
    return out


def _worst(items: list, conflicts) -> tuple:
    """The item with the most conflicts (named in errors)."""
    return max(items, key=lambda a: sum(1 for b in items if b != a and conflicts(a, b)))


def build_plan(mp: ir.MeshProgram, target, *, landing_elems: int | None = None) -> CslPlan:
    """The plan of ``mp`` for ``target`` (``wse2`` or ``wse3``); ``landing_elems`` forces landing buffers of
    at most that many elements (exchanges into themselves then run in rounds)."""
    if target.name not in ("wse2", "wse3"):
        raise EmitError(f"the CSL back end targets wse2 and wse3, not {target.name}")
    w, h = mp.mesh
    double = double_buffering(mp)
    kernels = kernel_functions(mp, frozenset(double.buffers))
    buffers = _buffers(mp, double, target.sram_bytes, kernels.scratch)
    steps, loads, stores, exchanges = _steps(mp, double)
    buffers, landing, chunk, rounds = _landing(mp, target, buffers, exchanges, double, landing_elems)
    chans, mask, in_queue, out_queue, slots, n_slots, task_ids = _routing(mp, exchanges, target)
    kernel_classes = {k.name: tuple((cls.name, cls.region) for cls in k.classes) for k in mp.kernels}
    classes = _classes(mp, chans, in_queue, out_queue, kernel_classes)
    ro = MappingProxyType
    return CslPlan(mp.name, target.name, (w, h), target.sram_bytes, target.colours, buffers, tuple(chans),
                   tuple(steps), tuple(loads), tuple(stores), ro(in_queue), ro(out_queue), ro(slots), n_slots,
                   ro(task_ids), ro(landing), classes, ro(kernel_classes), ro(chunk), rounds, double, kernels)


def _routing(mp: ir.MeshProgram, exchanges, target) -> tuple:
    """Channels with their colours, the cores of every (channel id, role), the input and output queues, the
    completion slots, their number and the local task IDs.

    Colours are first assigned lowest first (:func:`_channels`); when the queues of that assignment do not
    fit -- typically operators side by side whose exchanges landed on the same colours with different
    cores in different roles, which ties the queues of one exchange to another's -- again with colours
    spread over the budget (less a few colours, which leaves task IDs for the local tasks), then preferring
    the colours the cores already use in the same role. The first assignment's error is raised when none
    fits."""
    w, h = mp.mesh
    first = None
    attempts = [("first", target.colours)] + [("spread", target.colours - k) for k in (0, 3, 6)] \
        + [("shared", target.colours)]
    for mode, budget in attempts:
        try:
            chans = _channels(mp, exchanges, budget, mode=mode)
            mask = {}                                   # (channel id, role) -> cores doing it
            for c in chans:
                mask[(c.id, "send")], mask[(c.id, "recv")] = c.senders.mask(w, h), c.receivers.mask(w, h)
            in_queue, out_queue = _queues(chans, mask, (w, h), target.name == "wse3")
            slots, n_slots = _completion_slots(chans, mask)
            return chans, mask, in_queue, out_queue, slots, n_slots, _task_ids(chans, n_slots)
        except EmitError as exc:
            first = first or exc
    raise first


def _landing(mp: ir.MeshProgram, target, buffers: tuple[Buffer, ...], exchanges, double: DoubleBuffering,
             landing_elems: int | None) -> tuple[tuple[Buffer, ...], dict, dict, int]:
    """The landing buffers: ``buffers`` with them added, buffer -> landing buffer, buffer -> landing elements,
    and the rounds of an exchange into itself.

    A pattern that sends a buffer into the same buffer (ring shifts) receives into a landing buffer: the
    emulator's exchange is bulk-synchronous, CSL's asynchronous send and receive are not. The landing
    buffer holds the whole buffer when SRAM allows; otherwise the exchange runs in rounds of ``chunk``
    elements (send chunk r, receive chunk r beside it, copy it in once chunk r has left)."""
    same = []
    for xi, (op, _) in enumerate(exchanges):
        for c in op.ops:
            if c.src == c.dst and c.dst not in same and xi not in double.exchanges:
                same.append(c.dst)
    base = sum(b.alloc_bytes for b in buffers)
    sizes = {b.name: b for b in buffers}
    want = sum(sizes[n].bytes for n in same)
    chunk: dict[str, int] = {}
    for n in same:
        b = sizes[n]
        if landing_elems is not None:
            chunk[n] = max(1, min(b.elems, landing_elems))
        elif base + want <= target.sram_bytes:
            chunk[n] = b.elems
        else:
            per = (target.sram_bytes - base) // len(same) // (b.bytes // b.elems)
            chunk[n] = min(b.elems, per)
            if chunk[n] < MIN_CHUNK:
                raise EmitError(
                    f"CSL back end: {mp.name} needs {base} B of buffers per PE for its MeshIR tensors, leaving "
                    f"{max(0, target.sram_bytes - base)} B of {target.name}'s {target.sram_bytes} B for the landing "
                    f"buffers of {', '.join(same)} (a pattern that sends a buffer into itself, as a ring shift does, "
                    f"receives beside it once send and receive run asynchronously; at least {MIN_CHUNK} elements "
                    f"each); use a larger mesh or smaller tiles")
    landing = {}
    for n in same:
        b = sizes[n]
        landing[n] = f"{n}_landing"
        buffers += (Buffer(landing[n], b.array, b.dtype, chunk[n], chunk[n] * (b.bytes // b.elems), "landing",
                           b.dims),)
    rounds = max((-(-sizes[n].elems // chunk[n]) for n in same), default=1)
    return buffers, landing, chunk, rounds


def _queues(chans: list[Channel], mask: dict, mesh: tuple[int, int],
            wse3: bool) -> tuple[dict[int, int], dict[int, int]]:
    """Input and output queues per hardware colour (colour -> queue), by colouring the graph of (colour, role)
    nodes one core may use together; ``mask`` holds the cores of every (channel id, role)."""
    w, h = mesh
    # Per-core role masks per hardware colour: which colours each core sends / receives on (ever, and per
    # exchange instance).
    rx_any: dict[int, np.ndarray] = {}
    tx_any: dict[int, np.ndarray] = {}
    inst: dict[tuple, set] = {}
    for c in chans:
        rx_any[c.colour] = rx_any.get(c.colour, np.zeros((h, w), bool)) | mask[(c.id, "recv")]
        tx_any[c.colour] = tx_any.get(c.colour, np.zeros((h, w), bool)) | mask[(c.id, "send")]
        for u in c.uses:
            inst.setdefault((c.exchange_index, u), set()).add(c.id)
    together = {(i, j) for ids in {frozenset(v) for v in inst.values()} for i in ids for j in ids}
    overlap: dict = {}

    def overlaps(a, b) -> bool:
        if (a, b) not in overlap:
            overlap[(a, b)] = overlap[(b, a)] = bool((mask[a] & mask[b]).any())
        return overlap[(a, b)]

    def in_one_instance(a: tuple, b: tuple) -> bool:
        return any((ca.id, cb.id) in together and overlaps((ca.id, a[1]), (cb.id, b[1]))
                   for ca in by_colour[a[0]] for cb in by_colour[b[0]])

    def co_active(a: tuple, b: tuple) -> bool:
        """Queue nodes (colour, role) that may not share a queue number. WSE-2: used by one core in one
        exchange instance (a queue number also names the microthread, so an input and an output queue used
        together never share a number either). WSE-3 binds each input queue and each output queue to one
        colour for the whole program: two input (two output) nodes used by one core at any time differ;
        an input and an output queue of one number share only the microthread (``ut_id``), so they may not
        be used by one core in one exchange instance."""
        if wse3 and a[1] == b[1]:
            m = rx_any if a[1] == "recv" else tx_any
            return bool((m[a[0]] & m[b[0]]).any())
        return in_one_instance(a, b)

    by_colour: dict[int, list[Channel]] = {}
    for c in chans:
        by_colour.setdefault(c.colour, []).append(c)
    nodes = [(c, "recv") for c in sorted(rx_any)] + [(c, "send") for c in sorted(tx_any)]
    memo: dict = {}

    def conflicts(a: tuple, b: tuple) -> bool:
        if (a, b) not in memo:
            memo[(a, b)] = memo[(b, a)] = co_active(a, b)
        return memo[(a, b)]

    def too_many() -> str:
        n = _worst(nodes, conflicts)
        return (f"CSL back end: colour {n[0]} ({n[1]}) and the colours cores use with it need more than "
                f"{len(USER_QUEUES)} fabric queues "
                + ("over the program (WSE-3 binds each queue to one colour; a multicast whose root moves with the "
                   "loop needs one colour per root)" if wse3 else "in one exchange")
                + f": no assignment of queues {USER_QUEUES[0]}..{USER_QUEUES[-1]} to the {len(nodes)} (colour, "
                  f"direction) pairs keeps apart those one core uses together")
    queue = _assign(nodes, conflicts, USER_QUEUES, too_many)
    in_queue = {c: q for (c, r), q in queue.items() if r == "recv"}
    out_queue = {c: q for (c, r), q in queue.items() if r == "send"}
    return in_queue, out_queue


def _completion_slots(chans: list[Channel], mask: dict) -> tuple[dict[tuple, int], int]:
    """Completion slots per (exchange, pattern, part, role): two that one core may do at once differ. Returns
    the slots and their number."""
    fam_mask: dict[tuple, np.ndarray] = {}
    for c in chans:
        for role in ("send", "recv"):
            key = (c.exchange_index, c.pattern, c.part, role)
            m = mask[(c.id, role)]
            fam_mask[key] = fam_mask[key] | m if key in fam_mask else m
    slots = _greedy(list(fam_mask), lambda a, b: a[0] == b[0] and bool((fam_mask[a] & fam_mask[b]).any()),
                    tuple(range(64)), lambda k: "slots")
    return slots, max(slots.values(), default=-1) + 1


def _task_ids(chans: list[Channel], n_slots: int) -> dict[str, int]:
    """Local task IDs of the step task and the ``n_slots`` completion tasks, from the top of the IDs no
    colour uses."""
    used_ids = {c.colour for c in chans}
    free_ids = [i for i in range(ROUTABLE + 7) if i not in used_ids and i not in RESERVED_IDS and i < 31]
    free_ids = sorted(free_ids, reverse=True)
    if len(free_ids) < 1 + n_slots:
        raise EmitError(f"CSL back end: {len(used_ids)} colours and {1 + n_slots} local tasks do not fit the "
                        f"task-ID space")
    task_ids = {"step": free_ids[0]}
    for k in range(n_slots):
        task_ids[f"done{k}"] = free_ids[1 + k]
    return task_ids


def _classes(mp, chans, in_queue, out_queue, kernel_classes) -> tuple:
    """Cores with the same parameters (colours received, colours sent, kernel class of every kernel) form
    one class: (id, rx mask, tx mask, kernel class indices, number of cores, example core)."""
    w, h = mp.mesh
    rx = np.zeros((h, w), dtype=np.int64)
    tx = np.zeros((h, w), dtype=np.int64)
    for c in chans:
        rx |= c.receivers.mask(w, h).astype(np.int64) << c.colour
        tx |= c.senders.mask(w, h).astype(np.int64) << c.colour
    kc = []
    for name, cls in kernel_classes.items():
        g = np.full((h, w), 255, dtype=np.int64)
        for i, (_, reg) in enumerate(cls):
            g[reg.y0:reg.y1, reg.x0:reg.x1] = i
        kc.append(g)
    stack = np.stack([rx, tx, *kc], axis=-1).reshape(h * w, -1)
    uniq, first, counts = np.unique(stack, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    out = []
    for cid, u in enumerate(order):
        row = uniq[u]
        ex = int(first[u])
        out.append((cid, int(row[0]), int(row[1]), tuple(int(v) for v in row[2:]), int(counts[u]),
                    (ex % w, ex // w)))
    return tuple(out)
