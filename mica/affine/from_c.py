"""The C front end: a C function (after preprocessing) -> an affine :class:`~mica.affine.program.Program`.

    from mica.affine.from_c import from_c
    prog = from_c(open("gemm.c").read(), "kernel_gemm", params={"ni": 20, "nj": 25, "nk": 30},
                  filename="gemm.c")

The accepted subset (everything else raises :class:`~mica.errors.NotAffineError` or
:class:`~mica.errors.AffineError` whose message starts with ``file:line:column:`` and whose
``line``/``column`` attributes say where):

* parameters: ``double``/``float`` arrays with constant extents (constant expressions, or ``int``
  parameters given in ``params``), ``int`` size parameters (bound to numbers by ``params``; every one used
  in a bound, subscript or condition must have a value), ``double``/``float`` scalars (they become
  :attr:`Program.scalars`; an ``int`` parameter without a value used in arithmetic becomes an ``f64``
  scalar);
* locals: ``double``/``float`` scalars and arrays (temporaries: 0-d or n-d arrays that are neither
  inputs nor outputs), ``int`` loop iterators and ``int`` constants;
* ``for`` loops with unit stride (``i++``, ``++i``, ``i += 1``, ``i = i + 1``, and the decreasing forms),
  affine bounds (ternary ``min``/``max`` included) and a condition that bounds the iterator monotonically;
  ``if``/``else`` on affine conditions (``&&``, ``||``, ``!``, comparisons); any nesting;
* statements ``x = e``, ``x op= e`` (``+ - * /``), ``x++``/``x--`` on array elements and local scalars,
  with ``e`` built from ``+ - * /``, unary minus, casts between numeric types, literals, ternaries
  (data-dependent conditions become :class:`~mica.affine.expr.Select`; affine ones split the statement
  into one statement per case), and ``sqrt exp log pow fabs fmax fmin`` (and their ``f`` versions).

The original schedule is the 2d+1 textual-order vector; a decreasing loop contributes ``-i``.
``inputs`` are the array parameters whose initial contents matter: those read before being written
(isl's exact dataflow) plus written arrays that are not entirely overwritten (their untouched elements
are part of the result); ``outputs`` are the array parameters the function writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import islpy as isl
import numpy as np
from pycparser import c_ast

from ..errors import AffineError, MicaError, NotAffineError
from . import c_affine as F
from .c_affine import ISL_KEYWORDS, TRUE
from .c_parse import (DTYPE_OF, c_div, c_mod, error, find_function, fold_int, location, lvalue_base, parse_c,
                      parse_number, signature, type_words, typedefs_of)
from .deps import dependences
from .expr import CALLS, Aff, Bin, Call, Cmp, Const, Expr, Neg, Read, Scalar, Select
from .isl_names import imap, iset
from .program import Access, Array, Program, Statement

__all__ = ["from_c"]

_MATH_ARGS = {"sqrt": 1, "exp": 1, "log": 1, "pow": 2, "fabs": 1, "fmax": 2, "fmin": 2}
assert set(_MATH_ARGS) == set(CALLS)
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_MAX_PIECES = 256
_MAX_FORMULA = 4096


def from_c(source: str, function: str | None = None, *, params: dict[str, int] | None = None,
           filename: str = "<source>") -> Program:
    """The affine :class:`Program` of the C function ``function`` (the last one if None) in ``source``.

    ``params`` binds ``int`` size parameters to numbers. Raises :class:`NotAffineError` for constructs
    outside the affine subset and :class:`AffineError` for malformed programs (bad parameters,
    out-of-bounds accesses, C syntax errors), each located ``file:line:column:``.
    """
    try:
        return _Builder(source, function, params, filename).build()
    except MicaError:
        raise
    except RecursionError:
        raise AffineError(f"{filename}:1:1: C source is nested too deeply", location=(filename, 1, 1)) from None
    except Exception as exc:   # a bug of the front end: still never a raw exception
        raise AffineError(f"{filename}:1:1: internal error of the C front end: {type(exc).__name__}: {exc}",
                          location=(filename, 1, 1)) from exc


# -- symbols ------------------------------------------------------------------------------------------

@dataclass
class _Var:
    """A C name in scope.

    ``kind``: ``'array'`` (array parameter), ``'temp'`` (local float scalar -> 0-d array, or local array),
    ``'fscalar'`` (float/double parameter), ``'iparam'`` (int parameter, ``value`` from ``params``),
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


@dataclass
class _Frame:
    name: str          # loop name in the program
    var: _Var
    step: int          # +1 / -1
    pos: int           # textual position among its siblings


