"""The Metalium back end's plan: everything the C++ is rendered from, and ``plan.json``.

:func:`build_plan` reads a :class:`~mica.meshir.ir.MeshProgram` once and decides, without re-deriving
anything MeshIR already says:

* the device grid (``wormhole`` 8x8, ``blackhole`` 11x10; programs compiled for other targets go to a
  Wormhole when their mesh fits, else :class:`EmitError`); MeshIR core (x, y) is logical Tensix core (x, y);
* **core classes**: cores of the work region grouped by the MeshIR kernel classes, host loads and host
  stores that cover them; each class gets one reader, one compute and one writer kernel on a
  ``CoreRangeSet`` of maximal rectangles (never a kernel per core);
* **circular buffers**: one per MeshIR tensor (its whole per-core box as 32x32 tiles, tile i at page i,
  created on the whole work region so the same index has the same L1 address on every core: remote
  writes use the local address), a *landing* CB for a tensor that is both sent and received in one
  exchange (so a ring shift never overwrites data before it is sent), and three one-page token CBs that
  pass the turn between reader, compute and writer;
* **semaphores**: a ``ready`` counter and a ``valid`` flag per communication pattern (one semaphore for
  both where no core is ever sender and receiver; ops of the same geometry share, see :func:`_sems`);
* **transfers**: per communication op (per colour group of a ring shift) the C++ expressions that decide,
  on core (my_x, my_y) at loop values v_*, whether it sends, to which core or multicast rectangle, whether
  it receives and from whom; ``expand`` evaluates exactly those expressions for ``plan.json``.

Public API: :func:`build_plan` -> :class:`MetalPlan`; :meth:`MetalPlan.to_json`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import product

from ..errors import EmitError
from ..meshir.ir import (Compute, DramLoad, Exchange, HostLoad, HostStore, Loop, MeshProgram, Multicast,
                         RingShift, Shift, walk_ops)
from ..meshir.prefetch import DoubleBuffering, double_buffering
from ..targets import INT_DTYPES, get_target
from . import cexpr
from .api import (DATA_FORMATS, DEVICE_GRIDS, TILE, L1_RESERVED_BYTES, MAX_CBS, NUM_SEMAPHORES, TT_METAL_VERSION,
                  tile_bytes)
from .classify import TileOp, box_domain_guard, classify, float_dtype_of, tile_grid
from .stencil import READER_KINDS, reader_op, scratch_names

STEP = {"E": (1, 0), "W": (-1, 0), "S": (0, 1), "N": (0, -1)}


@dataclass(frozen=True)
class Range:
    """Logical cores ``[x0, x1) x [y0, y1)`` (a tt-metal ``CoreRange`` from (x0, y0) to (x1-1, y1-1))."""

    x0: int
    x1: int
    y0: int
    y1: int

    def cores(self):
        return [(x, y) for y in range(self.y0, self.y1) for x in range(self.x0, self.x1)]

    def json(self):
        return [self.x0, self.x1 - 1, self.y0, self.y1 - 1]


@dataclass(frozen=True)
class CoreClass:
    """Cores running the same reader / compute / writer kernels."""

    name: str
    ranges: tuple[Range, ...]
    kernel_classes: tuple[str, ...]
    loads: tuple[str, ...]
    stores: tuple[str, ...]

    def cores(self):
        return [c for r in self.ranges for c in r.cores()]


@dataclass(frozen=True)
class CB:
    """Circular buffer ``index`` holding ``pages`` pages of ``page_bytes`` (``kind``: tensor / landing /
    token) on every core of the work region."""

    index: int
    name: str
    kind: str
    tensor: str
    page_bytes: int
    pages: int
    data_format: str
    slots: int = 1           # 2: a double buffer, two slots of ``slot_pages`` pages each

    @property
    def total_bytes(self) -> int:
        return self.page_bytes * self.pages

    @property
    def slot_pages(self) -> int:
        """Pages of one slot: the tensor's per-core box as tiles."""
        return self.pages // self.slots


@dataclass(frozen=True)
class Sem:
    """Semaphore ``index`` (creation order) named ``name``, first used by op ``op``; ``role`` ready (the
    sender counts receivers that freed their buffer), valid (the receiver's flag: the data has landed), or
    ready+valid (both, for ops where no core is ever both sender and receiver). ``kind``: ``program`` (one of
    the :data:`~.api.NUM_SEMAPHORES` a core has, ``CreateSemaphore``; the reader gets its id as a compile-time
    arg) or ``global`` (past those: ``CreateGlobalSemaphore``, a word of L1 at one address on every core of
    the work region, starting at 0; the reader gets the address as a runtime arg)."""

    index: int
    name: str
    op: str
    role: str
    kind: str = "program"


@dataclass(frozen=True)
class Transfer:
    """One independently routed part of a MeshIR communication op, as rendered C++ expressions.

    ``kind`` is ``multicast`` (``mcast`` = x0, x1, y0, y1 of the half-open destination rectangle, which
    may contain the sender: then the loop-back variant is used) or ``unicast`` (``dst`` = x, y).
    ``src`` = the x, y of the sender a receiver waits for. ``guard`` is the exchange's guard or ''."""

    exchange: str
    op: str
    pattern: str
    colour: int
    kind: str
    src_buffer: str
    dst_buffer: str
    src_cb: int
    dst_cb: int
    tiles: int
    noc_bytes: int
    ready: str
    valid: str
    guard: str
    send_when: str
    recv_when: str
    src: tuple[str, str]
    dst: tuple[str, str] = ("", "")
    mcast: tuple[str, str, str, str] = ("", "", "", "")
    senders: str = ""        # the MeshIR rectangles, for readers of plan.json
    receivers: str = ""


@dataclass(frozen=True)
class KernelArgs:
    """The arguments of one kernel file: runtime args by index (``my_x``, ``my_y``, ``dram_<tensor>``,
    ``noc_x<i>``, ``noc_y<j>``) and compile-time args by index (semaphore names)."""

    path: str
    runtime: tuple[str, ...]
    compile: tuple[str, ...]


def runtime_arg(name: str) -> str:
    """The runtime arg (and the kernels' variable, as the kernel domains print ``__rp_<name>``) carrying
    runtime parameter ``name``."""
    return "rp_" + name


