"""isl AST -> text for the CSL back end: CSL statements (kernels) and Python (the host script's sequential
reference). One walker, with the expression syntax of each language; the C walker of ``emit_c`` is not
reused because CSL and Python spell loops, min/max and floor division differently.

Public API: :func:`csl_expr`, :func:`py_expr`, :func:`walk`.
"""

from __future__ import annotations

import islpy as isl

from ..errors import EmitError

_OPS = {
    isl.ast_expr_op_type.add: "+", isl.ast_expr_op_type.sub: "-", isl.ast_expr_op_type.mul: "*",
    isl.ast_expr_op_type.eq: "==", isl.ast_expr_op_type.le: "<=", isl.ast_expr_op_type.lt: "<",
    isl.ast_expr_op_type.ge: ">=", isl.ast_expr_op_type.gt: ">",
}
_DIV = (isl.ast_expr_op_type.div, isl.ast_expr_op_type.pdiv_q)
_MOD = (isl.ast_expr_op_type.pdiv_r, isl.ast_expr_op_type.zdiv_r)
_AND = (isl.ast_expr_op_type.and_, isl.ast_expr_op_type.and_then)
_OR = (isl.ast_expr_op_type.or_, isl.ast_expr_op_type.or_else)


def _name(e: isl.AstExpr, names) -> str:
    n = e.get_id().get_name()
    return names.get(n, n[2:] if n.startswith("__") else n)


def csl_expr(e: isl.AstExpr, names: dict[str, str] | None = None) -> str:
    """CSL text of an isl AST expression (i32 arithmetic; helpers ``imin``/``imax``/``floord``)."""
    names = names or {}
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        return _name(e, names)
    if t == isl.ast_expr_type.int:
        return str(e.get_val().to_python())
    op = e.get_op_type()
    a = [csl_expr(e.get_op_arg(i), names) for i in range(e.get_op_n_arg())]
    if op in _OPS:
        return f"({a[0]} {_OPS[op]} {a[1]})"
    if op in _DIV:                         # isl: exact or non-negative dividend, positive divisor
        return f"floord({a[0]}, {a[1]})"
    if op in _MOD:                         # isl: compared with 0 only, or a non-negative dividend
        return f"pmod({a[0]}, {a[1]})"
    if op in _AND:
        return f"({a[0]} and {a[1]})"
    if op in _OR:
        return f"({a[0]} or {a[1]})"
    if op == isl.ast_expr_op_type.minus:
        return f"(-{a[0]})"
    if op in (isl.ast_expr_op_type.max, isl.ast_expr_op_type.min):
        fn = "imax" if op == isl.ast_expr_op_type.max else "imin"
        out = a[0]
        for x in a[1:]:
            out = f"{fn}({out}, {x})"
        return out
    if op == isl.ast_expr_op_type.fdiv_q:
        return f"floord({a[0]}, {a[1]})"
    if op in (isl.ast_expr_op_type.cond, isl.ast_expr_op_type.select):
        return f"sel({a[0]}, {a[1]}, {a[2]})"
    raise EmitError(f"CSL back end: unsupported isl AST expression {e.to_C_str()}")


def py_expr(e: isl.AstExpr, names: dict[str, str] | None = None) -> str:
    """Python text of an isl AST expression."""
    names = names or {}
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        return _name(e, names)
    if t == isl.ast_expr_type.int:
        return str(e.get_val().to_python())
    op = e.get_op_type()
    a = [py_expr(e.get_op_arg(i), names) for i in range(e.get_op_n_arg())]
    if op in _OPS:
        return f"({a[0]} {_OPS[op]} {a[1]})"
    if op in _DIV or op == isl.ast_expr_op_type.fdiv_q:
        return f"({a[0]} // {a[1]})"
    if op in _MOD:
        return f"({a[0]} % {a[1]})"
    if op in _AND:
        return f"({a[0]} and {a[1]})"
    if op in _OR:
        return f"({a[0]} or {a[1]})"
    if op == isl.ast_expr_op_type.minus:
        return f"(-{a[0]})"
    if op in (isl.ast_expr_op_type.max, isl.ast_expr_op_type.min):
        return f"{'max' if op == isl.ast_expr_op_type.max else 'min'}({', '.join(a)})"
    if op in (isl.ast_expr_op_type.cond, isl.ast_expr_op_type.select):
        return f"({a[1]} if {a[0]} else {a[2]})"
    raise EmitError(f"CSL back end: unsupported isl AST expression {e.to_C_str()}")


