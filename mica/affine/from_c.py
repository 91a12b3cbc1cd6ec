"""The C front end: a C function (after preprocessing) -> an affine :class:`~mica.affine.program.Program`. ::

    from mica.affine.from_c import from_c
    prog = from_c(open("gemm.c").read(), "kernel_gemm", params={"ni": 20, "nj": 25, "nk": 30},
                  filename="gemm.c")

The accepted subset (everything else raises :class:`~mica.errors.NotAffineError` or
:class:`~mica.errors.AffineError` whose message starts with ``file:line:column:`` and whose
``line``/``column`` attributes say where):

* parameters: arrays with constant extents (constant expressions, or ``int`` parameters given in
  ``params``) of ``double``/``float`` (``f64``/``f32``) or of an integer type: ``int``/``int32_t`` (``i32``),
  ``short``/``int16_t`` (``i16``), ``char``/``signed char``/``int8_t`` (``i8``; plain ``char`` is signed, as
  on the hosts MICA runs on), ``unsigned char``/``uint8_t`` (``u8``) -- ``long``, ``unsigned int``,
  ``long double``, 64-bit and other unsigned types are refused; ``int`` size parameters (bound to numbers
  by ``params``; every one used in a bound, subscript or condition must have a value), ``double``/``float``
  scalars (they become :attr:`Program.scalars`; an ``int`` parameter without a value used in arithmetic
  becomes an ``f64`` scalar, converted to ``int`` where it is used);
* locals: scalars and arrays of those types (temporaries: 0-d or n-d arrays that are neither inputs nor
  outputs); an ``int`` local is a loop iterator if some for loop initialises it, a constant if it is
  initialised with a constant and never assigned, and otherwise a data temporary;
* ``for`` loops with unit stride (``i++``, ``++i``, ``i += 1``, ``i = i + 1``, and the decreasing forms),
  affine bounds (ternary ``min``/``max`` included) and a condition that bounds the iterator monotonically;
  ``if``/``else`` on affine conditions (``&&``, ``||``, ``!``, comparisons); any nesting;
* statements ``x = e``, ``x op= e`` (``+ - * /``, and ``%`` on integers), ``x++``/``x--`` on array
  elements and local scalars, with ``e`` built from ``+ - * / %``, unary minus, casts between numeric types,
  literals, ternaries (data-dependent conditions become :class:`~mica.affine.expr.Select`; affine ones
  split the statement into one statement per case), and ``sqrt exp log pow fabs fmax fmin`` (and their
  ``f`` versions).

The text may contain comments, ``#`` lines (blanked: reported lines are those of the text given), the
declarations system headers bring (their GNU extensions are blanked) and other functions; only the
function compiled is translated. The ``<stdint.h>`` type names are known without the header.
``a = b = e`` is split into ``b = e; a = b``.

Integer division and modulo by constants (C truncation) are accepted in bounds and conditions, not in
subscripts. Numeric casts between floating types are ignored (``(float)x`` does not round); a cast from an
integer to a floating type, from a floating type to an integer one, or to a narrower integer type is a
:class:`~mica.affine.expr.Conv`. Integer expressions keep C's semantics (:mod:`mica.affine.expr`): integer
literals next to integer operands stay integers, ``/`` truncates, ``%`` takes the dividend's sign.

The original schedule is the 2d+1 textual-order vector; a decreasing loop contributes ``-i``.
``inputs`` are the array parameters whose initial contents matter: those read before being written
(isl's exact dataflow) plus written arrays that are not entirely overwritten (their untouched elements
are part of the result); ``outputs`` are the array parameters the function writes.

Modules: :mod:`~mica.affine.c_parse` (pycparser, locations, types, literals),
:mod:`~mica.affine.c_affine` (affine forms and formulas), :mod:`~mica.affine.c_exprs` (expression
translation), this module (declarations, statements, loops, the Program).
"""

from __future__ import annotations

import re

import islpy as isl
from pycparser import c_ast

from ..errors import AffineError, MicaError, NotAffineError
from . import c_affine as F
from .c_affine import TRUE, is_isl_keyword
from .c_exprs import MAX_FORMULA, ExprMixin, Frame, Split, StmtCtx, Var
from .c_parse import (elem_dtype, error, find_function, fold_int, int_dtype, location, lvalue_base, parse_c,
                      signature, strip_directives, type_words, typedefs_of, written_names)