def dram_stream_arg(array: str) -> str:
    """The reader's runtime arg (and the host's buffer variable) of ``array``'s interleaved DRAM buffer, for an
    array streamed from device DRAM (:attr:`MeshProgram.dram`)."""
    return "dram_stream_" + ident(array)


def scalar_arg(name: str) -> str:
    """The reader's runtime arg (and the host's variable) holding float scalar argument ``name`` (its f32
    bits), read by the generic path."""
    return "sc_" + ident(name)


def float_scalars(mp: MeshProgram) -> tuple[str, ...]:
    """The scalar arguments of ``mp`` that are values, not runtime parameters, in order."""
    rt = {n for n, _, _ in mp.runtime}
    return tuple(n for n in mp.scalars if n not in rt)


def _kernel_args(classes, sems, mesh, runtime=(), dram=(), scalars=()) -> tuple[KernelArgs, ...]:
    """Per core class, its reader's, compute's and writer's args; the values of the ``runtime`` parameters
    (``rp_<name>``) come last, for the reader (the generic path's loops) and the compute kernel (the guards
    of tile routines), after the reader's float ``scalars`` (``sc_<name>``, f32 bits: only the generic path
    reads them). The addresses of the arrays streamed from device DRAM (``dram``) follow the reader's host
    loads; those of the global semaphores (``sems`` past the program's own) follow the NoC coordinates."""
    out = []
    rps = tuple(runtime_arg(n) for n, _, _ in runtime)
    scs = tuple(scalar_arg(n) for n in scalars)
    streams = tuple(dram_stream_arg(a) for a in dram)
    gsems = tuple(s.name for s in sems if s.kind == "global")     # their L1 addresses
    for cc in classes:
        noc = tuple(f"noc_x{i}" for i in range(mesh[0])) + tuple(f"noc_y{j}" for j in range(mesh[1]))
        out.append(KernelArgs(f"kernels/reader_{cc.name}.cpp",
                              ("my_x", "my_y") + tuple(f"dram_{ident(b)}" for b in cc.loads) + streams + noc + gsems
                              + scs + rps,
                              tuple(s.name for s in sems if s.kind == "program")))
        out.append(KernelArgs(f"kernels/compute_{cc.name}.cpp", ("my_x", "my_y") + rps, ()))
        out.append(KernelArgs(f"kernels/writer_{cc.name}.cpp",
                              ("my_x", "my_y") + tuple(f"dram_{ident(b)}" for b in cc.stores), ()))
    return tuple(out)


@dataclass(frozen=True)
class MetalPlan:
    name: str
    arch: str
    source_target: str
    mesh: tuple[int, int]
    work: Range
    classes: tuple[CoreClass, ...]
    cbs: tuple[CB, ...]
    sems: tuple[Sem, ...]
    transfers: tuple[Transfer, ...]
    tile_ops: tuple[TileOp, ...]
    dtype: str
    l1_bytes: int
    guards: tuple[tuple[str, str], ...] = ()    # (kernel class, C condition where it runs, '' = always)
    kernel_args: tuple[KernelArgs, ...] = ()
    double: DoubleBuffering | None = None        # the prefetched exchanges emitted double-buffered
    prefetch_at: tuple[tuple[int, int], ...] = ()  # (id of the Compute op that hosts it, exchange index)
    dram_double: tuple[str, ...] = ()            # DRAM loads emitted double-buffered (names)
    dram_hosts: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (id of the Compute op that hosts them, loads)

    def is_double(self, ex_index: int) -> bool:
        return self.double is not None and ex_index in self.double.exchanges

    def args(self, path: str) -> "KernelArgs":
        for k in self.kernel_args:
            if k.path == path:
                return k
        raise EmitError(f"plan {self.name}: no kernel {path}")

    def cb(self, name: str) -> CB:
        for c in self.cbs:
            if c.name == name:
                return c
        raise EmitError(f"plan {self.name}: no circular buffer {name!r}")

    def tensor_cb(self, tensor: str) -> CB:
        return self.cb(cb_name(tensor))

    def tile_op(self, kernel: str) -> TileOp:
        for op in self.tile_ops:
            if op.kernel == kernel:
                return op
        raise EmitError(f"plan {self.name}: no tile routine for kernel {kernel!r}")

    @property
    def cb_bytes(self) -> int:
        return sum(c.total_bytes for c in self.cbs)

    def to_json(self, mp: MeshProgram) -> str:
        """The plan record: core classes, CBs, semaphores, kernels' argument counts, and per exchange the
        sender/receiver sets, NoC transfer sizes and semaphores, expanded step by step."""
        doc = {
            "tt_metal": TT_METAL_VERSION, "program": self.name, "arch": self.arch,
            "compiled_for": self.source_target, "mesh": list(self.mesh), "work_region": self.work.json(),
            "l1_bytes_per_core": self.l1_bytes, "cb_bytes_per_core": self.cb_bytes,
            "core_classes": [{"name": c.name, "ranges": [r.json() for r in c.ranges],
                              "kernel_classes": list(c.kernel_classes), "host_loads": list(c.loads),
                              "host_stores": list(c.stores)} for c in self.classes],
            "circular_buffers": [{"index": c.index, "name": c.name, "kind": c.kind, "tensor": c.tensor,
                                  "page_bytes": c.page_bytes, "pages": c.pages, "data_format": c.data_format,
                                  **({"slots": c.slots, "slot_pages": c.slot_pages} if c.slots != 1 else {})}
                                 for c in self.cbs],
            "semaphores": [{"id": s.index, "name": s.name, "op": s.op, "role": s.role,
                            **({"kind": "global"} if s.kind == "global" else {})} for s in self.sems],
            "kernels": {k.path: {"runtime_args": len(k.runtime), "runtime_arg_names": list(k.runtime),
                                 "compile_args": len(k.compile), "compile_arg_names": list(k.compile)}
                        for k in self.kernel_args},
            "tile_ops": [{"kernel": o.kernel, "kind": o.kind, "out": o.out, "ins": list(o.ins), "op": o.op,
                          "tiles": [o.mt, o.nt, o.kt], "statement": o.text,
                          **({"views": [[b, list(d)] for b, d in o.views],
                              "passes": [p.text() for p in o.passes]} if o.kind == "stencil" else {})}
                         for o in self.tile_ops],
            "generic": [{"kernel": o.kernel, "reason": o.reason} for o in self.tile_ops if o.kind == "generic"],
            "exchanges": [{"exchange": t.exchange, "op": t.op, "pattern": t.pattern, "colour": t.colour,
                           "kind": t.kind, "src": t.src_buffer, "dst": t.dst_buffer, "src_cb": t.src_cb,
                           "dst_cb": t.dst_cb, "tiles": t.tiles, "noc_bytes": t.noc_bytes,
                           "semaphores": [t.ready, t.valid], "guard": t.guard, "send_when": t.send_when,
                           "recv_when": t.recv_when, "src_core": list(t.src), "dst_core": list(t.dst),
                           "mcast_rect": list(t.mcast), "senders": t.senders, "receivers": t.receivers}
                          for t in self.transfers],
        }
        db = mp.double_buffering()
        if db is not None:
            # Only for double-buffered MeshIR (single-buffered records are unchanged).
            d = self.double
            names = [ex.name for ex, _ in _exchanges(mp)]
            done = [names[i] for i in sorted(d.exchanges)]
            loads = {op.name: DRAM_SINGLE for op, _ in mp.walk()
                     if isinstance(op, DramLoad) and op.prefetch and op.name not in self.dram_double}
            if loads:
                d = DoubleBuffering(d.exchanges, d.buffers, {**d.dropped, **loads})
            if self.dram_double:
                db = {**db, "dram_loads_emitted": list(self.dram_double), "dram_note": DRAM_DOUBLE}
            if not d.dropped:
                doc["double_buffering"] = {**db, "emitted": True, "note": EMITTED_NOTE}
            else:
                doc["double_buffering"] = {**db, "emitted": False, "emitted_exchanges": done,
                                           "dropped": dict(d.dropped), "note": PARTIAL_NOTE if done else DROPPED_NOTE}
        # one line per step record: the step lists are long and read best as a table
        steps = ",\n  ".join(json.dumps(s, separators=(",", ":")) for s in expand(self, mp))
        text = json.dumps(doc, indent=1)
        return text[:-2] + f',\n "steps": [\n  {steps}\n ]\n}}'