def walk(nd: isl.AstNode, lines: list[str], indent: str, lang: str, user, loop=None,
         iterators: set | None = None) -> None:
    """Appends ``nd`` as ``lang`` (``csl`` or ``py``) to ``lines``. ``user(call, indent)`` prints a
    statement; ``loop(node, indent)``, when given, may print a whole ``for`` node itself (returning True).
    In CSL a loop ``it <= ub`` is ``for (@range(i32, init, ub + 1, inc)) |it|``; any other loop is a ``while``
    whose iterator is assigned, not declared: its name is added to ``iterators`` for the caller to declare
    once (sibling loops reuse isl's names, and CSL has no redeclaration)."""
    if iterators is None:
        iterators = set()
    t = nd.get_type()
    ex = csl_expr if lang == "csl" else py_expr
    step = "  " if lang == "csl" else "    "
    if t == isl.ast_node_type.for_:
        if loop is not None and loop(nd, indent):
            return
        it = ex(nd.for_get_iterator())
        init, cond, inc = ex(nd.for_get_init()), ex(nd.for_get_cond()), ex(nd.for_get_inc())
        if lang == "csl":
            c = nd.for_get_cond()
            bounded = (c.get_type() == isl.ast_expr_type.op and c.get_op_n_arg() == 2
                       and c.get_op_type() in (isl.ast_expr_op_type.le, isl.ast_expr_op_type.lt)
                       and csl_expr(c.get_op_arg(0)) == it)
            if bounded:        # it <= ub (it < ub): the usual CSL loop over @range, the iterator a capture
                ub = csl_expr(c.get_op_arg(1))
                stop = f"{ub} + 1" if c.get_op_type() == isl.ast_expr_op_type.le else ub
                lines.append(f"{indent}for (@range(i32, {init}, {stop}, {inc})) |{it}| {{")
            else:
                iterators.add(it)
                lines.append(f"{indent}{it} = {init};")
                lines.append(f"{indent}while {cond} : ({it} += {inc}) {{")
            walk(nd.for_get_body(), lines, indent + step, lang, user, loop, iterators)
            lines.append(indent + "}")
        else:
            lines.append(f"{indent}{it} = {init}")
            lines.append(f"{indent}while {cond}:")
            walk(nd.for_get_body(), lines, indent + step, lang, user, loop, iterators)
            lines.append(f"{indent}{step}{it} += {inc}")
    elif t == isl.ast_node_type.if_:
        cond = ex(nd.if_get_cond())
        lines.append(f"{indent}if {cond} {{" if lang == "csl" else f"{indent}if {cond}:")
        walk(nd.if_get_then_node(), lines, indent + step, lang, user, loop, iterators)
        if nd.if_has_else_node():
            lines.append(f"{indent}}} else {{" if lang == "csl" else f"{indent}else:")
            walk(nd.if_get_else_node(), lines, indent + step, lang, user, loop, iterators)
        if lang == "csl":
            lines.append(indent + "}")
    elif t == isl.ast_node_type.block:
        ch = nd.block_get_children()
        for i in range(ch.n_ast_node()):
            walk(ch.get_at(i), lines, indent, lang, user, loop, iterators)
    elif t == isl.ast_node_type.user:
        user(nd.user_get_expr(), indent)
    elif t == isl.ast_node_type.mark:
        walk(nd.mark_get_node(), lines, indent, lang, user, loop, iterators)
    else:
        raise EmitError("CSL back end: unexpected isl AST node")