from .c_preprocess import prepare, relocated
from .expr import INT_DTYPES, Aff, Bin, Const, Read
from .isl_names import imap, int_bounds, iset, isl_budget
from .program import Access, Array, Program, Statement
from .runtime import expand, normalise_ranges, range_context

SUPPORTED_ELEMS = ("double, float, _Float16, __bf16, int/int32_t, short/int16_t, char/signed char/int8_t, "
                   "unsigned char/uint8_t")

__all__ = ["from_c"]

MAX_SPLITS = 64     # statements one assignment may become through affine ternaries


def from_c(source: str, function: str | None = None, *, params: dict[str, int] | None = None,
           filename: str = "<source>", defines: dict | None = None, include_dirs=(),
           preprocess: bool | None = None, runtime: dict | None = None) -> Program:
    """The affine :class:`Program` of the C function ``function`` in ``source`` (with None, the one function
    the source defines; several are an error listing them).

    ``params`` binds ``int`` size parameters to numbers; ``runtime`` leaves ``int`` parameters for every run
    to give, each with its range (``{"pos": (0, 64)}`` or ``range(0, 64)``: ``0 <= pos < 64``), usable in
    subscripts, bounds and conditions (:mod:`mica.affine.runtime`). Source with ``#define``, ``#include`` or ``#if``
    goes through the system C preprocessor first (:mod:`mica.affine.c_preprocess`), with ``defines``
    (``{"N": 200}``, as ``-DN=200``) and ``include_dirs`` (as ``-I``; the directory of ``filename`` is
    searched first); ``preprocess=False`` blanks directives instead, ``True`` always preprocesses. Raises
    :class:`NotAffineError` for constructs outside the affine subset and :class:`AffineError` for malformed
    programs (bad parameters, out-of-bounds accesses, C syntax errors), each located ``file:line:column:``
    in the file the construct was written in (a header's name and line for code from an ``#include``).
    """
    pre = prepare(source, filename, defines=defines, include_dirs=include_dirs, preprocess=preprocess)
    try:
        with isl_budget(f"front end ({filename})"):
            text = pre.text if isinstance(source, str) else source      # parse_c refuses a non-str
            return _Builder(text, function, params, filename, pre, runtime).build()
    except MicaError as exc:
        raise relocated(exc, pre) from None
    except RecursionError:
        raise AffineError(f"{filename}:1:1: C source is nested too deeply", location=(filename, 1, 1)) from None
    except Exception as exc:   # a bug of the front end: still never a raw exception
        raise AffineError(f"{filename}:1:1: internal error of the C front end: {type(exc).__name__}: {exc}",
                          location=(filename, 1, 1)) from exc


# -- the builder ---------------------------------------------------------------------------------------