EMITTED_NOTE = ("every prefetched exchange is emitted double-buffered: each two-slot buffer is a circular buffer of "
                "two slots (slot_pages each); the reader reserves the next slot (cb_reserve_back blocks until "
                "compute popped it), signals ready to its sender only then, receives step t+1's tiles while "
                "compute works on step t, and pushes the slot; at each step the exchange runs, compute waits until "
                "the new slot is there behind the old one and only then pops the old one. Ring shifts need no "
                "landing buffer then.")
PARTIAL_NOTE = ("the exchanges in emitted_exchanges are emitted double-buffered; those in dropped are emitted "
                "single-buffered (each step's exchange completes before that step's compute, one page per "
                "tile), for the reason given")
DROPPED_NOTE = ("this back end emits the single-buffered program (still correct): each step's exchange completes before that step's compute, one receive buffer per panel; the overlap the cost model and the emulator assume is not realised on hardware")


DRAM_DOUBLE = ("a prefetched DRAM load is emitted double-buffered: its buffer is a CB of two slots; the reader reads "
               "step t+1's pages into the next slot (cb_reserve_back waits until compute popped it) while compute "
               "works on step t, and compute pops the old slot at each step once the new one is there")
DRAM_SINGLE = ("a prefetched DRAM load is emitted single-buffered: the reader reads each step's pages before that "
               "step's compute (the overlap the cost model and the emulator assume is not realised on hardware)")


def cb_name(tensor: str, kind: str = "tensor") -> str:
    base = "cb_" + ident(tensor)
    return base + "_landing" if kind == "landing" else base


def ident(name: str) -> str:
    """A C identifier for a MeshIR name (``A->A_recv`` -> ``A_to_A_recv``)."""
    s = name.replace("->", "_to_")
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    s = re.sub(r"_+", "_", s).strip("_")
    return s if s and not s[0].isdigit() else "n_" + s


# -- device and core classes ---------------------------------------------------------------------------

def _arch(mp: MeshProgram) -> str:
    arch = mp.target if mp.target in DEVICE_GRIDS else "wormhole"
    gw, gh = DEVICE_GRIDS[arch]
    w, h = mp.mesh
    if w > gw or h > gh:
        raise EmitError(f"{mp.name}: mesh {w}x{h} (compiled for {mp.target}) is larger than the {arch} Tensix "
                        f"grid of {gw}x{gh} worker cores; compile for a mesh of at most {gw}x{gh} to emit "
                        f"Metalium")
    return arch


def rectangles(cells: set[tuple[int, int]]) -> tuple[Range, ...]:
    """Cover ``cells`` with rectangles: maximal runs per row, merged down equal runs of adjacent rows."""
    rows: dict[int, list[tuple[int, int]]] = {}
    for y in sorted({c[1] for c in cells}):
        xs = sorted(x for x, yy in cells if yy == y)
        runs, start = [], xs[0]
        for a, b in zip(xs, xs[1:] + [None]):
            if b != a + 1:
                runs.append((start, a + 1))
                start = b
        rows[y] = runs
    out: list[list[int]] = []
    open_: dict[tuple[int, int], list[int]] = {}
    for y in sorted(rows):
        nxt = {}
        for run in rows[y]:
            if run in open_ and open_[run][3] == y:
                open_[run][3] = y + 1
                nxt[run] = open_[run]
            else:
                r = [run[0], run[1], y, y + 1]
                out.append(r)
                nxt[run] = r
        open_ = nxt
    return tuple(Range(*r) for r in out)


def _core_classes(mp: MeshProgram) -> tuple[CoreClass, ...]:
    work = mp.region
    kclasses = [(cls.name, cls.region) for k in mp.kernels for cls in k.classes]
    loads = [op for op, _ in mp.walk() if isinstance(op, HostLoad)]
    stores = [op for op, _ in mp.walk() if isinstance(op, HostStore)]

    def inside(r, x, y):
        return r.x0 <= x < r.x1 and r.y0 <= y < r.y1
    groups: dict[tuple, set] = {}
    order = []
    for y in range(work.y0, work.y1):
        for x in range(work.x0, work.x1):
            key = (tuple(n for n, r in kclasses if inside(r, x, y)),
                   tuple(ld.buffer for ld in loads if inside(ld.region, x, y)),
                   tuple(st.buffer for st in stores if inside(st.region, x, y)))
            if key not in groups:
                groups[key] = set()
                order.append(key)
            groups[key].add((x, y))
    return tuple(CoreClass(f"c{i}", rectangles(groups[key]), *key) for i, key in enumerate(order))


