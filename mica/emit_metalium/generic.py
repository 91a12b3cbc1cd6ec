"""The reader's loop nests over a kernel's instances: the generic path, and the copies of :mod:`.stencil`.

Modes: ``copy`` (a copy kernel's elements moved as bits), ``gather`` / ``scatter`` (a stencil's shifted views
into scratch CBs and its result back, as bits), and ``generic``: a MeshIR kernel neither a tile routine nor a
stencil implements (a sequence kernel of the one-core fallback, a reduction over loops outside the written
index, a read that is not a shifted view, a square root; ``plan.json`` names each with its reason) runs as
scalar loops on the reader. They run in the reader kernel (a data-movement RISC-V) at the kernel's turn,
while the compute kernel waits: isl generates the loop nest from the kernel's domain for the class's
rectangle (as :mod:`mica.emit_c.kernels` does for the emulator), and every access goes to its element in
the tile layout (:func:`tile_offset_c`). The baby RISC-Vs have no FPU, so this is exact IEEE arithmetic in
software and slow (a bf16 element is read as an f32 and the result rounded to bf16 when stored, as
:mod:`mica.codeprint.half` defines and the reference computes): a place to tune (an SFPU routine, or a tile-shaped rewrite), not a fast path.

Public API: :func:`render_generic`.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import islpy as isl

from ..affine.isl_names import iset, umap, uset
from ..affine.runtime import kernel_param
from ..affine.expr import Read
from ..codeprint import (C_KERNEL, C_TYPES, METALIUM, ast_expr, int_store_float_dtype, iterator_casts_dropped,
                         print_aff, print_expr, walk)
from ..codeprint.half import ROUND_C, load_c, store_c
from ..errors import EmitError
from ..meshir.ir import Kernel, KernelClass, MeshProgram
from .api import DATA_FORMATS
from .classify import SOFT_CALLS, tile_grid, tile_rows_cols
from .plan import scalar_arg
from .stencil import view_key, view_text


def _soft_call(fn: str, elem: str) -> str:
    if fn not in SOFT_CALLS:
        raise EmitError(f"call of {fn}: no software form on the data-movement RISC-V (it has no FPU and no libm)")
    return SOFT_CALLS[fn]


#: the generic path's language: Metalium C++ with the calls of :data:`.classify.SOFT_CALLS`, and C's integer
#: arithmetic for i32 arrays (the RISC-V's own: C++'s ``/`` and ``%`` truncate as C's do)
GENERIC = replace(METALIUM, call=_soft_call, index="(({1})({0}))", int_const=C_KERNEL.int_const,
                  conv="(({})({}))", int_div=None,
                  types=MappingProxyType({d: C_TYPES[d] for d in ("f32", "i32", "i16", "i8", "u8")}))
#: A C conversion to a 16-bit type in a program holding that type, whose kernels have its conversions
#: (:mod:`mica.codeprint.half`): ``(__bf16)i`` rounds the float value to bf16 as the reference does, ``(_Float16)i``
#: to f16 through ``mica_f32_to_f16`` (f16 elements are their uint16_t bits: no ``_Float16`` on the RISC-V,
#: :data:`mica.codeprint.half.F16_BITS_C`).
HALF_ROUND = {"bf16": ROUND_C["bf16"], "f16": "mica_f16_to_f32(mica_f32_to_f16({}))"}


def _load(dtype: str, text: str) -> str:
    """An element of an array of ``dtype`` as the value the arithmetic uses (:func:`~mica.codeprint.half.load_c`,
    an f16 element from its bits)."""
    return f"mica_f16_to_f32({text})" if dtype == "f16" else load_c(dtype, text)


def _store(dtype: str, text: str) -> str:
    """A value converted for a store to an array of ``dtype`` (:func:`~mica.codeprint.half.store_c`, an f16
    one to its bits)."""
    return f"mica_f32_to_f16({text})" if dtype == "f16" else store_c(dtype, text)


#: the integer type moving an element's bits, per dtype (the data-movement copies of :mod:`.stencil`)
BITS = {"f32": "uint32_t", "bf16": "uint16_t", "f16": "uint16_t", "i32": "uint32_t", "i16": "uint32_t", "i8": "uint32_t",
        "u8": "uint32_t"}

#: the narrow integer dtypes (held widened in Int32 tiles) and their C types
NARROW = {"i16": "int16_t", "i8": "int8_t", "u8": "uint8_t"}

#: what each mode's loop nest does per instance (the head comment of its block)
MODES = {
    "generic": "scalar loops on this RISC-V (software floating point), elements addressed in the tile layout",
    "copy": "a data-movement copy: each instance's element moved as bits (no floating point), in the tile layout",
    "gather": "the stencil's shifted views gathered into the scratch CBs in the written box's tile layout (bits)",
    "scatter": "the stencil's result (cb_sacc) scattered into the written box, at the kernel's instances only (bits)",
}


class _Printer:
    def __init__(self, plan, mp: MeshProgram, k: Kernel, cls: KernelClass, steps: int, mode: str = "generic",
                 op=None):
        self.plan, self.mp, self.k, self.cls, self.steps = plan, mp, k, cls, steps
        self.mode, self.op = mode, op
        self.by_name = {iset(p.domain, EmitError).get_tuple_name(): p for p in k.statements}
        self.buffers: list[str] = []
        for p in k.statements:
            for a in (p.write, *p.reads):
                if a.buffer not in self.buffers:
                    self.buffers.append(a.buffer)
        self.lines: list[str] = []
        self.part = k.statements[0]
        # a conversion to a 16-bit type the program holds rounds through its helpers (mica_mesh.h has them)
        dtypes = {t.dtype for t in mp.tensors}
        self.lang = replace(GENERIC, conv_round=MappingProxyType({d: r for d, r in HALF_ROUND.items() if d in dtypes}))

    def ptr(self, buffer: str) -> str:
        return f"e{self.buffers.index(buffer)}"

    def offset(self, buffer: str, index, env) -> str:
        """The C++ index of element ``index`` of ``buffer`` in its tile layout: the local index along each box
        dimension (global minus the core's first), the leading ones flattened into a row by their allocated
        sizes (:func:`.classify.tile_rows_cols`)."""
        t = self.mp.tensor(buffer)
        tile_rows_cols(t)                               # EmitError past MAX_RANK
        local = []
        for d, ix in zip(t.box, index):
            lo = ""
            if d.coord:
                c = f"({d.coord} - {d.origin})" if d.origin else d.coord
                lo = f" - ({d.tile} * {c}" + (f" + {d.offset}" if d.offset else "") + ")"
            local.append(f"({print_aff(ix, env, METALIUM)}{lo})")
        if len(local) <= 2:
            row, col = (local + ["0", "0"])[:2]
        else:
            row = local[0]
            for d, ix in zip(t.box[1:-1], local[1:-1]):
                row = f"({row} * {d.alloc} + {ix})"
            col = local[-1]
        return f"mica_tile_offset({row}, {col}, {tile_grid(t)[1]})"

    def dtype(self, buffer: str) -> str:
        return self.mp.tensor(buffer).dtype

    def expr(self, e, env) -> str:
        p = self.part

        def read(ref):
            acc = p.write if ref == p.write.ref else next(a for a in p.reads if a.ref == ref)
            return _load(self.dtype(acc.buffer), f"{self.ptr(acc.buffer)}[{self.offset(acc.buffer, acc.index, env)}]")
        def dtype_of(leaf) -> str:        # a scalar argument is a float (its f32 bits in a runtime arg)
            if not isinstance(leaf, Read):
                return "f32"
            acc = p.write if leaf.ref == p.write.ref else next(a for a in p.reads if a.ref == leaf.ref)
            return self.dtype(acc.buffer)
        wdt = self.dtype(p.write.buffer)
        if int_store_float_dtype(e, dtype_of, wdt) == "f64":
            raise EmitError(f"kernel {self.k.name}: statement {p.statement or p.name} stores a double value to an "
                            f"integer array (C computes its float part in double: MICA reads a floating literal "
                            f"there as C's double), and Tenstorrent has no double arithmetic; compute the float "
                            f"part into a float array first")
        # float parts in f32 (bf16 values are read as f32), integer parts in C's int arithmetic
        return print_expr(iterator_casts_dropped(e, "f32"), self.lang, read, self.scalar, elem="float",
                          where=f"kernel {self.k.name}", env=env, dtype_of=dtype_of, dtype=wdt)

    def scalar(self, name: str) -> str:
        """A scalar argument's value: a runtime parameter's (an int runtime arg) or a float's (its f32 bits
        in a runtime arg, :func:`.plan.scalar_arg`; host.cpp rounds a bf16 scalar's value to bf16 first, as
        the reference reads it)."""
        if name in {n for n, _, _ in self.mp.runtime}:
            return f"((float)rp_{name})"
        return scalar_arg(name)

    def user(self, call: isl.AstExpr, indent: str) -> None:
        self.part = p = self.by_name[call.get_op_arg(0).get_id().get_name()]
        args = [ast_expr(call.get_op_arg(i), METALIUM) for i in range(1, call.get_op_n_arg())]
        env = {lp: f"i_{lp}" for lp in p.loops}
        self.lines.append(indent + "{" + (f"  // {p.statement}" if len(self.by_name) > 1 else ""))
        for lp, a in zip(p.loops, args):
            self.lines.append(f"{indent}    const int64_t i_{lp} = {a};")
        self.lines += [f"{indent}    {s}" for s in self.statement(p, env)]
        self.lines.append(indent + "}")

    def statement(self, p: Kernel, env) -> list[str]:
        """The C++ of one instance of ``p`` (loop values ``env``) in this printer's mode."""
        w = p.write
        wo = self.offset(w.buffer, w.index, env)
        if self.mode == "generic":
            wdt = self.dtype(w.buffer)
            value = self.expr(p.expr, env)
            if wdt in NARROW:           # held widened in an Int32 tile: C's conversion on the store
                value = f"(int32_t)({NARROW[wdt]})({value})"
            return [f"{self.ptr(w.buffer)}[{wo}] = {_store(wdt, value)};"]
        if self.mode == "copy":
            (r,) = [a for a in p.reads if a.ref == p.expr.ref] or [w]
            return [f"{self.ptr(w.buffer)}[{wo}] = {self.ptr(r.buffer)}[{self.offset(r.buffer, r.index, env)}];"]
        if self.mode == "scatter":
            return [f"{self.ptr(w.buffer)}[{wo}] = sacc[{wo}];"]
        out = []
        for n, key in enumerate(self.op.views):
            r = next(a for a in p.reads if view_key(a) == tuple(key))
            out.append(f"sv{n}[{wo}] = {self.ptr(r.buffer)}[{self.offset(r.buffer, r.index, env)}];")
        return out

    def block(self, indent: str, t_c: str, kb_c: str) -> list[str]:
        k, r = self.k, self.cls.region
        dom = uset(k.domain, EmitError) if k.parts else iset(k.domain, EmitError)
        params = [dom.get_space().get_dim_name(isl.dim_type.param, i) for i in range(dom.get_space().dim(isl.dim_type.param))]
        ctx_cons = [f"{r.x0} <= __x < {r.x1}", f"{r.y0} <= __y < {r.y1}"]
        if "__t" in params:
            ctx_cons.append(f"0 <= __t < {max(self.steps, 1)}")
        if "__kb" in params:
            ctx_cons.append(f"0 <= __kb < {self.mp.skew.n}")
        ctx_cons += [f"{lo} <= {kernel_param(n)} < {hi}" for n, lo, hi in self.mp.runtime
                     if kernel_param(n) in params]        # the host checks the declared ranges
        allp = sorted(set(params) | {"__x", "__y"})
        ctx = iset(f"[{', '.join(allp)}] -> {{ : {' and '.join(ctx_cons)} }}", EmitError)
        dom = dom.intersect_params(ctx)
        def ctype(buffer: str) -> str:      # each buffer's element type (a kernel may read f32, write i32)
            dtype = self.dtype(buffer)
            return DATA_FORMATS[dtype][1] if self.mode == "generic" else BITS[dtype]
        wtype = ctype(self.part.write.buffer)
        what = "generic path" if self.mode == "generic" else self.mode
        out = [f"{indent}// {what}, kernel class {self.cls.name}: {MODES[self.mode]}",
               f"{indent}{{",
               f"{indent}    const int64_t x = my_x, y = my_y, t = {t_c};",
               f"{indent}    const int64_t kb = {kb_c};",
               f"{indent}    (void)x; (void)y; (void)t; (void)kb;"]
        for b in self.buffers:
            cb = self.plan.tensor_cb(b).name
            if self.mode == "scatter" and b != self.k.write.buffer:
                continue
            ty = ctype(b)
            out.append(f"{indent}    {ty}* const {self.ptr(b)} = reinterpret_cast<{ty}*>(get_write_ptr({cb}));  // {b}")
        scratch = ([(f"sv{n}", f"cb_sv{n}", f"view {view_text(v)}") for n, v in enumerate(self.op.views)]
                   if self.mode == "gather" else [("sacc", "cb_sacc", "the result")] if self.mode == "scatter" else [])
        for ptr, cb, what in scratch:
            out.append(f"{indent}    {wtype}* const {ptr} = reinterpret_cast<{wtype}*>(get_write_ptr({cb}));  // {what}")
        self.lines = []
        if not dom.is_empty():
            if k.parts:
                sched, udom = umap(k.schedule, EmitError), dom
            else:
                sched = umap(f"[{', '.join(allp)}] -> {{ {dom.get_tuple_name()}[{', '.join(k.loops)}] -> "
                             f"[{', '.join(k.order)}] }}", EmitError) if k.loops else None
                udom = isl.UnionSet.from_set(dom)
            if sched is None:
                self.user_noloop(indent + "    ")
            else:
                node = isl.AstBuild.from_context(ctx).node_from_schedule_map(sched.intersect_domain(udom))
                walk(node, self.lines, indent + "    ", METALIUM, self.user)
        return out + self.lines + [f"{indent}}}"]

    def user_noloop(self, indent: str) -> None:
        self.lines += [indent + s for s in self.statement(self.k, {})]


def render_generic(plan, mp: MeshProgram, k: Kernel, cls: KernelClass, steps: int, indent: str, t_c: str,
                   kb_c: str, mode: str = "generic", op=None) -> list[str]:
    """The C++ block running ``k`` on the cores of ``cls`` (inside the reader; ``my_x``/``my_y`` in scope): its
    instances as scalar loops (``generic``), or as bit copies (``copy``; a stencil ``op``'s ``gather`` and
    ``scatter``, :mod:`.stencil`)."""
    return _Printer(plan, mp, k, cls, steps, mode, op).block(indent, t_c, kb_c)
