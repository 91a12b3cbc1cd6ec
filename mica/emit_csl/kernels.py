"""MeshIR kernels -> CSL functions, one per kernel class (as the C back end has one C function per class).

The loop nest is isl's AST of the kernel's domain on the class's rectangle (:func:`mica.codeprint.walk`). Where the
innermost loop is a vector update with unit step, it becomes one DSD operation instead of a scalar loop::

    W[..] = W[..] + X[..] * s   ->  @fmacs(dW, dW, dX, s)      W[..] = X[..] + Y[..]  ->  @fadds(dW, dX, dY)
    W[..] = X[..] * s           ->  @fmuls(dW, dX, s)          W[..] = X[..] or s     ->  @fmovs(dW, ..)

(``h`` instead of ``s`` for f16) where W and the vector operands move with the loop (any constant stride)
and ``s`` does not. A reduction into a loop-invariant element (a dot product) stays a scalar loop.

Public API: :class:`KernelPrinter` (``function() -> str``, ``dsds`` the memory DSDs it needs).
"""

from __future__ import annotations

import re
from dataclasses import replace
from math import prod

import islpy as isl

from ..affine.expr import Aff, Bin, Call, Cmp, Index, Read, Select
from ..affine.isl_names import iset, umap, uset
from ..affine.runtime import kernel_param
from ..codeprint import CSL, ast_expr, print_aff, print_expr, walk
from ..errors import EmitError
from ..meshir.ir import BoxDim, Kernel, KernelClass, MeshProgram, RegionTensor
from ..meshir.printer import statement_text
from . import boxes

SUFFIX = {"f32": "s", "f16": "h"}

#: Math functions of a statement -> the CSL ``<math>`` library function (imported as ``math_lib`` by the PE
#: program when a kernel uses one), by element type: ``sqrt_f32`` / ``sqrt_f16`` (sdk.cerebras.ai
#: ``/csl/language/libraries``, ``<math>``; the module is imported with ``@import_module("<math>")`` as on
#: ``/csl/language/modules``).
MATH = {"sqrt": "sqrt"}
MATH_MODULE = "math_lib"


def csl_language(kernel: str):
    """The CSL expression language of kernel ``kernel``: :data:`mica.codeprint.CSL` with the math functions
    of :data:`MATH` mapped to the ``<math>`` library; any other function is an :class:`EmitError` naming the
    kernel."""
    def call(fn: str, elem: str) -> str:
        if fn not in MATH or elem not in SUFFIX:
            raise EmitError(f"CSL back end: kernel {kernel}: math function {fn}() on {elem} has no CSL <math> "
                            f"library function MICA maps it to (mapped: {', '.join(sorted(MATH))} on f32 and f16)")
        return f"{MATH_MODULE}.{MATH[fn]}_{elem}"
    return replace(CSL, call=call)


