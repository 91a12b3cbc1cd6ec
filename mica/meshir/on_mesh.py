"""Arrays that stay on the mesh between runs: where each one lives, and the proof that a plan keeps it there.

A device runtime loads a model's weights once and runs many steps over them; a KV cache is updated in place
step after step. A mesh program keeps array ``A`` of :attr:`MeshProgram.on_mesh` on the mesh when one
buffer holds it at the start and at the end of every run:

* ``A`` only read: every buffer the host loads ``A`` into (its home, a mirror) is written by nothing — no
  kernel writes it and no exchange delivers into it (a Cannon-style rotation of a weight matrix would leave
  it rotated for the next run);
* ``A`` written: the program stores ``A`` from exactly one buffer, that buffer is where ``A`` is loaded (when
  it is an input: the next run reads what this one left), and ``A`` is loaded into no other buffer (a
  mirror loaded from the host would go stale once the host no longer sends ``A``);
* no other buffer shares its bytes (arenas laid out by liveness reuse bytes between operators:
  :func:`mica.lower.phases.lay_out` keeps the buffers of on-mesh arrays alive through the whole program).

A program of many operators lays its on-mesh arrays out one operator at a time, and each operator's search
sees only its own arrays: left alone, every weight matrix of a layer would take the layout that is cheapest
for its operator, often on the same cores, and together overflow them. :func:`on_mesh_caps` gives each
on-mesh array a share of a core's SRAM in proportion to its size (:data:`ON_MESH_SHARE` of the SRAM in all);
:func:`check_on_mesh_caps` rejects an operator's plan whose block of such an array exceeds its share.

Public API: :func:`check_on_mesh`, :func:`kept_buffers`, :func:`host_bytes`, :func:`on_mesh_caps`,
:func:`check_on_mesh_caps`.
"""

from __future__ import annotations

from math import prod

from ..errors import ScheduleError, SramError
from .ir import Compute, HostLoad, HostStore, MeshProgram, RegionTensor, walk_ops


def kept_buffers(mp: MeshProgram) -> dict[str, str]:
    """``{array: buffer}``: the buffer that holds each on-mesh array between runs (its store buffer when the
    program writes it, else its home's load buffer). Assumes :func:`check_on_mesh` passed."""
    out = {}
    for a in mp.on_mesh:
        stores = [op.buffer for op in mp.body if isinstance(op, HostStore) and op.array == a]
        loads = [op.buffer for op in mp.body if isinstance(op, HostLoad) and op.array == a]
        out[a] = stores[0] if stores else (a if a in loads else loads[0])
    return out


def check_on_mesh(mp: MeshProgram) -> None:
    """Raises :class:`ScheduleError` (cause ``on-mesh``) naming the array, the buffer and what breaks it when
    ``mp`` does not keep every array of ``mp.on_mesh`` in one buffer between runs (see the module text)."""
    if not mp.on_mesh:
        return
    writers = _writers(mp)
    for a in mp.on_mesh:
        loads = [op for op in mp.body if isinstance(op, HostLoad) and op.array == a]
        stores = [op for op in mp.body if isinstance(op, HostStore) and op.array == a]
        if not loads and not stores:        # an operator of a phased program that finds it on the mesh
            continue
        if stores:
            if len(stores) > 1:
                raise ScheduleError(f"{mp.name}: {a} is to stay on the mesh but the plan stores it from "
                                    f"{len(stores)} buffers", cause="on-mesh")
            st = stores[0]
            others = [ld.buffer for ld in loads if ld.buffer != st.buffer]
            if loads and (others or any(ld.region != st.region for ld in loads)):
                raise ScheduleError(f"{mp.name}: {a} is to stay on the mesh but the plan updates it in buffer "
                                    f"{st.buffer} and also loads it into {', '.join(others) or 'another region'} "
                                    f"(a copy that would go stale between runs)", cause="on-mesh")
            kept = [st.buffer]
        else:
            for ld in loads:
                if ld.buffer in writers:
                    raise ScheduleError(f"{mp.name}: {a} is to stay on the mesh but {writers[ld.buffer]} writes "
                                        f"its buffer {ld.buffer} (the next run would find it changed)",
                                        cause="on-mesh")
            kept = [ld.buffer for ld in loads]
        for name in kept:
            _alone(mp, mp.tensor(name), a)


