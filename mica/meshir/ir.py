"""MeshIR: the frozen records between scheduling and code generation.

A :class:`MeshProgram` is a sequence of operations over regions of a ``width × height`` mesh:

* :class:`HostLoad` / :class:`HostStore` move a tensor between the host and the cores that own it;
* :class:`Exchange` groups communication that happens together: :class:`Multicast` (one root per row or
  column sends the same box to every core of it) and :class:`Shift` (cores send a box to a neighbour);
* :class:`Compute` runs a :class:`Kernel` on a rectangle of cores;
* :class:`DramLoad` has every core of a rectangle read its box of a receive buffer from an array that lives
  in device DRAM (Tenstorrent; :attr:`MeshProgram.dram` names those arrays);
* :class:`Loop` repeats its body with a loop variable (the step ``t`` of a temporal loop, or the stage
  ``s`` of a chain reduction).

Per-core storage is described by :class:`RegionTensor`: a buffer at a fixed arena offset holding a
row-major box of an array. Box dimension ``d`` is ``[tile*c, min(tile*c + tile, extent))`` where ``c`` is
the core's ``x``, ``y``, the loop variable ``t``, or 0 for a whole dimension.

Rectangles (:class:`Rect`) have bounds that are the max (lower) / min (upper) of affine expressions in the
loop variables (:class:`Lin`), so a root that moves with ``t`` and clipping at region edges are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Union

from ..affine.expr import Aff, Expr
from ..errors import MeshIRError

DIRS = ("RAMP", "N", "E", "S", "W")
ARENA_ALIGN = 16


@dataclass(frozen=True)
class Lin:
    """``const + sum(coeff * var)`` over MeshIR loop variables; with ``div > 1``, ``floor((const + sum) /
    div)`` (the block of a step loop whose iterations run ``div`` to a block: the core that owns the element
    of step ``t`` is ``floor(t / tile)``)."""

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()
    div: int = 1

    def __post_init__(self):
        if not isinstance(self.div, int) or self.div < 1:
            raise MeshIRError(f"a Lin's divisor must be a positive integer, got {self.div!r}")

    def evaluate(self, env: dict[str, int]) -> int:
        return (self.const + sum(c * env[v] for v, c in self.terms)) // self.div

    def shifted(self, k: int) -> "Lin":
        return Lin(self.const + k * self.div, self.terms, self.div)

    def __str__(self) -> str:
        parts = [f"{'' if c == 1 else '-' if c == -1 else c}{v}" for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        text = " + ".join(parts).replace("+ -", "- ")
        return f"floor(({text}) / {self.div})" if self.div != 1 else text


def lin(x: int | Lin) -> Lin:
    return x if isinstance(x, Lin) else Lin(int(x))


@dataclass(frozen=True)
class Rect:
    """Cores ``max(x0) <= x < min(x1)``, ``max(y0) <= y < min(y1)``; each bound a tuple of :class:`Lin`;
    with strides, only cores with ``x = xp (mod xs)`` and ``y = yp (mod ys)`` (phases are :class:`Lin`)."""

    x0: tuple[Lin, ...]
    x1: tuple[Lin, ...]
    y0: tuple[Lin, ...]
    y1: tuple[Lin, ...]
    xs: int = 1
    xp: Lin = Lin(0)
    ys: int = 1
    yp: Lin = Lin(0)

    @staticmethod
    def of(x0, x1, y0, y1, *, xs: int = 1, xp=0, ys: int = 1, yp=0) -> "Rect":
        def t(b):
            return tuple(lin(v) for v in b) if isinstance(b, tuple) else (lin(b),)
        return Rect(t(x0), t(x1), t(y0), t(y1), xs, lin(xp), ys, lin(yp))

    def at(self, env: dict[str, int]) -> tuple[int, int, int, int]:
        """The concrete bounding (x0, x1, y0, y1) for loop variables ``env`` (may be empty: x0 >= x1)."""
        return (max(b.evaluate(env) for b in self.x0), min(b.evaluate(env) for b in self.x1),
                max(b.evaluate(env) for b in self.y0), min(b.evaluate(env) for b in self.y1))

    def members(self, env: dict[str, int]) -> tuple[range, range]:
        """The member columns and rows for ``env`` (their product is the set of cores)."""
        x0, x1, y0, y1 = self.at(env)
        px, py = self.xp.evaluate(env) % self.xs, self.yp.evaluate(env) % self.ys
        fx = x0 + (px - x0) % self.xs
        fy = y0 + (py - y0) % self.ys
        return range(fx, max(fx, x1), self.xs), range(fy, max(fy, y1), self.ys)

    def __str__(self) -> str:
        """``[x0:x1, y0:y1]`` with ``, x = p mod s`` where a stride selects cores. When an axis's bounds and
        phase are constants, the text is reduced: the phase is printed in ``0 .. s-1``, and a stride that
        leaves one column (row) prints as that column's bounds instead."""
        def lo(b):
            return str(b[0]) if len(b) == 1 else f"max({', '.join(map(str, b))})"

        def hi(b):
            return str(b[0]) if len(b) == 1 else f"min({', '.join(map(str, b))})"

        def axis(name, b0, b1, stride, phase):
            fixed = len(b0) == len(b1) == 1 and not (b0[0].terms or b1[0].terms or phase.terms)
            if stride == 1:
                return f"{lo(b0)}:{hi(b1)}", ""
            if not fixed:
                return f"{lo(b0)}:{hi(b1)}", f", {name} = {phase} mod {stride}"
            a, b, p = b0[0].const, b1[0].const, phase.const % stride
            members = range(a + (p - a) % stride, max(a, b), stride)
            if len(members) == 1:
                return f"{members[0]}:{members[0] + 1}", ""
            return f"{a}:{b}", f", {name} = {p} mod {stride}"
        xr, xs = axis("x", self.x0, self.x1, self.xs, self.xp)
        yr, ys = axis("y", self.y0, self.y1, self.ys, self.yp)
        return f"[{xr}, {yr}{xs}{ys}]"


