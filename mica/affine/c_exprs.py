"""Expressions for the C front end: affine integer expressions and conditions, right-hand sides.

:class:`ExprMixin` is the half of the front end's builder (:mod:`mica.affine.from_c`) that translates
expressions: C integer expressions in loop bounds, conditions and subscripts become piecewise affine forms
and formulas (:mod:`mica.affine.c_affine`); right-hand sides become expression trees
(:mod:`mica.affine.expr`) with one tagged access per textual array read. Also the records the builder
shares with it (:class:`Var`, :class:`Frame`, :class:`StmtCtx`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
import numpy as np
from pycparser import c_ast

from .runtime import range_context
from ..errors import AffineError
from . import c_affine as F
from .c_affine import TRUE
from .c_parse import DTYPE_OF, c_div, c_mod, int_dtype, lvalue_base, parse_number, type_words
from .expr import CALLS, Aff, Bin, Call, Cmp, Const, Conv, Expr, Index, Neg, Read, Scalar, Select
from .isl_names import iset
from .program import Access

MATH_ARGS = {"sqrt": 1, "exp": 1, "log": 1, "pow": 2, "fabs": 1, "fmax": 2, "fmin": 2, "tanh": 1, "erf": 1}
assert set(MATH_ARGS) == set(CALLS)
CMP = ("<", "<=", ">", ">=", "==", "!=")
#: The floating-point constants of <math.h> a computation may use (when no local or parameter hides them).
MATH_CONSTANTS = {"INFINITY": ("float", float("inf")), "HUGE_VALF": ("float", float("inf")),
                  "HUGE_VAL": ("double", float("inf"))}
#: What the C preprocessor makes of those constants (GCC's and Clang's <math.h>): builtins without arguments.
BUILTIN_CONSTANTS = {"__builtin_inff": ("float", float("inf")), "__builtin_inf": ("double", float("inf")),
                     "__builtin_huge_valf": ("float", float("inf")), "__builtin_huge_val": ("double", float("inf"))}
MAX_PIECES = 256
MAX_FORMULA = 4096


@dataclass
class Var:
    """A C name in scope.

    ``kind``: ``'array'`` (array parameter), ``'temp'`` (local float scalar -> 0-d array, or local array),
    ``'fscalar'`` (float/double parameter), ``'iparam'`` (int parameter, ``value`` from ``params``;
    ``state`` ``('runtime',)`` for a runtime parameter, :mod:`mica.affine.runtime`),
    ``'ilocal'`` (int local: ``state`` is ``('unset',)``, ``('const', v)``, ``('iter', frame)`` or
    ``('dead', node)`` after the loop over it).
    """

    kind: str
    cname: str
    name: str
    node: c_ast.Node
    ctype: str
    shape: tuple[int, ...] = ()
    value: int | None = None
    state: tuple = ("unset",)
    dtype: str | None = None      # an fscalar's MICA dtype when it is not its ctype's (f16, bf16)


@dataclass
class Frame:
    name: str          # loop name in the program
    var: Var
    step: int          # +1 / -1
    pos: int           # textual position among its siblings


@dataclass
class V:
    """A translated right-hand-side value: a compile-time int constant or an expression of ``ctype``."""

    ctype: str                    # 'int' | 'double' | 'float'
    const: int | None = None      # int constants only (folded with C semantics)
    expr: Expr | None = None

    def as_expr(self, integer: bool = False) -> Expr:
        """The value as a tree; a constant is a float literal, or with ``integer`` an integer one (neutral:
        it takes its operator's type, :func:`mica.affine.expr.int_typed`)."""
        if self.expr is not None:
            return self.expr
        return Const(int(self.const)) if integer else Const(float(self.const))

    def as_aff(self) -> Aff | None:
        """This int value as an affine form of the loop iterators (a constant or an :class:`Index`)."""
        if self.ctype != "int":
            return None
        if self.expr is None:
            return Aff.of({}, self.const)
        return self.expr.aff if isinstance(self.expr, Index) else None


def _int_value(a: Aff) -> V:
    """An int value from an affine form: a constant when it has no iterator, else an :class:`Index`."""
    return V("int", const=a.const) if not a.coeffs else V("int", expr=Index(a))


def _scaled(a: Aff, k: int) -> Aff:
    return Aff.of({n: c * k for n, c in a.coeffs}, a.const * k)


class Split(Exception):
    """An affine ternary condition not decided by the statement's domain: build the statement twice."""

    def __init__(self, f):
        super().__init__("split")
        self.f = f


@dataclass
class StmtCtx:
    name: str
    extra: tuple
    reads: list[Access] = field(default_factory=list)
    nodes: dict[str, c_ast.Node] = field(default_factory=dict)

    def ref(self) -> str:
        return f"{self.name}_r{len(self.reads)}"


def wrap_int(v: int, dtype: str) -> int:
    """``v`` converted to the integer ``dtype`` (two's complement wrap, as gcc and clang do)."""
    bits = {"i32": 32, "i16": 16, "i8": 8, "u8": 8}[dtype]
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype != "u8" and v >= 1 << (bits - 1) else v


def usual(a: str, b: str) -> str:
    if "double" in (a, b):
        return "double"
    if "float" in (a, b):
        return "float"
    return "int"


class ExprMixin:
    """Expression translation; needs ``lookup``, ``err``, ``missing``, ``frames``, ``scalars`` and
    ``domain_formula`` from the builder."""

    # -- affine expressions -------------------------------------------------------------------------
    def data_in(self, node):
        """(node, description) of the first non-affine ingredient of a condition, or None."""
        if isinstance(node, c_ast.ArrayRef):
            b = lvalue_base(node)
            return node, f"it reads array {b.name if b else '?'!r}"
        if isinstance(node, c_ast.FuncCall):
            return node, f"it calls {self.call_name(node)!r}"
        if isinstance(node, c_ast.ID):
            v = self.lookup(node)
            if v.kind in ("fscalar", "temp", "array"):
                what = "integer" if v.ctype == "int" else "floating-point"
                return node, f"it reads the {what} variable {node.name!r}"
            return None
        if isinstance(node, c_ast.Constant):
            if node.type not in ("int",) and parse_number(node, self.fn)[1] != "int":
                return node, f"it uses the floating-point constant {node.value}"
            return None
        if isinstance(node, c_ast.Cast) and self.cast_kind(node) != "int":
            return node, "it converts to a floating-point type"
        for _, child in node.children():
            r = self.data_in(child)
            if r is not None:
                return r
        return None

    def formula(self, n):
        """The affine condition ``n`` as a formula over the loop names."""
        if isinstance(n, c_ast.BinaryOp):
            if n.op == "&&":
                return F.f_and(self.formula(n.left), self.formula(n.right))
            if n.op == "||":
                return F.f_or(self.formula(n.left), self.formula(n.right))
            if n.op in CMP:
                a, b = self.pieces(n.left), self.pieces(n.right)
                return self.limit(n, F.f_or(*(F.f_and(pa, pb, F.compare(n.op, va, vb))
                                              for pa, va in a for pb, vb in b)))
        if isinstance(n, c_ast.UnaryOp) and n.op == "!":
            return F.f_neg(self.formula(n.expr))
        pcs = self.pieces(n)
        return F.f_or(*(F.f_and(pc, F.compare("!=", v, F.aff_const(0))) for pc, v in pcs))

    def limit(self, node, f):
        if F.size(f) > MAX_FORMULA:
            raise self.err(node, "condition too complex (too many cases)")
        return f

    def pieces(self, n, what: str = "condition") -> list:
        """``[(formula, Lin), ...]``: the integer expression ``n`` as a piecewise affine form."""
        out = self._pieces(n, what)
        out = [(f, a) for f, a in out if f != F.FALSE]
        if len(out) > MAX_PIECES:
            raise self.err(n, f"{what} too complex (too many ternary cases)")
        return out or [(TRUE, F.aff_const(0))]

    def _pieces(self, n, what):
        if isinstance(n, c_ast.Constant):
            v, t = parse_number(n, self.fn)
            if t != "int":
                raise self.err(n, f"floating-point constant {n.value} in {what}")
            return [(TRUE, F.aff_const(v))]
        if isinstance(n, c_ast.ID):
            v = self.lookup(n)
            if v.kind == "iparam":
                if v.state == ("runtime",):      # a runtime parameter: an isl parameter, made a guard
                    return [(TRUE, F.Lin.var(v.name))]
                if v.value is None:
                    raise self.missing(n, v)
                return [(TRUE, F.aff_const(v.value))]
            if v.kind == "ilocal":
                st = v.state
                if st[0] == "iter":
                    return [(TRUE, F.Lin.var(st[1].name))]
                if st[0] == "const":
                    return [(TRUE, F.aff_const(st[1]))]
                if st[0] == "dead":
                    raise self.err(n, f"{v.cname!r} is used after the loop over it (its final value is not "
                                      f"supported)")
                raise self.err(n, f"{v.cname!r} is used before it is given a value")
            raise self.err(n, f"{what} is not affine: it depends on the value of {n.name!r}")
        if isinstance(n, c_ast.ArrayRef):
            b = lvalue_base(n)
            raise self.err(n, f"{what} is not affine: it reads array {b.name if b else '?'!r} "
                              f"(data-dependent {'indexing' if 'subscript' in what else 'expression'})")
        if isinstance(n, c_ast.BinaryOp):
            if n.op in CMP or n.op in ("&&", "||"):
                f = self.formula(n)
                return [(f, F.aff_const(1)), (F.f_neg(f), F.aff_const(0))]
            a, b = self.pieces(n.left, what), self.pieces(n.right, what)
            if n.op in ("+", "-"):
                sgn = 1 if n.op == "+" else -1
                return [(F.f_and(pa, pb), va + F.aff_scale(vb, sgn)) for pa, va in a for pb, vb in b]
            if n.op == "*":
                out = []
                for pa, va in a:
                    for pb, vb in b:
                        if F.is_const(va):
                            out.append((F.f_and(pa, pb), F.aff_scale(vb, va.const)))
                        elif F.is_const(vb):
                            out.append((F.f_and(pa, pb), F.aff_scale(va, vb.const)))
                        else:
                            raise self.err(n, f"{what} is not affine: product of {va} and {vb}")
                return out
            if n.op in ("/", "%"):
                out = []
                for pa, va in a:
                    for pb, vb in b:
                        if not F.is_const(vb):
                            raise self.err(n, f"{what} is not affine: integer "
                                              f"{'division' if n.op == '/' else 'modulo'} by a loop-dependent value")
                        if vb.const == 0:
                            raise self.err(n, "integer division by zero", AffineError)
                        if F.is_const(va):
                            r = c_div(va.const, vb.const) if n.op == "/" else c_mod(va.const, vb.const)
                            out.append((F.f_and(pa, pb), F.aff_const(r)))
                            continue
                        d = abs(vb.const)
                        # C truncates: e / d = floor(e / d) if e >= 0, else -floor(-e / d); e % d = e - d*(e / d)
                        for cond, q in ((F.atom_ge(va), F.Lin.floor_div(va, d)),
                                        (F.f_neg(F.atom_ge(va)), F.aff_scale(F.Lin.floor_div(F.aff_scale(va, -1), d), -1))):
                            if n.op == "/":
                                val = q if vb.const > 0 else F.aff_scale(q, -1)
                            else:
                                val = F.aff_sub(va, F.aff_scale(q, d))
                            out.append((F.f_and(pa, pb, cond), val))
                return out
            raise self.err(n, f"operator {n.op!r} in {what} is not supported")
        if isinstance(n, c_ast.UnaryOp):
            if n.op in ("-", "+"):
                return [(p, F.aff_scale(v, -1 if n.op == "-" else 1)) for p, v in self.pieces(n.expr, what)]
            if n.op == "!":
                f = F.f_neg(self.formula(n.expr))
                return [(f, F.aff_const(1)), (F.f_neg(f), F.aff_const(0))]
            raise self.err(n, self.unary_msg(n, what))
        if isinstance(n, c_ast.TernaryOp):
            f = self.formula(n.cond)
            return ([(F.f_and(f, p), v) for p, v in self.pieces(n.iftrue, what)]
                    + [(F.f_and(F.f_neg(f), p), v) for p, v in self.pieces(n.iffalse, what)])
        if isinstance(n, c_ast.Cast):
            kind = self.cast_kind(n)
            if kind != "int":
                raise self.err(n, f"cast to a non-integer type in {what}")
            return self.pieces(n.expr, what)
        if isinstance(n, c_ast.FuncCall):
            raise self.err(n, f"{what} is not affine: it calls {self.call_name(n)!r}")
        if isinstance(n, c_ast.Assignment):
            raise self.err(n, f"assignment inside {what} is not supported")
        raise self.err(n, f"{what} is not affine ({type(n).__name__} is not supported)")

    def unary_msg(self, n, what) -> str:
        if n.op in ("*", "&"):
            return f"pointer {'dereference' if n.op == '*' else 'address-of'} is not supported"
        if n.op in ("++", "--", "p++", "p--"):
            return f"{n.op.strip('p')} inside an expression is not supported"
        if n.op == "sizeof":
            return "sizeof is not supported"
        return f"operator {n.op!r} in {what} is not supported"

    def cast_text(self, n: c_ast.Cast) -> str:
        t = n.to_type.type
        words = type_words(t, self.typedefs)[1] if isinstance(t, c_ast.TypeDecl) else None
        return " ".join(words or ["?"])

    def cast_kind(self, n: c_ast.Cast) -> str | None:
        t = n.to_type.type
        if isinstance(t, c_ast.TypeDecl):
            kind, _ = type_words(t, self.typedefs)
            return kind
        if isinstance(t, c_ast.PtrDecl):
            raise self.err(n, "pointer cast is not supported")
        return None

    # -- right-hand sides ---------------------------------------------------------------------------
    def read(self, n, var: Var, subs, ctx: StmtCtx) -> V:
        idx = self.index(n, var, subs)
        ref = ctx.ref()
        ctx.reads.append(Access(ref, var.name, idx))
        ctx.nodes[ref] = n
        return V(var.ctype, expr=Read(ref))

    def value(self, n, ctx: StmtCtx) -> V:
        if isinstance(n, c_ast.Constant):
            v, t = parse_number(n, self.fn)
            return V("int", const=v) if t == "int" else V(t, expr=Const(v))
        if isinstance(n, c_ast.ID):
            if n.name in MATH_CONSTANTS and not any(n.name in sc for sc in self.scopes):
                ctype, v = MATH_CONSTANTS[n.name]
                return V(ctype, expr=Const(v))
            var = self.lookup(n)
            if var.kind in ("array", "temp"):
                if var.shape:
                    raise self.err(n, f"array {var.cname!r} used without subscripts (pointer arithmetic "
                                      f"is not supported)")
                return self.read(n, var, (), ctx)
            if var.kind == "fscalar":
                self.scalars[var.name] = var.dtype or DTYPE_OF[var.ctype]
                return V(var.ctype, expr=Scalar(var.name))
            if var.kind == "iparam":
                if var.value is not None:
                    return V("int", const=var.value)
                self.scalars[var.name] = "f64"      # passed as a double; an int value in the tree
                return V("int", expr=Conv("i32", Scalar(var.name)))
            st = var.state
            if st[0] == "const":
                return V("int", const=st[1])
            if st[0] == "iter":
                return V("int", expr=Index(Aff.var(st[1].name)))
            if st[0] == "dead":
                raise self.err(n, f"{var.cname!r} is used after the loop over it")
            raise self.err(n, f"{var.cname!r} is used before it is given a value")
        if isinstance(n, c_ast.ArrayRef):
            base = lvalue_base(n)
            if base is None:
                raise self.err(n, "subscript of a non-array expression (pointer arithmetic) is not supported")
            return self.read(n, self.lookup(base), self.subscript_nodes(n), ctx)
        if isinstance(n, c_ast.BinaryOp):
            if n.op in CMP or n.op in ("&&", "||"):
                raise self.err(n, f"comparison {n.op!r} used as a value is not supported "
                                  f"(write it as a ternary: cond ? 1.0 : 0.0)")
            if n.op not in ("+", "-", "*", "/", "%"):
                raise self.err(n, f"operator {n.op!r} is not supported in computations")
            a, b = self.value(n.left, ctx), self.value(n.right, ctx)
            t = usual(a.ctype, b.ctype)
            if a.expr is None and b.expr is None:
                return V("int", const=self.fold(n, n.op, a.const, b.const))
            fa, fb = a.as_aff(), b.as_aff()
            if fa is not None and fb is not None and n.op in ("+", "-"):
                return _int_value(fa + _scaled(fb, 1 if n.op == "+" else -1))
            if fa is not None and fb is not None and n.op == "*" and (a.expr is None or b.expr is None):
                return _int_value(_scaled(fb, a.const) if a.expr is None else _scaled(fa, b.const))
            if n.op == "%" and t != "int":
                raise self.err(n, "% on floating-point values is not supported")
            return V(t, expr=Bin(n.op, a.as_expr(t == "int"), b.as_expr(t == "int")))
        if isinstance(n, c_ast.UnaryOp):
            if n.op == "-":
                a = self.value(n.expr, ctx)
                if a.expr is None:
                    return V("int", const=-a.const)
                fa = a.as_aff()
                return _int_value(_scaled(fa, -1)) if fa is not None else V(a.ctype, expr=Neg(a.expr))
            if n.op == "+":
                return self.value(n.expr, ctx)
            if n.op == "!":
                raise self.err(n, "logical ! used as a value is not supported")
            raise self.err(n, self.unary_msg(n, "a computation"))
        if isinstance(n, c_ast.Cast):
            kind = self.cast_kind(n)
            a = self.value(n.expr, ctx)
            if kind in ("double", "float"):
                if a.expr is None:
                    v = float(a.const) if kind == "double" else float(np.float32(a.const))
                    return V(kind, expr=Const(v))
                if a.ctype == "int":        # (double)n: the operator it feeds computes in floating point
                    return V(kind, expr=Conv(DTYPE_OF[kind], a.expr))
                return V(kind, expr=a.expr)  # between float types: not rounded (MICA's convention)
            if kind == "int":
                dt = int_dtype(type_words(n.to_type.type, self.typedefs)[1])
                if a.expr is None:
                    return V("int", const=wrap_int(a.const, dt) if dt else a.const)
                if a.ctype == "int" and dt in (None, "i32"):
                    return a                 # (long)/(int) of an int value: the value itself
                if dt is None:
                    raise self.err(n, f"conversion to {self.cast_text(n)!r} is not supported "
                                      f"(int, short, char and the <stdint.h> 8/16/32-bit types are)")
                return V("int", expr=Conv(dt, a.expr))
            raise self.err(n, "cast to an unsupported type")
        if isinstance(n, c_ast.TernaryOp):
            return self.select(n.cond, lambda: self.value(n.iftrue, ctx), lambda: self.value(n.iffalse, ctx),
                               ctx)
        if isinstance(n, c_ast.FuncCall):
            return self.call(n, ctx)
        if isinstance(n, c_ast.Assignment):
            raise self.err(n, "assignment inside an expression is not supported")
        if isinstance(n, c_ast.ExprList):
            raise self.err(n, "comma expression is not supported")
        if isinstance(n, c_ast.StructRef):
            raise self.err(n, "struct member access is not supported")
        raise self.err(n, f"{type(n).__name__} is not supported in computations")

    def fold(self, n, op, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            raise self.err(n, "integer division by zero", AffineError)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "/": lambda: c_div(a, b), "%": lambda: c_mod(a, b)}[op]()

    def call(self, n: c_ast.FuncCall, ctx) -> V:
        name = self.call_name(n)
        if name in BUILTIN_CONSTANTS and n.args is None:
            ctype, v = BUILTIN_CONSTANTS[name]
            return V(ctype, expr=Const(v))
        base = name[:-1] if name.endswith("f") and name[:-1] in MATH_ARGS else name
        if base not in MATH_ARGS:
            raise self.err(n, f"call to {name!r} is not supported (only {', '.join(CALLS)} and their "
                              f"f-suffixed float versions)")
        args = list(n.args.exprs) if n.args is not None else []
        if len(args) != MATH_ARGS[base]:
            raise self.err(n, f"{name} takes {MATH_ARGS[base]} argument(s), got {len(args)}")
        vals = [self.value(a, ctx) for a in args]
        return V("float" if base != name else "double", expr=Call(base, tuple(v.as_expr() for v in vals)))

    def select(self, cond, then, other, ctx) -> V:
        """``cond ? then() : other()``; ``then``/``other`` translate their branch afresh on each call."""
        if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
            return self.select(cond.left, lambda: self.select(cond.right, then, other, ctx), other, ctx)
        if isinstance(cond, c_ast.BinaryOp) and cond.op == "||":
            return self.select(cond.left, then, lambda: self.select(cond.right, then, other, ctx), ctx)
        if isinstance(cond, c_ast.UnaryOp) and cond.op == "!":
            return self.select(cond.expr, other, then, ctx)
        if self.data_in(cond) is None:
            f = self.formula(cond)
            dom = self.domain_isl(ctx)
            if dom.intersect(self.formula_set(ctx, F.f_neg(f))).is_empty():
                return then()
            if dom.intersect(self.formula_set(ctx, f)).is_empty():
                return other()
            raise Split(f)
        if isinstance(cond, c_ast.BinaryOp) and cond.op in CMP:
            a, b = self.value(cond.left, ctx), self.value(cond.right, ctx)
            i = usual(a.ctype, b.ctype) == "int"
            c = Cmp(cond.op, a.as_expr(i), b.as_expr(i))
        else:
            a = self.value(cond, ctx)
            c = Cmp("!=", a.as_expr(), Const(0) if a.ctype == "int" else Const(0.0))
        t, o = then(), other()
        i = usual(t.ctype, o.ctype) == "int"
        return V(usual(t.ctype, o.ctype), expr=Select(c, t.as_expr(i), o.as_expr(i)))

    def domain_isl(self, ctx) -> isl.Set:
        return self.formula_set(ctx, self.domain_formula(ctx.extra))

    def formula_set(self, ctx, f) -> isl.Set:
        text = F.set_text(ctx.name, [fr.name for fr in self.frames], f)
        runtime = getattr(self, "runtime", None)
        if runtime:         # runtime parameters: isl parameters over their declared ranges
            text = f"[{', '.join(runtime)}] -> {text}"
        s = self.domain_cache.get(text)
        if s is None:
            s = iset(text)
            if runtime:
                s = s.intersect_params(range_context(runtime))
            self.domain_cache[text] = s
        return s