def host_bytes(mp: MeshProgram) -> tuple[int, int]:
    """(bytes the host sends, bytes it receives) in one run of ``mp``: each host load and store counts its
    array's bytes once (the fabric replicates what several cores hold), leaving out the arrays that stay on
    the mesh."""
    sent = recv = 0
    for op in mp.body:
        if isinstance(op, (HostLoad, HostStore)) and op.array not in mp.on_mesh:
            t = mp.tensor(op.buffer)
            n = t.elem_bytes * prod(d.extent for d in t.box)
            if isinstance(op, HostLoad):
                sent += n
            else:
                recv += n
    return sent, recv


def _writers(mp: MeshProgram) -> dict[str, str]:
    """``{buffer: what writes it}`` over every kernel and exchange of ``mp``."""
    out = {}
    for k in mp.kernels:
        for part in k.statements:
            out.setdefault(part.write.buffer, f"kernel {k.name}")
    for op, _ in walk_ops(mp.body):
        if isinstance(op, (HostLoad, HostStore, Compute)):
            continue
        for c in getattr(op, "ops", ()):
            dst = getattr(c, "dst", None)
            if dst is not None:
                out.setdefault(dst, f"exchange {op.name}")
    return out


def _alone(mp: MeshProgram, t: RegionTensor, array: str) -> None:
    """Raises unless no other buffer of ``mp`` shares bytes of ``t`` on a core both are on."""
    lo, hi = t.offset, t.offset + t.alloc_bytes
    r = t.region
    for u in mp.tensors:
        if u.name == t.name or u.offset >= hi or u.offset + u.alloc_bytes <= lo:
            continue
        q = u.region
        if q.x0 < r.x1 and r.x0 < q.x1 and q.y0 < r.y1 and r.y0 < q.y1:
            raise ScheduleError(f"{mp.name}: {array} is to stay on the mesh but buffer {u.name} reuses the bytes "
                                f"of its buffer {t.name}", cause="on-mesh")


#: The share of a core's SRAM the on-mesh arrays of a program may take together, split between them in
#: proportion to their sizes (:func:`on_mesh_caps`); the rest is for the operators' working buffers.
ON_MESH_SHARE = 0.6

#: A block this small (as a fraction of SRAM) is always within an on-mesh array's share: a norm's gain
#: vector need not spread as far as a weight matrix.
ON_MESH_SMALL = 1 / 32


def on_mesh_caps(sizes: dict[str, int], sram_bytes: int) -> dict[str, int]:
    """``{array: bytes}``: the most bytes one core may hold of each on-mesh array, given every on-mesh
    array's whole size in bytes (``sizes``): its share of :data:`ON_MESH_SHARE` of ``sram_bytes`` in
    proportion to its size, and at least :data:`ON_MESH_SMALL` of it. Empty when the arrays together fit
    the share on one core (nothing to cap)."""
    total = sum(sizes.values())
    budget = ON_MESH_SHARE * sram_bytes
    if total <= budget:
        return {}
    return {a: int(max(budget * n / total, ON_MESH_SMALL * sram_bytes)) for a, n in sizes.items()}


def check_on_mesh_caps(mp: MeshProgram, caps: dict[str, int]) -> None:
    """Raises :class:`SramError` (cause ``on-mesh-share``) when a buffer of ``mp`` holding an array of
    ``caps`` keeps more bytes per core than its cap (see :func:`on_mesh_caps`); preserves ``mp``."""
    for t in mp.tensors:
        cap = caps.get(t.array)
        if cap is not None and t.role == "home" and t.max_bytes > cap:
            raise SramError(f"{mp.name}: {t.array} is kept on the mesh with {t.max_bytes} B per core, more than "
                            f"its share of {cap} B (the arrays kept on the mesh split "
                            f"{ON_MESH_SHARE:.0%} of each core's SRAM by size)", needed=t.max_bytes,
                            cause="on-mesh-share")
