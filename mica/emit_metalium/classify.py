"""Which Tensix tile routine implements a MeshIR kernel.

A kernel's statement becomes one of:

* ``fill``: ``W[i...] = c`` -> ``fill_tile`` on every tile of W;
* ``matmul``: ``W[m, n] = W[m, n] + L[m, k] * R[k, n]`` (a rank-1 W, L or R is a column vector: ``W[m]``,
  ``R[k]``) -> ``matmul_tiles`` over the local boxes, reloading W's partial tiles (``copy_tile``) so the
  result accumulates across steps;
* ``eltwise``: ``W[i...] = X[i...] op Y[i...]`` with the same index everywhere and ``op`` one of ``+ - *``
  (X or Y may be W itself) -> ``add_tiles`` / ``sub_tiles`` / ``mul_tiles``;
* ``scalar``: ``W[i...] = f(X[i...])`` with f a chain of ``+ - * /`` by constants (``2.0 * y[i] + 1.0``)
  -> ``copy_tile`` then the SFPU's ``mul_unary_tile`` / ``add_unary_tile`` / ``sub_unary_tile`` /
  ``rsub_unary_tile`` / ``div_unary_tile`` in evaluation order.

Anything else (stencils, copies between boxes of different shapes, triangular domains, sequence kernels of
the one-core fallback) is ``generic`` here, with a reason; :func:`.stencil.reader_op` then turns copies and
shifted-view stencils into reader copies and tile passes, and only the rest runs as scalar loops on the
reader's RISC-V (:mod:`.generic`), which also reads scalar arguments (runtime args of the reader). Every math
function the front end accepts has a software form there (:data:`SOFT_CALLS`); a call of any other raises
:class:`EmitError` naming the kernel.

Tile geometry: a rank-2 box ``[r, c]`` is ``ceil(r/32) x ceil(c/32)`` tiles in row-major tile order; a
rank-1 box ``[n]`` is a column vector, ``ceil(n/32) x 1`` tiles (element i at row i of column 0); a box of
rank n >= 3 is the matrix of its leading n - 1 dimensions flattened row-major (with their allocated sizes)
by its last, so ``[a, b, c]`` is ``ceil(a*b/32) x ceil(c/32)`` tiles with element (i, j, k) at row
``i*b + j``, column ``k`` (:func:`tile_rows_cols`). Padding elements are zero after the host load, so
whole-tile routines compute exactly the box's elements.

Public API: :class:`TileOp`, :func:`classify`, :func:`tile_grid`, :func:`tile_rows_cols`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod

import islpy as isl

from ..affine.expr import INT_DTYPES, Bin, Call, Const, Neg, Read
from ..affine.isl_names import iset
from ..affine.runtime import kernel_param
from ..codeprint import C_KERNEL, ast_expr
from ..errors import EmitError
from ..meshir.ir import Kernel, KAccess, MeshProgram, RegionTensor
from ..meshir.printer import statement_text
from .api import TILE


def geometry(d) -> tuple:
    """What places element ``g`` of a box dimension at local index ``g - lo`` and where its real elements
    end: two dimensions with the same geometry hold the same elements at the same tile positions on every
    core (and zero padding at the same places)."""
    return (d.coord, d.tile if d.coord else 0, d.offset, d.alloc, d.extent, d.origin)


#: The highest box rank the host program stages (``Box::d`` in :data:`.host.STAGING`).
MAX_RANK = 8


def tile_rows_cols(t: RegionTensor) -> tuple[int, int]:
    """(rows, columns) of the element matrix ``t``'s per-core box is laid out as: a scalar is 1 x 1, a rank-1
    box a column (``alloc`` x 1), a higher-rank box its leading dimensions flattened row-major by its last
    (every dimension at its allocated size, :attr:`mica.meshir.ir.BoxDim.alloc`)."""
    dims = [d.alloc for d in t.box]
    if len(dims) > MAX_RANK:
        raise EmitError(f"tensor {t.name}: rank-{len(dims)} box; the Metalium back end lays out boxes of rank "
                        f"{MAX_RANK} at most")
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], 1
    return prod(dims[:-1]), dims[-1]


def tile_grid(t: RegionTensor) -> tuple[int, int]:
    """(tile rows, tile columns) of ``t``'s per-core box (:func:`tile_rows_cols` in 32x32 tiles)."""
    rows, cols = tile_rows_cols(t)
    return ceil(rows / TILE), ceil(cols / TILE)


