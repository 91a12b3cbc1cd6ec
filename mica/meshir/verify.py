"""The MeshIR verifier: run before any code is emitted or any native run.

Checks that every core's arena fits the target's SRAM and holds every buffer; every op names buffers and
kernels that exist; a message's source and destination boxes have the same shape; the patterns of one
exchange use distinct colours within the router budget; and the routes of each pattern, traced hop by hop
on one line at the first, middle and last iteration of its loops, deliver exactly once to every receiver
of that line within the declared hop bound and never leave the region. (The emulator re-checks every
message of every step at run time.)

Every kernel reads and writes only inside the boxes its buffers hold on each core that runs it (an access past a
box would touch another buffer of the arena): one isl inclusion per access and class of cores, at every step.

A prefetched (double-buffered) exchange must be legal to overlap with the compute of its loop: it sits in a
loop, no compute of that loop writes any of its source or destination buffers, no other exchange of the
loop delivers into its sources or destinations, and every destination has a second slot (``slots = 2``).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

import islpy as isl

from ..affine.isl_names import iset
from ..errors import MeshIRError
from ..targets import Target
from .ir import Compute, DramLoad, Exchange, HostLoad, HostStore, Loop, MeshProgram, Multicast, RingShift, Shift

STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}
OPP = {"N": "S", "S": "N", "E": "W", "W": "E"}
_NO_ROUTE = (frozenset(), frozenset())


def _sample_envs(scope):
    names = [v for v, _ in scope]
    picks = [sorted({0, n // 2, n - 1}) for _, n in scope]
    for values in product(*picks):
        yield dict(zip(names, values))


def _axis(c) -> str:
    if isinstance(c, (Multicast, RingShift)):
        return c.axis
    return "x" if c.direction in ("E", "W") else "y"


def _patterns(c):
    """(colour, senders, receivers, routes, max hops) of each independently routed part of ``c``."""
    if isinstance(c, RingShift):
        return [(g.colour, g.senders, g.receivers, [r for r in c.routes if r.colour == g.colour], abs(g.offset))
                for g in c.groups]
    return [(c.colour, c.senders, c.receivers, list(c.routes), c.max_hops)]


def _trace(mp: MeshProgram, axis: str, part, env: dict[str, int], line: int, what: str) -> None:
    """Follows the routes of one part of a pattern from its senders on one line; checks delivery and hops."""
    colour, senders_r, receivers_r, routes, max_hops = part

    def cells(r):
        cols, rows = r.members(env)
        if axis == "x":
            return [(x, line) for x in cols if 0 <= x < mp.mesh[0]] if line in rows else []
        return [(line, y) for y in rows if 0 <= y < mp.mesh[1]] if line in cols else []

    table = {}
    for r in routes:
        entry = (frozenset(r.rx), frozenset(r.tx))
        for cell in cells(r.rect):
            table[cell] = entry
    senders = cells(senders_r)
    want = set(cells(receivers_r))
    got: dict[tuple[int, int], int] = {}
    for src in senders:
        stack = [(src, "RAMP", 0)]
        seen = set()
        while stack:
            (x, y), came, hops = stack.pop()
            if (x, y) in seen:
                raise MeshIRError(f"{what}: the routes of colour {colour} loop back to core ({x},{y})")
            seen.add((x, y))
            rx, tx = table.get((x, y), _NO_ROUTE)
            if came not in rx:
                raise MeshIRError(f"{what}: no route for colour {colour} from {came} at core ({x},{y})")
            if hops > max_hops:
                raise MeshIRError(f"{what}: a message travels {hops} hops, more than the {max_hops} declared")
            for d in tx:
                if d == "RAMP":
                    got[(x, y)] = got.get((x, y), 0) + 1
                    continue
                dx, dy = STEP[d]
                nx, ny = x + dx, y + dy
                if not (0 <= nx < mp.mesh[0] and 0 <= ny < mp.mesh[1]):
                    raise MeshIRError(f"{what}: colour {colour} leaves the mesh at core ({x},{y}) going {d}")
                stack.append(((nx, ny), OPP[d], hops + 1))
    if senders and (set(got) != want or any(v != 1 for v in got.values())):
        raise MeshIRError(f"{what}: routes of colour {colour} deliver to {sorted(got)}, "
                          f"receivers are {sorted(want)}")


def verify(mp: MeshProgram, target: Target) -> None:
    """Raises :class:`MeshIRError` on the first violated invariant (see the module docstring)."""
    if mp.arena_bytes > target.sram_bytes:
        raise MeshIRError(f"{mp.name}: arena of {mp.arena_bytes} B exceeds {target.name}'s {target.sram_bytes} B")
    w, h = mp.mesh
    r = mp.region
    if r.x1 > w or r.y1 > h:
        raise MeshIRError(f"{mp.name}: region {r} is outside the {w}x{h} mesh")
    for t in mp.tensors:
        if t.offset < 0 or t.offset + t.alloc_bytes > mp.arena_bytes:
            raise MeshIRError(f"{mp.name}: tensor {t.name} [{t.offset}, +{t.alloc_bytes}) outside the arena")
    _check_prefetch(mp)
    names = {t.name for t in mp.tensors}
    kernels = {k.name for k in mp.kernels}
    for k in mp.kernels:
        for a in (a for p in k.statements for a in (p.write, *p.reads)):
            if a.buffer not in names:
                raise MeshIRError(f"kernel {k.name} uses unknown buffer {a.buffer}")
    for op, scope in mp.walk():
        if isinstance(op, Compute) and op.kernel in kernels:
            _check_kernel_boxes(mp, mp.kernel(op.kernel), dict(scope).get("t", 1))
        if isinstance(op, (HostLoad, HostStore)) and op.buffer not in names:
            raise MeshIRError(f"{type(op).__name__} of {op.array}: unknown buffer {op.buffer}")
        if isinstance(op, Compute) and op.kernel not in kernels:
            raise MeshIRError(f"compute: unknown kernel {op.kernel}")
        if isinstance(op, DramLoad):
            _check_dram_load(mp, op, target, names, scope)
        if isinstance(op, Exchange):
            colours = [part[0] for c in op.ops for part in _patterns(c)]
            if len(set(colours)) != len(colours):
                raise MeshIRError(f"exchange {op.name}: two patterns share a colour {colours}")
            if any(not 0 <= col < target.colours for col in colours):
                raise MeshIRError(f"exchange {op.name}: colours {colours} outside the budget of {target.colours}",
                                  cause="colours")
            for c in op.ops:
                if not isinstance(c, (Multicast, Shift, RingShift)):
                    raise MeshIRError(f"exchange {op.name}: unknown pattern {c!r}")
                for b in (c.src, c.dst):
                    if b not in names:
                        raise MeshIRError(f"{c.name}: unknown buffer {b}")
                src, dst = mp.tensor(c.src), mp.tensor(c.dst)
                if [d.alloc for d in src.box] != [d.alloc for d in dst.box] or src.elem_bytes != dst.elem_bytes:
                    raise MeshIRError(f"{c.name}: source box {src.box} and destination box {dst.box} differ")
                for env in _sample_envs(scope):
                    if not op.active(env):
                        continue
                    for part in _patterns(c):
                        x0, x1, y0, y1 = part[2].at(env)
                        if x0 >= x1 or y0 >= y1:
                            continue
                        axis = _axis(c)
                        cols, rows = part[2].members(env)
                        if not len(cols) or not len(rows):
                            continue
                        line = rows[0] if axis == "x" else cols[0]
                        _trace(mp, axis, part, env, line, f"exchange {op.name}, {c.name} at {env or 'once'}")


def _loop_ops(op):
    for sub in op.body:
        yield sub
        if isinstance(sub, Loop):
            yield from _loop_ops(sub)


def _check_dram_load(mp: MeshProgram, op: DramLoad, target: Target, names: set[str], scope) -> None:
    """Raises :class:`MeshIRError` when a DRAM load reads an array that does not live in device DRAM (or on a
    target without it), into an unknown buffer or one holding another array, or is prefetched outside a loop
    or into a buffer without a second slot."""
    if not getattr(target, "has_dram", False):
        raise MeshIRError(f"dram load {op.name}: target {target.name} has no device DRAM")
    if op.array not in mp.dram:
        raise MeshIRError(f"dram load {op.name}: {op.array} does not live in device DRAM ({', '.join(mp.dram)})")
    if op.dst not in names or mp.tensor(op.dst).array != op.array:
        raise MeshIRError(f"dram load {op.name}: {op.dst} is not a buffer of {op.array}")
    if op.prefetch and (not scope or mp.tensor(op.dst).slots != 2):
        raise MeshIRError(f"dram load {op.name} is prefetched, but not inside a loop or into a buffer without a "
                          f"second slot")


def _check_prefetch(mp: MeshProgram) -> None:
    """Raises :class:`MeshIRError` naming the exchange and buffer when a prefetched exchange could read
    or overwrite data the compute it overlaps touches (see the module docstring)."""
    def go(ops, loop):
        for op in ops:
            if isinstance(op, Loop):
                go(op.body, op)
            elif isinstance(op, Exchange) and op.prefetch:
                if loop is None:
                    raise MeshIRError(f"exchange {op.name} is prefetched but not inside a loop: there is no "
                                      f"previous step whose compute it could overlap")
                if loop.down:
                    raise MeshIRError(f"exchange {op.name} is prefetched inside loop {loop.var}, which counts "
                                      f"down: a prefetch brings the data of the next higher iteration")
                bufs = {b for c in op.ops for b in (c.src, c.dst)}
                for sub in _loop_ops(loop):
                    if isinstance(sub, Compute):
                        k = mp.kernel(sub.kernel)
                        hit = sorted(bufs & {p.write.buffer for p in k.statements})
                        if hit:
                            raise MeshIRError(
                                f"exchange {op.name} is prefetched, but compute {k.name} of loop {loop.var} "
                                f"writes {', '.join(hit)}: the data it sends or receives is not read-only "
                                f"while the compute it overlaps runs")
                    elif isinstance(sub, Exchange) and sub is not op:
                        hit = sorted(bufs & {c.dst for c in sub.ops})
                        if hit:
                            raise MeshIRError(
                                f"exchange {op.name} is prefetched, but exchange {sub.name} of loop "
                                f"{loop.var} delivers into {', '.join(hit)}")
                for c in op.ops:
                    if mp.tensor(c.dst).slots != 2:
                        raise MeshIRError(f"exchange {op.name} is prefetched into {c.dst}, which has no "
                                          f"second slot (a double buffer needs slots = 2)")
    go(mp.body, None)


def _check_kernel_boxes(mp: MeshProgram, k, steps: int) -> None:
    """Raises :class:`MeshIRError` when kernel ``k`` (run in a loop of ``steps`` steps) reads or writes, on some
    core of one of its classes, an element outside the box its buffer holds there."""
    kb = mp.skew.n if mp.skew else 1
    for part in k.statements:
        for a in (part.write, *part.reads):
            t = mp.tensor(a.buffer)
            for cls in k.classes:
                r = cls.region
                bad = _outside(part.domain, part.loops, tuple(str(ix) for ix in a.index), tuple(t.box),
                               (r.x0, r.x1, r.y0, r.y1), steps, kb)
                if bad:
                    what = "writes" if a is part.write else "reads"
                    raise MeshIRError(f"kernel {k.name} {what} {a.buffer} outside the box its cores "
                                      f"[{r.x0}:{r.x1}, {r.y0}:{r.y1}] hold ({', '.join(map(str, t.box))}), "
                                      f"e.g. {bad}")


@lru_cache(maxsize=8192)
def _outside(domain: str, loops: tuple[str, ...], index: tuple[str, ...], box: tuple, rect: tuple, steps: int,
             kb: int) -> str:
    """An element (isl text) that the access ``index`` of a kernel statement with ``domain`` and ``loops``
    touches outside ``box`` on some core of ``rect`` at some step, or '' when there is none. Spaces: the
    domain ``[__x, __y, __t, ...] -> { K[loops] }``, the touched elements and the box
    ``[__x, __y, __t, __kb] -> { A[a...] }``."""
    dom = iset(domain, MeshIRError)
    params = [dom.get_dim_name(isl.dim_type.param, i) for i in range(dom.dim(isl.dim_type.param))]
    allp = sorted(set(params) | {"__x", "__y", "__t", "__kb"})
    x0, x1, y0, y1 = rect
    ctx = iset(f"[{', '.join(allp)}] -> {{ : {x0} <= __x < {x1} and {y0} <= __y < {y1} and "
               f"0 <= __t < {max(steps, 1)} and 0 <= __kb < {kb} }}", MeshIRError)
    name = dom.get_tuple_name()
    names = [f"a{i}" for i in range(len(index))]
    touched = isl.Map(f"[{', '.join(allp)}] -> {{ {name}[{', '.join(loops)}] -> A[{', '.join(index)}] }}")
    elems = dom.intersect_params(ctx).apply(touched) if loops else \
        isl.Set(f"[{', '.join(allp)}] -> {{ A[{', '.join(index)}] }}").intersect_params(dom.params().intersect(ctx))
    inside = isl.Set(f"[{', '.join(allp)}] -> {{ A[{', '.join(names)}] : "
                     f"{' and '.join(_held(d, v) for d, v in zip(box, names)) or 'true'} }}")
    out = elems.subtract(inside)
    return "" if out.is_empty() else str(out.sample_point())


def _held(d, var: str) -> str:
    """Constraint text for index ``var`` inside box dimension ``d`` on core ``(__x, __y)`` at ``__t``/``__kb``:
    its elements (:meth:`~mica.meshir.ir.BoxDim.isl`), and for a padded dimension the padding past the
    extent too (a padded box always holds ``tile`` elements)."""
    if not d.padded:
        return d.isl(var, prefix="__")
    c = f"(__{d.coord} - {d.origin})" if d.origin else f"__{d.coord}"
    if d.per != 1:
        c = f"floor({c}/{d.per})"
    return f"{d.tile}*{c} <= {var} < {d.tile}*{c} + {d.tile}"