# -- circular buffers and semaphores -------------------------------------------------------------------

def _exchanges(mp: MeshProgram):
    return [(op, scope) for op, scope in mp.walk() if isinstance(op, Exchange)]


def _phases(mp: MeshProgram) -> list[int]:
    """Per exchange (in :func:`_exchanges` order), the index of the top-level op of the body holding it:
    exchanges of different phases never overlap on a core (a prefetch reaches no further than the end of
    its loop)."""
    return [k for k, top in enumerate(mp.body) for op, _ in walk_ops((top,)) if isinstance(op, Exchange)]


def _cbs(mp: MeshProgram, dtype: str, double: DoubleBuffering, dram_two: frozenset = frozenset(),
         tile_ops: tuple = ()) -> tuple[CB, ...]:
    """The circular buffers (see the module text): a tensor's CB and its landing CB in the tensor's data
    format and tile size (Int32 for an integer tensor, Float16 for an f16 one), the scratch and token CBs in the
    program's float ``dtype``."""
    fmt = DATA_FORMATS[dtype][0]
    tb = tile_bytes(dtype)
    loaded = [op.buffer for op, _ in mp.walk() if isinstance(op, HostLoad)]
    stored = [op.buffer for op, _ in mp.walk() if isinstance(op, HostStore)]
    landing = []
    for i, (ex, _) in enumerate(_exchanges(mp)):
        if i in double.exchanges:
            continue                    # sends one slot, receives into the other: nothing to land aside
        srcs = {c.src for c in ex.ops}
        for c in ex.ops:
            if c.dst in srcs and c.dst not in landing:
                landing.append(c.dst)
    used: set[int] = set()

    def take(start: int) -> int:
        for i in list(range(start, MAX_CBS)) + list(range(0, start)):
            if i not in used:
                used.add(i)
                return i
        raise EmitError(f"{mp.name}: more than {MAX_CBS} circular buffers needed "
                        f"({len(mp.tensors)} tensors, {len(landing)} landing buffers, "
                        f"{len(scratch_names(tile_ops))} stencil scratch buffers, 3 tokens)")
    out = []
    # Convention of the tt-metal examples: inputs from c_0, outputs from c_16, intermediates from c_24.
    for t in sorted(mp.tensors, key=lambda t: (0 if t.name in loaded else 1 if t.name in stored else 2)):
        start = 0 if t.name in loaded else 16 if t.name in stored else 24
        r, c = tile_grid(t)
        k = 2 if t.name in double.buffers or t.name in dram_two else 1
        out.append(CB(take(start), cb_name(t.name), "tensor", t.name, tile_bytes(t.dtype), k * r * c,
                      DATA_FORMATS[t.dtype][0], k))
    for name in landing:
        t = mp.tensor(name)
        r, c = tile_grid(t)
        out.append(CB(take(24), cb_name(name, "landing"), "landing", name, tile_bytes(t.dtype), r * c,
                      DATA_FORMATS[t.dtype][0]))
    scratch = scratch_names(tile_ops)
    if scratch:
        pages = max(o.mt for o in tile_ops if o.kind == "stencil")
        for name in scratch:
            out.append(CB(take(24), name, "scratch", "", tb, pages, fmt))
    for tok in ("tok_r2c", "tok_c2r", "tok_r2w"):
        out.append(CB(take(24), "cb_" + tok, "token", "", 32, 2, fmt))
    return tuple(sorted(out, key=lambda c: c.index))


def _comm_ops(mp: MeshProgram):
    """(exchange index, exchange, op index, op, scope) of every communication op in program order."""
    out = []
    for i, (ex, scope) in enumerate(_exchanges(mp)):
        for j, c in enumerate(ex.ops):
            out.append((i, ex, j, c, scope))
    return out


def op_ident(i: int, j: int, c) -> str:
    return f"x{i}_{j}_{ident(c.name)}"


def _geometry_key(c) -> tuple:
    """What decides which cores send to which in a communication op (not the buffers)."""
    if isinstance(c, Multicast):
        return ("multicast", c.axis, c.root, c.senders, c.receivers)
    if isinstance(c, Shift):
        return ("shift", c.direction, c.distance, c.senders, c.receivers)
    return ("ring", c.axis, c.kind, c.n, c.across, c.groups)


def _op_cores(c, scope) -> set[tuple[int, int]]:
    """Every core that sends or receives in communication op ``c`` at any iteration of ``scope``."""
    rects = [r for g in c.groups for r in (g.senders, g.receivers)] if isinstance(c, RingShift) \
        else [c.senders, c.receivers]
    out: set[tuple[int, int]] = set()
    for env in _iterations(scope):
        for r in rects:
            xs, ys = r.members(env)
            out.update((x, y) for x in xs for y in ys)
    return out


def _static_roles(mp: MeshProgram, parts: list[Transfer], scope) -> bool:
    """Whether no core ever both sends and receives in these transfers (over every loop iteration)."""
    senders, receivers = set(), set()
    cores = [(x, y) for y in range(mp.region.y0, mp.region.y1) for x in range(mp.region.x0, mp.region.x1)]
    for env in _iterations(scope):
        venv = {cexpr.var_c(k): v for k, v in env.items()}
        for t in parts:
            if t.guard and cexpr.evaluate(t.guard, venv) <= 0:
                continue
            for x, y in cores:
                e = {**venv, "my_x": x, "my_y": y}
                if cexpr.evaluate(t.send_when, e):
                    senders.add((x, y))
                if cexpr.evaluate(t.recv_when, e):
                    receivers.add((x, y))
    return not (senders & receivers)