class _Builder(ExprMixin):
    def __init__(self, source, function, params, filename, pre=None, runtime=None):
        self.src = source
        self.fn = filename
        try:
            self.runtime = normalise_ranges(runtime)
        except AffineError as exc:
            raise AffineError(f"{filename}:1:1: {exc}", location=(filename, 1, 1)) from None
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
        self.fdef = find_function(self.ast, function, filename, pre.in_main_file if pre is not None else None)
        self.name = self.fdef.decl.name
        _refuse_asm(source, self.fdef, filename)
        self.scopes: list[dict[str, Var]] = [{}]
        self.arrays: dict[str, Array] = {}
        self.param_arrays: list[str] = []
        self.temps: set[str] = set()
        self.scalars: dict[str, str] = {}
        self.used: set[str] = set()          # program-level names taken (arrays, scalars, temps)
        self.loop_names: set[str] = set()    # every loop name used so far
        self.frames: list[Frame] = []
        self.conds: list = []
        self.counters: list[int] = [0]
        self.statements: list[Statement] = []
        self.access_nodes: dict[str, c_ast.Node] = {}
        self.domain_cache: dict[str, isl.Set] = {}
        self.written = written_names(self.fdef)
        self.iterators = loop_iterators(self.fdef)

    # -- errors / lookup ----------------------------------------------------------------------------
    def err(self, node, msg, cls=NotAffineError) -> MicaError:
        return error(cls, node, self.fn, msg)

    def lookup(self, node: c_ast.ID) -> Var:
        for sc in reversed(self.scopes):
            if node.name in sc:
                return sc[node.name]
        raise self.err(node, f"undeclared identifier {node.name!r} (only parameters and locals of "
                             f"{self.name} may be used; global variables are not supported)", AffineError)

    def declare(self, var: Var) -> None:
        self.scopes[-1][var.cname] = var

    def fresh(self, base: str, avoid: set[str]) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", base)      # e.g. '$', which pycparser accepts
        if base.startswith("__") or not base[:1].isalpha() and base[:1] != "_":
            base = "v" + base                           # "__" is reserved by Program for MICA's own names
        name, k = base, 0
        while name in avoid or is_isl_keyword(name) or re.fullmatch(r"S\d+", name):
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
        for k in self.runtime:
            if k not in iparams:
                raise self.err(self.fdef.decl, f"runtime names {k!r}, which is not an int parameter of "
                                               f"{self.name} (int parameters: {sorted(iparams)})", AffineError)
            if k in self.params:
                raise self.err(self.fdef.decl, f"{k!r} is given both a value (params) and a runtime range "
                                               f"(runtime); give one", AffineError)
            if is_isl_keyword(k) or k.startswith("__"):
                raise self.err(self.fdef.decl, f"runtime parameter name {k!r} is reserved; rename it",
                               AffineError)
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
        if p.kind in ("array", "double", "float") and p.name.startswith("__"):
            raise self.err(node, f"parameter name {p.name!r} is reserved (leading '__'); rename it", AffineError)
        if p.kind == "pointer":
            raise self.err(node, f"pointer parameter {p.name!r} is not supported: declare it as an array "
                                 f"with constant extents, e.g. double {p.name}[20][30]")
        if p.kind == "other":
            raise self.err(node, f"parameter {p.name!r} has an unsupported type (supported: arrays of "
                                 f"{SUPPORTED_ELEMS}; double/float scalars, int sizes)")
        if p.kind == "array":
            if p.dtype is None:
                raise self.err(node, f"array parameter {p.name!r} has element type {p.ctype or '?'!r}, which MICA "
                                     f"does not support ({SUPPORTED_ELEMS})")
            shape = self.extents(p.name, p.dims, node)
            if is_isl_keyword(p.name):
                raise self.err(node, f"array name {p.name!r} is reserved by isl; rename it", AffineError)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p.name) or p.name.startswith("__"):
                raise self.err(node, f"array name {p.name!r} is not a plain identifier MICA can use "
                                     f"(letters, digits, '_', not starting with '__'); rename it", AffineError)
            if re.fullmatch(r"S\d+", p.name):
                raise self.err(node, f"array name {p.name!r} clashes with the statement names S0, S1, ...; "
                                     f"rename it", AffineError)
            self.arrays[p.name] = Array(p.name, shape, p.dtype)
            self.param_arrays.append(p.name)
            self.used.add(p.name)
            self.declare(Var("array", p.name, p.name, node, p.elem, shape))
        elif p.kind == "int":
            self.used.add(p.name)
            if p.name in self.runtime:
                self.scalars[p.name] = "f64"        # passed to the kernels with the other scalars
                self.declare(Var("iparam", p.name, p.name, node, "int", state=("runtime",)))
            else:
                self.declare(Var("iparam", p.name, p.name, node, "int", value=self.params.get(p.name)))
        else:
            self.used.add(p.name)
            self.declare(Var("fscalar", p.name, p.name, node, p.kind, dtype=elem_dtype(p.kind, [p.ctype])))

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
            if v.state == ("runtime",):
                raise self.err(node, f"runtime parameter {v.cname!r} is used where a compile-time constant is "
                                     f"needed (an array extent or a loop step); give it a value with params "
                                     f"instead", AffineError)
            if v.value is None:
                raise self.missing(node, v)
            return v.value
        if v.kind == "ilocal" and v.state[0] == "const":
            return v.state[1]
        raise self.err(node, f"{node.name!r} is not an integer constant here")

    def missing(self, node, v: Var) -> MicaError:
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
            kind, words = type_words(t, self.typedefs)
            if kind in ("double", "float") or (kind == "int" and self.int_temp(n, words)):
                dtype = elem_dtype(kind, words)
                name = self.fresh(n.name, self.used | self.loop_names)
                self.used.add(name)
                self.temps.add(name)
                self.arrays[name] = Array(name, (), dtype)
                var = Var("temp", n.name, name, n, kind)
                if n.init is not None:
                    if isinstance(n.init, c_ast.InitList):
                        raise self.err(n.init, f"brace initialiser for scalar {n.name!r} is not supported")
                    self.declare(var)   # C: the name is in scope in its own initialiser
                    self.emit(n, n, var, (), "=", n.init)
                else:
                    self.declare(var)
                return
            if kind == "int":
                var = Var("ilocal", n.name, n.name, n, "int")
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
            kind, words = type_words(t, self.typedefs)
            dtype = elem_dtype(kind, words)
            if dtype is None:
                raise self.err(n, f"local array {n.name!r} has element type "
                                  f"{' '.join(words or []) or '?'!r}, which MICA does not support ({SUPPORTED_ELEMS})")
            if n.init is not None:
                raise self.err(n.init, f"initialiser of local array {n.name!r} is not supported")
            shape = self.extents(n.name, dims, n)
            name = self.fresh(n.name, self.used | self.loop_names)
            self.used.add(name)
            self.temps.add(name)
            self.arrays[name] = Array(name, shape, dtype)
            self.declare(Var("temp", n.name, name, n, kind, shape))
            return
        raise self.err(n, f"declaration of {n.name!r} has an unsupported type")

    def int_temp(self, n: c_ast.Decl, words) -> bool:
        """Whether int local ``n`` is a data temporary (a 0-d integer array) rather than a loop iterator or a
        constant: it is no for loop's iterator, and it is assigned after its declaration or initialised
        with something other than an integer constant expression. Refuses integer types MICA has no dtype
        for."""
        if n.name in self.iterators:
            return False
        if n.name not in self.written and (n.init is None or self.data_in(n.init) is None):
            return False
        if int_dtype(words) is None:
            raise self.err(n, f"local {n.name!r} of type {' '.join(words or [])!r} holds data, which MICA does "
                              f"not support for that type ({SUPPORTED_ELEMS})")
        return True

    def target(self, node, lv) -> Var:
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
        if n.op not in ("=", "+=", "-=", "*=", "/=", "%="):
            raise self.err(n, f"assignment operator {n.op!r} is not supported (=, +=, -=, *=, /=, %= are)")
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

    def index(self, node, var: Var, subs) -> tuple[Aff, ...]:
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

    def emit(self, node, lv, var: Var, subs, op: str, rhs) -> None:
        pending = [()]
        splits = 0
        while pending:
            extra = pending.pop(0)
            sname = f"S{len(self.statements)}"
            ctx = StmtCtx(sname, extra)
            try:
                widx = self.index(lv, var, subs)
                if op == "=":
                    value = self.value(rhs, ctx)
                    expr = value.as_expr(var.ctype == "int")
                else:
                    ref = ctx.ref()
                    ctx.reads.append(Access(ref, var.name, widx))
                    ctx.nodes[ref] = lv
                    value = self.value(rhs, ctx)
                    if op == "%=" and (var.ctype != "int" or value.ctype != "int"):
                        raise self.err(node, "%= on floating-point values is not supported")
                    expr = Bin(op[0], Read(ref), value.as_expr(var.ctype == "int" and value.ctype == "int"))
            except Split as sp:
                pending[0:0] = [extra + (sp.f,), extra + (F.f_neg(sp.f),)]
                splits += 1
                if splits > MAX_SPLITS:
                    raise self.err(node, f"too many cases of affine conditions in one assignment "
                                         f"(more than {MAX_SPLITS})") from None
                continue
            order = []
            for fr in self.frames:
                order += [fr.pos, fr.name if fr.step > 0 else f"-{fr.name}"]
            loops = tuple(fr.name for fr in self.frames)
            dom = self.domain_text(sname, extra)
            write = Access(f"{sname}_w", var.name, widx)
            line = location(node, self.fn)[1]
            reads = list(ctx.reads)
            if self.runtime and not any(n in self.runtime for ix in widx for n in ix.names):
                reads = self.gathers(node, sname, loops, dom, order, reads, line)
            order.append(self.counters[-1])
            self.counters[-1] += 1
            guard = ""
            try:
                if self.runtime:        # runtime parameters in bounds or subscripts: a guard (and loops)
                    loops, dom, guard, accs, order = expand(sname, loops, dom, [write, *reads], tuple(order),
                                                            self.runtime, self.loop_names | self.used)
                    write, reads = accs[0], accs[1:]
                    for a, b in zip((f"{sname}_w", *(r.ref for r in ctx.reads)), (write, *reads)):
                        if a != b.ref:
                            raise AffineError("internal error: access order changed")
                st = Statement(sname, loops, dom, write, expr, tuple(reads), tuple(order), line=line,
                               guard=guard)
                st.domain_set
                st.guard_set
            except AffineError as exc:
                raise self.err(node, f"cannot build statement {sname}: {exc}", AffineError) from None
            ctx.nodes[write.ref] = lv
            self.check_bounds(st, ctx.nodes)
            self.access_nodes.update(ctx.nodes)
            self.statements.append(st)

    def gathers(self, node, sname: str, loops: tuple, dom: str, order: list, reads: list[Access],
                line: int) -> list[Access]:
        """``reads`` with every read whose subscripts name a runtime parameter (``T[pos][e]``) served by a
        gather into a fresh temporary, indexed by the enclosing loops the subscripts use (``T_pos[e]``).
        The gather is two statements emitted before this one, in the same loops: ``T_pos[e] = 0`` and
        ``T_pos[e] += T[pos_at][e]`` over every row ``pos_at`` the parameter may name, guarded to the one it
        names (:mod:`mica.affine.runtime`): a sum with one term at every value, so the row's owner provides
        it and the statement itself keeps its loops (mapped like any other, not over the table's rows).
        The temporary holds the row exactly (``x + 0 = x``; a negative zero reads back as zero)."""
        out = []
        for a in reads:
            params = sorted({n for ix in a.index for n in ix.names if n in self.runtime})
            if not params:
                out.append(a)
                continue
            used = [lp for lp in loops if any(lp in ix.names for ix in a.index)]
            # the loops' bounds over the declared ranges (a bound naming a parameter is bounded by its range)
            box = iset(f"[{', '.join(self.runtime)}] -> {dom}").intersect_params(
                range_context(self.runtime)).project_out(isl.dim_type.param, 0, len(self.runtime))
            bounds = [int_bounds(box, lp) or (0, 0) for lp in used]
            temp = self.fresh(f"{a.array}_{'_'.join(params)}", self.used | set(self.arrays))
            self.used.add(temp)
            self.temps.add(temp)
            src = self.arrays[a.array]
            self.arrays[temp] = Array(temp, tuple(hi - lo + 1 for lo, hi in bounds), src.dtype)
            tidx = tuple(Aff.var(lp) + (-lo) for lp, (lo, _) in zip(used, bounds))
            zero = Const(0) if src.dtype in INT_DTYPES else Const(0.0)
            for k in range(2):
                gname = f"S{len(self.statements) + 1}"    # S{len} is the statement being built
                gdom = dom.replace(f"{sname}[", f"{gname}[", 1)
                w = Access(f"{gname}_w", temp, tidx)
                if k == 0:
                    accs, expr = [w], zero
                else:
                    accs = [w, Access(f"{gname}_r0", temp, tidx), Access(f"{gname}_r1", a.array, a.index)]
                    expr = Bin("+", Read(f"{gname}_r0"), Read(f"{gname}_r1"))
                gorder = (*order, self.counters[-1])
                self.counters[-1] += 1
                try:
                    g_loops, g_dom, g_guard, accs, g_order = expand(gname, loops, gdom, accs, gorder, self.runtime,
                                                                    self.loop_names | self.used)
                    st = Statement(gname, g_loops, g_dom, accs[0], expr, tuple(accs[1:]), tuple(g_order),
                                   line=line, guard=g_guard)
                    st.domain_set
                except AffineError as exc:
                    raise self.err(node, f"cannot build the gather of {a.array} for statement {sname}: {exc}",
                                   AffineError) from None
                nodes = {r.ref: self.access_nodes.get(a.ref, node) for r in accs}
                self.check_bounds(st, {**nodes, accs[-1].ref: node})
                self.statements.append(st)
            out.append(Access(a.ref, temp, tidx))
        return out

    def domain_formula(self, extra=()):
        f = F.f_and(*self.conds, *extra)
        if F.size(f) > MAX_FORMULA:
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
    def loop_var(self, node) -> tuple[Var, c_ast.Node | None, bool]:
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
            return Var("ilocal", d.name, d.name, d, "int"), d.init, True
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

    def step_of(self, node, var: Var) -> int:
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
        frame = Frame(name, var, step, self.counters[-1])
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

    # -- the program --------------------------------------------------------------------------------
    def finish(self) -> Program:
        if not self.statements:
            raise self.err(self.fdef.decl, f"function {self.name} has no assignments to compile", AffineError)
        arrays = tuple(self.arrays.values())
        scalars = tuple(sorted(self.scalars.items()))
        try:
            runtime = tuple((n, lo, hi) for n, (lo, hi) in self.runtime.items())
            prog = Program(self.name, arrays, tuple(self.statements), (), (), scalars, source=self.src,
                           runtime=runtime)
        except AffineError as exc:
            raise self.err(self.fdef.decl, str(exc), AffineError) from None
        written = {s.write.array for s in self.statements}
        live: dict[str, str] = {}     # array -> first statement reading its initial contents

        def note(m: isl.Map):
            a = m.get_tuple_name(isl.dim_type.out)
            s = m.get_tuple_name(isl.dim_type.in_)
            if a not in live or int(s[1:]) < int(live[a][1:]):
                live[a] = s
        live_in(prog).foreach_map(note)
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
        """Whether the writes to ``a`` cover its whole box (at every value of the runtime parameters: the
        writes that run at each value, :meth:`Statement.instances`)."""
        box = iset(self.arrays[a].box_text())
        img = None
        for s in self.statements:
            if s.write.array == a:
                part = s.instances().apply(imap(s.write.relation_text(s)))
                img = part if img is None else img.union(part)
        if img is None:
            return False
        if self.runtime:
            ctx = range_context(self.runtime)
            box = box.align_params(ctx.get_space()).intersect_params(ctx)
        return box.is_subset(img)