@dataclass(frozen=True)
class TileOp:
    """A tile routine: ``kind`` fill / matmul / eltwise; ``out`` the written buffer; ``ins`` the read
    buffers (matmul: L, R; eltwise: X, Y); ``op`` the eltwise operator or the fill value; ``mt, nt, kt``
    the tile counts (eltwise/fill: ``mt`` = tiles of ``out``)."""

    kernel: str
    kind: str
    out: str
    ins: tuple[str, ...] = ()
    op: str = ""
    value: float = 0.0
    mt: int = 0
    nt: int = 0
    kt: int = 0
    text: str = ""
    chain: tuple[tuple[str, float], ...] = ()   # scalar: (SFPU op, constant) in evaluation order
    reason: str = ""                            # generic: why no tile routine or reader copy renders it
    views: tuple = ()                           # stencil: (buffer, offsets) of each gathered view
    passes: tuple = ()                          # stencil: the compute routine's passes (.stencil.Pass)
    results: int = 0                            # stencil: result scratch CBs its passes use

    def at_zero(self) -> float:
        """What the routine writes where its inputs are 0 (tile padding): padding stays zero iff 0."""
        if self.kind == "fill":
            return self.value
        v = 0.0
        for fn, c in self.chain:
            v = {"mul": v * c, "add": v + c, "sub": v - c, "rsub": c - v, "div": v / c if c else float("nan")}[fn]
        return v


def _same_boxes(mp: MeshProgram, a: str, b: str) -> bool:
    ba, bb = mp.tensor(a).box, mp.tensor(b).box
    return len(ba) == len(bb) and all(geometry(x) == geometry(y) for x, y in zip(ba, bb))


def _pure(acc: KAccess) -> tuple[str, ...] | None:
    """The loop names of an access whose every index is a bare loop variable, else None."""
    out = []
    for ix in acc.index:
        if ix.const != 0 or len(ix.coeffs) != 1 or ix.coeffs[0][1] != 1:
            return None
        out.append(ix.coeffs[0][0])
    return tuple(out)


def float_dtype_of(mp: MeshProgram) -> str:
    """The float dtype of ``mp``'s tile routines: f32 when an array is f32, else its one 16-bit float dtype (f32
    when it has none). Tensors of another dtype (an f16 database beside f32 queries, integers) are computed by
    the generic path only; so the FPU and packer keep one data format for the whole program."""
    floats = sorted({t.dtype for t in mp.tensors} - set(INT_DTYPES))
    return "f32" if "f32" in floats or not floats else floats[0]


def off_format(mp: MeshProgram, k: Kernel) -> list[str]:
    """The buffers ``k`` reads or writes whose dtype is not the tile routines' (:func:`float_dtype_of`)."""
    fmt = float_dtype_of(mp)
    return sorted({a.buffer for p in k.statements for a in (p.write, *p.reads) if mp.tensor(a.buffer).dtype != fmt})