@dataclass
class _V:
    """A translated right-hand-side value: a compile-time int constant or an expression of ``ctype``."""

    ctype: str                    # 'int' | 'double' | 'float'
    const: int | None = None      # int constants only (folded with C semantics)
    expr: Expr | None = None

    def as_expr(self) -> Expr:
        return Const(float(self.const)) if self.expr is None else self.expr


class _Split(Exception):
    """An affine ternary condition not decided by the statement's domain: build the statement twice."""

    def __init__(self, f):
        super().__init__("split")
        self.f = f


@dataclass
class _StmtCtx:
    name: str
    extra: tuple
    reads: list[Access] = field(default_factory=list)
    nodes: dict[str, c_ast.Node] = field(default_factory=dict)

    def ref(self) -> str:
        return f"{self.name}_r{len(self.reads)}"


def _usual(a: str, b: str) -> str:
    if "double" in (a, b):
        return "double"
    if "float" in (a, b):
        return "float"
    return "int"


class _Builder:
    def __init__(self, source, function, params, filename):
        self.src = source
        self.fn = filename
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise AffineError(f"{filename}:1:1: params must be a dict of int values, got {type(params).__name__}",
                              location=(filename, 1, 1))
        for k, v in params.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int):
                raise AffineError(f"{filename}:1:1: params must map names to ints, got {k!r}: {v!r}",
                                  location=(filename, 1, 1))
        self.params = dict(params)
        self.ast = parse_c(source, filename)
        self.typedefs = typedefs_of(self.ast)
        self.fdef = find_function(self.ast, function, filename)
        self.name = self.fdef.decl.name
        self.scopes: list[dict[str, _Var]] = [{}]
        self.arrays: dict[str, Array] = {}
        self.param_arrays: list[str] = []
        self.temps: set[str] = set()
        self.scalars: dict[str, str] = {}
        self.used: set[str] = set()          # program-level names taken (arrays, scalars, temps)
        self.loop_names: set[str] = set()    # every loop name used so far
        self.frames: list[_Frame] = []
        self.conds: list = []
        self.counters: list[int] = [0]
        self.statements: list[Statement] = []
        self.access_nodes: dict[str, c_ast.Node] = {}
        self.domain_cache: dict[str, isl.Set] = {}

    # -- errors / lookup ----------------------------------------------------------------------------
    def err(self, node, msg, cls=NotAffineError) -> MicaError:
        return error(cls, node, self.fn, msg)

    def lookup(self, node: c_ast.ID) -> _Var:
        for sc in reversed(self.scopes):
            if node.name in sc:
                return sc[node.name]
        raise self.err(node, f"undeclared identifier {node.name!r} (only parameters and locals of "
                             f"{self.name} may be used; global variables are not supported)", AffineError)

    def declare(self, var: _Var) -> None:
        self.scopes[-1][var.cname] = var

    def fresh(self, base: str, avoid: set[str]) -> str:
        name, k = base, 0
        while name in avoid or name in ISL_KEYWORDS or re.fullmatch(r"S\d+", name):
            k += 1
            name = f"{base}_{k}"
        return name

    # -- signature ----------------------------------------------------------------------------------
    def build(self) -> Program:
        sig = signature(self.fdef, self.typedefs)
        iparams = {p.name for p in sig if p.kind == "int"}
        for k in self.params:
            if k not in iparams:
                raise self.err(self.fdef.decl, f"params gives {k!r}, which is not an int parameter of "
                                               f"{self.name} (int parameters: {sorted(iparams)})", AffineError)
        for p in sig:
            self.param(p)
        body = self.fdef.body.block_items or []
        self.scopes.append({})
        for i, item in enumerate(body):
            if isinstance(item, c_ast.Return) and item.expr is None and i == len(body) - 1:
                continue
            self.stmt(item)
        self.scopes.pop()
        return self.finish()

    def param(self, p) -> None:
        node = p.node
        if p.kind == "pointer":
            raise self.err(node, f"pointer parameter {p.name!r} is not supported: declare it as an array "
                                 f"with constant extents, e.g. double {p.name}[20][30]")
        if p.kind == "other":
            raise self.err(node, f"parameter {p.name!r} has an unsupported type (supported: double/float "
                                 f"arrays and scalars, int sizes)")
        if p.kind == "array":
            if p.elem == "int":
                raise self.err(node, f"integer array parameter {p.name!r} is not supported "
                                     f"(only double and float arrays)")
            if p.elem not in ("double", "float"):
                raise self.err(node, f"array parameter {p.name!r} has an unsupported element type")
            shape = self.extents(p.name, p.dims, node)
            if p.name in ISL_KEYWORDS:
                raise self.err(node, f"array name {p.name!r} is reserved by isl; rename it", AffineError)
            self.arrays[p.name] = Array(p.name, shape, DTYPE_OF[p.elem])
            self.param_arrays.append(p.name)
            self.used.add(p.name)
            self.declare(_Var("array", p.name, p.name, node, p.elem, shape))
        elif p.kind == "int":
            self.used.add(p.name)
            self.declare(_Var("iparam", p.name, p.name, node, "int", value=self.params.get(p.name)))
        else:
            self.used.add(p.name)
            self.declare(_Var("fscalar", p.name, p.name, node, p.kind))

    def extents(self, name, dims, node) -> tuple[int, ...]:
        shape = []
        for d in dims:
            if d is None:
                raise self.err(node, f"array {name!r} needs an extent in every dimension", AffineError)
            n = fold_int(d, self.const_id, self.fn, f"extent of array {name!r}")
            if n <= 0:
                raise self.err(d, f"array {name!r} has a non-positive extent {n}", AffineError)
            shape.append(n)
        return tuple(shape)

    def const_id(self, node: c_ast.ID) -> int:
        """Value of a name in an integer constant expression."""
        v = self.lookup(node)
        if v.kind == "iparam":
            if v.value is None:
                raise self.missing(node, v)
            return v.value
        if v.kind == "ilocal" and v.state[0] == "const":
            return v.state[1]
        raise self.err(node, f"{node.name!r} is not an integer constant here")

    def missing(self, node, v: _Var) -> MicaError:
        return self.err(node, f"int parameter {v.cname!r} is used in a loop bound, subscript or condition "
                              f"but has no value: pass params={{{v.cname!r}: ...}}", AffineError)

    # -- statements ---------------------------------------------------------------------------------
    def stmt(self, n) -> None:
        if isinstance(n, c_ast.Compound):
            self.scopes.append({})
            for item in n.block_items or []:
                self.stmt(item)
            self.scopes.pop()
        elif isinstance(n, c_ast.Decl):
            self.local(n)
        elif isinstance(n, c_ast.Assignment):
            self.assign(n)
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"):
            self.incdec(n)
        elif isinstance(n, c_ast.For):
            self.for_(n)
        elif isinstance(n, c_ast.If):
            self.if_(n)
        elif isinstance(n, (c_ast.EmptyStatement, c_ast.Pragma)):
            pass
        elif isinstance(n, c_ast.Return):
            if n.expr is not None:
                raise self.err(n, "return with a value is not supported (the function must return void)")
            raise self.err(n, "early return is not supported (control flow must be static)")
        elif isinstance(n, (c_ast.While, c_ast.DoWhile)):
            kind = "while" if isinstance(n, c_ast.While) else "do-while"
            raise self.err(n, f"{kind} loop is not supported (only for loops with affine bounds)")
        elif isinstance(n, (c_ast.Goto, c_ast.Label)):
            raise self.err(n, "goto and labels are not supported")
        elif isinstance(n, c_ast.Break):
            raise self.err(n, "break is not supported (loops must run their full affine range)")
        elif isinstance(n, c_ast.Continue):
            raise self.err(n, "continue is not supported (use an if around the rest of the body)")
        elif isinstance(n, (c_ast.Switch, c_ast.Case, c_ast.Default)):
            raise self.err(n, "switch is not supported")
        elif isinstance(n, c_ast.FuncCall):
            raise self.err(n, f"call to {self.call_name(n)!r} as a statement is not supported")
        elif isinstance(n, c_ast.ExprList):
            raise self.err(n, "comma expression is not supported; write one statement per assignment")
        elif isinstance(n, c_ast.Typedef):
            raise self.err(n, "typedef inside the function is not supported")
        else:
            raise self.err(n, f"unsupported statement ({type(n).__name__})")

    def call_name(self, n: c_ast.FuncCall) -> str:
        return n.name.name if isinstance(n.name, c_ast.ID) else "<expression>"

    def local(self, n: c_ast.Decl) -> None:
        if "extern" in (n.storage or []):
            raise self.err(n, f"extern declaration {n.name!r} inside the function is not supported")
        t = n.type
        if isinstance(t, c_ast.FuncDecl):
            raise self.err(n, f"function declaration {n.name!r} inside the function is not supported")
        if isinstance(t, c_ast.PtrDecl):
            raise self.err(n, f"pointer variable {n.name!r} is not supported")
        if isinstance(t, c_ast.TypeDecl):
            kind, _ = type_words(t, self.typedefs)
            if kind in ("double", "float"):
                name = self.fresh(n.name, self.used | self.loop_names)
                self.used.add(name)
                self.temps.add(name)
                self.arrays[name] = Array(name, (), DTYPE_OF[kind])
                var = _Var("temp", n.name, name, n, kind)
                if n.init is not None:
                    if isinstance(n.init, c_ast.InitList):
                        raise self.err(n.init, f"brace initialiser for scalar {n.name!r} is not supported")
                    self.declare(var)   # C: the name is in scope in its own initialiser
                    self.emit(n, n, var, (), "=", n.init)
                else:
                    self.declare(var)
                return
            if kind == "int":
                var = _Var("ilocal", n.name, n.name, n, "int")
                if n.init is not None:
                    pcs = self.pieces(n.init)
                    if len(pcs) != 1 or pcs[0][0] != TRUE or not F.is_const(pcs[0][1]):
                        raise self.err(n.init, f"int local {n.name!r} must be initialised with a constant "
                                               f"(only loop iterators may vary)")
                    var.state = ("const", pcs[0][1].const)
                self.declare(var)
                return
            raise self.err(n, f"local {n.name!r} has an unsupported type (supported: double, float, int)")
        if isinstance(t, c_ast.ArrayDecl):
            dims = []
            while isinstance(t, c_ast.ArrayDecl):
                dims.append(t.dim)
                t = t.type
            if not isinstance(t, c_ast.TypeDecl):
                raise self.err(n, f"local array {n.name!r} has an unsupported element type")
            kind, _ = type_words(t, self.typedefs)
            if kind == "int":
                raise self.err(n, f"integer local array {n.name!r} is not supported (only double and float)")
            if kind not in ("double", "float"):
                raise self.err(n, f"local array {n.name!r} has an unsupported element type")
            if n.init is not None:
                raise self.err(n.init, f"initialiser of local array {n.name!r} is not supported")
            shape = self.extents(n.name, dims, n)
            name = self.fresh(n.name, self.used | self.loop_names)
            self.used.add(name)
            self.temps.add(name)
            self.arrays[name] = Array(name, shape, DTYPE_OF[kind])
            self.declare(_Var("temp", n.name, name, n, kind, shape))
            return
        raise self.err(n, f"declaration of {n.name!r} has an unsupported type")

    def target(self, node, lv) -> _Var:
        """The variable assigned by lvalue ``lv``; rejects iterators, parameters, pointers."""
        base = lvalue_base(lv)
        if base is None:
            raise self.err(lv, "assignment through a pointer or to a non-variable is not supported")
        var = self.lookup(base)
        if var.kind == "iparam":
            raise self.err(lv, f"assignment to size parameter {var.cname!r} is not supported")
        if var.kind == "fscalar":
            raise self.err(lv, f"assignment to scalar parameter {var.cname!r} is not supported")
        if var.kind == "ilocal":
            if var.state[0] == "iter":
                raise self.err(lv, f"assignment to loop iterator {var.cname!r} inside its loop is not supported")
            raise self.err(lv, f"assignment to int variable {var.cname!r} is not supported "
                               f"(int locals may only be loop iterators or constants)")
        return var

    def assign(self, n: c_ast.Assignment) -> None:
        var = self.target(n, n.lvalue)
        if n.op not in ("=", "+=", "-=", "*=", "/="):
            raise self.err(n, f"assignment operator {n.op!r} is not supported (=, +=, -=, *=, /= are)")
        rhs = n.rvalue
        if isinstance(rhs, c_ast.Assignment):
            # a = b = e: first b = e, then a = b (the value of an assignment is its left side's new value)
            self.assign(rhs)
            rhs = rhs.lvalue
        self.emit(n, n.lvalue, var, self.subscript_nodes(n.lvalue), n.op, rhs)

    def incdec(self, n: c_ast.UnaryOp) -> None:
        var = self.target(n, n.expr)
        one = c_ast.Constant("int", "1", n.coord)
        self.emit(n, n.expr, var, self.subscript_nodes(n.expr), "+=" if "+" in n.op else "-=", one)

    def subscript_nodes(self, lv) -> tuple:
        subs = []
        while isinstance(lv, c_ast.ArrayRef):
            subs.append(lv.subscript)
            lv = lv.name
        return tuple(reversed(subs))

    def index(self, node, var: _Var, subs) -> tuple[Aff, ...]:
        if var.kind not in ("array", "temp"):
            raise self.err(node, f"{var.cname!r} is not an array")
        if len(subs) != len(var.shape):
            if not var.shape:
                raise self.err(node, f"{var.cname!r} is a scalar, not an array")
            raise self.err(node, f"{var.cname!r} has {len(var.shape)} dimension(s) but is used with "
                                 f"{len(subs)} subscript(s) (pointer arithmetic is not supported)")
        out = []
        for s in subs:
            pcs = self.pieces(s, what=f"subscript of {var.cname!r}")
            if any(v.to_aff() is None for _, v in pcs):
                raise self.err(s, f"subscript of {var.cname!r} is not affine: integer division or modulo of a "
                                  f"loop-dependent value")
            if len(pcs) != 1 or pcs[0][0] != TRUE:
                raise self.err(s, f"conditional subscript of {var.cname!r} is not supported")
            out.append(pcs[0][1].to_aff())
        return tuple(out)

    def emit(self, node, lv, var: _Var, subs, op: str, rhs) -> None:
        pending = [()]
        while pending:
            extra = pending.pop(0)
            sname = f"S{len(self.statements)}"
            ctx = _StmtCtx(sname, extra)
            try:
                widx = self.index(lv, var, subs)
                if op == "=":
                    value = self.value(rhs, ctx)
                    expr = value.as_expr()
                else:
                    ref = ctx.ref()
                    ctx.reads.append(Access(ref, var.name, widx))
                    ctx.nodes[ref] = lv
                    value = self.value(rhs, ctx)
                    expr = Bin(op[0], Read(ref), value.as_expr())
            except _Split as sp:
                pending[0:0] = [extra + (sp.f,), extra + (F.f_neg(sp.f),)]
                continue
            order = []
            for fr in self.frames:
                order += [fr.pos, fr.name if fr.step > 0 else f"-{fr.name}"]
            order.append(self.counters[-1])
            self.counters[-1] += 1
            loops = tuple(fr.name for fr in self.frames)
            dom = self.domain_text(sname, extra)
            write = Access(f"{sname}_w", var.name, widx)
            line = location(node, self.fn)[1]
            try:
                st = Statement(sname, loops, dom, write, expr, tuple(ctx.reads), tuple(order), line=line)
                st.domain_set
            except AffineError as exc:
                raise self.err(node, f"cannot build statement {sname}: {exc}", AffineError) from None
            ctx.nodes[write.ref] = lv
            self.check_bounds(st, ctx.nodes)
            self.access_nodes.update(ctx.nodes)
            self.statements.append(st)

    def domain_formula(self, extra=()):
        f = F.f_and(*self.conds, *extra)
        if F.size(f) > _MAX_FORMULA:
            raise AffineError(f"{self.fn}:1:1: iteration domain too complex", location=(self.fn, 1, 1))
        return f

    def domain_text(self, sname: str, extra=()) -> str:
        return F.set_text(sname, [fr.name for fr in self.frames], self.domain_formula(extra))

    def check_bounds(self, st: Statement, nodes) -> None:
        dom = st.domain_set
        if dom.is_empty():
            return
        for acc in st.accesses:
            arr = self.arrays[acc.array]
            m = imap(acc.relation_text(st)).intersect_domain(dom)
            bad = m.intersect_range(iset(arr.box_text()).complement())
            if bad.is_empty():
                continue
            pt = bad.domain().sample_point()
            where = ", ".join(f"{fr.var.cname} = {pt.get_coordinate_val(isl.dim_type.set, k).to_python()}"
                              for k, fr in enumerate(self.frames))
            idx = ", ".join(a.text() for a in acc.index)
            raise self.err(nodes.get(acc.ref), f"access {acc.array}[{idx}] is outside the declared extent "
                                                f"{acc.array}{list(arr.shape)}" + (f" (e.g. at {where})" if where else ""),
                           AffineError)

    # -- control flow -------------------------------------------------------------------------------
    def loop_var(self, node) -> tuple[_Var, c_ast.Node | None, bool]:
        """(iterator, initial value node, declared in the for) of a for-init."""
        init = node.init
        if init is None:
            raise self.err(node, "for loop without an initialisation of its iterator is not supported")
        if isinstance(init, c_ast.DeclList):
            if len(init.decls) != 1:
                raise self.err(init, "for loop declaring several variables is not supported")
            d = init.decls[0]
            kind = type_words(d.type, self.typedefs)[0] if isinstance(d.type, c_ast.TypeDecl) else None
            if kind != "int":
                raise self.err(d, f"loop iterator {d.name!r} must be an int")
            if d.init is None:
                raise self.err(d, f"loop iterator {d.name!r} has no initial value")
            return _Var("ilocal", d.name, d.name, d, "int"), d.init, True
        if isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(init.lvalue, c_ast.ID):
            var = self.lookup(init.lvalue)
            if var.kind == "iparam":
                raise self.err(init.lvalue, f"assignment to size parameter {var.cname!r} is not supported")
            if var.kind != "ilocal":
                raise self.err(init.lvalue, f"loop iterator {var.cname!r} must be an int local variable")
            if var.state[0] == "iter":
                raise self.err(init.lvalue, f"{var.cname!r} is already the iterator of an enclosing loop")
            return var, init.rvalue, False
        if isinstance(init, c_ast.ExprList):
            raise self.err(init, "for loop initialising several variables is not supported")
        raise self.err(init, "unsupported for-loop initialisation (expected i = <affine expression>)")

    def step_of(self, node, var: _Var) -> int:
        nx = node.next
        if nx is None:
            raise self.err(node, f"for loop without an increment of {var.cname!r} is not supported")

        def is_var(x):
            return isinstance(x, c_ast.ID) and x.name == var.cname

        step = None
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("++", "p++", "--", "p--") and is_var(nx.expr):
            step = 1 if "+" in nx.op else -1
        elif isinstance(nx, c_ast.Assignment) and is_var(nx.lvalue):
            if nx.op in ("+=", "-="):
                k = self.int_const(nx.rvalue)
                if k is not None:
                    step = k if nx.op == "+=" else -k
            elif nx.op == "=" and isinstance(nx.rvalue, c_ast.BinaryOp) and nx.rvalue.op in ("+", "-"):
                r = nx.rvalue
                if is_var(r.left):
                    k = self.int_const(r.right)
                    if k is not None:
                        step = k if r.op == "+" else -k
                elif is_var(r.right) and r.op == "+":
                    k = self.int_const(r.left)
                    if k is not None:
                        step = k
        if step is None:
            raise self.err(nx, f"unsupported increment of loop {var.cname!r} (use {var.cname}++, "
                               f"{var.cname}--, {var.cname} += 1 or {var.cname} -= 1)")
        if step not in (1, -1):
            raise self.err(nx, f"loop {var.cname!r} has stride {step}; only unit strides are supported")
        return step

    def int_const(self, node) -> int | None:
        try:
            return fold_int(node, self.const_id, self.fn, "loop step")
        except MicaError:
            return None

    def for_(self, node: c_ast.For) -> None:
        var, init, declared = self.loop_var(node)
        step = self.step_of(node, var)
        if node.cond is None:
            raise self.err(node, f"for loop over {var.cname!r} without a condition is not supported")
        start = self.pieces(init, what=f"initial value of loop {var.cname!r}")
        name = self.fresh(var.cname, {fr.name for fr in self.frames} | self.used)
        if declared:
            self.scopes.append({})
            self.declare(var)
        frame = _Frame(name, var, step, self.counters[-1])
        var.state = ("iter", frame)
        self.frames.append(frame)
        self.loop_names.add(name)
        it = F.Lin.var(name)
        lower = F.f_or(*(F.f_and(pc, F.compare(">=" if step > 0 else "<=", it, v)) for pc, v in start))
        bad = self.data_in(node.cond)
        if bad is not None:
            raise self.err(bad[0], f"bound of loop {var.cname!r} is not affine: {bad[1]}")
        cond = self.formula(node.cond)
        for atom in F.atoms(cond):
            c = atom[1].coeff(name)
            other = F.Lin(tuple(t for t in atom[1].coeffs if t[0] != name))
            if other.mentions(name) or (c and (atom[0] == "eq" or (c > 0) == (step > 0))):
                raise self.err(node.cond, f"condition of loop {var.cname!r} is not a simple "
                                          f"{'upper' if step > 0 else 'lower'} bound on {var.cname!r} "
                                          f"(the loop would not run over a contiguous range)")
        self.conds.append(F.f_and(lower, cond))
        self.counters[-1] += 1
        self.counters.append(0)
        self.stmt(node.stmt)
        self.counters.pop()
        self.conds.pop()
        self.frames.pop()
        if declared:
            self.scopes.pop()
        var.state = ("dead", node)

    def if_(self, node: c_ast.If) -> None:
        bad = self.data_in(node.cond)
        if bad is not None:
            raise self.err(bad[0], f"if condition is not affine: {bad[1]} (data-dependent control flow is "
                                   f"not supported; use a ternary in the assignment instead)")
        f = self.formula(node.cond)
        self.conds.append(f)
        if node.iftrue is not None:
            self.stmt(node.iftrue)
        self.conds.pop()
        if node.iffalse is not None:
            self.conds.append(F.f_neg(f))
            self.stmt(node.iffalse)
            self.conds.pop()

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
                return node, f"it reads the floating-point variable {node.name!r}"
            return None
        if isinstance(node, c_ast.Constant):
            if node.type not in ("int",) and parse_number(node, self.fn)[1] != "int":
                return node, f"it uses the floating-point constant {node.value}"
            return None
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
            if n.op in _CMP:
                a, b = self.pieces(n.left), self.pieces(n.right)
                return self.limit(n, F.f_or(*(F.f_and(pa, pb, F.compare(n.op, va, vb))
                                              for pa, va in a for pb, vb in b)))
        if isinstance(n, c_ast.UnaryOp) and n.op == "!":
            return F.f_neg(self.formula(n.expr))
        pcs = self.pieces(n)
        return F.f_or(*(F.f_and(pc, F.compare("!=", v, F.aff_const(0))) for pc, v in pcs))

    def limit(self, node, f):
        if F.size(f) > _MAX_FORMULA:
            raise self.err(node, "condition too complex (too many cases)")
        return f

    def pieces(self, n, what: str = "affine expression") -> list:
        """``[(formula, Lin), ...]``: the integer expression ``n`` as a piecewise affine form."""
        out = self._pieces(n, what)
        out = [(f, a) for f, a in out if f != F.FALSE]
        if len(out) > _MAX_PIECES:
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
            if n.op in _CMP or n.op in ("&&", "||"):
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

    def cast_kind(self, n: c_ast.Cast) -> str | None:
        t = n.to_type.type
        if isinstance(t, c_ast.TypeDecl):
            kind, _ = type_words(t, self.typedefs)
            return kind
        if isinstance(t, c_ast.PtrDecl):
            raise self.err(n, "pointer cast is not supported")
        return None

    # -- right-hand sides ---------------------------------------------------------------------------
    def read(self, n, var: _Var, subs, ctx: _StmtCtx) -> _V:
        idx = self.index(n, var, subs)
        ref = ctx.ref()
        ctx.reads.append(Access(ref, var.name, idx))
        ctx.nodes[ref] = n
        return _V(var.ctype, expr=Read(ref))

    def value(self, n, ctx: _StmtCtx) -> _V:
        if isinstance(n, c_ast.Constant):
            v, t = parse_number(n, self.fn)
            return _V("int", const=v) if t == "int" else _V(t, expr=Const(v))
        if isinstance(n, c_ast.ID):
            var = self.lookup(n)
            if var.kind in ("array", "temp"):
                if var.shape:
                    raise self.err(n, f"array {var.cname!r} used without subscripts (pointer arithmetic "
                                      f"is not supported)")
                return self.read(n, var, (), ctx)
            if var.kind == "fscalar":
                self.scalars[var.name] = DTYPE_OF[var.ctype]
                return _V(var.ctype, expr=Scalar(var.name))
            if var.kind == "iparam":
                if var.value is not None:
                    return _V("int", const=var.value)
                self.scalars[var.name] = "f64"
                return _V("int", expr=Scalar(var.name))
            st = var.state
            if st[0] == "const":
                return _V("int", const=st[1])
            if st[0] == "iter":
                raise self.err(n, f"loop iterator {var.cname!r} is used as a value; only array elements, "
                                  f"scalars and constants may appear in computations")
            if st[0] == "dead":
                raise self.err(n, f"{var.cname!r} is used after the loop over it")
            raise self.err(n, f"{var.cname!r} is used before it is given a value")
        if isinstance(n, c_ast.ArrayRef):
            base = lvalue_base(n)
            if base is None:
                raise self.err(n, "subscript of a non-array expression (pointer arithmetic) is not supported")
            return self.read(n, self.lookup(base), self.subscript_nodes(n), ctx)
        if isinstance(n, c_ast.BinaryOp):
            if n.op in _CMP or n.op in ("&&", "||"):
                raise self.err(n, f"comparison {n.op!r} used as a value is not supported "
                                  f"(write it as a ternary: cond ? 1.0 : 0.0)")
            if n.op not in ("+", "-", "*", "/", "%"):
                raise self.err(n, f"operator {n.op!r} is not supported in computations")
            a, b = self.value(n.left, ctx), self.value(n.right, ctx)
            t = _usual(a.ctype, b.ctype)
            if a.expr is None and b.expr is None:
                return _V("int", const=self.fold(n, n.op, a.const, b.const))
            if n.op == "%":
                raise self.err(n, "% on floating-point or run-time values is not supported")
            if t == "int" and n.op == "/":
                raise self.err(n, "integer division of run-time values is not supported")
            return _V(t, expr=Bin(n.op, a.as_expr(), b.as_expr()))
        if isinstance(n, c_ast.UnaryOp):
            if n.op == "-":
                a = self.value(n.expr, ctx)
                return _V("int", const=-a.const) if a.expr is None else _V(a.ctype, expr=Neg(a.expr))
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
                    return _V(kind, expr=Const(v))
                return _V(kind, expr=a.expr)
            if kind == "int":
                if a.expr is None:
                    return a
                if a.ctype == "int":
                    return a
                raise self.err(n, "conversion of a floating-point value to an integer is not supported")
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

    def call(self, n: c_ast.FuncCall, ctx) -> _V:
        name = self.call_name(n)
        base = name[:-1] if name.endswith("f") and name[:-1] in _MATH_ARGS else name
        if base not in _MATH_ARGS:
            raise self.err(n, f"call to {name!r} is not supported (only {', '.join(CALLS)} and their "
                              f"f-suffixed float versions)")
        args = list(n.args.exprs) if n.args is not None else []
        if len(args) != _MATH_ARGS[base]:
            raise self.err(n, f"{name} takes {_MATH_ARGS[base]} argument(s), got {len(args)}")
        vals = [self.value(a, ctx) for a in args]
        return _V("float" if base != name else "double", expr=Call(base, tuple(v.as_expr() for v in vals)))

    def select(self, cond, then, other, ctx) -> _V:
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
            raise _Split(f)
        if isinstance(cond, c_ast.BinaryOp) and cond.op in _CMP:
            a, b = self.value(cond.left, ctx), self.value(cond.right, ctx)
            c = Cmp(cond.op, a.as_expr(), b.as_expr())
        else:
            a = self.value(cond, ctx)
            c = Cmp("!=", a.as_expr(), Const(0.0))
        t, o = then(), other()
        return _V(_usual(t.ctype, o.ctype), expr=Select(c, t.as_expr(), o.as_expr()))

    def domain_isl(self, ctx) -> isl.Set:
        return self.formula_set(ctx, self.domain_formula(ctx.extra))

    def formula_set(self, ctx, f) -> isl.Set:
        text = F.set_text(ctx.name, [fr.name for fr in self.frames], f)
        s = self.domain_cache.get(text)
        if s is None:
            s = self.domain_cache[text] = iset(text)
        return s

    # -- the program --------------------------------------------------------------------------------
    def finish(self) -> Program:
        if not self.statements:
            raise self.err(self.fdef.decl, f"function {self.name} has no assignments to compile", AffineError)
        arrays = tuple(self.arrays.values())
        scalars = tuple(sorted(self.scalars.items()))
        try:
            prog = Program(self.name, arrays, tuple(self.statements), (), (), scalars, source=self.src)
        except AffineError as exc:
            raise self.err(self.fdef.decl, str(exc), AffineError) from None
        written = {s.write.array for s in self.statements}
        deps = dependences(prog)
        live: dict[str, str] = {}     # array -> first statement reading its initial contents

        def note(m: isl.Map):
            a = m.get_tuple_name(isl.dim_type.out)
            s = m.get_tuple_name(isl.dim_type.in_)
            if a not in live or int(s[1:]) < int(live[a][1:]):
                live[a] = s
        deps.live_in.foreach_map(note)
        for a in sorted(live, key=lambda a: int(live[a][1:])):
            if a in self.temps:
                st = prog.statement(live[a])
                ref = next(r for r in st.reads if r.array == a)
                raise self.err(self.access_nodes[ref.ref], f"local variable {a!r} is read before it is "
                                                           f"written (in statement {st.name})", AffineError)
        outputs = tuple(a for a in self.param_arrays if a in written)
        inputs = []
        for a in self.param_arrays:
            if a in live:
                inputs.append(a)
            elif a in outputs and not self.covered(a):
                inputs.append(a)
        return prog.replace(inputs=tuple(inputs), outputs=outputs)

    def covered(self, a: str) -> bool:
        """Whether the writes to ``a`` cover its whole box."""
        box = iset(self.arrays[a].box_text())
        img = None
        for s in self.statements:
            if s.write.array == a:
                part = s.domain_set.apply(imap(s.write.relation_text(s)))
                img = part if img is None else img.union(part)
        return img is not None and box.is_subset(img)
