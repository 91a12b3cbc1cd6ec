"""The schedule: a frozen, JSON-serialisable record of every mapping decision.

A :class:`Schedule` says, for a program on a mesh of ``mesh = (width, height)`` cores:

* ``space``: which loops map to mesh axes ``x`` (columns) and ``y`` (rows), block-tiled:
  ``core_axis = floor(loop / tile)`` — relation ``{ S[..., l, ...] -> core[x, y] : x = floor(l / tile) }``;
* ``step``: at most one loop made temporal across cores in lock-step: ``t = floor(l / tile)`` with data for
  step ``t`` moved just before it (SUMMA-style panels);
* ``local_order``: per statement, the order of the loops a core runs inside its tile (outermost first);
  ``-j`` for a loop run downwards (:func:`loop_name` gives the loop);
* ``homes``: per array, where its data lives between operations: per dimension a mesh axis (block-tiled
  with the given tile) or ``None`` (whole dimension on one core), plus ``pin``: the coordinate on mesh
  axes the array does not span (``{"x": 0}``: the array lives in column 0);
* ``reduce``: how a reduction loop mapped to an axis is combined across cores: ``"chain"`` (one-hop
  shifts towards coordinate 0, each core adding its partial), ``"tree"`` (chains inside groups of
  ``group`` cores in parallel, then a chain over the group roots: MeshGEMV's two-level K-tree) or
  ``"levels"`` (a ``group``-ary tree of as many levels as it takes: chains inside groups of ``group`` cores,
  then inside groups of ``group`` of their roots, and so on; ``group = 2`` is a binary tree of log2 depth);
* ``family``: the plan family, one of :data:`PLAN_FAMILIES` (``derived`` when nothing was asked for;
  ``summa``, ``cannon``, ``interleaved``, ``chain``, ``ktree``, ``levels``, ``halo`` for the reference plans of
  :mod:`mica.tiling.plans`; ``one-core``; ``operators`` for a phased schedule; ``slices`` when each core runs
  its slice of the spatial loops in the original order, without a step loop; ``wavefront`` when loops that
  carry dependences of bounded distance are spread and each core runs its block at a step skewed by its
  coordinates, :attr:`StepMap.wave`); ``searched``: chosen by the
  schedule search; ``order``: in which order a phased schedule's operators were mapped, one of
  :data:`OPERATOR_ORDERS` (re-deriving it for another mesh maps them in the same order). These are typed
  decisions; :attr:`Schedule.name` is only the label printed for people, made from them;
* ``dram``: arrays *streamed from device DRAM* (a target with a DRAM level, :attr:`mica.targets.Target.has_dram`):
  read-only inputs of the step loop that stay in DRAM — no home on the cores, no host load into the arenas —
  and whose panels each core reads into its receive buffer at every step (:class:`mica.meshir.ir.DramLoad`);
  the step loop's tile is then free of the homes (it sets the panel size). Empty for every other plan.
  ``dram_roots``: a panel every core of a row (column) shares is read from DRAM by the row's (column's) first
  core only and multicast along the line, as Tenstorrent's ``matmul_multicore_reuse_mcast`` does, instead of
  every core reading its own copy (the DRAM traffic drops by the line's length);
* ``reasons``: the human-readable account of each decision;
* ``phases``: for a program of several operators, one schedule per operator, run in order; a phase's
  ``mesh`` is the rectangle of cores it runs on and ``origin`` that rectangle's first core (operators
  placed side by side on disjoint rectangles run at the same time, :mod:`mica.lower.place`);
* ``pieces``: ``(array, dim, count)`` when the phases map the program cut into ``count`` pieces along
  dimension ``dim`` of ``array`` (:func:`mica.affine.pieces.cut_program`): the phases then name the pieces'
  statements, and a piece's operators on different rectangles stream from one piece to the next;
* ``repeat``: ``(nest, loop, count, first, end)`` when the phases map the program with the sequential loop
  ``loop`` of its top-level nest at position ``nest`` taken off (:func:`mica.affine.repeat.repeated_program`: the loop's body run once) and phases
  ``first .. end - 1`` (the body's operators) run ``count`` times in a loop around them (a *phase loop*,
  :attr:`mica.meshir.ir.Loop.phase`), each with its own mapping and the layout changes between them inside.

Schedules depend on the mesh only through tiles; :func:`mica.tiling.mapping.derive_schedule` with
``like=`` re-instantiates a schedule's decisions for another mesh.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from ..errors import ScheduleError

AXES = ("x", "y")
OTHER_AXIS = {"x": "y", "y": "x"}      # each mesh axis to the other
REDUCES = ("chain", "tree", "levels")
SCHEDULE_VERSION = 1
PLAN_FAMILIES = ("derived", "one-core", "summa", "cannon", "interleaved", "chain", "ktree", "levels", "halo", "operators",
                 "slices", "wavefront")
OPERATOR_ORDERS = ("program", "heaviest-first")
#: Families whose label says when the step loop's panels are double-buffered (``summa+db``).
_STEPPED = ("summa", "cannon", "interleaved", "halo")



def loop_name(entry: str) -> str:
    """The loop an entry of a local loop order runs (:func:`mica.tiling.mapping.local_order`): ``j`` for ``j``
    and for ``-j`` (the loop run downwards)."""
    return entry[1:] if entry.startswith("-") else entry

@dataclass(frozen=True)
class SpaceMap:
    """Loop ``loop`` is block-tiled onto mesh axis ``axis``: core coordinate = floor(loop / tile)."""

    loop: str
    axis: str
    tile: int

    def __post_init__(self):
        if self.axis not in AXES:
            raise ScheduleError(f"space map of loop {self.loop!r}: axis must be 'x' or 'y', got {self.axis!r}")
        if self.tile <= 0:
            raise ScheduleError(f"space map of loop {self.loop!r}: tile must be positive, got {self.tile}")


SKEWS = ("none", "cannon", "interleaved")
BUFFERS = (1, 2)


@dataclass(frozen=True)
class StepMap:
    """Loop ``loop`` runs in ``steps`` lock-step phases across the mesh.

    ``skew="none"``: at step t every core works on block ``kb = t`` of the loop (its panels are multicast
    from the core row/column that holds them, SUMMA-style). ``skew="cannon"``: core (x, y) works on block
    ``kb = (t + x + y) mod steps`` and passes its panels to its neighbour after each step (a systolic ring
    shift; the ring's wrap-around spans the whole line). ``skew="interleaved"``: the same with logical ring
    positions ``l(0), l(1), ...`` laid out so every ring neighbour is at most 2 hops away (MeshGEMM):
    ``l(x) = x / 2`` for even x, ``steps - 1 - (x - 1) / 2`` for odd x. Skewed steps need a square
    ``steps × steps`` block of cores.

    ``sweep=True``: the loop carries a dependence from one iteration to the next (a stencil's time loop)
    and encloses every statement; each core runs its part of iteration ``t`` at step ``t`` (tile 1), the
    statements one after another, and produced data a statement reads from a neighbour arrives by a halo
    exchange just before it.

    ``buffers=2``: double buffering of received panels. The read-only panels a step receives (multicast
    SUMMA panels, ring-shifted Cannon/interleaved panels) get a second slot; the exchange for step t + 1
    is issued when step t's compute starts, into the slot step t does not read, so communication hides
    behind compute (a step costs about max(compute, communication) instead of their sum) at the price of
    one more panel buffer per received array in every core's SRAM. A sweep's halo strips are data the
    step writes and cannot be prefetched, so a sweep is single-buffered.

    ``wave = (wx, wy)`` (a sweep only): a *wavefront* (:mod:`mica.tiling.wavefront`). The spatial loops may
    carry dependences of bounded distance; core (x, y) runs its block of iteration ``l`` of the sweep loop at
    step ``t = period*l + wx*x + wy*y`` — placement ``{ S[.., l, ..] -> M[t, x, y] : t = period*l + wx*x +
    wy*y }`` — so every dependence between blocks on two cores goes from an earlier step to a later one and
    its data arrives by the halo exchange before the step (legality proves it with isl). ``loop = ""``: no
    sweep loop (a 2D recurrence ``A[i][j] = f(A[i-1][j], A[i][j-1])``), every statement is in the step and
    ``t = wx*x + wy*y``. ``steps`` covers the pipeline's fill and drain: ``period*(n - 1) + wx*(bx - 1) +
    wy*(by - 1) + 1`` for ``n`` sweep iterations on ``bx x by`` blocks. A weight may be negative (a recurrence
    that counts down, deriche's right-to-left pass, runs from the last block to the first): ``start`` then
    shifts every step, ``t = period*l + wx*x + wy*y + start``, so the first block runs at step 0, and the
    pipeline takes ``|wx|*(bx - 1) + |wy|*(by - 1)`` steps to fill.

    ``down`` (a sweep that is not a wavefront): the loop counts down, as the program runs it (a back
    substitution's column sweep, ``-j`` in its statements' order): step ``t`` still runs iteration ``t``,
    and the steps run from the last to the first (MeshIR's :class:`~mica.meshir.ir.Loop` ``down``), so the
    panels and roots of step ``t`` are those of an upward sweep.
    """

    loop: str
    tile: int
    steps: int
    skew: str = "none"
    sweep: bool = False
    buffers: int = 1
    wave: tuple[int, int] = (0, 0)
    period: int = 1
    start: int = 0
    down: bool = False

    def __post_init__(self):
        object.__setattr__(self, "wave", tuple(int(w) for w in self.wave))
        if self.tile <= 0 or self.steps <= 0:
            raise ScheduleError(f"step map of loop {self.loop!r}: tile and steps must be positive")
        if self.skew not in SKEWS:
            raise ScheduleError(f"step map of loop {self.loop!r}: skew must be one of {SKEWS}, got {self.skew!r}")
        if self.sweep and (self.tile != 1 or self.skew != "none"):
            raise ScheduleError(f"step map of loop {self.loop!r}: a sweep runs one iteration per step, unskewed")
        if self.buffers not in BUFFERS:
            raise ScheduleError(f"step map of loop {self.loop!r}: buffers must be 1 (single) or 2 (double "
                                f"buffering of received panels), got {self.buffers!r}")
        if len(self.wave) != 2 or self.period < 1 or self.start < 0:
            raise ScheduleError(f"step map of loop {self.loop!r}: a wavefront has two weights (wx, wy), a period "
                                f">= 1 and a start >= 0, got wave {self.wave}, period {self.period}, "
                                f"start {self.start}")
        if self.wavefront and not self.sweep:
            raise ScheduleError(f"step map of loop {self.loop!r}: a wavefront is a sweep (one iteration per step)")
        if not self.loop and not self.wavefront:
            raise ScheduleError("a step map without a loop is a wavefront over the mesh (wave weights > 0)")
        if self.down and (not self.sweep or self.wavefront):
            raise ScheduleError(f"step map of loop {self.loop!r}: only a sweep that is not a wavefront counts down")
        if self.sweep and self.buffers != 1:
            raise ScheduleError(f"step map of loop {self.loop!r}: a sweep's halo strips are written by the step "
                                f"itself and cannot be double-buffered (buffers must be 1)")


    @property
    def wavefront(self) -> bool:
        """True for a wavefront: core (x, y) runs at steps offset by ``wx*x + wy*y``."""
        return self.wave != (0, 0)

    def encloses(self, loops: tuple[str, ...]) -> bool:
        """True when a statement with ``loops`` runs inside the step loop (every statement does under a
        wavefront without a sweep loop)."""
        return self.loop in loops if self.loop else True


@dataclass(frozen=True)
class Home:
    """Where ``array`` lives: per dim ``(axis or None, tile)``; ``pin`` fixes the unused axes."""

    array: str
    dims: tuple[tuple[str | None, int], ...]
    pin: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        used = [a for a, _ in self.dims if a is not None]
        if len(set(used)) != len(used):
            raise ScheduleError(f"home of {self.array}: an axis is used twice {self.dims}")
        for a in used:
            if a not in AXES:
                raise ScheduleError(f"home of {self.array}: unknown axis {a!r}")
        for a, _ in self.pin:
            if a in used or a not in AXES:
                raise ScheduleError(f"home of {self.array}: bad pinned axis {a!r}")

    def axis_of_dim(self, d: int) -> str | None:
        return self.dims[d][0]


@dataclass(frozen=True)
class Schedule:
    """A complete mapping of one program onto a ``mesh``; see the module docstring."""

    mesh: tuple[int, int]
    space: tuple[SpaceMap, ...]
    step: StepMap | None
    local_order: tuple[tuple[str, tuple[str, ...]], ...]
    homes: tuple[Home, ...]
    reduce: str = "chain"
    group: int = 0
    family: str = "derived"
    searched: bool = False
    order: str = "program"
    reasons: tuple[str, ...] = field(default=(), compare=False)
    phases: tuple["Schedule", ...] = ()
    origin: tuple[int, int] = (0, 0)
    pieces: tuple = ()
    dram: tuple[str, ...] = ()
    repeat: tuple = ()
    dram_roots: bool = False
    #: The grid of cores from (0, 0) a phased plan's operators were mapped on when it is smaller than the mesh
    #: (a square of it: :func:`mica.tiling.operators.fallback_grids`); () when they were mapped on the mesh.
    #: :func:`mica.tiling.operators.retarget_schedule` maps them on the same grid of the new mesh.
    grid: tuple = ()
    #: The loop folds the plan's program was made with (:mod:`mica.affine.fold`), in order: ``(statement, loop,
    #: factor)`` names one loop of the class folded (in the program before that fold) and its factor. A
    #: forced schedule with folds is applied to the program folded the same way (:func:`refold`).
    folds: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "origin", tuple(int(v) for v in self.origin))
        object.__setattr__(self, "grid", tuple(int(v) for v in self.grid))
        if self.grid and (len(self.grid) != 2 or not self.phases or min(self.grid) < 1
                          or self.grid[0] > self.mesh[0] or self.grid[1] > self.mesh[1]):
            raise ScheduleError(f"a schedule's grid is the (w, h) of the cores from (0, 0) its operators were "
                                f"mapped on, within its {self.mesh[0]}x{self.mesh[1]} mesh, got {self.grid}")
        object.__setattr__(self, "dram", tuple(self.dram))
        object.__setattr__(self, "folds", tuple(tuple(f) for f in self.folds))
        if any(len(f) != 3 or not isinstance(f[2], int) or f[2] < 2 for f in self.folds):
            raise ScheduleError(f"a schedule's folds are (statement, loop, factor >= 2), got {self.folds}")
        if self.dram and (self.step is None or self.step.skew != "none" or self.step.sweep or self.phases):
            raise ScheduleError(f"arrays streamed from DRAM ({', '.join(self.dram)}) need an unskewed step loop "
                                f"whose panels they fill, in a plan of one operator")
        if self.dram_roots and not self.dram:
            raise ScheduleError("dram_roots multicasts panels streamed from DRAM; the schedule streams none")
        object.__setattr__(self, "pieces", tuple(self.pieces))
        object.__setattr__(self, "repeat", tuple(self.repeat))
        if self.repeat and (len(self.repeat) != 5 or self.pieces or not
                            0 <= int(self.repeat[3]) < int(self.repeat[4]) <= len(self.phases) or int(self.repeat[2]) < 1):
            raise ScheduleError(f"a schedule with a phase loop names (nest, loop, count >= 1, first phase, end "
                                f"phase) "
                                f"within its phases and is not cut into pieces, got repeat {self.repeat}")
        if self.pieces and (len(self.pieces) != 3 or not self.phases or int(self.pieces[2]) < 2):
            raise ScheduleError(f"a schedule cut into pieces names (array, dimension, count >= 2) and has "
                                f"phases, got pieces {self.pieces}")
        if len(self.origin) != 2 or min(self.origin) < 0:
            raise ScheduleError(f"a schedule's origin is the (x, y) of its first core, got {self.origin}")
        axes = [s.axis for s in self.space]
        if len(set(axes)) != len(axes):
            raise ScheduleError(f"two loops map to the same mesh axis: {self.space}")
        loops = [s.loop for s in self.space] + ([self.step.loop] if self.step and self.step.loop else [])
        if len(set(loops)) != len(loops):
            raise ScheduleError(f"a loop is mapped twice: {loops}")
        if self.reduce not in REDUCES:
            raise ScheduleError(f"unknown cross-core reduction {self.reduce!r}; known: {', '.join(REDUCES)}")
        if self.reduce in ("tree", "levels") and self.group < 2:
            raise ScheduleError(f"a {self.reduce} reduction needs a group size >= 2, got {self.group}")
        if self.family not in PLAN_FAMILIES:
            raise ScheduleError(f"unknown plan family {self.family!r}; known: {', '.join(PLAN_FAMILIES)}")
        if self.order not in OPERATOR_ORDERS:
            raise ScheduleError(f"unknown operator order {self.order!r}; known: {', '.join(OPERATOR_ORDERS)}")

    @property
    def name(self) -> str:
        """The plan's label, made from its typed decisions: the family (``summa``, ``ktree4``, ``operators``
        ...), ``+db`` when the step loop's panels are double-buffered, and for a searched stepped plan the
        way reductions combine (``interleaved+db/chain``). Code reads the fields, never this label."""
        if self.family == "operators":
            return "operators" if self.order == "program" else f"operators-{self.order}"
        if self.family in ("ktree", "levels"):
            return f"{self.family}{self.group}"
        if self.family not in _STEPPED:
            return self.family
        label = self.family + ("+db" if self.buffers == 2 else "") + ("+dram" if self.dram else "")
        if self.searched:
            label += "/" + {"chain": "chain", "tree": f"ktree{self.group}",
                            "levels": f"levels{self.group}"}[self.reduce]
        return label

    # -- lookups -------------------------------------------------------------------------------------
    def axis_of(self, loop: str) -> SpaceMap | None:
        for s in self.space:
            if s.loop == loop:
                return s
        return None

    def loop_on(self, axis: str) -> SpaceMap | None:
        for s in self.space:
            if s.axis == axis:
                return s
        return None

    def home(self, array: str) -> Home:
        for h in self.homes:
            if h.array == array:
                return h
        raise ScheduleError(f"schedule has no home for array {array!r}")

    def order_of(self, stmt: str) -> tuple[str, ...]:
        for s, order in self.local_order:
            if s == stmt:
                return order
        raise ScheduleError(f"schedule has no local loop order for statement {stmt!r}")

    def copy(self, **kw) -> "Schedule":
        return replace(self, **kw)

    @property
    def buffers(self) -> int:
        """Receive-buffer slots of the step loop's panels: 2 when double-buffered, else 1."""
        return self.step.buffers if self.step is not None else 1

    # -- JSON ----------------------------------------------------------------------------------------
    def to_json(self) -> str:
        d = _without_default_waves(asdict(self))
        d["version"] = SCHEDULE_VERSION
        return json.dumps(d, indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "Schedule":
        try:
            d = json.loads(text)
            if d.pop("version", None) != SCHEDULE_VERSION:
                raise ScheduleError(f"schedule JSON has an unknown version (expected {SCHEDULE_VERSION})")
            return Schedule._from_dict(d)
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"malformed schedule JSON: {exc}") from None

    @staticmethod
    def _from_dict(d: dict) -> "Schedule":
        if "family" not in d:
            d = {**d, **_legacy_label(d.get("name", "derived"), bool(d.get("phases")))}
        return Schedule(
            mesh=tuple(d["mesh"]),
            space=tuple(SpaceMap(**s) for s in d["space"]),
            step=StepMap(**d["step"]) if d["step"] else None,
            local_order=tuple((s, tuple(o)) for s, o in d["local_order"]),
            homes=tuple(Home(h["array"], tuple((a, t) for a, t in h["dims"]),
                             tuple((a, c) for a, c in h["pin"])) for h in d["homes"]),
            reduce=d["reduce"],
            group=d.get("group", 0),
            family=d["family"],
            searched=bool(d.get("searched", False)),
            order=d.get("order", "program"),
            reasons=tuple(d.get("reasons", ())),
            phases=tuple(Schedule._from_dict(p) for p in d.get("phases", ())),
            origin=tuple(d.get("origin", (0, 0))),
            pieces=tuple(d.get("pieces", ())),
            repeat=tuple(d.get("repeat", ())),
            dram=tuple(d.get("dram", ())),
            dram_roots=bool(d.get("dram_roots", False)),
            grid=tuple(d.get("grid", ())),
            folds=tuple(tuple(f) for f in d.get("folds", ())),
        )

    def explain(self) -> str:
        if self.phases:
            return "\n".join(list(self.reasons) + [f"operator {i}: " + "\n  ".join(p.reasons)
                                                   for i, p in enumerate(self.phases)])
        return "\n".join(self.reasons)

    @property
    def placed(self) -> bool:
        """True when some operator runs on a rectangle of its own (not from core (0, 0) of the mesh)."""
        return any(p.origin != (0, 0) for p in self.phases)

    def cores(self) -> str:
        """The rectangle of cores this (phase) schedule runs on, as text."""
        (ox, oy), (w, h) = self.origin, self.mesh
        return f"cores [{ox}:{ox + w}, {oy}:{oy + h}]"

    def __str__(self) -> str:
        if self.phases:
            how = ", some side by side" if self.placed else " one after another"
            if self.pieces:
                a, d, n = self.pieces
                how += f" ({n} pieces along dimension {d} of {a}, streamed)"
            if self.repeat:
                _, loop, n, first, end = self.repeat
                how += (f"; operators {first}-{end - 1} run {n} times (loop {loop} around them, each operator "
                        f"mapped on its own)")
            return "\n".join([f"schedule '{self.name}' on mesh {self.mesh[0]}x{self.mesh[1]}: "
                               f"{len(self.phases)} operators{how}"] +
                              [f"operator {i}" + (f" on {p.cores()}" if self.placed else "") + f": {p}"
                               for i, p in enumerate(self.phases)])
        lines = [f"schedule '{self.name}' on mesh {self.mesh[0]}x{self.mesh[1]}:"]
        for s in self.space:
            lines.append(f"  loop {s.loop} -> mesh {s.axis}, tile {s.tile}")
        if self.step:
            skew = "" if self.step.skew == "none" else f", skewed ({self.step.skew} ring shifts)"
            if self.step.buffers == 2:
                skew += ", double-buffered panels (step t+1's exchange overlaps step t's compute)"
            if self.step.wavefront:
                wx, wy = self.step.wave
                start = f" + {self.step.start}" if self.step.start else ""
                over = (f"loop {self.step.loop} -> time, iteration l of core (x, y) at step "
                        f"{self.step.period}*l + {wx}*x + {wy}*y{start}" if self.step.loop else
                        f"core (x, y) runs at step {wx}*x + {wy}*y{start}")
                lines.append(f"  wavefront: {over}; {self.step.steps} steps with halo exchanges")
            elif self.step.sweep:
                lines.append(f"  loop {self.step.loop} -> time, {self.step.steps} lock-step sweeps with halo exchanges")
            else:
                lines.append(f"  loop {self.step.loop} -> time, {self.step.steps} steps of {self.step.tile}{skew}")
        if self.reduce == "tree":
            lines.append(f"  cross-core reductions: two-level tree, groups of {self.group}")
        elif self.reduce == "levels":
            lines.append(f"  cross-core reductions: {self.group}-ary tree, groups of {self.group} at every level")
        for st, order in self.local_order:
            lines.append(f"  {st}: local loops ({', '.join(order)})")
        for h in self.homes:
            dims = ", ".join(f"{a}/{t}" if a else "whole" for a, t in h.dims)
            pin = "".join(f" {a}={c}" for a, c in h.pin)
            if h.array in self.dram:
                how = ", read by the first core of each line and multicast along it" if self.dram_roots else ""
                lines.append(f"  {h.array} streamed from DRAM: panels of {self.step.tile} per step{how}, no home on "
                             f"the cores")
                continue
            lines.append(f"  home {h.array}[{dims}]{pin}")
        return "\n".join(lines)


def _without_default_waves(d: dict) -> dict:
    """A schedule's dict with the wavefront fields of a step that is not a wavefront left out (phases
    included), so the JSON of every other plan reads as it did before wavefronts existed."""
    step = d.get("step")
    if step and tuple(step.get("wave", (0, 0))) == (0, 0) and step.get("period", 1) == 1:
        d["step"] = {k: v for k, v in step.items() if k not in ("wave", "period", "start")}
    elif step and not step.get("start", 0):
        d["step"] = {k: v for k, v in step.items() if k != "start"}
    d["phases"] = [_without_default_waves(p) for p in d.get("phases", ())]
    if not d.get("dram"):
        d.pop("dram", None)         # only a plan streaming from DRAM says so: every other plan's JSON is unchanged
    if not d.get("dram_roots"):
        d.pop("dram_roots", None)
    if not d.get("grid"):
        d.pop("grid", None)         # only a plan mapped on a grid smaller than the mesh says so
    if not d.get("repeat"):
        d.pop("repeat", None)       # likewise only a plan with a phase loop
    if not d.get("folds"):
        d.pop("folds", None)        # and one of a folded program
    return d


def _legacy_label(name: str, phased: bool) -> dict:
    """The typed fields a schedule saved before they existed stated in its ``name`` label (``summa+db/chain``,
    ``ktree4``, ``operators-heaviest-first``), for reading such JSON."""
    if phased:
        return {"family": "operators", "order": "heaviest-first" if name.endswith("heaviest-first") else "program"}
    base, _, _ = name.partition("/")
    family = base.removesuffix("+db")
    for known in ("ktree", "levels"):
        if family.startswith(known):
            family = known
    return {"family": family, "searched": "/" in name}


def with_buffers(sched: Schedule, buffers: int) -> Schedule:
    """``sched`` with its step loop's panels single- (1) or double-buffered (2), and a reason saying so.

    Preserves every other decision (mapping, tiles, homes, reductions, name). Raises
    :class:`ScheduleError` when asking for double buffering of a schedule without a step loop (nothing
    is exchanged per step) or with a sweep (its halo strips are written by the step)."""
    if sched.phases:
        return sched.copy(phases=tuple(with_buffers(p, buffers) if p.step is not None and not p.step.sweep
                                       else p for p in sched.phases))
    if sched.step is None:
        if buffers == 1:
            return sched
        raise ScheduleError(f"schedule '{sched.family}' has no step loop: there are no per-step panels to "
                            f"double-buffer")
    if sched.step.buffers == buffers:
        return sched
    step = replace(sched.step, buffers=buffers)
    reasons = tuple(r for r in sched.reasons if not r.startswith("double buffering"))
    if buffers == 2:
        reasons += (f"double buffering: the panels step {sched.step.loop} receives get a second slot; the "
                    f"exchange for step t+1 is issued when step t's compute starts, so communication hides "
                    f"behind compute",)
    return sched.copy(step=step, reasons=reasons)


def transposed(sched: Schedule) -> Schedule:
    """``sched`` with the mesh axes swapped: a plan for the ``h x w`` mesh made from one for ``w x h``.

    Every loop mapped to ``x`` maps to ``y`` (and back), homes and pins swap their axes, a wavefront its two
    weights, operators their origins; tiles, steps, skews (Cannon's and MeshGEMM's shifts treat the two axes
    alike), reductions and local orders are preserved. Neighbours stay neighbours, so a plan valid on one
    mesh is valid on its transpose (the caller still builds and verifies it)."""
    def home(h: Home) -> Home:
        return Home(h.array, tuple((OTHER_AXIS.get(a, a), t) for a, t in h.dims),
                    tuple(sorted((OTHER_AXIS[a], c) for a, c in h.pin)))
    step = sched.step
    if step is not None and step.wavefront:
        step = replace(step, wave=(step.wave[1], step.wave[0]))
    return sched.copy(mesh=(sched.mesh[1], sched.mesh[0]),
                      space=tuple(SpaceMap(s.loop, OTHER_AXIS[s.axis], s.tile) for s in sched.space),
                      step=step, homes=tuple(home(h) for h in sched.homes),
                      phases=tuple(transposed(p) for p in sched.phases),
                      origin=(sched.origin[1], sched.origin[0]))