def classify(mp: MeshProgram, k: Kernel) -> TileOp:
    if k.parts:
        check_generic(mp, k)
        return TileOp(k.name, "generic", k.parts[0].write.buffer,
                      text=f"{len(k.parts)} statements in their original order {k.schedule}",
                      reason=f"a sequence of {len(k.parts)} statements whose instances interleave in their original "
                             f"order (one tile routine runs one statement over whole boxes)")
    other = off_format(mp, k)
    if other:
        check_generic(mp, k)
        return TileOp(k.name, "generic", k.write.buffer, text=statement_text(k),
                      reason=f"{', '.join(other)} not {float_dtype_of(mp)} (the tile routines MICA emits compute on "
                             f"one float data format per program: integers and other float types take the scalar "
                             f"loops)")
    reads = {a.ref: a for a in k.reads}

    def acc(e) -> KAccess | None:
        if not isinstance(e, Read):
            return None
        return k.write if e.ref == k.write.ref else reads.get(e.ref)

    w = k.write
    wt = mp.tensor(w.buffer)
    wm, wn = tile_grid(wt)
    text = statement_text(k)
    wv = _pure(w)
    if isinstance(k.expr, Const):
        return TileOp(k.name, "fill", w.buffer, value=float(k.expr.value), mt=wm * wn, text=text)
    e = k.expr
    if wv is not None and isinstance(e, Bin) and e.op == "+":
        for acc_e, prod in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            a = acc(acc_e)
            if a is None or a.buffer != w.buffer or _pure(a) != wv or not isinstance(prod, Bin) or prod.op != "*":
                continue
            p, q = acc(prod.lhs), acc(prod.rhs)
            if p is None or q is None:
                continue
            for L, R in ((p, q), (q, p)):
                op = _matmul(mp, k, w, wv, L, R, text)
                if op is not None:
                    return op
    if wv is not None and isinstance(e, Bin) and e.op in "+-*":
        x, y = acc(e.lhs), acc(e.rhs)
        if x is not None and y is not None and _pure(x) == wv and _pure(y) == wv:
            for a in (x, y):
                if not _same_boxes(mp, w.buffer, a.buffer):
                    break
            else:
                return TileOp(k.name, "eltwise", w.buffer, (x.buffer, y.buffer), op=e.op, mt=wm * wn, text=text)
    if wv is not None:
        chain = _scalar_chain(e, acc)
        if chain is not None:
            x, ops = chain
            if _pure(x) == wv and _same_boxes(mp, w.buffer, x.buffer):
                return TileOp(k.name, "scalar", w.buffer, (x.buffer,), mt=wm * wn, text=text, chain=tuple(ops))
    check_generic(mp, k)
    return TileOp(k.name, "generic", w.buffer, text=text,
                  reason="not a fill, matmul, element-wise operation or scalar chain over the written box")


#: the math functions the generic path computes, by their helper in ``kernels/mica_mesh.h``: ``sqrt`` and
#: ``fabs`` in integer arithmetic on the IEEE bits, correctly rounded like the reference's; ``fmax`` / ``fmin``
#: by IEEE comparisons, exact (NaN arguments too); ``exp`` by range reduction and a polynomial in software
#: floating point, within 1 ulp of glibc's expf; ``log``, ``pow``, ``tanh`` and ``erf`` in double precision
#: (range reduction and series, erf's tail by its continued fraction) rounded once to float, with C99 Annex F's
#: special values: correctly rounded on every float tests/emit_metalium/test_generic.py sweeps, so within 1 ulp of
#: glibc's logf / powf / erff and 2 of its tanhf. Every math function the front end accepts
#: (:data:`mica.affine.expr.CALLS`) has its helper here.
SOFT_CALLS = {"sqrt": "mica_sqrtf", "fabs": "mica_fabsf", "fmax": "mica_fmaxf", "fmin": "mica_fminf",
              "exp": "mica_expf", "log": "mica_logf", "pow": "mica_powf", "tanh": "mica_tanhf", "erf": "mica_erff"}


def check_generic(mp: MeshProgram, k: Kernel) -> None:
    """:class:`EmitError` when ``k`` cannot run on the generic path either (calls other than
    :data:`SOFT_CALLS`, boxes past :data:`MAX_RANK`)."""
    for p in k.statements:
        for e in p.expr.walk():
            if isinstance(e, Call) and e.fn not in SOFT_CALLS:
                raise EmitError(f"kernel {k.name}: call of {e.fn}: neither a tile routine nor the generic path (no "
                                f"math library on the data-movement RISC-V) renders it")
        for a in (p.write, *p.reads):
            tile_rows_cols(mp.tensor(a.buffer))         # EmitError past MAX_RANK


def _matmul(mp, k, w, wv, L, R, text) -> TileOp | None:
    lv, rv = _pure(L), _pure(R)
    if lv is None or rv is None:
        return None
    if len(wv) == 2:
        m, n = wv
        if len(lv) != 2 or len(rv) not in (1, 2) or lv[0] != m or (len(rv) == 2 and rv[1] != n):
            return None
        kk = lv[1]
        if rv[0] != kk or len(rv) == 1:
            return None
    elif len(wv) == 1:
        (m,) = wv
        if len(lv) != 2 or len(rv) != 1 or lv[0] != m or rv[0] != lv[1]:
            return None
        kk = lv[1]
    else:
        return None
    if kk in wv or kk not in k.loops:
        return None
    wb, lb, rb = (mp.tensor(a.buffer).box for a in (w, L, R))
    pairs = [(wb[0], lb[0]), (lb[1], rb[0])] + ([(wb[1], rb[1])] if len(wb) == 2 else [])
    if any(geometry(a) != geometry(b) for a, b in pairs):
        return None                     # the operands' boxes do not line up tile for tile: generic path
    mt, nt = tile_grid(mp.tensor(w.buffer))
    lm, lk = tile_grid(mp.tensor(L.buffer))
    rk, rn = tile_grid(mp.tensor(R.buffer))
    if lm != mt or rn != nt or lk != rk:
        raise EmitError(f"kernel {k.name}: tile grids of {w.buffer} {mt}x{nt}, {L.buffer} {lm}x{lk} and "
                        f"{R.buffer} {rk}x{rn} do not form a matmul")
    return TileOp(k.name, "matmul", w.buffer, (L.buffer, R.buffer), mt=mt, nt=nt, kt=lk, text=text)


