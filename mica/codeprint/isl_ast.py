"""The one walker of isl ASTs (the loop nests isl's AST builder generates) in any :class:`Language`.

Identifiers isl prints are MICA's: loop iterators (``c0``, ...) and parameters with a ``__`` prefix
(``__x``, ``__y``, ``__t``, ``__kb``) that are the printed code's locals ``x``, ``y``, ``t``, ``kb``.

Public API: :func:`ast_expr`, :func:`walk`.
"""

from __future__ import annotations

import islpy as isl

from ..errors import EmitError
from .languages import Language

_OP = isl.ast_expr_op_type
_ARITH = {_OP.add: "+", _OP.sub: "-", _OP.mul: "*", _OP.eq: "==", _OP.le: "<=", _OP.lt: "<", _OP.ge: ">=",
          _OP.gt: ">"}


def ast_expr(e: isl.AstExpr, lang: Language) -> str:
    """``e`` (an isl AST expression: integer arithmetic) in ``lang``."""
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        name = e.get_id().get_name()
        return name[2:] if name.startswith("__") else name
    if t == isl.ast_expr_type.int:
        return lang.isl_int.format(e.get_val().to_python())
    op = e.get_op_type()
    a = [ast_expr(e.get_op_arg(i), lang) for i in range(e.get_op_n_arg())]
    if op in _ARITH:
        return f"({a[0]} {_ARITH[op]} {a[1]})"
    if op in (_OP.div, _OP.pdiv_q):
        return lang.isl_exact_div.format(*a)
    if op in (_OP.pdiv_r, _OP.zdiv_r):
        return lang.isl_mod.format(*a)
    if op in (_OP.and_, _OP.and_then):
        return lang.isl_and.format(*a)
    if op in (_OP.or_, _OP.or_else):
        return lang.isl_or.format(*a)
    if op == _OP.minus:
        return f"(-{a[0]})"
    if op in (_OP.max, _OP.min):
        fn = lang.isl_max if op == _OP.max else lang.isl_min
        if lang.isl_nary:
            return f"{fn}({', '.join(a)})"
        out = a[0]
        for x in a[1:]:
            out = f"{fn}({out}, {x})"
        return out
    if op == _OP.fdiv_q:
        return lang.isl_floor_div.format(*a)
    if op in (_OP.cond, _OP.select):
        return lang.isl_select.format(*a)
    raise EmitError(f"{lang.isl_who}unsupported isl AST expression {e.to_C_str()}")


def loop_stop(nd: isl.AstNode, lang: Language) -> str | None:
    """The exclusive upper bound of ``for`` node ``nd`` when its condition is ``iterator <= ub`` or
    ``iterator < ub`` (else None)."""
    it = ast_expr(nd.for_get_iterator(), lang)
    c = nd.for_get_cond()
    if (c.get_type() == isl.ast_expr_type.op and c.get_op_n_arg() == 2
            and c.get_op_type() in (_OP.le, _OP.lt) and ast_expr(c.get_op_arg(0), lang) == it):
        ub = ast_expr(c.get_op_arg(1), lang)
        return f"{ub} + 1" if c.get_op_type() == _OP.le else ub
    return None


def walk(nd: isl.AstNode, lines: list[str], indent: str, lang: Language, user, loop=None,
         iterators: set | None = None) -> None:
    """Appends ``nd`` in ``lang`` to ``lines``. ``user(call, indent)`` prints a statement (the call
    expression isl puts at a leaf); ``loop(node, indent)``, when given, may print a whole ``for`` node
    itself (returning True). Iterators a language assigns rather than declares in its loop (CSL's
    ``while``) are added to ``iterators`` for the caller to declare once."""
    if iterators is None:
        iterators = set()
    t = nd.get_type()
    if t == isl.ast_node_type.for_:
        if loop is not None and loop(nd, indent):
            return
        it = ast_expr(nd.for_get_iterator(), lang)
        init, cond, inc = (ast_expr(x, lang) for x in (nd.for_get_init(), nd.for_get_cond(), nd.for_get_inc()))
        head, tail, assigned = lang.loop(it, init, cond, inc, loop_stop(nd, lang))
        if assigned:
            iterators.add(it)
        lines += [indent + h for h in head]
        walk(nd.for_get_body(), lines, indent + lang.step, lang, user, loop, iterators)
        lines += [indent + x for x in tail]
    elif t == isl.ast_node_type.if_:
        lines.append(indent + lang.if_open.format(ast_expr(nd.if_get_cond(), lang)))
        walk(nd.if_get_then_node(), lines, indent + lang.step, lang, user, loop, iterators)
        if nd.if_has_else_node():
            lines.append(indent + lang.if_else)
            walk(nd.if_get_else_node(), lines, indent + lang.step, lang, user, loop, iterators)
        if lang.if_close is not None:
            lines.append(indent + lang.if_close)
    elif t == isl.ast_node_type.block:
        children = nd.block_get_children()
        for i in range(children.n_ast_node()):
            walk(children.get_at(i), lines, indent, lang, user, loop, iterators)
    elif t == isl.ast_node_type.user:
        user(nd.user_get_expr(), indent)
    elif t == isl.ast_node_type.mark:
        walk(nd.mark_get_node(), lines, indent, lang, user, loop, iterators)
    else:
        raise EmitError(f"{lang.isl_who}unexpected isl AST node")