@dataclass(frozen=True)
class Region:
    """A constant rectangle of cores ``[x0, x1) × [y0, y1)`` with a name."""

    name: str
    x0: int
    x1: int
    y0: int
    y1: int

    def __post_init__(self):
        if not (0 <= self.x0 <= self.x1 and 0 <= self.y0 <= self.y1):
            raise MeshIRError(f"region {self.name}: bad rectangle [{self.x0}:{self.x1}, {self.y0}:{self.y1}]")

    @property
    def cores(self) -> int:
        return (self.x1 - self.x0) * (self.y1 - self.y0)

    @property
    def rect(self) -> Rect:
        return Rect.of(self.x0, self.x1, self.y0, self.y1)

    def isl(self) -> str:
        """``{ core[x, y] : x0 <= x < x1 and y0 <= y < y1 }``."""
        return f"{{ core[x, y] : {self.x0} <= x < {self.x1} and {self.y0} <= y < {self.y1} }}"

    def __str__(self) -> str:
        return f"{self.name}[{self.x0}:{self.x1}, {self.y0}:{self.y1}]"


@dataclass(frozen=True)
class BoxDim:
    """One dimension of a per-core box: ``[tile*c, min(tile*c + tile, extent))``, c = ``coord`` or 0.

    Without a coordinate the box holds the leading ``tile`` elements (usually all: ``tile == extent``;
    never more than ``extent``). Coordinate ``kb`` is the block a skewed step gives the core (:class:`Skew`);
    such a dimension is always padded. A ``padded`` dimension always holds ``tile`` elements, the ones past
    ``extent`` being zero (ring buffers, whose contents move between cores of different block sizes).

    A **window** (``span > 0``) always holds ``span`` elements, the global indices
    ``[tile*c + offset, tile*c + offset + span)``; those outside ``[0, extent)`` are never read. Homes with
    ghost zones (``offset = -ghost_lo``, ``span = tile + ghost_lo + ghost_hi``) and the strips a halo
    exchange sends and receives are windows.

    ``origin`` is the core coordinate of block 0 along an ``x`` or ``y`` dimension: an operator placed on
    cores ``[ox, ...)`` (:mod:`mica.lower.place`) gives core ``c`` block ``c - ox``. Every formula above
    reads ``c - origin`` for ``c``. ``per`` (a ``t`` dimension only) is the steps per block: the box holds
    block ``floor(t / per)`` — the home block of the core owning step ``t``'s element, when one core owns
    ``per`` consecutive steps' elements; every formula reads ``floor(c / per)`` for ``c``. It describes what
    such a multicast could deliver (:func:`mica.comm.sets.classify`); plans send the step's panel instead
    (:func:`mica.lower.reads.step_panel`), and no back end lays out a box with ``per > 1``.

    The geometry every back end uses is defined here once: :attr:`alloc` (elements allocated),
    :attr:`fixed` (the size when it is the same on every core), :meth:`size` (on one core) and
    :meth:`size_on` (on a class of cores)."""

    coord: str | None
    tile: int
    extent: int
    padded: bool = False
    offset: int = 0
    span: int = 0
    origin: int = 0
    per: int = 1

    def __post_init__(self):
        if not isinstance(self.per, int) or self.per < 1 or (self.per != 1 and self.coord != "t"):
            raise MeshIRError(f"a box dimension's steps per block is a positive integer, on a t dimension only "
                              f"(got {self.per!r} on {self.coord!r})")
        if self.coord not in (None, "x", "y", "t", "kb"):
            raise MeshIRError(f"box coordinate must be x, y, t, kb or None, got {self.coord!r}")
        if self.tile <= 0 or self.extent <= 0:
            raise MeshIRError(f"box tile and extent must be positive, got {self.tile}, {self.extent}")
        if self.coord is None and self.tile > self.extent:
            raise MeshIRError("a box dimension without a coordinate has tile <= extent")
        if self.span < 0 or (self.span == 0 and self.offset != 0):
            raise MeshIRError(f"a box window has a positive span (got span {self.span}, offset {self.offset})")
        if self.span and (self.coord not in ("x", "y") or self.padded):
            raise MeshIRError("only an x or y box dimension can be a window")
        if self.coord == "kb" and not self.padded:
            raise MeshIRError("a kb box dimension (the block of a skewed step: a ring buffer) is padded")
        if self.origin and self.coord not in ("x", "y"):
            raise MeshIRError(f"only an x or y box dimension has an origin, got origin {self.origin} on "
                              f"{self.coord!r}")

    @property
    def window(self) -> bool:
        return self.span > 0

    @property
    def alloc(self) -> int:
        """Elements the buffer allocates along this dimension, at least its largest size on any core: a
        window's span, else the tile (for a whole dimension the tile is at most the extent)."""
        return self.span or self.tile

    @property
    def fixed(self) -> int | None:
        """The size on every core when no coordinate changes it (a window, a padded -- so also a ``kb`` --
        or a whole dimension), else None."""
        if self.span:
            return self.span
        if self.padded or self.coord is None:
            return self.tile
        return None

    def lo(self, c: int) -> int:
        """Global index of the first element on a core whose coordinate for this dimension is ``c``."""
        return self.tile * (c // self.per - self.origin) + self.offset if self.coord else 0

    def size(self, c: int) -> int:
        """Elements on a core whose coordinate for this dimension is ``c`` (a partial last tile is a prefix,
        a tile past the extent is empty)."""
        f = self.fixed
        return f if f is not None else max(0, min(self.tile, self.extent - self.lo(c)))

    def size_on(self, lo: int, hi: int) -> int | None:
        """The size on every core of a class whose coordinates along an ``x`` / ``y`` dimension are
        ``[lo, hi)`` -- along ``t``, at every step -- when it is one number, else None. Sizes never grow with
        the coordinate, so along x and y the first and last core decide."""
        f = self.fixed
        if f is not None:
            return f
        if self.coord in ("x", "y"):
            return self.size(lo) if self.size(lo) == self.size(hi - 1) else None
        return self.tile if self.extent % self.tile == 0 else None

    def isl(self, var: str, prefix: str = "") -> str:
        """Constraint text for array index ``var`` inside this box dimension (the coordinate named
        ``prefix + coord``)."""
        if self.coord is None:
            return f"0 <= {var} < {self.tile}"
        c = prefix + self.coord
        if self.origin:
            c = f"({c} - {self.origin})"
        if self.per != 1:
            c = f"floor({c}/{self.per})"
        if self.span:
            lo = f"{self.tile}*{c} + {self.offset}" if self.offset else f"{self.tile}*{c}"
            return f"{lo} <= {var} < {lo} + {self.span} and 0 <= {var} < {self.extent}"
        return f"{self.tile}*{c} <= {var} < {self.tile}*{c} + {self.tile} and {var} < {self.extent}"

    def __str__(self) -> str:
        at = f"@{self.origin}" if self.origin else ""
        if self.span:
            return f"{self.coord}{at}/{self.tile}{self.offset:+d}..+{self.span}"
        pad = " padded" if self.padded else ""
        per = f"//{self.per}" if self.per != 1 else ""
        return (f"{self.coord}{per}{at}/{self.tile}" if self.coord else f":{self.tile}") + pad


@dataclass(frozen=True)
class RegionTensor:
    """A per-core buffer: ``array``'s box ``box`` on every core of ``region``, at ``offset`` in the arena.

    ``role`` is ``home`` (where the array lives; loaded from / stored to the host), ``recv`` (a received
    panel), ``partial`` (a partial result combined across cores) or ``mirror`` (a read-only second home of a
    2D array with the mesh axes swapped, for reads in the other orientation). ``ownership`` is the isl relation
    ``{ core[x, y] -> A[a...] }`` (with parameter ``t`` for buffers whose contents change per step).

    ``slots = 2``: a double buffer — the box is held twice, one slot per step parity, so a prefetched
    exchange (:class:`Exchange` ``prefetch``) fills the slot the running step does not read. The arena
    reserves :attr:`alloc_bytes` (both slots, each aligned). The emulator runs the program in program
    order (the exchange for step t+1 after step t's compute) and addresses only slot 0: the values are
    those of the double-buffered program; its SRAM and timing are those of the double-buffered program.
    """

    name: str
    array: str
    dtype: str
    elem_bytes: int
    region: Region
    box: tuple[BoxDim, ...]
    role: str
    ownership: str
    offset: int = 0
    slots: int = 1

    def __post_init__(self):
        if self.slots not in (1, 2):
            raise MeshIRError(f"tensor {self.name}: slots must be 1 or 2 (a double buffer), got {self.slots}")

    @property
    def elems(self) -> int:
        """Elements of one slot: the largest per-core box (row-major, :attr:`BoxDim.alloc` per dimension)."""
        return prod(d.alloc for d in self.box)

    @property
    def max_bytes(self) -> int:
        """Bytes of one slot: the largest per-core box."""
        return self.elem_bytes * self.elems

    @property
    def alloc_bytes(self) -> int:
        """Bytes the arena reserves: every slot, each rounded up to the arena alignment."""
        return -(-self.max_bytes // ARENA_ALIGN) * ARENA_ALIGN * self.slots

    def bytes_at(self, x: int, y: int, t: int = 0) -> int:
        env = {"x": x, "y": y, "t": t}
        return self.elem_bytes * prod(d.size(env.get(d.coord, 0) if d.coord else 0) for d in self.box)


@dataclass(frozen=True)
class Route:
    """Router setting: on ``colour``, accept from ``rx`` and forward to every direction of ``tx``."""

    colour: int
    rx: tuple[str, ...]
    tx: tuple[str, ...]
    rect: Rect

    def __post_init__(self):
        for d in (*self.rx, *self.tx):
            if d not in DIRS:
                raise MeshIRError(f"route direction {d!r} is not one of {DIRS}")

    def __str__(self) -> str:
        return f"c{self.colour} {self.rect}: {'|'.join(self.rx)} -> {'|'.join(self.tx) or '-'}"


@dataclass(frozen=True)
class Multicast:
    """Every core of ``senders`` sends its ``src`` box on ``colour``; every core of ``receivers`` gets one
    copy into ``dst``. ``axis`` is the direction of the multicast (``x``: along a row). ``relation`` is the
    communication set it implements, ``{ [core_src[x', y'] -> core_dst[x, y]] -> A[...] }`` (parameter t),
    and ``max_hops`` the longest path, proven from it."""

    name: str
    array: str
    src: str
    dst: str
    axis: str
    root: Lin
    senders: Rect
    receivers: Rect
    colour: int
    routes: tuple[Route, ...]
    max_hops: int
    relation: str = field(default="", compare=False)


@dataclass(frozen=True)
class Shift:
    """Every core of ``senders`` sends its ``src`` box ``distance`` hops towards ``direction`` (passing
    through the routers between); every core of ``receivers`` gets it into ``dst``."""

    name: str
    array: str
    src: str
    dst: str
    direction: str
    senders: Rect
    receivers: Rect
    colour: int
    routes: tuple[Route, ...]
    max_hops: int = 1
    relation: str = field(default="", compare=False)
    distance: int = 1


@dataclass(frozen=True)
class ShiftGroup:
    """Every core of ``senders`` sends to the core ``offset`` away along the ring's axis, on ``colour``;
    ``receivers`` are exactly those destinations."""

    colour: int
    senders: Rect
    receivers: Rect
    offset: int


@dataclass(frozen=True)
class RingShift:
    """Every core of a line of ``n`` cores along ``axis`` passes its ``src`` box to its ring predecessor
    (the core that works on the same block at the next step), for every line of ``across``.

    ``kind`` is ``cannon`` (neighbours, plus the wrap-around from 0 to n-1) or ``interleaved`` (logical
    ring laid out so every move is at most 2 hops). ``groups`` are the sender sets by colour; ``relation``
    is the derived source map ``{ M[t, x, y] -> core[x', y'] }`` it implements."""

    name: str
    array: str
    src: str
    dst: str
    axis: str
    kind: str
    n: int
    across: tuple[int, int]
    groups: tuple[ShiftGroup, ...]
    routes: tuple[Route, ...]
    max_hops: int
    relation: str = field(default="", compare=False)

    @property
    def colour(self) -> int:
        return self.groups[0].colour if self.groups else 0

    @property
    def colours(self) -> tuple[int, ...]:
        return tuple(g.colour for g in self.groups)


@dataclass(frozen=True)
class Skew:
    """The block ``kb`` core (x, y) works on at step t: ``(t + l(x) + l(y)) mod n`` with l the identity
    (``cannon``) or the interleaved ring position (``interleaved``)."""

    kind: str
    n: int

    def position(self, c):
        """Logical ring position of physical coordinate ``c`` (ints or numpy arrays)."""
        if self.kind == "cannon":
            return c
        return (c % 2 == 0) * (c // 2) + (c % 2 == 1) * (self.n - 1 - c // 2)

    def block(self, x, y, t):
        return (t + self.position(x) + self.position(y)) % self.n


Comm = Union[Multicast, Shift, RingShift]


@dataclass(frozen=True)
class Exchange:
    """Communication ops that run together; their colours are distinct. With a ``guard``, the exchange
    happens only at loop iterations where the guard is positive.

    ``prefetch``: the exchange is double-buffered. Inside its loop, the exchange of iteration t + 1 is
    issued when a core starts iteration t's compute (the data it sends was already there: the verifier
    checks that no compute of the loop writes a source or destination buffer), into the second slot of
    each destination buffer (``slots = 2``); a core waits for the data only where iteration t + 1 first
    uses it. At the loop's first iteration it overlaps nothing. Program order (and so every value) is
    unchanged: only the timing model and the SRAM layout differ."""

    name: str
    ops: tuple[Comm, ...]
    guard: Lin | None = None
    prefetch: bool = False

    def active(self, env: dict[str, int]) -> bool:
        return self.guard is None or self.guard.evaluate(env) > 0


@dataclass(frozen=True)
class KAccess:
    """An access of a kernel: array index ``index`` (affine in the kernel's loops) into ``buffer``."""

    ref: str
    buffer: str
    index: tuple[Aff, ...]


@dataclass(frozen=True)
class KernelClass:
    """One specialisation of a kernel: the C function ``name`` for the cores of ``region``."""

    name: str
    region: Region


@dataclass(frozen=True)
class Kernel:
    """Local compute: ``write = expr`` for every point of ``domain`` on a core, in ``order``.

    ``domain`` is isl text ``[__x, __y, __t] -> { K[loops] : ... }``: the instances core (x, y) runs at
    step t (parameters carry a ``__`` prefix so they never meet a user's loop name).
    Accesses are by global array index; the buffer's box maps them to local offsets.
    """

    name: str
    statement: str
    loops: tuple[str, ...]
    domain: str
    order: tuple[str, ...]
    write: KAccess
    reads: tuple[KAccess, ...]
    expr: Expr
    classes: tuple[KernelClass, ...]
    flops_per_instance: int = 0
    parts: tuple["Kernel", ...] = ()
    schedule: str = ""

    @property
    def statements(self) -> tuple["Kernel", ...]:
        """The single-statement kernels this kernel runs: its ``parts`` (a sequence kernel, whose
        ``domain`` is their union and ``schedule`` their order ``{ S[loops] -> [...] }``) or itself."""
        return self.parts or (self,)


@dataclass(frozen=True)
class Compute:
    """Run ``kernel`` on the cores of ``rect`` (each core through the class that contains it)."""

    kernel: str
    rect: Rect


@dataclass(frozen=True)
class DramLoad:
    """Every core of ``rect`` reads its box of ``dst`` (at the running loop values) from ``array``, which lives
    in device DRAM (an array of :attr:`MeshProgram.dram`: no home on the cores). The cores share the chip's DRAM
    bandwidth, each reading at most at one core's rate (:meth:`mica.targets.Target.dram_read_cycles`); a step's
    loads run one after another on a core.

    ``prefetch``: double-buffered, as an :class:`Exchange`'s ``prefetch``: inside its loop the load of iteration
    t + 1 is issued when a core starts iteration t's compute, into the second slot of ``dst``; program order and
    values are unchanged."""

    name: str
    array: str
    dst: str
    rect: Rect
    prefetch: bool = False


@dataclass(frozen=True)
class HostLoad:
    buffer: str
    array: str
    region: Region


@dataclass(frozen=True)
class HostStore:
    buffer: str
    array: str
    region: Region


@dataclass(frozen=True)
class Loop:
    """``body`` run ``count`` times, ``var`` = 0, 1, ... (the step loop ``t``); with ``down``, ``var`` =
    ``count - 1`` down to 0 (a sweep counting down: :attr:`mica.tiling.schedule.StepMap.down`). ``wave``: the
    steps of a wavefront — each core works only at the steps its coordinates select, and a dependence chain
    passes from core to core one step after another, so the critical path pays a busy core's block every step
    (the cost model's reading; the emulator just runs the steps). ``phase``: a loop around whole operators
    (a sequential time loop whose body the search mapped operator by operator, :mod:`mica.affine.repeat`);
    nothing inside reads its variable, so every iteration does the same work, and the loops inside it keep
    the place kernels read ``t`` from (the emulator gives it the last variable slot)."""

    var: str
    count: int
    body: tuple["Op", ...]
    wave: bool = False
    down: bool = False
    phase: bool = False


Op = Union[HostLoad, HostStore, Exchange, Compute, DramLoad, Loop]


@dataclass(frozen=True)
class MeshProgram:
    """A whole mesh program for ``target`` on a ``mesh = (width, height)``; ``region`` holds every core
    that has an arena of ``arena_bytes`` bytes; ``scalars`` are the kernel's scalar arguments in order;
    ``runtime`` the runtime parameters ``(name, lo, hi)`` among them (kernel domains name them ``__rp_<name>``:
    :mod:`mica.affine.runtime`); ``on_mesh`` the arrays that stay on the mesh between runs (:mod:`mica.meshir.on_mesh`);
    ``dram`` the input arrays that live in device DRAM and reach the cores only through :class:`DramLoad` ops."""

    name: str
    target: str
    mesh: tuple[int, int]
    region: Region
    tensors: tuple[RegionTensor, ...]
    kernels: tuple[Kernel, ...]
    body: tuple[Op, ...]
    arena_bytes: int
    scalars: tuple[str, ...] = ()
    colours: int = 0
    skew: Skew | None = None
    runtime: tuple[tuple[str, int, int], ...] = ()
    on_mesh: tuple[str, ...] = ()
    dram: tuple[str, ...] = ()

    def tensor(self, name: str) -> RegionTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise MeshIRError(f"mesh program {self.name} has no tensor {name!r}")

    def kernel(self, name: str) -> Kernel:
        for k in self.kernels:
            if k.name == name:
                return k
        raise MeshIRError(f"mesh program {self.name} has no kernel {name!r}")

    def double_buffering(self) -> dict | None:
        """What the program double-buffers (None when nothing): the prefetched exchanges and the
        two-slot buffers — for back ends to record what they did with it."""
        names = [op.name for op, _ in self.walk() if isinstance(op, (Exchange, DramLoad)) and op.prefetch]
        if not names:
            return None
        return {"prefetched_exchanges": names,
                "double_buffers": [t.name for t in self.tensors if t.slots == 2]}

    def walk(self):
        """Every op, depth first, with the loop variables in scope: yields (op, ((var, count), ...))."""
        return walk_ops(self.body)


def walk_ops(ops, scope: tuple = ()):
    """Every op of ``ops`` (a program body or part of one) and of the loops in it, depth first, with the
    loop variables in scope: yields (op, ((var, count), ...))."""
    for op in ops:
        yield op, scope
        if isinstance(op, Loop):
            yield from walk_ops(op.body, scope + ((op.var, op.count),))


def distinct_exchange_names(mp: MeshProgram) -> MeshProgram:
    """``mp`` with every exchange named once: the second and later exchanges of a name repeated in program
    order (the reductions of two operators combining partials of the same arrays, say) get the suffix
    ``#2``, ``#3``, ... For a back end that keys its transfers and semaphores by exchange name. Preserves
    everything else: ops, order, loops, tensors and kernels; ``mp`` itself when no name repeats."""
    seen: dict[str, int] = {}

    def rename(ops):
        out = []
        for op in ops:
            if isinstance(op, Exchange):
                seen[op.name] = seen.get(op.name, 0) + 1
                if seen[op.name] > 1:
                    op = replace(op, name=f"{op.name}#{seen[op.name]}")
            elif isinstance(op, Loop):
                op = replace(op, body=rename(op.body))
            out.append(op)
        return tuple(out)
    body = rename(mp.body)
    return mp if all(n == 1 for n in seen.values()) else replace(mp, body=body)


def loop_slot(loop: Loop, enclosing: int, phases: int, slots: int) -> int:
    """The variable slot of ``loop`` when ``enclosing`` loops surround it, ``phases`` of them phase loops, out of
    ``slots``: a loop that is not a phase loop takes its depth among the enclosing loops that are not, a phase
    loop the last free slot counting down -- so the kernels inside a phase loop read its outermost step loop
    as ``t`` (slot 0). The one rule of every runner of MeshIR (the emulator's op code, CSL's ``lv``). Pure."""
    return slots - 1 - phases if loop.phase else enclosing - phases


def phase_loops(mp: MeshProgram) -> tuple[Loop, ...]:
    """The loops of ``mp`` around whole operators (:attr:`Loop.phase`), outermost first. Changes nothing."""
    return tuple(op for op, _ in mp.walk() if isinstance(op, Loop) and op.phase)


def step_blocks(mp: MeshProgram) -> tuple[str, ...]:
    """The communication ops and buffers of ``mp`` that follow the block of a step loop (a :class:`Lin` with
    ``div > 1``, a :class:`BoxDim` with ``per > 1``: a multicast from the core owning step ``t``'s element),
    by name. Changes nothing."""
    out = [t.name for t in mp.tensors if any(d.per != 1 for d in t.box)]
    for op, _ in mp.walk():
        for c in getattr(op, "ops", ()) if isinstance(op, Exchange) else ():
            if isinstance(c, Multicast) and c.root.div != 1:
                out.append(c.name)
    return tuple(dict.fromkeys(out))
