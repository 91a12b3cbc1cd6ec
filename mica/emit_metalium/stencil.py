"""Kernels without a whole-box tile routine that still avoid the generic path's software floating point.

Two forms, decided per MeshIR kernel by :func:`reader_op` (for kernels :func:`.classify.classify` leaves
generic, or whose tile routine would cover only part of its boxes):

* ``copy``: ``W[...] = X[...]`` (the pack / unpack of a halo exchange, the step panel of a step-owner
  multicast, any copy between boxes of different shapes) -> a **data-movement copy** on the reader: the loop
  nest over the kernel's domain moves each element's bits (``uint32_t`` for f32, ``uint16_t`` for bf16), no
  floating point at all;
* ``stencil``: ``W[p] = f(X1[g1(p)], X2[g2(p)], ...)``: ``f`` a tree of ``+ - *`` between reads and ``+ - * /``
  by constants, each instance writes its own element, and no read touches the written buffer at another
  element (so every read can be taken before any element is written). Each distinct read is a *view*: the
  shifted neighbours of a stencil (``A[i][j-1]``), or any element an instance reads (``L[i][j]`` at step ``j``,
  a multicast ``x[j]`` broadcast). The reader **gathers** each view into a
  scratch circular buffer with the written box's tile layout (bit copies over the kernel's domain), hands the
  turn to the compute kernel, which evaluates ``f`` with ``add_tiles`` / ``sub_tiles`` / ``mul_tiles`` and the
  SFPU's unary-by-constant ops **in the C statement's evaluation order**, one whole-tile pass per operator
  (:class:`Pass`), into the scratch accumulator; the reader then **scatters** the accumulator's elements of the
  kernel's domain into ``W`` (bit copies). Elements outside the domain are never scattered, so partial boxes,
  ghost zones and triangular domains are exact.

Everything else stays on the generic path, with the reason (:attr:`.classify.TileOp.reason`) that
``plan.json`` lists under ``generic``.

Scratch CBs (``cb_sv<n>`` views, ``cb_sacc`` / ``cb_stmp<n>`` results) are shared by every stencil kernel and
all hold :data:`SCRATCH` pages = the most tiles of any stencil's written box; every pass runs over all of them
(so the CB's front returns to page 0 after each pass, the invariant of every tensor CB).

Public API: :func:`reader_op`, :class:`Pass`, :func:`scratch_names`, :func:`render_passes`,
:data:`READER_KINDS`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import islpy as isl

from ..affine.expr import Bin, Call, Const, Neg, Read
from ..affine.isl_names import iset, umap
from ..codeprint import expr_text
from ..errors import EmitError
from ..meshir.ir import Kernel, KAccess, MeshProgram
from ..meshir.printer import statement_text
from .api import float_c
from .classify import TileOp, off_format, tile_grid

#: kinds whose elements the reader touches (so the reader is busy while they run)
READER_KINDS = frozenset({"generic", "copy", "stencil"})


@dataclass(frozen=True)
class Pass:
    """One whole-tile pass of a stencil's compute routine, into scratch CB ``target`` (tile i replaced in
    place): ``binary`` ``fn(a, b)`` (``add_tiles`` / ``sub_tiles`` / ``mul_tiles``), ``scalar`` a copy of ``a``
    then the SFPU ops of ``chain`` ((op, constant) in evaluation order; empty: a plain copy), ``fill`` the
    constant ``value``. An operand is (CB name, tile index expression): ``i`` for tile i of a view or of a
    finished result, ``0`` for the target itself (its front is the old tile i)."""

    kind: str
    target: str
    a: tuple[str, str] = ("", "")
    b: tuple[str, str] = ("", "")
    fn: str = ""
    chain: tuple[tuple[str, float], ...] = ()
    value: float = 0.0

    def text(self) -> str:
        def o(x):
            return x[0] if x[1] == "0" else f"{x[0]}[i]"
        if self.kind == "binary":
            return f"{self.target} = {self.fn}({o(self.a)}, {o(self.b)})"
        if self.kind == "fill":
            return f"{self.target} = {self.value!r}"
        return f"{self.target} = {o(self.a)}" + "".join(f" {fn} {c!r}" for fn, c in self.chain)


def view_cb(n: int) -> str:
    return f"cb_sv{n}"


def result_cb(level: int) -> str:
    return "cb_sacc" if level == 0 else f"cb_stmp{level}"


class _NoTile(Exception):
    """Why a kernel has no stencil form (the reason recorded in plan.json)."""


def view_key(acc: KAccess) -> tuple[str, tuple[str, ...]]:
    """A view: the buffer and the index (as text) of a read; reads of one element share it."""
    return acc.buffer, tuple(ix.text() for ix in acc.index)


def view_text(key) -> str:
    return f"{key[0]}[{', '.join(key[1])}]"


def _one_write_per_instance(k: Kernel) -> bool:
    """Whether no two instances of ``k`` (at one core and step) write the same element."""
    dom = iset(k.domain, EmitError)
    params = [dom.get_dim_name(isl.dim_type.param, i) for i in range(dom.dim(isl.dim_type.param))]
    idx = ", ".join(ix.text() for ix in k.write.index)
    m = umap(f"[{', '.join(params)}] -> {{ {dom.get_tuple_name()}[{', '.join(k.loops)}] -> W[{idx}] }}", EmitError)
    return m.intersect_domain(isl.UnionSet.from_set(dom)).is_injective()


def _compile(k: Kernel, views: dict) -> tuple[list[Pass], int]:
    """The passes evaluating ``k.expr`` into ``cb_sacc`` and the number of result CBs they use."""
    passes: list[Pass] = []
    depth = [0]
    reads = {a.ref: a for a in k.reads}

    def leaf(e) -> tuple[str, str] | None:
        if isinstance(e, Read):
            return (view_cb(views[view_key(reads[e.ref])]), "i")
        return None

    def scalar(fn: str, c: float, inner, level: int):
        tgt = result_cb(level)
        src = leaf(inner)
        if src is None:
            emit(inner, level)
            src = (tgt, "0")
            last = passes[-1]
            if last.kind == "scalar" and last.target == tgt:
                passes[-1] = Pass("scalar", tgt, last.a, chain=last.chain + ((fn, c),))
                return
        passes.append(Pass("scalar", tgt, src, chain=((fn, c),)))

    def emit(e, level: int) -> None:
        depth[0] = max(depth[0], level)
        tgt = result_cb(level)
        if isinstance(e, Read):
            passes.append(Pass("scalar", tgt, leaf(e)))
            return
        if isinstance(e, Const):
            passes.append(Pass("fill", tgt, value=float(e.value)))
            return
        if isinstance(e, Neg):
            scalar("mul", -1.0, e.arg, level)
            return
        if isinstance(e, Call):
            raise _NoTile(f"call of {e.fn} (the stencil passes have add/sub/mul tiles and unary ops by constants "
                          f"only)")
        if not isinstance(e, Bin):
            raise _NoTile(f"a {type(e).__name__} node ({expr_text(e, lambda r: r)}) has no tile routine")
        lc, rc = isinstance(e.lhs, Const), isinstance(e.rhs, Const)
        if lc and rc:
            raise _NoTile("an operator between two constants")
        if lc or rc:
            c = float((e.lhs if lc else e.rhs).value)
            fn = {"+": "add", "*": "mul", "-": "rsub" if lc else "sub", "/": None if lc else "div"}.get(e.op)
            if fn is None:
                raise _NoTile(f"operator {e.op} with a constant {'dividend' if e.op == '/' else 'operand'} has no "
                              f"SFPU unary-by-constant op")
            scalar(fn, c, e.rhs if lc else e.lhs, level)
            return
        fn = {"+": "add_tiles", "-": "sub_tiles", "*": "mul_tiles"}.get(e.op)
        if fn is None:
            raise _NoTile(f"operator {e.op} between two arrays has no element-wise tile routine")
        a = leaf(e.lhs)
        if a is None:
            emit(e.lhs, level)
            a = (tgt, "0")
        b = leaf(e.rhs)
        if b is None:
            if a[0] != tgt:
                emit(e.rhs, level)
                b = (tgt, "0")
            else:
                emit(e.rhs, level + 1)
                b = (result_cb(level + 1), "i")
        passes.append(Pass("binary", tgt, a, b, fn=fn))
    emit(k.expr, 0)
    return passes, depth[0] + 1


def reader_op(mp: MeshProgram, k: Kernel, why: str) -> TileOp:
    """``k`` as a ``copy`` or ``stencil`` op, else ``generic`` with its reason (``why``: why it has no whole-box
    tile routine, the start of that reason)."""
    if k.parts:
        return TileOp(k.name, "generic", k.parts[0].write.buffer,
                      text=f"{len(k.parts)} statements in their original order {k.schedule}", reason=why)
    text = statement_text(k)
    w = k.write
    if isinstance(k.expr, Read):
        (src,) = [a for a in k.reads if a.ref == k.expr.ref] or [w]
        if mp.tensor(src.buffer).dtype == mp.tensor(w.buffer).dtype:
            return TileOp(k.name, "copy", w.buffer, (src.buffer,), mt=_tiles(mp, w.buffer), text=text)
    if off_format(mp, k):       # the tile routines compute on the program's one float format
        return TileOp(k.name, "generic", w.buffer, text=text, reason=why)
    try:
        views: dict = {}
        for a in k.reads:
            if a.buffer == w.buffer and view_key(a) != view_key(w):
                raise _NoTile(f"it reads {view_text(view_key(a))} where it writes {view_text(view_key(w))} (values "
                              f"written earlier in the same sweep)")
            views.setdefault(view_key(a), len(views))
        if not _one_write_per_instance(k):
            raise _NoTile(f"its instances write an element of {w.buffer} more than once (a reduction over loops "
                          f"outside the written index)")
        passes, results = _compile(k, views)
    except _NoTile as exc:
        return TileOp(k.name, "generic", w.buffer, text=text, reason=f"{why}; no stencil form: {exc}")
    order = tuple(sorted(views, key=views.get))
    return TileOp(k.name, "stencil", w.buffer, tuple(b for b, _ in order), mt=_tiles(mp, w.buffer), text=text,
                  views=order, passes=tuple(passes), results=results)


def _tiles(mp: MeshProgram, buffer: str) -> int:
    r, c = tile_grid(mp.tensor(buffer))
    return r * c


def scratch_names(ops) -> list[str]:
    """The scratch CBs the stencil ops ``ops`` need: views, then results."""
    st = [o for o in ops if o.kind == "stencil"]
    if not st:
        return []
    return ([view_cb(n) for n in range(max(len(o.views) for o in st))]
            + [result_cb(n) for n in range(max(o.results for o in st))])


# -- the compute routine -------------------------------------------------------------------------------

def render_passes(name: str, op: TileOp, pages: int) -> list[str]:
    """The compute kernel's routine ``name`` evaluating stencil ``op`` over ``pages`` tiles of the scratch CBs."""
    views = ", ".join(f"{view_cb(n)} = {view_text(v)}" for n, v in enumerate(op.views))
    L = [f"// MeshIR kernel {op.kernel}: {op.text}",
         f"// stencil: the reader gathered the views ({views}) at each written element, in {op.out}'s tile",
         f"// layout; these passes evaluate the statement in its evaluation order into cb_sacc, which the reader "
         f"scatters into {op.out}:"]
    L += [f"//   {p.text()}" for p in op.passes]
    L += [f"static inline void {name}() {{"]
    for p in op.passes:
        T = p.target
        L.append(f"    // {p.text()}")
        if p.kind == "binary":
            L.append(f"    {p.fn}_init({p.a[0]}, {p.b[0]});")
        elif p.kind == "fill":
            L.append("    fill_tile_init();")
        L += [f"    for (uint32_t i = 0; i < {pages}; ++i) {{", "        tile_regs_acquire();"]
        if p.kind == "binary":
            L.append(f"        {p.fn}({p.a[0]}, {p.b[0]}, {p.a[1]}, {p.b[1]}, 0);")
        elif p.kind == "fill":
            L.append(f"        fill_tile(0, {float_c(p.value)});")
        else:
            L += [f"        copy_tile_to_dst_init_short({p.a[0]});", f"        copy_tile({p.a[0]}, {p.a[1]}, 0);"]
            if p.chain:
                L.append("        binop_with_scalar_tile_init();")
            L += [f"        {fn}_unary_tile(0, 0x{struct.unpack('<I', struct.pack('<f', c))[0]:08x}u);  // {fn} {c!r}"
                  for fn, c in p.chain]
        L += ["        tile_regs_commit();", f"        cb_pop_front({T}, 1);  // the old tile i ...",
              f"        cb_reserve_back({T}, 1);", "        tile_regs_wait();",
              f"        pack_tile(0, {T});  // ... replaced by the new one", "        tile_regs_release();",
              f"        cb_push_back({T}, 1);", "    }"]
    L.append("}")
    return L