def _sems(mp: MeshProgram, transfers: tuple[Transfer, ...], share_valid: bool = False, spill: bool = False
          ) -> tuple[tuple[Sem, ...], tuple[Transfer, ...]]:
    """Semaphores, and the transfers with their names filled in.

    Every communication op needs a ``ready`` counter (on senders) and a ``valid`` flag (on receivers). Ops
    whose cores never both send and receive use one semaphore for both roles. Ops of the same geometry
    (the same senders, receivers and direction, e.g. the halo strips of two arrays, or one op in every
    sweep) share their semaphores: as between the iterations of one loop, a receiver signals a sender
    again only after that sender has raised its flag, so reuse never mixes counts. Two ops of one
    exchange never share. Ops that never touch a common core (operators placed side by side on disjoint
    rectangles) share too: a semaphore is a word of each core's own L1, and only an op's senders and
    receivers ever read or write it. With ``share_valid`` (when the semaphores do not fit otherwise), ops
    of geometries whose phases (top-level ops of the body, which never overlap on a core) are all different
    share their valid flags -- every phase a geometry runs in counts, so two geometries sharing a flag never
    meet in one exchange: a receiver clears its flag and signals ready before any
    sender of the later op can raise the flag, and it has seen the earlier op's flag before that. (Ready
    counters are not shared so: a core outside the earlier op could count towards a sender still waiting
    in it.)

    More than :data:`~.api.NUM_SEMAPHORES` is an :class:`EmitError` unless ``spill``: then the ones past them
    are global semaphores (:class:`Sem` ``kind``), which the handshake uses alike."""
    by_op: dict[tuple[str, str], list[Transfer]] = {}
    for t in transfers:
        by_op.setdefault((t.exchange, t.op), []).append(t)
    sems: list[Sem] = []
    names: dict[tuple, tuple[str, str]] = {}
    chosen: dict[tuple[str, str], tuple[str, str]] = {}
    touched: dict[tuple[str, str], set] = {}        # semaphore names -> every core any op using them touches
    phase_of = _phases(mp)
    valid_phases: dict[str, set[int]] = {}          # valid flag -> the phases of the ops using it
    valid_cores: dict[str, set] = {}                # valid flag -> every core any op using it touches

    def key_of(ex, j, c):
        base = _geometry_key(c)
        return base, sum(1 for o in ex.ops[:j] if _geometry_key(o) == base)
    key_phases: dict[tuple, set[int]] = {}          # every phase an op of each geometry runs in, known up front:
    for i, ex, j, c, _ in _comm_ops(mp):            # a valid flag is shared only by geometries of disjoint phases
        key_phases.setdefault(key_of(ex, j, c), set()).add(phase_of[i])
    for i, ex, j, c, scope in _comm_ops(mp):
        key = key_of(ex, j, c)
        if key not in names:
            oid = op_ident(i, j, c)
            single = _static_roles(mp, by_op[(ex.name, c.name)], scope)
            cores = _op_cores(c, scope)
            free = next((n for n, seen in touched.items() if (n[0] == n[1]) == single and not seen & cores
                         and not valid_cores.get(n[1], set()) & cores), None)
            if free is not None:
                names[key] = free
            elif single:
                sems.append(Sem(len(sems), f"sem_{oid}", c.name, "ready+valid"))
                names[key] = (sems[-1].name, sems[-1].name)
            else:
                sems.append(Sem(len(sems), f"sem_{oid}_ready", c.name, "ready"))
                ready = sems[-1].name
                valid = next((v for v, ph in valid_phases.items() if not ph & key_phases[key]), None) \
                    if share_valid else None
                if valid is None:
                    sems.append(Sem(len(sems), f"sem_{oid}_valid", c.name, "valid"))
                    valid = sems[-1].name
                names[key] = (ready, valid)
            touched[names[key]] = touched.get(names[key], set()) | cores
            if names[key][0] != names[key][1]:
                valid_phases.setdefault(names[key][1], set()).update(key_phases[key])
                valid_cores.setdefault(names[key][1], set()).update(cores)
        chosen[(ex.name, c.name)] = names[key]
    from dataclasses import replace
    if len(sems) > NUM_SEMAPHORES:
        if not spill:
            raise EmitError(f"{mp.name}: its communication ops need {len(sems)} semaphores per core; "
                            f"{TT_METAL_VERSION} has {NUM_SEMAPHORES}")
        sems[NUM_SEMAPHORES:] = [replace(x, kind="global") for x in sems[NUM_SEMAPHORES:]]
    out = tuple(replace(t, ready=chosen[(t.exchange, t.op)][0], valid=chosen[(t.exchange, t.op)][1])
                for t in transfers)
    return tuple(sems), out


# -- transfers -----------------------------------------------------------------------------------------

def _nonempty_c(mp: MeshProgram, buffer: str, x: str, y: str) -> str:
    """C: the box of ``buffer`` on core (x, y) at the current loop values holds at least one element."""
    conds = []
    for d in mp.tensor(buffer).box:
        if d.fixed is not None:
            continue                    # the same on every core (a window always holds its span)
        c = {"x": x, "y": y}.get(d.coord, cexpr.var_c(d.coord))
        c = f"({c} - {d.origin})" if d.origin else c
        conds.append(f"mica_positive({d.extent} - {d.tile} * {c})")
    out = "1"
    for c in conds:
        out = c if out == "1" else f"mica_both({out}, {c})"
    return out


def _both(a: str, b: str) -> str:
    return b if a == "1" else a if b == "1" else f"mica_both({a}, {b})"


#: the fields of each communication op this back end renders; any other field set away from its default
#: (a later MeshIR extension) is an EmitError rather than silently ignored
RENDERED = {
    "Multicast": {"name", "array", "src", "dst", "axis", "root", "senders", "receivers", "colour", "routes",
                  "max_hops", "relation"},
    "Shift": {"name", "array", "src", "dst", "direction", "senders", "receivers", "colour", "routes", "max_hops",
              "relation", "distance"},
    "RingShift": {"name", "array", "src", "dst", "axis", "kind", "n", "across", "groups", "routes", "max_hops",
                  "relation"},
}


def _check_fields(c) -> None:
    import dataclasses
    known = RENDERED.get(type(c).__name__, set())
    for f in dataclasses.fields(c):
        if f.name in known:
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if getattr(c, f.name) != default:
            raise EmitError(f"{type(c).__name__} {c.name}: field {f.name} = {getattr(c, f.name)!r} has no Metalium "
                            f"rendering yet")