def live_in(prog: Program) -> isl.UnionMap:
    """``{ S[loops] -> A[a] }``: the reads of ``prog`` whose value comes from before the program (exact).

    A read of element ``a`` by instance ``x`` is live-in unless some write of ``a`` is scheduled before
    ``x``: ``R \\ dom((R . W^-1) & (sched(x) >> sched(y)))``, one access at a time. Guarded statements
    take part with the instances that run (parametric in the runtime parameters, exact at every value);
    the result is the union over the values (a read live-in at some value is live-in). This is what
    ``mica.affine.deps.dependences(prog).live_in`` gives, without isl's compute_flow, which (islpy 2026.2)
    fails on some domains with integer divisions ("affine expression involves some of the domain
    dimensions"), e.g. ``{ S[j, k] : 0 <= j <= k <= 9 and j mod 3 = 0 }`` under ``[-j, -k]`` reading ``A[j]``
    and writing ``A[0]``.
    """
    sched = prog.schedule_map()
    when = {s.name: sched.intersect_domain(isl.UnionSet.from_set(s.instances())) for s in prog.statements}
    writers: dict[str, tuple[isl.UnionMap, isl.UnionMap]] = {}
    for t in prog.statements:
        w = isl.UnionMap.from_map(t.access_map(t.write, guarded=True))
        if t.write.array in writers:
            acc, at = writers[t.write.array]
            w, at = acc.union(w), at.union(when[t.name])
        else:
            at = when[t.name]
        writers[t.write.array] = (w, at)
    out = isl.UnionMap.empty(sched.get_space())
    for s in prog.statements:
        for a in s.reads:
            r = isl.UnionMap.from_map(s.access_map(a, guarded=True))
            if a.array in writers:
                w, at = writers[a.array]
                earlier = r.apply_range(w.reverse()).intersect(when[s.name].lex_gt_union_map(at))
                r = r.subtract_domain(earlier.domain())
            out = out.union(r)
    return out.intersect_params(prog.runtime_context()).project_out_all_params()


