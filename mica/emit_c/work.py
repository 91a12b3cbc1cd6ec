"""Work functions for the emulator's timing model: the cycles a kernel class spends in one call.

For every kernel class the kernel module gets ``double <class>__work(int64_t x, int64_t y, const int64_t
*v, const double *scalars)``: the cycles the class's kernel runs at core (x, y) with loop values ``v``, as :func:`mica.tiling.cost.call_cycles`
charges them: its statement instances at :func:`~mica.tiling.cost.instance_cycles` each on a target without
compute overheads; otherwise every vector operation (run of the innermost loop) at the target's
``vector_op_cycles``, every issue of ``lanes`` elements (:func:`~mica.tiling.cost.vector_sets`) at ``lanes`` ×
:func:`~mica.tiling.cost.element_cycles`, and ``call_cycles`` once when the call runs an instance. Instances,
vector operations and issues are
counted by a loop nest isl builds from the same domain and context as the kernel itself (so it counts
exactly the iterations the kernel executes, at the run's values of the runtime parameters), with the innermost loop replaced by its trip count; a
call costs O(outer iterations), not O(instances). ``mica_work_get(i)`` returns the function of kernel
table entry ``i`` (the order of :class:`~mica.emit_c.kernels.KernelModule.names`).

Public API: :func:`emit_work_module`.
"""

from __future__ import annotations

import islpy as isl

from ..affine.isl_names import iset
from ..affine.runtime import kernel_param
from ..codeprint import C_KERNEL, ast_expr, skew_block, walk
from ..errors import EmitError
from ..meshir.ir import Kernel, KernelClass, MeshProgram
from .kernels import runtime_locals
from ..targets import Target
from ..tiling.cost import element_cycles, innermost_loop, instance_cycles, vector_sets


def _trip(nd: isl.AstNode) -> tuple[str, str, str] | None:
    """(init, last, step) of a ``for`` whose condition is ``iterator <= e`` or ``iterator < e``."""
    it = nd.for_get_iterator().get_id().get_name()
    cond = nd.for_get_cond()
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2:
        return None
    lhs = cond.get_op_arg(0)
    if lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().get_name() != it:
        return None
    op = cond.get_op_type()
    bound = ast_expr(cond.get_op_arg(1), C_KERNEL)
    if op == isl.ast_expr_op_type.le:
        last = bound
    elif op == isl.ast_expr_op_type.lt:
        last = f"({bound} - 1)"
    else:
        return None
    return ast_expr(nd.for_get_init(), C_KERNEL), last, ast_expr(nd.for_get_inc(), C_KERNEL)


def _is_leaf(nd: isl.AstNode) -> bool:
    t = nd.get_type()
    if t == isl.ast_node_type.mark:
        return _is_leaf(nd.mark_get_node())
    return t == isl.ast_node_type.user


def _count(nd: isl.AstNode, lines: list[str], indent: str, var: str) -> None:
    """Appends C adding to ``var`` the number of statement executions of AST ``nd``: the kernel's loop
    nest, each innermost loop replaced by its trip count."""
    def innermost(nd: isl.AstNode, indent: str) -> bool:
        trip = _trip(nd) if _is_leaf(nd.for_get_body()) else None
        if trip is None:
            return False
        init, last, step = trip
        lines.append(f"{indent}{{ const int64_t lo_ = {init}, hi_ = {last}; "
                     f"if (hi_ >= lo_) {var} += (hi_ - lo_) / {step} + 1; }}")
        return True
    walk(nd, lines, indent, C_KERNEL, lambda call, ind: lines.append(f"{ind}{var} += 1;"), innermost)


def _params(dom: isl.Set) -> list[str]:
    return [dom.get_dim_name(isl.dim_type.param, i) for i in range(dom.dim(isl.dim_type.param))]


def _context(mp: MeshProgram, dom: isl.Set, cls: KernelClass, steps: int) -> isl.Set:
    """The parameter context the kernel printer uses for ``cls`` (class rectangle, step and block ranges)."""
    r = cls.region
    params = [dom.get_dim_name(isl.dim_type.param, i) for i in range(dom.dim(isl.dim_type.param))]
    cons = [f"{r.x0} <= __x < {r.x1}", f"{r.y0} <= __y < {r.y1}"]
    if "__t" in params:
        cons.append(f"0 <= __t < {max(steps, 1)}")
    if "__kb" in params:
        cons.append(f"0 <= __kb < {mp.skew.n}")
    allp = sorted(set(params) | {"__x", "__y"})
    return iset(f"[{', '.join(allp)}] -> {{ : {' and '.join(cons)} }}")