class KernelPrinter:
    """Prints kernel class ``cls`` of ``kernel`` as ``fn <cls.name>() void``; ``dsds`` collects the
    (buffer, stride) memory DSDs its vector operations start from."""

    def __init__(self, mp: MeshProgram, kernel: Kernel, cls: KernelClass, steps: int, dsds: dict,
                 slotted: frozenset = frozenset()):
        self.mp, self.k, self.cls, self.steps, self.dsds = mp, kernel, cls, steps, dsds
        self.slotted = slotted      # double buffers: read at the element offset slot_<name> (their current slot)
        self.by_name = {iset(p.domain).get_tuple_name(): p for p in kernel.statements}
        self.part = kernel.statements[0]
        self.lang = csl_language(kernel.name)
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
        def read(ref):
            a = self._acc(ref)
            return f"buf_{a.buffer}[@as(u16, {self.offset(self.mp.tensor(a.buffer), a.index, env)})]"
        ty = self.mp.tensor(self.part.write.buffer).dtype
        return print_expr(e, self.lang, read, lambda n: f"@as({ty}, scalars[{self.mp.scalars.index(n)}])", elem=ty,
                          where=f"CSL back end: kernel {self.k.name}", env=env)

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
        self.lines.append(f"{indent}buf_{w.buffer}[@as(u16, {self.offset(wt, w.index, env)})] = {self.expr(p.expr, env)};")

    def vector_loop(self, nd: isl.AstNode, indent: str) -> bool:
        """Prints ``nd`` (a ``for``) as one DSD operation when it is a vector update; else returns False."""
        loop = self._unit_loop(nd)
        if loop is None:
            return False
        it, init, count, call, p, coef = loop
        ty = self.mp.tensor(p.write.buffer).dtype
        if ty not in SUFFIX:
            return False
        form = self._vector_form(p, coef, ty)
        if form is None:
            return False
        self._print_vector(indent, call, p, coef, it, init, count, ty, form)
        return True

    def _unit_loop(self, nd: isl.AstNode):
        """``nd`` as a unit-step loop around one statement: (iterator, first value, trip count, the call, the
        statement's part, each loop variable's coefficient of the iterator: 1 or 0); None when it is not one,
        or a loop variable of the call is another function of the iterator."""
        body = nd.for_get_body()
        inc = nd.for_get_inc()
        if body.get_type() != isl.ast_node_type.user or inc.get_type() != isl.ast_expr_type.int \
                or inc.get_val().to_python() != 1:
            return None
        it = ast_expr(nd.for_get_iterator(), CSL)
        cond = nd.for_get_cond()
        if cond.get_type() != isl.ast_expr_type.op or cond.get_op_type() not in (
                isl.ast_expr_op_type.le, isl.ast_expr_op_type.lt) or ast_expr(cond.get_op_arg(0), CSL) != it:
            return None
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
                return None
            else:
                coef[lp] = 0
        return it, init, count, call, p, coef

    def _vector_form(self, p, coef: dict, ty: str):
        """The DSD operation statement ``p`` is along the loop (``coef``): (kind, [(vector access, stride)],
        scalar operand or None, stride of the write), kind ``fmac``, ``fadd``, ``fmul`` or ``fmov``; None when
        it is none of them or a vector read overlaps the written elements."""
        def stride(acc):
            t = self.mp.tensor(acc.buffer)
            if t.dtype != ty:
                return None
            st = self._strides(t)
            s = 0
            for ix, sd in zip(acc.index, st):
                c = sum(cf * coef[n] for n, cf in ix.coeffs)
                if c:
                    if not isinstance(sd, int):
                        return None
                    s += c * sd
            return s

        def vec(e):          # a read that moves with the loop: (access, stride)
            if isinstance(e, Read):
                a = p.write if e.ref == p.write.ref else next(x for x in p.reads if x.ref == e.ref)
                s = stride(a)
                return (a, s) if s else None
            return None

        def invariant(e) -> bool:
            return all(not (vec(r) or (isinstance(r, Read) and stride(
                p.write if r.ref == p.write.ref else next(x for x in p.reads if x.ref == r.ref)) is None))
                for r in e.walk() if isinstance(r, Read)) and not any(isinstance(r, (Call, Cmp, Select, Index))
                                                                     for r in e.walk())

        def acc_of(r):
            return p.write if r.ref == p.write.ref else next(x for x in p.reads if x.ref == r.ref)

        def is_w(e) -> bool:          # a read of exactly the element being written
            return isinstance(e, Read) and acc_of(e).buffer == p.write.buffer and acc_of(e).index == p.write.index

        ws = stride(p.write)
        if not ws or not (0 < abs(ws) < 128):
            return None
        e = p.expr
        form = None
        if isinstance(e, Bin) and e.op == "+" and is_w(e.lhs) and isinstance(e.rhs, Bin) and e.rhs.op == "*":
            l, r = e.rhs.lhs, e.rhs.rhs
            if vec(l) and invariant(r):
                form = ("fmac", [vec(l)], r)
            elif vec(r) and invariant(l):
                form = ("fmac", [vec(r)], l)
        elif isinstance(e, Bin) and e.op == "+" and vec(e.lhs) and vec(e.rhs):
            form = ("fadd", [vec(e.lhs), vec(e.rhs)], None)
        elif isinstance(e, Bin) and e.op == "*" and vec(e.lhs) and invariant(e.rhs):
            form = ("fmul", [vec(e.lhs)], e.rhs)
        elif isinstance(e, Bin) and e.op == "*" and vec(e.rhs) and invariant(e.lhs):
            form = ("fmul", [vec(e.rhs)], e.lhs)
        elif vec(e):
            form = ("fmov", [vec(e)], None)
        elif invariant(e) and not any(isinstance(r, Read) and acc_of(r).buffer == p.write.buffer for r in e.walk()):
            form = ("fmov", [], e)
        if form is None:
            return None
        kind, vecs, scal = form
        # A vector read of the written buffer must be the written elements themselves (no overlap).
        for a, s in vecs:
            if a.buffer == p.write.buffer and (a.index != p.write.index or s != ws):
                return None
        if kind == "fmac" and vecs[0][0].buffer == p.write.buffer:
            return None
        return kind, vecs, scal, ws

    def _print_vector(self, indent: str, call: isl.AstExpr, p, coef: dict, it: str, init: str, count: str,
                      ty: str, form) -> None:
        """Prints the loop as its DSD operation ``form`` (of :meth:`_vector_form`): the length, the DSDs at
        the first element, the operation."""
        kind, vecs, scal, ws = form
        self.part = p
        _, env0 = self._env(call)
        woff_env = {lp: (init if coef[lp] else v) for lp, v in env0.items()}   # the first element
        self.nvec += 1
        n = f"vn{self.nvec}"
        sfx = SUFFIX[ty]

        def dsd(acc, s):
            t = self.mp.tensor(acc.buffer)
            name = f"dsd_{acc.buffer}_s{s}".replace("-", "m")
            elems = t.elems * (2 if t.name in self.slotted else 1)
            self.dsds[name] = (acc.buffer, s, max(1, -(-elems // abs(s))), t.dtype)
            return f"@set_dsd_length(@increment_dsd_offset({name}, @as(i16, {self.offset(t, acc.index, woff_env)}), {ty}), " \
                   f"@as(u16, {n}))"
        src = statement_text(p)
        self.lines.append(f"{indent}// {p.statement or p.name}: {src}  -- vector over {it} (@{kind}{sfx})")
        self.lines.append(f"{indent}const {n}: i32 = {count};")
        self.lines.append(f"{indent}if ({n} > 0) {{")
        dw = f"{n}_dst"
        self.lines.append(f"{indent}  const {dw} = {dsd(p.write, ws)};")
        ops = []
        for k, (a, st) in enumerate(vecs):
            self.lines.append(f"{indent}  const {n}_src{k} = {dsd(a, st)};")
            ops.append(f"{n}_src{k}")
        if kind == "fmac":
            args = [dw, dw, ops[0], self.expr(scal, woff_env)]
        elif kind == "fadd":
            args = [dw, ops[0], ops[1]]
        elif kind == "fmul":
            args = [dw, ops[0], self.expr(scal, woff_env)]
        else:
            args = [dw, ops[0] if ops else self.expr(scal, woff_env)]
        self.lines.append(f"{indent}  @{kind}{sfx}({', '.join(args)});")
        self.lines.append(f"{indent}}}")

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
                sched = umap(f"[{', '.join(allp)}] -> {{ {dom.get_tuple_name()}"
                             f"[{', '.join(k.loops)}] -> [{', '.join(k.order)}] }}")
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


def kernel_functions(mp: MeshProgram, slotted: frozenset = frozenset()) -> tuple[list[tuple[str, str]], dict]:
    """(class name, CSL function) for every kernel class, and the memory DSDs they use. ``slotted``: the
    double buffers (two slots in one array), read at ``slot_<name>``."""
    steps_of: dict[str, int] = {}
    for op, scope in mp.walk():
        if hasattr(op, "kernel") and isinstance(op.kernel, str):
            steps_of[op.kernel] = dict(scope).get("t", 1)
    dsds: dict = {}
    out = []
    for k in mp.kernels:
        for cls in k.classes:
            out.append((cls.name, KernelPrinter(mp, k, cls, steps_of.get(k.name, 1), dsds, slotted).function()))
    return out, dsds
