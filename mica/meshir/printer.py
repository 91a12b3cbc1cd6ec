"""MeshIR as text a compiler engineer can read: regions, tensors, kernels, and the op sequence.

Public API: :func:`format_mesh_program`, :func:`statement_text` (one kernel statement, as back ends quote
it in comments and records).
"""

from __future__ import annotations

import islpy as isl

from ..codeprint import expr_text
from .ir import (Compute, DramLoad, Exchange, HostLoad, HostStore, KAccess, Kernel, Loop, MeshProgram, Multicast, Shift)


def access_text(a: KAccess) -> str:
    """``buffer[index, ...]``."""
    return f"{a.buffer}[{', '.join(ix.text() for ix in a.index)}]"


def statement_text(k: Kernel) -> str:
    """``W[..] = expr`` of single-statement kernel ``k``, reads spelled as :func:`access_text`."""
    accs = {a.ref: a for a in (k.write, *k.reads)}
    return f"{access_text(k.write)} = {expr_text(k.expr, lambda r: access_text(accs[r]))}"


def _kernel_text(k: Kernel) -> str:
    if k.parts:
        head = f"  kernel {k.name}: the statements in their original order {k.schedule}"
        return "\n".join([head] + ["  " + _kernel_text(p) for p in k.parts])
    return _single_text(k)


def domain_text(domain: str) -> str:
    """The kernel domain written ``domain`` without redundant constraints, from a fresh parse. isl writes a set
    as its internal representation stands, and that changes with the queries earlier made on shared copies of
    it (the cached statement domains): the same kernel's domain was written with or without a ``0 <= i`` that
    ``0 <= j < i`` implies, depending on what had been compiled before in the process."""
    return str(isl.Set(domain).remove_redundancies())


def _single_text(k: Kernel) -> str:
    head = f"  kernel {k.name}" + (f" (statement {k.statement})" if k.statement else "")
    classes = ", ".join(f"{c.name} [{c.region.x0}:{c.region.x1}, {c.region.y0}:{c.region.y1}]"
                        for c in k.classes)
    return (f"{head}: {statement_text(k)}\n"
            f"    loops ({', '.join(k.order)}) over {domain_text(k.domain)}\n"
            f"    classes: {classes}")


def _op_lines(op, indent: str) -> list[str]:
    if isinstance(op, HostLoad):
        return [f"{indent}host_load {op.array} -> {op.buffer} on {op.region}"]
    if isinstance(op, HostStore):
        return [f"{indent}host_store {op.array} <- {op.buffer} from {op.region}"]
    if isinstance(op, Compute):
        return [f"{indent}compute {op.kernel} on {op.rect}"]
    if isinstance(op, DramLoad):
        pre = (" prefetched: issued when the previous step's compute starts, into the second slots"
               if op.prefetch else "")
        return [f"{indent}dram_load {op.array} -> {op.dst} on {op.rect}: each core reads its box from device "
                f"DRAM{pre}"]
    if isinstance(op, Loop):
        wave = "  (wavefront: each core works at the steps its coordinates select)" if op.wave else ""
        down = "  (counting down)" if op.down else ""
        out = [f"{indent}for {op.var} in 0..{op.count}:{wave}{down}"]
        for sub in op.body:
            out += _op_lines(sub, indent + "  ")
        return out
    if isinstance(op, Exchange):
        pre = (" prefetched: issued when the previous step's compute starts, into the second slots"
               if op.prefetch else "")
        out = [f"{indent}exchange {op.name}:{pre}"]
        for c in op.ops:
            if isinstance(c, Multicast):
                out.append(f"{indent}  multicast {c.src} -> {c.dst} along {c.axis} from root "
                           f"{c.axis} = {c.root}, colour {c.colour}, <= {c.max_hops} hops")
            elif isinstance(c, Shift):
                out.append(f"{indent}  shift {c.src} -> {c.dst} towards {c.direction} from {c.senders}, "
                           f"colour {c.colour}, {c.max_hops} hop")
            for r in c.routes:
                out.append(f"{indent}    route {r}")
        return out
    return [f"{indent}{op!r}"]


def format_mesh_program(mp: MeshProgram, *, routes: bool = True) -> str:
    """The whole program as text (``routes=False`` leaves out the per-router route rectangles)."""
    lines = [f"meshprogram {mp.name}: target {mp.target}, mesh {mp.mesh[0]}x{mp.mesh[1]}, "
             f"work region {mp.region} ({mp.region.cores} cores), arena {mp.arena_bytes} B per core, "
             f"{mp.colours} colour(s)"]
    if mp.dram:
        lines.append(f"device DRAM: {', '.join(mp.dram)} (streamed into the cores step by step; no home on the "
                     f"cores)")
    lines.append("tensors:")
    for t in mp.tensors:
        box = ", ".join(str(d) for d in t.box)
        slots = f" x 2 slots (double buffer, {t.alloc_bytes} B)" if t.slots == 2 else ""
        lines.append(f"  {t.name:<10} {t.role:<8} {t.dtype} [{box}] at +{t.offset}, <= {t.max_bytes} B{slots}")
        lines.append(f"    owns {t.ownership}")
    lines.append("kernels:")
    lines += [_kernel_text(k) for k in mp.kernels]
    lines.append("body:")
    for op in mp.body:
        sub = _op_lines(op, "  ")
        if not routes:
            sub = [s for s in sub if not s.lstrip().startswith("route ")]
        lines += sub
    return "\n".join(lines)