def _transfers(mp: MeshProgram, cbs: tuple[CB, ...], dtype: str, double: DoubleBuffering) -> tuple[Transfer, ...]:
    w, h = mp.mesh
    wr = mp.region
    by_name = {c.name: c for c in cbs}
    out = []
    for i, ex, j, c, scope in _comm_ops(mp):
        _check_fields(c)
        srcs = {o.src for o in ex.ops} if i not in double.exchanges else set()
        dst_cb = by_name[cb_name(c.dst, "landing")] if c.dst in srcs else by_name[cb_name(c.dst)]
        src_cb = by_name[cb_name(c.src)]
        tiles = src_cb.slot_pages
        common = dict(exchange=ex.name, op=c.name, src_buffer=c.src, dst_buffer=c.dst, src_cb=src_cb.index,
                      dst_cb=dst_cb.index, tiles=tiles, noc_bytes=tiles * src_cb.page_bytes,
                      ready="", valid="",
                      guard=cexpr.lin_c(ex.guard) if ex.guard is not None else "")
        if isinstance(c, Multicast):
            if c.receivers.xs != 1 or c.receivers.ys != 1:
                raise EmitError(f"multicast {c.name}: strided receivers cannot be one NoC multicast rectangle")
            r = c.receivers
            root = cexpr.lin_c(c.root)
            if c.axis == "x":
                line_ok = f"mica_in_range(my_y, {cexpr.lower_c(r.y0)}, {cexpr.upper_c(r.y1)}, 1, 0)"
                mcast = (cexpr.lower_c(r.x0, wr.x0), cexpr.upper_c(r.x1, wr.x1), "my_y", "(my_y + 1)")
                src = (root, "my_y")
            else:
                line_ok = f"mica_in_range(my_x, {cexpr.lower_c(r.x0)}, {cexpr.upper_c(r.x1)}, 1, 0)"
                mcast = ("my_x", "(my_x + 1)", cexpr.lower_c(r.y0, wr.y0), cexpr.upper_c(r.y1, wr.y1))
                src = ("my_x", root)
            send = _both(_both(cexpr.in_rect_c(c.senders), line_ok), _nonempty_c(mp, c.src, "my_x", "my_y"))
            recv = _both(cexpr.in_rect_c(c.receivers), _nonempty_c(mp, c.src, src[0], src[1]))
            out.append(Transfer(pattern="multicast", colour=c.colour, kind="multicast", send_when=send,
                                recv_when=recv, src=src, mcast=mcast, senders=str(c.senders),
                                receivers=str(c.receivers), **common))
        elif isinstance(c, Shift):
            dx, dy = STEP[c.direction]
            dx, dy = dx * c.distance, dy * c.distance
            dst = (_off("my_x", dx), _off("my_y", dy))
            src = (_off("my_x", -dx), _off("my_y", -dy))
            send = _both(cexpr.in_rect_c(c.senders), _nonempty_c(mp, c.src, "my_x", "my_y"))
            recv = _both(cexpr.in_rect_c(c.receivers), _nonempty_c(mp, c.src, *src))
            out.append(Transfer(pattern="shift", colour=c.colour, kind="unicast", send_when=send, recv_when=recv,
                                src=src, dst=dst, senders=str(c.senders), receivers=str(c.receivers), **common))
        elif isinstance(c, RingShift):
            for g in c.groups:
                dx, dy = (g.offset, 0) if c.axis == "x" else (0, g.offset)
                dst = (_off("my_x", dx), _off("my_y", dy))
                src = (_off("my_x", -dx), _off("my_y", -dy))
                out.append(Transfer(pattern=f"ring_shift/{c.kind}", colour=g.colour, kind="unicast",
                                    send_when=cexpr.in_rect_c(g.senders), recv_when=cexpr.in_rect_c(g.receivers),
                                    src=src, dst=dst, senders=str(g.senders), receivers=str(g.receivers),
                                    **common))
        else:
            raise EmitError(f"exchange {ex.name}: no Metalium rendering for {type(c).__name__}")
    return tuple(out)


def _off(v: str, d: int) -> str:
    return v if d == 0 else f"({v} + {d})" if d > 0 else f"({v} - {-d})"


# -- the plan ------------------------------------------------------------------------------------------

def build_plan(mp: MeshProgram) -> MetalPlan:
    arch = _arch(mp)
    for t in mp.tensors:
        if t.dtype in INT_DTYPES and t.dtype not in DATA_FORMATS:
            raise EmitError(f"array {t.array} (tensor {t.name}) of {mp.name} is {t.dtype}; the Metalium back end "
                            f"takes {', '.join(DATA_FORMATS)} only (tt-metal's narrower integer data formats, Int8 "
                            f"and UInt8 among them, are not generated yet; programs with {t.dtype} arrays run on "
                            f"the C emulator)")
        if t.dtype not in DATA_FORMATS:
            raise EmitError(f"tensor {t.name} of {mp.name} is {t.dtype}; Tenstorrent has no such data format "
                            f"(the Metalium back end takes {', '.join(DATA_FORMATS)})")
    for t in mp.tensors:
        if any(d.per != 1 for d in t.box):
            raise EmitError(f"tensor {t.name} of {mp.name}: a box holding block floor(t / per) of a step loop has no "
                            f"Metalium layout (plans send the step's panel instead, mica.lower.reads.step_panel)")
    dtype = float_dtype_of(mp)      # the tile routines' format; tensors of other dtypes: generic path only
    for op, _ in mp.walk():
        if not isinstance(op, (HostLoad, HostStore, Exchange, Compute, Loop, DramLoad)):
            raise EmitError(f"{mp.name}: no Metalium rendering for MeshIR op {type(op).__name__}")
        if isinstance(op, DramLoad):
            _check_dram_panel(mp, op)
    _check_host_ends(mp)
    # Every CB is created on the whole work region, as the MeshIR arena reserves every tensor at a fixed
    # offset on every core of it (a tensor's region only says where its contents matter): one creation order
    # on one CoreRangeSet gives a CB the same L1 address on every core, so a sender writes into a receiver's
    # buffer at its own address.
    steps = kernel_steps(mp)
    tile_ops, guards = [], []
    for k in mp.kernels:
        if k.name not in steps:
            continue
        op = classify(mp, k)
        if op.kind != "generic":
            try:
                guards += [(cls.name, box_domain_guard(mp, k, cls.region, steps[k.name]) or "") for cls in k.classes]
            except EmitError as exc:        # instances a tile routine cannot cover: the generic path runs them
                if "not whole boxes" in str(exc):
                    why = "whose instances are part of its boxes"
                elif "indexes no array directly" in str(exc):
                    why = "over a loop that indexes no array directly (an element of a row, say)"
                else:
                    raise
                op = TileOp(k.name, "generic", op.out, text=op.text, reason=f"a {op.kind} routine {why}")
        if op.kind == "generic":
            op = reader_op(mp, k, op.reason)
        tile_ops.append(op)
    tile_ops, guards = tuple(tile_ops), tuple(guards)
    _check_padding(mp, {o.kernel: o for o in tile_ops})
    kinds = {o.kernel: o.kind for o in tile_ops}
    double = double_buffering(mp, lambda op, scope, two: _metal_reason(mp, kinds, op, scope, two))
    dram_hosts = _dram_double(mp, kinds)
    dram_loads = {op.name: op for op, _ in mp.walk() if isinstance(op, DramLoad)}
    dram_two = frozenset(dram_loads[n].dst for _, names in dram_hosts for n in names)
    l1 = get_target(arch).sram_bytes - L1_RESERVED_BYTES
    tile_ops, cbs = _fit_scratch(mp, dtype, double, dram_two, tile_ops, l1)
    w = mp.region
    classes = _core_classes(mp)
    transfers = _transfers(mp, cbs, dtype, double)
    try:
        sems, transfers = _sems(mp, transfers)
    except EmitError:           # fewer by sharing valid flags across phases; past eight, global semaphores
        sems, transfers = _sems(mp, transfers, share_valid=True, spill=True)
    hosts = []
    for i, (ex, scope) in enumerate(_exchanges(mp)):
        if i in double.exchanges:
            hosts.append((id(_host_compute(mp, ex)), i))
    return MetalPlan(mp.name, arch, mp.target, mp.mesh, Range(w.x0, w.x1, w.y0, w.y1), classes, cbs, sems,
                     transfers, tile_ops, dtype, l1, guards,
                     _kernel_args(classes, sems, mp.mesh, mp.runtime, mp.dram, float_scalars(mp)), double, tuple(hosts),
                     tuple(n for _, names in dram_hosts for n in names), dram_hosts)


