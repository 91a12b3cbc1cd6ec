"""The op-code format of the native mesh emulator, on the Python side.

The contract is ``mica/runtime_c/mica_rt.h``: a program is a flat array of int64 words holding LOOP,
EXCHANGE and COMPUTE ops. This module gives each construct a frozen dataclass that validates itself on
construction (raising :class:`mica.errors.SimError`) and knows its word layout; :func:`encode` turns a
sequence of ops into the ``numpy.int64`` array that ``NativeMesh.run`` executes. ::

    Affine   c0 + c1*v0 + ... + c4*v3 over the loop variables (slots) in scope      5 words
    bound    max (lower bounds) or min (upper bounds) of up to MAX_TERMS Affines   20 words
    Rect     half-open [x0,x1) x [y0,y1) of bounds, clamped to the mesh, strided   92 words
    Box      a packed tile of a tensor in every core's arena                       19 words
    Route    colour rx tx Rect                                                     95 words
    Send     colour max_hops Rect Box                                             113 words
    Recv     colour Rect Box                                                      112 words
    Exchange 2 op_id n_routes n_sends n_recvs, then the entries (4 ...: a prefetched exchange)
    Compute  3 op_id n_entries, then (kernel_index Rect) per entry                 93 words each
    Dram     5 op_id slot Rect Box: each core of Rect reads its box of DRAM array slot  122 words
             (6 ...: a prefetched DRAM read)
    Loop     1 slot count body_words, then the body (7 ...: the variable counts down, count-1 .. 0)

Direction bits (``RAMP``, ``NORTH`` ...), link indices (``LINK_N`` ...) and opcodes match the header.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Iterable, Sequence, Union

import numpy as np

from mica.errors import SimError

# Direction bits of a route's rx/tx sets. RAMP is the link between a router and its core.
RAMP = 1
NORTH = 2
EAST = 4
SOUTH = 8
WEST = 16
ALL_DIRECTIONS = RAMP | NORTH | EAST | SOUTH | WEST

# Out-link index of a core in the per-link statistics.
LINK_N = 0
LINK_E = 1
LINK_S = 2
LINK_W = 3

OP_LOOP = 1
OP_EXCHANGE = 2
OP_COMPUTE = 3
OP_PREFETCH = 4  # an EXCHANGE issued when each core started its previous compute (double buffering)
OP_DRAM = 5      # every core of a rectangle reads its box of a DRAM array (mica_rt.h "DRAM level")
OP_DRAM_PREFETCH = 6  # a DRAM op issued when each core started its previous compute (double buffering)
OP_LOOP_DOWN = 7  # a loop whose variable counts down, count-1 .. 0
MAX_DRAM = 16    # DRAM array slots of a mesh

MAX_VARS = 4
MAX_RANK = 6
MAX_TERMS = 4  # affine terms per rectangle bound

# Box axes: the coordinate a box dimension is tiled by.
AXIS_WHOLE = 0  # the whole dimension (tile == extent)
AXIS_X = 1      # core column
AXIS_Y = 2      # core row
AXIS_V0 = 3     # loop variables v0..v3
AXIS_V1 = 4
AXIS_V2 = 5
AXIS_V3 = 6
N_AXES = 7

ELEM_SIZES = (1, 2, 4, 8)

WORDS_AFFINE = 2 + MAX_VARS      # constant, coefficients, divisor
WORDS_BOUND = MAX_TERMS * WORDS_AFFINE
WORDS_RECT = 4 * WORDS_BOUND + 2 + 2 * WORDS_AFFINE  # four bounds, x stride, x phase, y stride, y phase
WORDS_BOX = 3 + 4 * MAX_RANK
WORDS_ROUTE = 3 + WORDS_RECT
WORDS_SEND = 2 + WORDS_RECT + WORDS_BOX
WORDS_RECV = 1 + WORDS_RECT + WORDS_BOX
WORDS_COMPUTE_ENTRY = 1 + WORDS_RECT


def _int(value: object, what: str) -> int:
    """``value`` as a Python int (numpy integers accepted, bools and floats rejected)."""
    if isinstance(value, bool):
        raise SimError(f"{what} must be an integer, not {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise SimError(f"{what} must be an integer, not {value!r}") from None


def _set(obj: object, name: str, value: object) -> None:
    """Assigns a field of a frozen dataclass during normalisation in ``__post_init__``."""
    object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class Affine:
    """``floor((const + sum(coeffs[i] * v[i])) / div)`` over the loop variables; missing coefficients are 0;
    ``div >= 1`` (1: a plain affine value; more: the block of a step loop, :class:`mica.meshir.ir.Lin`).

    Trailing zero coefficients are dropped, so equal values compare equal.
    """

    const: int = 0
    coeffs: tuple[int, ...] = ()
    div: int = 1

    def __post_init__(self) -> None:
        _set(self, "const", _int(self.const, "affine constant"))
        _set(self, "div", _int(self.div, "affine divisor"))
        if self.div < 1:
            raise SimError(f"affine divisor {self.div} must be >= 1")
        coeffs = [_int(c, "affine coefficient") for c in self.coeffs]
        while coeffs and coeffs[-1] == 0:
            coeffs.pop()
        if len(coeffs) > MAX_VARS:
            raise SimError(f"affine value has {len(coeffs)} coefficients; at most {MAX_VARS} loop variables")
        _set(self, "coeffs", tuple(coeffs))
        if not coeffs and self.div != 1:            # a constant: divided once here
            _set(self, "const", self.const // self.div)
            _set(self, "div", 1)

    @property
    def is_const(self) -> bool:
        return not self.coeffs

    @classmethod
    def var(cls, slot: int, scale: int = 1, offset: int = 0) -> Affine:
        """``offset + scale * v[slot]``."""
        slot = _int(slot, "loop slot")
        if not 0 <= slot < MAX_VARS:
            raise SimError(f"loop slot {slot} not in 0..{MAX_VARS - 1}")
        coeffs = [0] * (slot + 1)
        coeffs[slot] = scale
        return cls(offset, tuple(coeffs))

    def __add__(self, other: AffineLike) -> Affine:
        o = as_affine(other)
        if self.div != 1 or o.div != 1:
            raise SimError("affine values with a divisor cannot be added or scaled")
        n = max(len(self.coeffs), len(o.coeffs))
        a, b = self.coeffs + (0,) * (n - len(self.coeffs)), o.coeffs + (0,) * (n - len(o.coeffs))
        return Affine(self.const + o.const, tuple(x + y for x, y in zip(a, b)))

    __radd__ = __add__

    def __sub__(self, other: AffineLike) -> Affine:
        return self + as_affine(other) * -1

    def __mul__(self, k: int) -> Affine:
        k = _int(k, "affine scale")
        if self.div != 1:
            raise SimError("affine values with a divisor cannot be added or scaled")
        return Affine(self.const * k, tuple(c * k for c in self.coeffs))

    __rmul__ = __mul__

    def evaluate(self, v: Sequence[int] = ()) -> int:
        """The value for loop variables ``v`` (missing ones are 0)."""
        return (self.const + sum(c * (v[i] if i < len(v) else 0) for i, c in enumerate(self.coeffs))) // self.div

    def words(self) -> list[int]:
        return [self.const, *self.coeffs, *([0] * (MAX_VARS - len(self.coeffs))), self.div]


AffineLike = Union[Affine, int]


def as_affine(value: AffineLike) -> Affine:
    """An Affine from an Affine or a plain integer."""
    return value if isinstance(value, Affine) else Affine(_int(value, "affine value"))


Bound = tuple[Affine, ...]
BoundLike = Union[AffineLike, Sequence[AffineLike]]


def as_bound(value: BoundLike, lower: bool) -> Bound:
    """A rectangle bound: the max (``lower``) or min of its terms. Constant terms are folded into one
    (placed last), repeated terms dropped; at most :data:`MAX_TERMS` terms remain."""
    terms = [as_affine(t) for t in value] if isinstance(value, (tuple, list)) else [as_affine(value)]
    if not terms:
        raise SimError("a rectangle bound needs at least one term")
    out: list[Affine] = []
    for t in terms:
        if not t.is_const and t not in out:
            out.append(t)
    consts = [t.const for t in terms if t.is_const]
    if consts:
        out.append(Affine(max(consts) if lower else min(consts)))
    if len(out) > MAX_TERMS:
        raise SimError(f"a rectangle bound has {len(out)} distinct terms; at most {MAX_TERMS}")
    return tuple(out)


@dataclass(frozen=True)
class Rect:
    """Cores ``max(x0) <= x < min(x1)``, ``max(y0) <= y < min(y1)``, clamped to the mesh, with
    ``x = xp (mod xs)`` and ``y = yp (mod ys)`` (strides 1: every core of the rectangle).

    Each bound is a tuple of Affines (lower bounds take the max, upper bounds the min); a single Affine
    or int is accepted for a bound with one term.
    """

    x0: Bound
    x1: Bound
    y0: Bound
    y1: Bound
    xs: int = 1
    xp: Affine = Affine(0)
    ys: int = 1
    yp: Affine = Affine(0)

    def __post_init__(self) -> None:
        for name in ("x0", "x1", "y0", "y1"):
            _set(self, name, as_bound(getattr(self, name), lower=name.endswith("0")))
        for name in ("xs", "ys"):
            v = _int(getattr(self, name), f"rectangle {name}")
            if not 1 <= v <= 1 << 20:
                raise SimError(f"rectangle stride {name}={v} not in 1..{1 << 20}")
            _set(self, name, v)
        _set(self, "xp", as_affine(self.xp))
        _set(self, "yp", as_affine(self.yp))

    @classmethod
    def const(cls, x0: int, x1: int, y0: int, y1: int) -> Rect:
        """A rectangle with constant bounds."""
        return cls(x0, x1, y0, y1)

    @classmethod
    def cell(cls, x: int, y: int) -> Rect:
        """The single core (x, y)."""
        return cls.const(x, x + 1, y, y + 1)

    def evaluate(self, v: Sequence[int] = ()) -> tuple[int, int, int, int]:
        """(x0, x1, y0, y1) for loop variables ``v``, not clamped to a mesh."""
        def lo(b: Bound) -> int:
            return max(t.evaluate(v) for t in b)

        def hi(b: Bound) -> int:
            return min(t.evaluate(v) for t in b)
        return lo(self.x0), hi(self.x1), lo(self.y0), hi(self.y1)

    def words(self) -> list[int]:
        out: list[int] = []
        for bound in (self.x0, self.x1, self.y0, self.y1):
            padded = bound + (bound[-1],) * (MAX_TERMS - len(bound))  # repeating a term changes nothing
            for term in padded:
                out += term.words()
        return out + [self.xs, *self.xp.words(), self.ys, *self.yp.words()]


RectLike = Union[Rect, Sequence[int]]


def as_rect(value: RectLike) -> Rect:
    """A Rect from a Rect or a constant ``(x0, x1, y0, y1)`` tuple."""
    if isinstance(value, Rect):
        return value
    if len(value) != 4:
        raise SimError(f"a rectangle is (x0, x1, y0, y1), got {value!r}")
    return Rect.const(*value)


@dataclass(frozen=True)
class BoxDim:
    """One dimension of a box.

    At a core, ``lo = tile * coord(axis)`` and ``ext = clamp(extent - lo, 0, tile)``, where the coordinate
    is 0 (AXIS_WHOLE: the leading ``tile <= extent`` elements), the core's x or y minus ``origin`` (the core
    holding block 0: negative for a staging box, whose core holds the block of a core further on), or a loop
    variable.
    """

    axis: int
    tile: int
    extent: int
    origin: int = 0

    def __post_init__(self) -> None:
        for name in ("axis", "tile", "extent", "origin"):
            _set(self, name, _int(getattr(self, name), f"box {name}"))
        if self.origin and self.axis not in (AXIS_X, AXIS_Y):
            raise SimError(f"box origin {self.origin}: only on the x or y axis")
        if not 0 <= self.axis < N_AXES:
            raise SimError(f"box axis {self.axis} not in 0..{N_AXES - 1}")
        if self.tile < 0 or self.extent < 0:
            raise SimError(f"box tile {self.tile} and extent {self.extent} must be >= 0")
        if self.axis == AXIS_WHOLE and self.tile > self.extent:
            raise SimError(
                f"a box dimension without a coordinate needs tile <= extent (got {self.tile}, {self.extent})"
            )

    @classmethod
    def whole(cls, extent: int) -> BoxDim:
        """A dimension held entirely by every core."""
        return cls(AXIS_WHOLE, extent, extent)


@dataclass(frozen=True)
class Box:
    """A row-major packed box at byte ``offset`` of every core's arena, elements of ``elem`` bytes."""

    offset: int
    elem: int
    dims: tuple[BoxDim, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "offset", _int(self.offset, "box offset"))
        _set(self, "elem", _int(self.elem, "box element size"))
        _set(self, "dims", tuple(self.dims))
        if self.offset < 0:
            raise SimError(f"negative box offset {self.offset}")
        if self.elem not in ELEM_SIZES:
            raise SimError(f"box element size {self.elem} not in {ELEM_SIZES}")
        if len(self.dims) > MAX_RANK:
            raise SimError(f"box rank {len(self.dims)} exceeds {MAX_RANK}")
        if not all(isinstance(d, BoxDim) for d in self.dims):
            raise SimError("box dims must be BoxDim instances")

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the whole tensor (the host array of a host copy)."""
        return tuple(d.extent for d in self.dims)

    @property
    def max_bytes(self) -> int:
        """Bytes of the largest per-core box."""
        n = self.elem
        for d in self.dims:
            n *= min(d.tile, d.extent)
        return n

    def words(self) -> list[int]:
        out = [self.offset, self.elem, len(self.dims)]
        for d in self.dims:
            out += [d.axis, d.tile, d.extent, d.origin]
        return out + [0] * (4 * (MAX_RANK - len(self.dims)))


def _check_colour(colour: int) -> int:
    colour = _int(colour, "colour")
    if colour < 0:
        raise SimError(f"negative colour {colour}")
    return colour


@dataclass(frozen=True)
class Route:
    """Sets router ``(rx, tx)`` for ``colour`` on every core of ``rect`` (direction bit sets)."""

    colour: int
    rx: int
    tx: int
    rect: Rect

    def __post_init__(self) -> None:
        _set(self, "colour", _check_colour(self.colour))
        for name in ("rx", "tx"):
            bits = _int(getattr(self, name), f"route {name}")
            if bits & ~ALL_DIRECTIONS or bits < 0:
                raise SimError(f"route {name} {bits} is not a set of direction bits")
            _set(self, name, bits)
        _set(self, "rect", as_rect(self.rect))

    def words(self) -> list[int]:
        return [self.colour, self.rx, self.tx, *self.rect.words()]


@dataclass(frozen=True)
class Send:
    """Every core of ``rect`` with a non-empty ``box`` injects the box as one message on ``colour``."""

    colour: int
    max_hops: int
    rect: Rect
    box: Box

    def __post_init__(self) -> None:
        _set(self, "colour", _check_colour(self.colour))
        _set(self, "max_hops", _int(self.max_hops, "max_hops"))
        if self.max_hops < 0:
            raise SimError(f"negative max_hops {self.max_hops}")
        _set(self, "rect", as_rect(self.rect))

    def words(self) -> list[int]:
        return [self.colour, self.max_hops, *self.rect.words(), *self.box.words()]


@dataclass(frozen=True)
class Recv:
    """Every core of ``rect`` with a non-empty ``box`` expects exactly one message on ``colour``."""

    colour: int
    rect: Rect
    box: Box

    def __post_init__(self) -> None:
        _set(self, "colour", _check_colour(self.colour))
        _set(self, "rect", as_rect(self.rect))

    def words(self) -> list[int]:
        return [self.colour, *self.rect.words(), *self.box.words()]


@dataclass(frozen=True)
class Exchange:
    """One bulk-synchronous communication step: routes, then sends routed to their receives.

    ``prefetch``: timed as double-buffered (opcode ``OP_PREFETCH``): inside a loop, messages depart at
    the sender's clock at the start of its previous compute of the same loop, and a receiver waits for
    them only at its next compute. Payloads are copied exactly as for a plain exchange."""

    op_id: int
    routes: tuple[Route, ...] = ()
    sends: tuple[Send, ...] = ()
    recvs: tuple[Recv, ...] = ()
    prefetch: bool = False

    def __post_init__(self) -> None:
        _set(self, "op_id", _int(self.op_id, "op id"))
        for name, kind in (("routes", Route), ("sends", Send), ("recvs", Recv)):
            items = tuple(getattr(self, name))
            if not all(isinstance(i, kind) for i in items):
                raise SimError(f"exchange {name} must be {kind.__name__} instances")
            _set(self, name, items)

    def words(self) -> list[int]:
        out = [OP_PREFETCH if self.prefetch else OP_EXCHANGE, self.op_id, len(self.routes), len(self.sends),
               len(self.recvs)]
        for entry in (*self.routes, *self.sends, *self.recvs):
            out += entry.words()
        return out


@dataclass(frozen=True)
class Compute:
    """Calls kernel ``k`` on every core of its rectangle, for each ``(k, rect)`` entry in order."""

    op_id: int
    entries: tuple[tuple[int, Rect], ...] = ()

    def __post_init__(self) -> None:
        _set(self, "op_id", _int(self.op_id, "op id"))
        entries = []
        for kernel, rect in self.entries:
            kernel = _int(kernel, "kernel index")
            if kernel < 0:
                raise SimError(f"negative kernel index {kernel}")
            entries.append((kernel, as_rect(rect)))
        _set(self, "entries", tuple(entries))

    def words(self) -> list[int]:
        out = [OP_COMPUTE, self.op_id, len(self.entries)]
        for kernel, rect in self.entries:
            out += [kernel, *rect.words()]
        return out


@dataclass(frozen=True)
class Dram:
    """Every core of ``rect`` whose ``box`` is non-empty copies its box of the DRAM array bound to ``slot``
    (:meth:`mica.native_sim.runtime.NativeMesh.dram_bind`; the row-major array of the box's extents) into its
    arena, timed by the mesh's DRAM level (:meth:`~mica.native_sim.runtime.NativeMesh.set_dram`). ``prefetch``:
    timed as issued when each core started its previous compute of the loop (op code DRAM_PREFETCH)."""

    op_id: int
    slot: int
    rect: Rect
    box: Box
    prefetch: bool = False

    def __post_init__(self) -> None:
        _set(self, "op_id", _int(self.op_id, "op id"))
        _set(self, "slot", _int(self.slot, "DRAM slot"))
        if not 0 <= self.slot < MAX_DRAM:
            raise SimError(f"DRAM slot {self.slot} not in 0..{MAX_DRAM - 1}")
        _set(self, "rect", as_rect(self.rect))
        if not isinstance(self.box, Box):
            raise SimError(f"a DRAM op needs a Box, got {self.box!r}")

    def words(self) -> list[int]:
        return [OP_DRAM_PREFETCH if self.prefetch else OP_DRAM, self.op_id, self.slot, *self.rect.words(),
                *self.box.words()]


@dataclass(frozen=True)
class Loop:
    """Runs ``body`` ``count`` times with ``v[slot] = 0 .. count-1`` (``count-1 .. 0`` with ``down``)."""

    slot: int
    count: int
    body: tuple[Op, ...] = field(default=())
    down: bool = False

    def __post_init__(self) -> None:
        _set(self, "slot", _int(self.slot, "loop slot"))
        _set(self, "count", _int(self.count, "loop count"))
        _set(self, "body", tuple(self.body))
        if not 0 <= self.slot < MAX_VARS:
            raise SimError(f"loop slot {self.slot} not in 0..{MAX_VARS - 1}")
        if self.count < 0:
            raise SimError(f"negative loop count {self.count}")
        if not all(isinstance(op, (Loop, Exchange, Compute, Dram)) for op in self.body):
            raise SimError("a loop body holds Loop, Exchange, Compute and Dram ops")

    def words(self) -> list[int]:
        return _encode_ops((self,), in_use=frozenset())


Op = Union[Loop, Exchange, Compute, Dram]


def _encode_ops(ops: Iterable[Op], in_use: frozenset[int]) -> list[int]:
    """Words of ``ops``; rejects a loop reusing a slot of an enclosing loop."""
    out: list[int] = []
    for op in ops:
        if isinstance(op, Loop):
            if op.slot in in_use:
                raise SimError(f"loop slot {op.slot} is already used by an enclosing loop")
            body = _encode_ops(op.body, in_use | {op.slot})
            out += [OP_LOOP_DOWN if op.down else OP_LOOP, op.slot, op.count, len(body), *body]
        elif isinstance(op, (Exchange, Compute, Dram)):
            out += op.words()
        else:
            raise SimError(f"not an op: {op!r}")
    return out


def encode(ops: Iterable[Op]) -> np.ndarray:
    """The int64 op code of ``ops`` (a sequence of Loop, Exchange, Compute and Dram)."""
    words = _encode_ops(ops, frozenset())
    try:
        return np.array(words, dtype=np.int64)
    except OverflowError:
        raise SimError("an op-code value does not fit in 64 bits") from None