def _count_set(k: Kernel, dom: isl.Set, ctx: isl.Set, lines: list[str], var: str) -> None:
    """Appends C declaring ``int64_t var``, the number of points of ``dom`` (a kernel statement's domain, or one of
    its :func:`~mica.tiling.cost.vector_sets`) at the call's core and loop values, counted by a loop nest isl
    builds from ``dom`` under the class context ``ctx`` (innermost loops by their trip counts)."""
    dom = dom.intersect_params(ctx)
    lines.append(f"  int64_t {var} = 0;")
    if dom.is_empty():
        return
    if not k.parts and not k.loops:
        lines.append(f"  {var} = 1;")           # the kernel runs its one statement unconditionally
        return
    loops = [dom.get_dim_name(isl.dim_type.set, d) or f"d{d}" for d in range(dom.dim(isl.dim_type.set))]
    name = dom.get_tuple_name()
    params = [ctx.get_dim_name(isl.dim_type.param, d) for d in range(ctx.dim(isl.dim_type.param))]
    sched = isl.UnionMap(f"[{', '.join(params)}] -> {{ {name}[{', '.join(loops)}] -> "
                         f"[{', '.join(loops)}] }}").intersect_domain(isl.UnionSet.from_set(dom))
    node = isl.AstBuild.from_context(ctx).node_from_schedule_map(sched)
    _count(node, lines, "  ", var)


def _work_function(mp: MeshProgram, k: Kernel, cls: KernelClass, steps: int, target: Target) -> str:
    lines = [f"double {cls.name}__work(int64_t x, int64_t y, const int64_t *v, const double *scalars) {{",
             "  (void)x; (void)y; (void)v; (void)scalars;",
             "  const int64_t t = v[0]; (void)t;"]
    if mp.skew is not None:
        lines.append(f"  const int64_t kb = {skew_block(mp.skew.kind, mp.skew.n, C_KERNEL)}; (void)kb;")
    used = {n for part in k.statements for n in _params(iset(part.domain))}
    lines += [f"{line} (void){kernel_param(n)[2:]};" for n, _, _ in mp.runtime
              for line in runtime_locals(mp, [kernel_param(n)]) if kernel_param(n) in used]
    lines.append("  double cycles = 0.0;")
    counted = []
    for i, part in enumerate(k.statements):
        dom = iset(part.domain)
        ctx = _context(mp, dom, cls, steps)
        var = f"n{i}"
        _count_set(k, dom, ctx, lines, var)
        counted.append(var)
        if not target.has_compute_overheads:
            lines.append(f"  cycles += (double){var} * {instance_cycles(mp, part, target)!r};")
            continue
        width = target.lanes(mp.tensor(part.write.buffer).dtype)
        ops, chunks = vector_sets(part.domain, innermost_loop(part), width)
        if target.vector_op_cycles:
            _count_set(k, ops, ctx, lines, f"v{i}")
            lines.append(f"  cycles += (double)v{i} * {float(target.vector_op_cycles)!r};")
        if width > 1:
            _count_set(k, chunks, ctx, lines, f"ch{i}")
            var = f"ch{i}"
        lines.append(f"  cycles += (double){var} * {width * element_cycles(mp, part, target)!r};")
    if target.call_cycles and counted:
        lines.append(f"  if ({' + '.join(counted)} > 0) cycles += {float(target.call_cycles)!r}; /* task activation */")
    lines.append("  return cycles;")
    lines.append("}")
    return "\n".join(lines)


def emit_work_module(mp: MeshProgram, target: Target, names: tuple[str, ...]) -> str:
    """C source of the work functions of every kernel class of ``mp``, plus ``mica_work_get``.

    ``names`` is the kernel table order (:attr:`KernelModule.names`); the text is meant to be appended to
    the kernel module (it uses the module's prelude helpers ``mica_min`` / ``mica_max`` / ``mica_floord``).
    """
    steps_of: dict[str, int] = {}
    for op, scope in mp.walk():
        if hasattr(op, "kernel") and isinstance(op.kernel, str):
            steps_of[op.kernel] = dict(scope).get("t", 1)
    funcs: dict[str, str] = {}
    for k in mp.kernels:
        for cls in k.classes:
            funcs[cls.name] = _work_function(mp, k, cls, steps_of.get(k.name, 1), target)
    if set(funcs) != set(names):
        raise EmitError("work functions and kernel table disagree (internal error)")
    table = ",\n  ".join(f"{n}__work" for n in names) or "0"
    return ("\n/* Timing model: cycles per kernel call (mica.emit_c.work). */\n"
            "typedef double (*mica_work_fn)(int64_t x, int64_t y, const int64_t *v, const double *scalars);\n\n"
            + "\n\n".join(funcs[n] for n in names)
            + f"\n\nstatic const mica_work_fn mica_work_table[] = {{\n  {table}\n}};\n"
            f"mica_work_fn mica_work_get(int32_t i) {{ return (i >= 0 && i < {len(names)}) ? "
            f"mica_work_table[i] : 0; }}\n")