def _fit_scratch(mp: MeshProgram, dtype: str, double, dram_two, tile_ops: tuple, l1: int):
    """(tile ops, CBs): the stencils' scratch CBs when they fit (the CB indices and L1 beside the tensors), else
    the stencils on the generic path, with that reason."""
    try:
        cbs = _cbs(mp, dtype, double, dram_two, tile_ops)
        if not any(c.kind == "scratch" for c in cbs) or sum(c.total_bytes for c in cbs) <= l1:
            return tile_ops, cbs
        why = (f"its scratch circular buffers ({sum(c.total_bytes for c in cbs if c.kind == 'scratch')} B) do not fit "
               f"the {l1} B of L1 beside the tensors")
    except EmitError as exc:
        if "circular buffers needed" not in str(exc) or not any(o.kind == "stencil" for o in tile_ops):
            raise
        why = f"its scratch circular buffers do not fit the {MAX_CBS} CB indices beside the tensors"
    tile_ops = tuple(TileOp(o.kernel, "generic", o.out, text=o.text, reason=why) if o.kind == "stencil" else o
                     for o in tile_ops)
    return tile_ops, _cbs(mp, dtype, double, dram_two, tile_ops)


def _dram_double(mp: MeshProgram, kinds: dict) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """Per loop whose prefetched DRAM loads the reader double-buffers, (id of the compute that hosts them: the
    reader reads the next step's pages while it runs, the loads' names). A loop qualifies when it holds no
    exchange (every core reads its own panels), a compute follows the loads in its body, and every compute
    reading their buffers is a tile routine of that body after them (the compute kernel pops the old slot)."""
    out = []
    for loop, _ in mp.walk():
        if not isinstance(loop, Loop):
            continue
        body = list(loop.body)
        loads = [op for op in body if isinstance(op, DramLoad) and op.prefetch]
        if not loads or any(isinstance(op, (Exchange, Loop)) for op in body):
            continue
        last = max(body.index(op) for op in loads)
        host = next((op for op in body[last + 1:] if isinstance(op, Compute)), None)
        if host is None:
            continue
        bufs = {op.dst for op in loads}
        after = {id(op) for op in body[last + 1:]}
        ok = all(id(op) in after and kinds.get(op.kernel) not in READER_KINDS
                 for op, _ in mp.walk() if isinstance(op, Compute) and _kernel_reads(mp, op.kernel) & bufs)
        if ok:
            out.append((id(host), tuple(op.name for op in loads)))
    return tuple(out)


def _check_dram_panel(mp: MeshProgram, op: DramLoad) -> None:
    """Raises :class:`EmitError` unless the reader can read ``op``'s panels as whole pages of the array's
    row-major tile image in DRAM: a 2D array whose box dimensions start on tile boundaries (a
    coordinate's tile is a multiple of 32, or the dimension is whole)."""
    t = mp.tensor(op.dst)
    if len(t.box) != 2:
        raise EmitError(f"dram load {op.name}: {op.array} has {len(t.box)} dimension(s); the Metalium reader streams "
                        f"2D arrays from DRAM")
    for d in t.box:
        if d.coord is not None and (d.tile % TILE or d.window or d.padded or d.origin):
            raise EmitError(f"dram load {op.name}: the panel of {op.array} along {d} does not start on a "
                            f"{TILE}x{TILE} tile boundary at every step; the reader reads whole DRAM pages "
                            f"(compile with tiles that are multiples of {TILE})")


def _loop_of(mp: MeshProgram, ex: Exchange):
    """The innermost loop whose body holds ``ex`` directly."""
    def go(ops, loop):
        for op in ops:
            if op is ex:
                return loop
            if isinstance(op, Loop):
                r = go(op.body, op)
                if r is not None:
                    return r
        return None
    return go(mp.body, None)


def _host_compute(mp: MeshProgram, ex: Exchange):
    """The first compute after ``ex`` in its loop's body: the reader issues the next step's exchange right
    after handing that compute its turn (None when there is none)."""
    loop = _loop_of(mp, ex)
    if loop is None:
        return None
    body = list(loop.body)
    for op in body[body.index(ex) + 1:]:
        if isinstance(op, Compute):
            return op
    return None


def _kernel_reads(mp: MeshProgram, name: str) -> set[str]:
    k = mp.kernel(name)
    return {a.buffer for p in (k.parts or (k,)) for a in p.reads}


