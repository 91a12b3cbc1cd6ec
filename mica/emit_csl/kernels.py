"""MeshIR kernels -> CSL functions, one per kernel class (as the C back end has one C function per class).

The loop nest is isl's AST of the kernel's domain on the class's rectangle (:func:`mica.codeprint.walk`). An
innermost loop around one statement whose destination moves with it (any constant stride) becomes DSD
operations instead of a scalar loop: its right-hand side -- vector reads at any constant stride and shifted
offsets, loop-invariant scalars and constants, ``+ - *`` and unary minus, fmac forms ``a + b*s`` -- is
evaluated as whole rows by :mod:`.vector` in the statement's own order, each operation rounded as the scalar
statement rounds it (a stencil: ``@fadds`` per neighbour, then ``@fmuls``; ``W += X * s``: one ``@fmacs``;
``h`` instead of ``s`` for f16). A reduction into one element along the innermost loop whose enclosing loop
moves the destination (a gemv's dot products) is first interchanged with that loop
(:meth:`KernelPrinter._interchanged`): every element still takes its updates in order, now as one
``@fmac`` per step. Rows that need temporaries use the scratch buffer ``scratch_<dtype>`` (the plan counts
it in SRAM). A loop that stays scalar -- a division, a math function, a reduction that cannot be
interchanged, a loop-carried dependence -- carries a ``// scalar loop: <reason>`` comment and is named in
plan.json's ``scalar_loops`` with that reason. Math functions map to CSL's ``<math>`` library
(:data:`MATH`). Integer arrays (``i32`` buffers; ``i16``/``i8``/``u8`` held widened in them, each store wrapped
as C converts) compute in scalar loops with C's integer arithmetic, every conversion C makes implicitly an
``@as`` (:data:`mica.codeprint.CSL`); a float part C computes in double is refused (the WSE has no double).

Public API: :func:`kernel_functions` -> :class:`KernelSet`; :class:`KernelPrinter`; :func:`csl_language`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from math import prod

import islpy as isl

from ..affine.expr import Aff, Call, Cmp, Conv, Index, Read, Select
from ..affine.isl_names import iset, umap, uset
from ..affine.runtime import kernel_param
from ..affine.expr import INT_DTYPES
from ..codeprint import CSL, ast_expr, int_store_float_dtype, iterator_casts_dropped, print_aff, print_expr, walk
from ..errors import EmitError
from ..meshir.ir import BoxDim, Kernel, KernelClass, MeshProgram, RegionTensor
from ..meshir.printer import statement_text
from . import boxes
from .vector import Refused, Row, Scal, Vec, compile_rows

SUFFIX = {"f32": "s", "f16": "h"}

#: Math functions of a statement -> the CSL ``<math>`` library function (imported as ``math_lib`` by the PE
#: program when a kernel uses one), by element type: ``sqrt_f32`` / ``sqrt_f16`` (sdk.cerebras.ai
#: ``/csl/language/libraries``, ``<math>``; the module is imported with ``@import_module("<math>")`` as on
#: ``/csl/language/modules``).
MATH = {"sqrt": "sqrt", "exp": "exp"}
MATH_MODULE = "math_lib"
#: Math functions printed as calls of the PE program's own helpers (:data:`.csltext.FLOAT_HELPERS`, defined
#: when a kernel calls one): C's ``fmaxf``/``fminf``, which return the other operand when one is a NaN, and
#: ``fabsf`` (the sign bit cleared, so ``-0.0`` gives ``+0.0`` and a NaN stays a NaN).
OWN = {"fmax": "mica_fmax", "fmin": "mica_fmin", "fabs": "mica_fabs"}


def csl_language(kernel: str):
    """The CSL expression language of kernel ``kernel``: :data:`mica.codeprint.CSL` with the math functions
    of :data:`MATH` mapped to the ``<math>`` library and those of :data:`OWN` to the PE program's helpers; any
    other function is an :class:`EmitError` naming the kernel."""
    def call(fn: str, elem: str) -> str:
        if elem in SUFFIX and fn in OWN:
            return f"{OWN[fn]}_{elem}"
        if fn not in MATH or elem not in SUFFIX:
            raise EmitError(f"CSL back end: kernel {kernel}: math function {fn}() on {elem} has no CSL <math> "
                            f"library function MICA maps it to (mapped: {', '.join(sorted(MATH | OWN))} on f32 "
                            f"and f16)")
        return f"{MATH_MODULE}.{MATH[fn]}_{elem}"
    return replace(CSL, call=call)


class KernelPrinter:
    """Prints kernel class ``cls`` of ``kernel`` as ``fn <cls.name>() void``; ``dsds`` collects the
    (buffer, stride) memory DSDs its vector operations start from."""

    def __init__(self, mp: MeshProgram, kernel: Kernel, cls: KernelClass, steps: int, dsds: dict,
                 slotted: frozenset = frozenset(), scratch: dict | None = None):
        self.mp, self.k, self.cls, self.steps, self.dsds = mp, kernel, cls, steps, dsds
        self.slotted = slotted      # double buffers: read at the element offset slot_<name> (their current slot)
        self.by_name = {iset(p.domain).get_tuple_name(): p for p in kernel.statements}
        self.part = kernel.statements[0]
        self.lang = csl_language(kernel.name)
        self.scalar_reasons: list[str] = []       # why innermost loops stayed scalar
        self.scratch: dict = {} if scratch is None else scratch              # dtype -> scratch elements the vector rows need
        self.lines: list[str] = []
        self.nvec = 0

    # -- geometry ----------------------------------------------------------------------------------------
    def _size(self, d: BoxDim):
        """Box extent along ``d`` on this class: an int when constant, else CSL text."""
        r = self.cls.region
        n = d.size_on(*((r.x0, r.x1) if d.coord == "x" else (r.y0, r.y1)))
        return n if n is not None else f"imin({d.tile}, {d.extent} - {d.tile} * {boxes.coord_csl(d, d.coord)})"

    def _strides(self, t: RegionTensor):
        sizes = [self._size(d) for d in t.box]
        out = []
        for k in range(len(sizes)):
            rest = sizes[k + 1:]
            if all(isinstance(s, int) for s in rest):
                out.append(prod(rest))
            else:
                out.append(" * ".join(str(s) for s in rest))
        return out

    def offset(self, t: RegionTensor, index: tuple[Aff, ...], env: dict[str, str]) -> str:
        terms = []
        for d, ix, st in zip(t.box, index, self._strides(t)):
            lo = ((f" - {d.tile} * {boxes.coord_csl(d, d.coord)}" + (f" - ({d.offset})" if d.offset else ""))
                  if d.coord else "")
            mul = "" if st == 1 else f" * {st}" if isinstance(st, int) else f" * ({st})"
            terms.append(f"({print_aff(ix, env, CSL)}{lo}){mul}")
        if t.name in self.slotted:
            terms.append(f"slot_{t.name}")
        return " + ".join(terms) or "0"

    # -- expressions ---------------------------------------------------------------------------------------
    def _acc(self, ref: str):
        p = self.part
        return p.write if ref == p.write.ref else next(a for a in p.reads if a.ref == ref)

    def expr(self, e, env) -> str:
        """``e`` of the current part as CSL: float parts in the written array's type (an integer array's in
        the type C's conversions give, :func:`mica.codeprint.float_dtype`, which must be ``f32``: the WSE
        has no double), integer parts in ``i32``, every conversion between them an ``@as``."""
        def read(ref):
            a = self._acc(ref)
            return f"buf_{a.buffer}[@as(u16, {self.offset(self.mp.tensor(a.buffer), a.index, env)})]"

        def dtype_of(leaf) -> str:
            return self.mp.tensor(self._acc(leaf.ref).buffer).dtype if isinstance(leaf, Read) else "f32"
        ty = self.mp.tensor(self.part.write.buffer).dtype
        elem = ty
        if ty in INT_DTYPES:       # f32 where the tree has no float part at all (it is not printed then)
            elem = int_store_float_dtype(e, dtype_of, ty) or "f32"
            if elem not in SUFFIX:
                what = self.part.statement or self.part.name
                raise EmitError(f"CSL back end: kernel {self.k.name}: statement {what} stores a {elem} value to an "
                                f"integer array: C computes its float part in double (MICA reads a floating literal "
                                f"there as C's double), and the WSE has no {elem} arithmetic; compute the float part "
                                f"into a float array first")
        return print_expr(iterator_casts_dropped(e, elem), self.lang, read,
                          lambda n: f"@as({elem}, scalars[{self.mp.scalars.index(n)}])", elem=elem,
                          where=f"CSL back end: kernel {self.k.name}", env=env, dtype_of=dtype_of, dtype=ty)

    # -- statements ----------------------------------------------------------------------------------------
    def _env(self, call: isl.AstExpr):
        self.part = p = self.by_name[call.get_op_arg(0).get_id().get_name()]
        args = [ast_expr(call.get_op_arg(i), CSL) for i in range(1, call.get_op_n_arg())]
        return p, dict(zip(p.loops, args))

    def user(self, call: isl.AstExpr, indent: str) -> None:
        p, env = self._env(call)
        w = p.write
        wt = self.mp.tensor(w.buffer)
        self.lines.append(f"{indent}// {p.statement or p.name}")
        value = self.expr(p.expr, env)
        if wt.dtype in ("i8", "u8", "i16"):     # held widened in i32: C's conversion on the store
            value = f"wrap_{wt.dtype}({value})"
        self.lines.append(f"{indent}buf_{w.buffer}[@as(u16, {self.offset(wt, w.index, env)})] = {value};")

    def vector_loop(self, nd: isl.AstNode, indent: str) -> bool:
        """Prints ``nd`` (a ``for``) as DSD operations when its body is one statement whose right-hand side
        :mod:`.vector` can evaluate as rows; else returns False, and an innermost loop that stays scalar gets
        a comment with the reason (recorded in :attr:`scalar_reasons`)."""
        try:
            loop = self._unit_loop(nd)
            if loop is None:
                return False
            it, init, count, call, p, coef = loop
            ty = self.mp.tensor(p.write.buffer).dtype
            if ty not in SUFFIX:
                raise Refused(f"writes {ty} (DSD arithmetic is f32 and f16)")
            plan = self._rows(p, coef, ty)
        except Refused as why:
            self.scalar_reasons.append(str(why))
            self.lines.append(f"{indent}// scalar loop: {why}")
            return False
        self._print_rows(indent, call, p, coef, it, init, count, ty, plan)
        return True

    def _unit_loop(self, nd: isl.AstNode):
        """``nd`` as a unit-step loop around one statement: (iterator, first value, trip count, the call, the
        statement's part, each loop variable's coefficient of the iterator: 1 or 0); None when its body is
        not a statement (an outer loop); raises :class:`Refused` when it is an innermost loop that cannot
        be a vector one."""
        body = nd.for_get_body()
        inc = nd.for_get_inc()
        if body.get_type() != isl.ast_node_type.user:
            if _has_loop(body):
                return None
            if body.get_type() == isl.ast_node_type.block:
                raise Refused("its body runs several statements per iteration")
            raise Refused("its body is guarded by a condition on the iterator")
        if inc.get_type() != isl.ast_expr_type.int or inc.get_val().to_python() != 1:
            raise Refused("its step is not 1")
        it = ast_expr(nd.for_get_iterator(), CSL)
        cond = nd.for_get_cond()
        if cond.get_type() != isl.ast_expr_type.op or cond.get_op_type() not in (
                isl.ast_expr_op_type.le, isl.ast_expr_op_type.lt) or ast_expr(cond.get_op_arg(0), CSL) != it:
            raise Refused("its bound is not an upper bound on the iterator")
        init = ast_expr(nd.for_get_init(), CSL)
        ub = ast_expr(cond.get_op_arg(1), CSL)
        count = f"{ub} - {init} + 1" if cond.get_op_type() == isl.ast_expr_op_type.le else f"{ub} - {init}"
        call = body.user_get_expr()
        p = self.by_name[call.get_op_arg(0).get_id().get_name()]
        word = re.compile(rf"\b{re.escape(it)}\b")
        coef = {}
        for lp, k in zip(p.loops, range(1, call.get_op_n_arg())):
            a = ast_expr(call.get_op_arg(k), CSL)
            if a == it:
                coef[lp] = 1
            elif word.search(a):
                raise Refused(f"loop variable {lp} is another function of the iterator")
            else:
                coef[lp] = 0
        return it, init, count, call, p, coef

    def _rows(self, p, coef: dict, ty: str):
        """The DSD operations of statement ``p`` along the loop (``coef``): :func:`.vector.compile_rows`'s
        ``(ops, rows, direct)``, the write's stride and the row length bound; raises :class:`Refused`."""
        def acc_of(r):
            return p.write if r.ref == p.write.ref else next(x for x in p.reads if x.ref == r.ref)

        def stride(acc):
            """Elements per iteration of ``acc`` (0: invariant), or None: another dtype or a stride that
            is not a constant."""
            t = self.mp.tensor(acc.buffer)
            if t.dtype != ty:
                return None
            s = 0
            for ix, sd in zip(acc.index, self._strides(t)):
                c = sum(cf * coef[n] for n, cf in ix.coeffs)
                if c:
                    if not isinstance(sd, int):
                        return None
                    s += c * sd
            return s

        def vec(e):
            if isinstance(e, Read):
                a = acc_of(e)
                s = stride(a)
                if s is None:
                    raise Refused(f"reads {a.buffer} at a stride that is not a constant, or of another dtype")
                return Vec(e, a, s) if s else None
            return None

        w = p.write

        def invariant(e) -> bool:
            for r in e.walk():
                if isinstance(r, (Call, Cmp, Select, Index, Conv)):
                    return False
                if isinstance(r, Read):
                    if vec(r) is not None:
                        return False
                    if acc_of(r).buffer == w.buffer:
                        raise Refused(f"reads one element of {w.buffer}, the buffer it writes, at every "
                                      f"iteration (the loop may write it)")
            return True

        ws = stride(w)
        if not ws or not (0 < abs(ws) < 128):
            raise Refused("its destination does not move with the loop (a reduction into one element)"
                          if ws == 0 else f"its destination's stride {ws} is not a DSD stride (1..127)")
        wt = self.mp.tensor(w.buffer)
        strides = self._strides(wt)

        def own(v: Vec) -> str:
            if v.access.buffer != w.buffer:
                return "other"
            if v.access.index == w.index and v.stride == ws:
                return "same"
            if v.stride != ws:
                return f"reads {w.buffer}, the buffer it writes, at another stride along the loop"
            delta = 0
            for a, b, sd in zip(v.access.index, w.index, strides):
                if a.coeffs != b.coeffs or not isinstance(sd, int):
                    return f"reads {w.buffer}, the buffer it writes, at an offset that moves"
                delta += (a.const - b.const) * sd
            if delta % ws == 0 and delta // ws < 0:
                return (f"loop-carried dependence: reads elements of {w.buffer} that earlier iterations of the "
                        f"loop write")
            return "ahead"
        ops, rows, direct = compile_rows(p.expr, vec, invariant, own)
        bound = min(d.alloc for d, ix in zip(wt.box, w.index) if sum(cf * coef[n] for n, cf in ix.coeffs))
        return ops, rows, direct, ws, bound

    def _print_rows(self, indent: str, call: isl.AstExpr, p, coef: dict, it: str, init: str, count: str,
                    ty: str, plan) -> None:
        """Prints the loop as its DSD operations (``plan`` of :meth:`_rows`): the length, the destination
        DSD, the operations in order, the copy out of scratch row 0 when the result is not written directly."""
        ops, rows, direct, ws, bound = plan
        self.part = p
        _, env0 = self._env(call)
        woff_env = {lp: (init if coef[lp] else v) for lp, v in env0.items()}   # the first element
        self.nvec += 1
        n = f"vn{self.nvec}"
        sfx = SUFFIX[ty]
        if rows:
            self.scratch[ty] = max(self.scratch.get(ty, 0), rows * bound)
            self.dsds[f"dsd_scratch_{ty}_s1"] = (f"scratch_{ty}", 1, None, ty)

        def dsd(acc, s):
            t = self.mp.tensor(acc.buffer)
            name = f"dsd_{acc.buffer}_s{s}".replace("-", "m")
            elems = t.elems * (2 if t.name in self.slotted else 1)
            self.dsds[name] = (acc.buffer, s, max(1, -(-elems // abs(s))), t.dtype)
            return f"@set_dsd_length(@increment_dsd_offset({name}, @as(i16, {self.offset(t, acc.index, woff_env)}), " \
                   f"{ty}), @as(u16, {n}))"

        names: dict = {}

        def text(o) -> str:
            if isinstance(o, Scal):
                return self.expr(o.expr, woff_env)
            if isinstance(o, Row):
                if o.k == 0 and direct:
                    return f"{n}_dst"
                slot = o.k - 1 if direct else o.k
                key = ("row", slot)
                if key not in names:
                    names[key] = f"{n}_row{slot}"
                    self.lines.append(f"{indent}  const {names[key]} = @set_dsd_length(@increment_dsd_offset("
                                      f"dsd_scratch_{ty}_s1, @as(i16, {slot * bound}), {ty}), @as(u16, {n}));")
                return names[key]
            if (o.access.buffer, o.access.index, o.stride) == (p.write.buffer, p.write.index, ws):
                return f"{n}_dst"             # the destination's own elements
            key = (o.access.buffer, o.access.index, o.stride)
            if key not in names:
                names[key] = f"{n}_src{len([k for k in names if k[0] != 'row'])}"
                self.lines.append(f"{indent}  const {names[key]} = {dsd(o.access, o.stride)};")
            return names[key]
        kinds = "/".join(dict.fromkeys(f"@{op[0]}{sfx}" for op in ops))
        self.lines.append(f"{indent}// {p.statement or p.name}: {statement_text(p)}  -- vector over {it} ({kinds}"
                          f"{'' if direct else ', via scratch row 0'})")
        self.lines.append(f"{indent}const {n}: i32 = {count};")
        self.lines.append(f"{indent}if ({n} > 0) {{")
        self.lines.append(f"{indent}  const {n}_dst = {dsd(p.write, ws)};")
        for op in ops:
            args = [text(o) for o in op[1:]]
            self.lines.append(f"{indent}  @{op[0]}{sfx}({', '.join(args)});")
        if not direct:
            self.lines.append(f"{indent}  @fmov{sfx}({n}_dst, {text(Row(0))});")
        self.lines.append(f"{indent}}}")

    @staticmethod
    def _interchanged(k: Kernel) -> tuple[str, ...]:
        """``k.order`` with its two innermost loops swapped when the innermost one is a reduction into one
        element that the loop around it moves (``y[i] += A[i][k] * x[k]`` over ``(i, k)``): then the inner
        loop becomes a vector update (one ``@fmac`` per ``k``). The swap keeps every element's updates in
        their order -- the statement writes only its destination and reads its buffer at no other element
        -- so the results are the same bits. Else ``k.order``."""
        order = k.order
        if len(order) < 2 or not set(order[-2:]) <= set(k.loops):
            return order
        moves = {n for ix in k.write.index for n, _ in ix.coeffs}
        if order[-1] in moves or order[-2] not in moves:
            return order
        if any(r.buffer == k.write.buffer and r.index != k.write.index for r in k.reads):
            return order
        return order[:-2] + (order[-1], order[-2])

    def function(self) -> str:
        k, r = self.k, self.cls.region
        dom = uset(k.domain) if k.parts else iset(k.domain)
        params = [dom.get_space().get_dim_name(isl.dim_type.param, i) for i in range(dom.get_space().dim(isl.dim_type.param))]
        ctx_cons = [f"{r.x0} <= __x < {r.x1}", f"{r.y0} <= __y < {r.y1}"]
        if "__t" in params:
            ctx_cons.append(f"0 <= __t < {max(self.steps, 1)}")
        if "__kb" in params:
            ctx_cons.append(f"0 <= __kb < {self.mp.skew.n}")
        rps = [(n, lo, hi) for n, lo, hi in self.mp.runtime if kernel_param(n) in params]
        ctx_cons += [f"{lo} <= {kernel_param(n)} < {hi}" for n, lo, hi in rps]   # run.py checks the ranges
        allp = sorted(set(params) | {"__x", "__y"})
        ctx = iset(f"[{', '.join(allp)}] -> {{ : {' and '.join(ctx_cons)} }}")
        dom = dom.intersect_params(ctx)
        desc = f"kernel {k.name}{' (statement ' + k.statement + ')' if k.statement else ''}"
        self.lines = []
        iterators: set[str] = set()
        if dom.is_empty():
            self.lines.append("  // no instances on this class")
        elif not k.loops and not k.parts:
            w = k.write
            self.part = k
            self.lines.append(f"  buf_{w.buffer}[@as(u16, {self.offset(self.mp.tensor(w.buffer), w.index, {})})] = "
                              f"{self.expr(k.expr, {})};")
        else:
            if k.parts:
                sched = umap(k.schedule)
            else:
                order = self._interchanged(k)
                if order != k.order:
                    self.lines.append(f"  // loops {order[-1]} and {order[-2]} interchanged: every element of "
                                      f"{k.write.buffer} still takes its {order[-2]} updates in ascending order, "
                                      f"and the inner loop moves it (a vector update, not a reduction)")
                sched = umap(f"[{', '.join(allp)}] -> {{ {dom.get_tuple_name()}"
                             f"[{', '.join(k.loops)}] -> [{', '.join(order)}] }}")
            build = isl.AstBuild.from_context(ctx)
            udom = dom if k.parts else isl.UnionSet.from_set(dom)
            node = build.node_from_schedule_map(sched.intersect_domain(udom))
            walk(node, self.lines, "  ", CSL, self.user, self.vector_loop, iterators)
        body = "\n".join(self.lines)
        used = {n for n in ("x", "y", "t", "kb") if re.search(rf"\b{n}\b", body)}
        if "kb" in used:
            used |= {"x", "y", "t"}
        head = [f"// MeshIR {desc}, class {self.cls.name}: cores [{r.x0}:{r.x1}, {r.y0}:{r.y1}]",
                f"fn {self.cls.name}() void {{"]
        head += [f"  const {n}: i32 = {v};{c}" for n, v, c in (
            ("x", "px", ""), ("y", "py", ""), ("t", "lv[0]", "  // the step of the enclosing loop"),
            ("kb", "skew_block(x, y, t)", "  // the block this core works on")) if n in used]
        names = [n for n, _, _ in self.mp.runtime]
        head += [f"  const rp_{n}: i32 = rparams[{names.index(n)}];  // runtime parameter {n} ({lo} <= {n} < {hi})"
                 for n, lo, hi in rps if re.search(rf"\brp_{re.escape(n)}\b", body)]
        head += [f"  var {it}: i32 = 0;" for it in sorted(iterators, key=lambda v: (len(v), v))]
        return "\n".join(head + self.lines + ["}"])


def _has_loop(nd: isl.AstNode) -> bool:
    """Whether isl AST ``nd`` holds a ``for`` node (so it is not the body of an innermost loop)."""
    t = nd.get_type()
    if t == isl.ast_node_type.for_:
        return True
    if t == isl.ast_node_type.block:
        ch = nd.block_get_children()
        return any(_has_loop(ch.get_at(i)) for i in range(ch.n_ast_node()))
    if t == isl.ast_node_type.if_:
        return _has_loop(nd.if_get_then_node()) or (nd.if_has_else_node() and _has_loop(nd.if_get_else_node()))
    if t == isl.ast_node_type.mark:
        return _has_loop(nd.mark_get_node())
    return False


@dataclass(frozen=True)
class KernelSet:
    """The kernel classes as CSL: ``functions`` (class name, CSL function), the memory ``dsds`` their vector
    operations start from (name -> (buffer, stride, extent, dtype)), the ``scratch`` rows they need (dtype ->
    elements; the buffer ``scratch_<dtype>``) and the innermost loops that stayed scalar
    (``scalar_loops``: ``{"kernel", "classes", "reason"}``, one record per kernel and reason)."""

    functions: tuple
    dsds: dict
    scratch: dict
    scalar_loops: tuple


def kernel_functions(mp: MeshProgram, slotted: frozenset = frozenset()) -> KernelSet:
    """Every kernel class of ``mp`` as CSL (:class:`KernelSet`). ``slotted``: the double buffers (two slots
    in one array), read at ``slot_<name>``."""
    steps_of: dict[str, int] = {}
    for op, scope in mp.walk():
        if hasattr(op, "kernel") and isinstance(op.kernel, str):
            steps_of[op.kernel] = dict(scope).get("t", 1)
    dsds: dict = {}
    scratch: dict = {}
    out = []
    scalar: dict = {}
    for k in mp.kernels:
        for cls in k.classes:
            kp = KernelPrinter(mp, k, cls, steps_of.get(k.name, 1), dsds, slotted, scratch)
            out.append((cls.name, kp.function()))
            for why in dict.fromkeys(kp.scalar_reasons):
                scalar.setdefault((k.name, why), []).append(cls.name)
    for name, (buf, st, ext, ty) in list(dsds.items()):
        if ext is None:
            dsds[name] = (buf, st, scratch[ty], ty)
    loops = tuple({"kernel": kn, "classes": cl, "reason": why} for (kn, why), cl in scalar.items())
    return KernelSet(tuple(out), dsds, scratch, loops)