def _scalar_chain(e, acc):
    """(the one access, [(op, constant), ...]) when ``e`` is one read combined with constants by a chain of
    ``+ - * /`` (each operator has a constant on one side), else None."""
    if isinstance(e, Read):
        a = acc(e)
        return (a, []) if a is not None else None
    if isinstance(e, Neg):
        inner = _scalar_chain(e.arg, acc)
        return (inner[0], inner[1] + [("mul", -1.0)]) if inner else None
    if not isinstance(e, Bin) or e.op not in "+-*/":
        return None
    if isinstance(e.rhs, Const):
        inner, c, const_left = _scalar_chain(e.lhs, acc), float(e.rhs.value), False
    elif isinstance(e.lhs, Const):
        inner, c, const_left = _scalar_chain(e.rhs, acc), float(e.lhs.value), True
    else:
        return None
    if inner is None:
        return None
    fn = {"+": "add", "*": "mul", "-": "rsub" if const_left else "sub", "/": None if const_left else "div"}[e.op]
    if fn is None:
        return None
    return inner[0], inner[1] + [(fn, c)]


# -- whole boxes: when a tile routine computes exactly the kernel's instances --------------------------

def box_domain_guard(mp: MeshProgram, k: Kernel, region, steps: int) -> str | None:
    """A C condition (over ``x``, ``y``, ``t``, ``kb`` and the runtime parameters ``rp_<name>``, within their
    declared ranges) for the cores, steps and values where ``k`` runs at all, or
    None when it runs everywhere on ``region`` (``t`` ranges over ``steps``, as in the emulator's kernels); :class:`EmitError` when, where it runs, its instances are
    not every point of its boxes (a tile routine always covers whole boxes).

    The box of a loop is the box dimension of the first access that indexes by it; the check is one isl
    inclusion: boxes (restricted to where the domain is non-empty) must lie inside the domain."""
    dom = iset(k.domain, EmitError)
    params = [dom.get_dim_name(isl.dim_type.param, i) for i in range(dom.dim(isl.dim_type.param))]
    cons = []
    for v in k.loops:
        for a in (k.write, *k.reads):
            idx = _pure(a)
            if idx is not None and v in idx:
                d = mp.tensor(a.buffer).box[idx.index(v)]
                cons.append(d.isl(v, prefix="__"))
                break
        else:
            raise EmitError(f"kernel {k.name}: loop {v} indexes no array directly; no whole-box tile routine")
    name = dom.get_tuple_name()
    bounds = {"__x": (region.x0, region.x1), "__y": (region.y0, region.y1), "__t": (0, max(steps, 1)),
              "__kb": (0, mp.skew.n if mp.skew else 1),
              **{kernel_param(n): (lo, hi) for n, lo, hi in mp.runtime}}    # rp_<name>: runtime args
    ptxt = f"[{', '.join(params)}] -> "
    ctx = [f"{lo} <= {p} < {hi}" for p, (lo, hi) in bounds.items() if p in params]
    ctx_set = iset(ptxt + "{ : " + (" and ".join(ctx) or "true") + " }", EmitError)
    box = iset(ptxt + f"{{ {name}[{', '.join(k.loops)}] : {' and '.join(cons) or 'true'} }}", EmitError)
    live = dom.params().intersect(ctx_set)
    if not box.intersect_params(live).is_subset(dom):
        raise EmitError(f"kernel {k.name}: where it runs, its instances {k.domain} are not whole boxes; the "
                        f"Metalium tile routines compute whole boxes")
    if ctx_set.is_subset(live):
        return None
    expr = isl.AstBuild.from_context(ctx_set).expr_from_set(live)
    return ast_expr(expr, C_KERNEL)