def _metal_reason(mp: MeshProgram, kinds: dict, ex: Exchange, scope, two: set) -> str | None:
    """Why the Metalium back end leaves prefetched exchange ``ex`` single-buffered, or None. The double
    buffer is a circular buffer the compute kernel pops at the exchange's place in its loop and reads at
    its front: so every compute reading it must be a tile routine of the compute kernel, sit in the
    exchange's loop body after it, and the reader needs a compute after the exchange to overlap with."""
    host = _host_compute(mp, ex)
    if host is None:
        return "no compute follows it in its loop body (nothing to overlap the next step's exchange with)"
    loaded = {op.dst for op, _ in mp.walk() if isinstance(op, DramLoad)}
    if any(c.src == c.dst and c.dst in loaded for c in ex.ops):
        return ("it multicasts panels the line's first core has just read from DRAM into the same buffer (DRAM "
                "loads are emitted single-buffered)")
    loop = _loop_of(mp, ex)
    body = list(loop.body)
    after = {id(op) for op in body[body.index(ex) + 1:]}
    for op, _ in mp.walk():
        if isinstance(op, Compute):
            reads = _kernel_reads(mp, op.kernel) & two
            if not reads:
                continue
            name = sorted(reads)[0]
            if id(op) not in after:
                return f"compute {op.kernel} reads double buffer {name} outside the step after the exchange"
            if kinds.get(op.kernel) in READER_KINDS:
                return (f"compute {op.kernel} reads double buffer {name} on the reader ({kinds[op.kernel]}), which is "
                        f"busy with the next step's exchange")
    return None


def _check_padding(mp: MeshProgram, ops: dict[str, TileOp]) -> None:
    """Tile routines compute whole tiles, padding included. Padding starts zero (the reader zeroes every
    tensor, the host stages zeros); a routine whose value at 0 is not 0 (``+ 1.0``, a fill with 1.0) makes
    its output's padding non-zero ("dirty"), and so does any routine reading a dirty tensor. A matmul stays
    exact while one of its operands has zero padding (the K padding of the other is multiplied by zeros);
    :class:`EmitError` when both may be dirty. Exchanges carry dirtiness from source to destination; loop
    bodies are walked twice so dirtiness reaches a fixed point."""
    dirty: set[str] = set()

    def go(body):
        for op in body:
            if isinstance(op, Loop):
                go(op.body)
                go(op.body)
            elif isinstance(op, Exchange):
                for c in op.ops:
                    (dirty.add if c.src in dirty else dirty.discard)(c.dst)
            elif isinstance(op, Compute):
                o = ops[op.kernel]
                if o.kind in READER_KINDS:
                    continue        # it writes its instances' elements only: padding stays as it was
                ins = [b in dirty for b in o.ins]
                if o.kind == "matmul":
                    if all(ins):
                        raise EmitError(f"kernel {o.kernel}: both operands {o.ins[0]} and {o.ins[1]} may have "
                                        f"non-zero tile padding (from an earlier routine whose value at 0 is "
                                        f"not 0); the whole-tile matmul would add it into the result")
                    now = o.out in dirty or any(ins)
                elif o.kind == "eltwise":
                    now = all(ins) if o.op == "*" else any(ins)
                else:
                    now = any(ins) or o.at_zero() != 0
                (dirty.add if now else dirty.discard)(o.out)
    go(mp.body)


def kernel_steps(mp: MeshProgram) -> dict[str, int]:
    """The steps of the loop named ``t`` around each computed kernel (1 outside), as the emulator's kernels
    see ``t``."""
    steps = {}
    for op, scope in mp.walk():
        if isinstance(op, Compute):
            steps[op.kernel] = dict(scope).get("t", 1)
    return steps


def _check_host_ends(mp: MeshProgram) -> None:
    body = list(mp.body)
    while body and isinstance(body[0], HostLoad):
        body.pop(0)
    while body and isinstance(body[-1], HostStore):
        body.pop()
    for op, _ in walk_ops(body):
        if isinstance(op, (HostLoad, HostStore)):
            raise EmitError(f"{mp.name}: host transfer of {op.array} in the middle of the program; the Metalium "
                            f"back end loads at the start and stores at the end")


# -- expansion: what the rendered expressions do, step by step -----------------------------------------

def _iterations(scope):
    names = [v for v, _ in scope]
    for values in product(*(range(n) for _, n in scope)):
        yield dict(zip(names, values))


def expand(plan: MetalPlan, mp: MeshProgram) -> list[dict]:
    """Every transfer of every step, from evaluating the rendered expressions on every core: sender,
    destinations, NoC bytes and the sender box's payload bytes; plus, per receiver, the sender it waits
    for (so a test can check both sides agree)."""
    by_exchange: dict[str, list[Transfer]] = {}
    for t in plan.transfers:
        by_exchange.setdefault(t.exchange, []).append(t)
    cores = plan.work.cores()
    out = []
    for ordinal, (ex, scope) in enumerate(_exchanges(mp)):
        for env in _iterations(scope):
            venv = {cexpr.var_c(k): v for k, v in env.items()}
            for t in by_exchange.get(ex.name, []):
                if t.guard and cexpr.evaluate(t.guard, venv) <= 0:
                    continue
                for x, y in cores:
                    e = {**venv, "my_x": x, "my_y": y}
                    rec = {"x": ordinal, "exchange": t.exchange, "op": t.op, "colour": t.colour,
                           "step": env}
                    if cexpr.evaluate(t.send_when, e):
                        if t.kind == "unicast":
                            dsts = [[cexpr.evaluate(t.dst[0], e), cexpr.evaluate(t.dst[1], e)]]
                        else:
                            x0, x1, y0, y1 = (cexpr.evaluate(v, e) for v in t.mcast)
                            dsts = [[a, b] for b in range(y0, y1) for a in range(x0, x1)]
                        if dsts:
                            out.append({**rec, "send": [x, y], "to": dsts, "noc_bytes": t.noc_bytes,
                                        "payload_bytes": mp.tensor(t.src_buffer).bytes_at(x, y, env.get("t", 0))})
                    if cexpr.evaluate(t.recv_when, e):
                        out.append({**rec, "recv": [x, y], "from": [cexpr.evaluate(t.src[0], e),
                                                                    cexpr.evaluate(t.src[1], e)]})
    return out