def _refuse_asm(source: str, fdef, filename: str) -> None:
    """Inline assembly in the compiled function is refused (the parser only ever sees it blanked, as the
    GNU extensions of system headers are)."""
    body = fdef.body
    if body is None or body.coord is None:
        return
    text = strip_directives(source, filename)          # comments blanked; same offsets as ``source``
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[:body.coord.line - 1]) + body.coord.column - 1
    depth, end = 0, len(text)
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                end = k + 1
                break
    m = re.search(r"\b(__asm__|__asm|asm)\b", text[start:end])
    if m:
        pos = start + m.start()
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise NotAffineError(f"{filename}:{line}:{col}: inline assembly ({m.group(1)}) is not supported",
                             location=(filename, line, col))


def loop_iterators(fdef: c_ast.FuncDef) -> set[str]:
    """Names a for loop of ``fdef`` initialises or declares (its iterators), syntactically."""
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_For(self, n):
            init = n.init
            if isinstance(init, c_ast.DeclList):
                out.update(d.name for d in init.decls)
            elif isinstance(init, c_ast.Assignment):
                b = lvalue_base(init.lvalue)
                if b is not None:
                    out.add(b.name)
            elif isinstance(init, c_ast.ExprList):
                for e in init.exprs:
                    if isinstance(e, c_ast.Assignment) and lvalue_base(e.lvalue) is not None:
                        out.add(lvalue_base(e.lvalue).name)
            self.generic_visit(n)

    V().visit(fdef.body)
    return out
