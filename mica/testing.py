"""Reference execution paths for differential tests of the front end.

* :func:`run_c` compiles the user's original C function natively and calls it on copies of numpy inputs:
  the ground truth.
* :func:`run_program` executes an affine :class:`~mica.affine.program.Program` sequentially in its
  original (textual) order, through C generated from the program alone (isl AST of the original
  schedule, statement bodies printed from the expression trees). Comparing the two checks that a front
  end captured the C's meaning, independently of any mesh mapping.
* :func:`assert_matches` compares result dicts with a readable message.

Both runners compile with :func:`mica.emit_c.build.compile_shared` (content-hash cached) and load the
library with cffi in ABI mode.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import cffi
import islpy as isl
import numpy as np

from .affine.c_parse import error, find_function, fold_int, parse_c, signature, typedefs_of, written_names
from .affine.expr import Aff, Bin, Call, Cmp, Const, Neg, Read, Scalar, Select
from .affine.program import Program
from .emit_c.build import compile_shared
from .emit_c.kernels import ast_expr_c, ast_to_c
from .errors import EmitError, InputError

__all__ = ["run_c", "run_program", "assert_matches"]

NP_DTYPE = {"f64": np.float64, "f32": np.float32, "double": np.float64, "float": np.float32}
CTYPE = {"f64": "double", "f32": "float"}


@contextmanager
def _load(path: str, cdef: str):
    """Opens the library at ``path`` for the duration of a ``with`` block and unmaps it (``dlclose``)
    afterwards, so that a long-lived process checking many programs does not accumulate mapped libraries
    (the compiled file stays in the cache; opening it again costs a ``dlopen``). Nothing from the library
    outlives the block: the callers copy their results into numpy arrays they own."""
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    lib = ffi.dlopen(path)
    try:
        yield ffi, lib
    finally:
        ffi.dlclose(lib)


def _array_arg(name: str, value, shape: tuple[int, ...], dtype) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise InputError(f"input {name!r} must be a numpy array, got {type(value).__name__}")
    if tuple(value.shape) != tuple(shape):
        raise InputError(f"input {name!r} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return np.array(value, dtype=dtype, order="C", copy=True)


def _number(name: str, value) -> float:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"scalar {name!r} must be a number, got {type(value).__name__}")
    return value


# -- the original C --------------------------------------------------------------------------------

def run_c(source: str, function: str | None, inputs: dict, params: dict | None = None, *,
          filename: str = "<source>") -> dict[str, np.ndarray]:
    """Calls the C function ``function`` of ``source`` natively; returns every array parameter it writes.

    ``inputs`` gives arrays (copied, never modified; arrays not given start as zeros) and float scalars by
    name; ``params`` the int parameters. ``#include <math.h>`` is prepended; a small exported wrapper
    taking arrays as ``void *`` calls the function (so ``static`` functions work too).
    """
    params = dict(params or {})
    ast = parse_c(source, filename)
    fdef = find_function(ast, function, filename)
    fname = fdef.decl.name
    sig = signature(fdef, typedefs_of(ast))
    decls, call_args, values, out = [], [], [], {}
    arrays = {}
    for p in sig:
        if p.kind == "array":
            if p.elem not in ("double", "float"):
                raise InputError(f"run_c: array parameter {p.name!r} has an unsupported element type")
            shape = _extents(p, params, filename)
            arr = _array_arg(p.name, inputs[p.name], shape, NP_DTYPE[p.elem]) if p.name in inputs \
                else np.zeros(shape, NP_DTYPE[p.elem])
            arrays[p.name] = arr
            decls.append(f"void *{p.name}")
            values.append(arr)
        elif p.kind == "int":
            if p.name in params:
                v = params[p.name]
            elif p.name in inputs:          # an int scalar used only in arithmetic
                v = _number(p.name, inputs[p.name])
            else:
                raise InputError(f"run_c: int parameter {p.name!r} of {fname} needs a value in params")
            if int(v) != v:
                raise InputError(f"run_c: int parameter {p.name!r} must be an integer, got {v!r}")
            decls.append(f"{p.ctype} {p.name}")
            values.append(int(v))
        elif p.kind in ("double", "float"):
            if p.name not in inputs:
                raise InputError(f"run_c: scalar {p.name!r} of {fname} is missing from inputs")
            decls.append(f"{p.kind} {p.name}")
            values.append(_number(p.name, inputs[p.name]))
        else:
            raise InputError(f"run_c: parameter {p.name!r} of {fname} has a type run_c cannot pass")
        call_args.append(p.name)
    entry = f"mica_ref_entry_{fname}"
    proto = f"void {entry}({', '.join(decls) or 'void'})"
    text = f"{_math_prelude(source)}\n{source}\n\n{proto} {{ {fname}({', '.join(call_args)}); }}\n"
    path = compile_shared(text, name=f"ref_{fname}", flags=("-lm",))
    with _load(str(path), proto + ";") as (ffi, lib):
        args = [ffi.from_buffer(v) if isinstance(v, np.ndarray) else v for v in values]
        getattr(lib, entry)(*args)
    written = written_names(fdef)
    for p in sig:
        if p.kind == "array" and p.name in written:
            out[p.name] = arrays[p.name]
    return out


_HEADERS_IN = re.compile(r'^[ \t]*#[ \t]*(line[ \t]+)?\d+[ \t]+"|\bextern\b|__attribute__', re.M)
_MATH_PROTOTYPES = "".join(
    f"{t} {f}{sfx}({', '.join([t] * n)}); "
    for f, n in (("sqrt", 1), ("exp", 1), ("log", 1), ("pow", 2), ("fabs", 1), ("fmax", 2), ("fmin", 2))
    for t, sfx in (("double", ""), ("float", "f")))


def _math_prelude(source: str) -> str:
    """``#include <math.h>``, or -- for text that already went through the preprocessor with system
    headers, where including a header again would clash -- plain prototypes of the math functions."""
    return _MATH_PROTOTYPES if _HEADERS_IN.search(source) else "#include <math.h>"


def _extents(p, params, filename) -> tuple[int, ...]:
    def lookup(node):
        if node.name in params:
            return int(params[node.name])
        raise error(InputError, node, filename, f"run_c: extent of {p.name!r} uses {node.name!r}, not in params")
    shape = []
    for d in p.dims:
        if d is None:
            raise InputError(f"run_c: array parameter {p.name!r} needs an extent in every dimension")
        shape.append(fold_int(d, lookup, filename, f"extent of {p.name!r}"))
    return tuple(shape)


# -- the affine program ----------------------------------------------------------------------------

class _Printer:
    """Prints a Program as one sequential C function over full row-major arrays."""

    def __init__(self, prog: Program):
        self.p = prog
        self.ids = {a.name: f"a{k}" for k, a in enumerate(prog.arrays)}
        self.scalar_ids = {n: k for k, (n, _) in enumerate(prog.scalars)}
        self.scalar_types = dict(prog.scalars)
        self.lines: list[str] = []

    def offset(self, array: str, index: tuple[Aff, ...], env) -> str:
        shape = self.p.array(array).shape
        if not shape:
            return "0"
        out = ""
        for d, (ix, n) in enumerate(zip(index, shape)):
            term = _aff_c(ix, env)
            out = f"({term})" if d == 0 else f"({out}) * {n}LL + ({term})"
        return out

    def expr(self, e, stmt, env, ctype: str) -> str:
        if isinstance(e, Const):
            v = float(e.value)
            if v != v:
                return "NAN"
            if v in (float("inf"), float("-inf")):
                return "INFINITY" if v > 0 else "(-INFINITY)"
            return f"(({ctype}){v.hex()})"
        if isinstance(e, Scalar):
            return f"(({CTYPE[self.scalar_types[e.name]]})scalars[{self.scalar_ids[e.name]}])"
        if isinstance(e, Read):
            acc = stmt.access(e.ref)
            return f"{self.ids[acc.array]}[{self.offset(acc.array, acc.index, env)}]"
        if isinstance(e, Bin):
            return f"({self.expr(e.lhs, stmt, env, ctype)} {e.op} {self.expr(e.rhs, stmt, env, ctype)})"
        if isinstance(e, Neg):
            return f"(-{self.expr(e.arg, stmt, env, ctype)})"
        if isinstance(e, Call):
            fn = e.fn + ("f" if ctype == "float" else "")
            return f"{fn}({', '.join(self.expr(a, stmt, env, ctype) for a in e.args)})"
        if isinstance(e, Cmp):
            return f"({self.expr(e.lhs, stmt, env, ctype)} {e.op} {self.expr(e.rhs, stmt, env, ctype)})"
        if isinstance(e, Select):
            return (f"({self.expr(e.cond, stmt, env, ctype)} ? {self.expr(e.then, stmt, env, ctype)} : "
                    f"{self.expr(e.other, stmt, env, ctype)})")
        raise EmitError(f"run_program: cannot print expression {e!r}")

    def user(self, call: isl.AstExpr, indent: str) -> None:
        name = call.get_op_arg(0).get_id().get_name()
        st = self.p.statement(name)
        args = [ast_expr_c(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg())]
        env = {lp: f"v_{lp}" for lp in st.loops}
        ctype = CTYPE[self.p.array(st.write.array).dtype]
        self.lines.append(indent + "{")
        for lp, a in zip(st.loops, args):
            self.lines.append(f"{indent}  const int64_t v_{lp} = {a};")
        w = st.write
        self.lines.append(f"{indent}  {self.ids[w.array]}[{self.offset(w.array, w.index, env)}] = "
                          f"{self.expr(st.expr, st, env, ctype)};  /* {name} */")
        self.lines.append(indent + "}")

    def node(self, nd: isl.AstNode, indent: str) -> None:
        ast_to_c(nd, self.lines, indent, self.user)

    def source(self) -> str:
        for a in self.p.arrays:
            if a.dtype not in CTYPE:
                raise EmitError(f"run_program: array {a.name} has dtype {a.dtype}; only f32/f64 are supported")
        head = ["/* Generated by mica.testing.run_program: sequential reference. */",
                "#include <stdint.h>", "#include <math.h>",
                "static inline int64_t mica_min(int64_t a, int64_t b) { return a < b ? a : b; }",
                "static inline int64_t mica_max(int64_t a, int64_t b) { return a > b ? a : b; }",
                "static inline int64_t mica_floord(int64_t a, int64_t b) "
                "{ return a >= 0 ? a / b : -((-a + b - 1) / b); }",
                "void mica_program(void **arrays, const double *scalars) {",
                "  (void)scalars;"]
        for k, a in enumerate(self.p.arrays):
            head.append(f"  {CTYPE[a.dtype]} *{self.ids[a.name]} = ({CTYPE[a.dtype]} *)arrays[{k}]; "
                        f"(void){self.ids[a.name]};  /* {a.name} */")
        sched = self.p.schedule_map()
        doms = None
        for s in self.p.statements:
            d = isl.UnionSet.from_set(s.domain_set)
            doms = d if doms is None else doms.union(d)
        sched = sched.intersect_domain(doms)
        self.lines = []
        if not sched.is_empty():
            build = isl.AstBuild.from_context(isl.Set("{ : }"))
            self.node(build.node_from_schedule_map(sched), "  ")
        return "\n".join(head + self.lines + ["}", ""])


def _aff_c(a: Aff, env) -> str:
    parts = [env[n] if c == 1 else f"{c}LL * {env[n]}" for n, c in a.coeffs]
    if a.const or not parts:
        parts.append(f"{a.const}LL")
    return " + ".join(parts)


def program_c(program: Program) -> str:
    """The C source :func:`run_program` compiles (for inspection)."""
    return _Printer(program).source()


def run_program(program: Program, inputs: dict) -> dict[str, np.ndarray]:
    """Executes ``program`` sequentially in its original order; returns its outputs by name.

    ``inputs`` must hold every array of ``program.inputs`` and every scalar of ``program.scalars``; other
    arrays (outputs, temporaries) start filled with NaN so that a read of a value nobody wrote shows up.
    """
    if not isinstance(program, Program):
        raise InputError(f"run_program needs a Program, got {type(program).__name__}")
    src = program_c(program)
    path = compile_shared(src, name=f"prog_{program.name}", flags=("-lm",))
    bufs = {}
    for a in program.arrays:
        dt = NP_DTYPE[a.dtype]
        if a.name in program.inputs:
            if a.name not in inputs:
                raise InputError(f"run_program: input {a.name!r} is missing")
            bufs[a.name] = _array_arg(a.name, inputs[a.name], a.shape, dt)
        else:
            bufs[a.name] = np.full(a.shape, np.nan, dt)
    scal = []
    for n, _ in program.scalars:
        if n not in inputs:
            raise InputError(f"run_program: scalar {n!r} is missing")
        scal.append(float(_number(n, inputs[n])))
    with _load(str(path), "void mica_program(void **arrays, const double *scalars);") as (ffi, lib):
        keep = [ffi.from_buffer(bufs[a.name]) for a in program.arrays]
        ptrs = ffi.new("void *[]", [ffi.cast("void *", b) for b in keep] or [ffi.NULL])
        sc = ffi.new("double[]", scal or [0.0])
        lib.mica_program(ptrs, sc)
    return {n: bufs[n] for n in program.outputs}


# -- comparison ------------------------------------------------------------------------------------

def assert_matches(got: dict, want: dict, rtol: float = 1e-12, atol: float = 0.0) -> None:
    """Raises AssertionError listing every array of ``want`` that ``got`` lacks or gets wrong."""
    problems = []
    if set(got) != set(want):
        problems.append(f"arrays differ: got {sorted(got)}, want {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        g, w = np.asarray(got[name]), np.asarray(want[name])
        if g.shape != w.shape:
            problems.append(f"{name}: shape {g.shape}, want {w.shape}")
            continue
        close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            continue
        bad = np.argwhere(~close)
        first = tuple(int(x) for x in bad[0])
        with np.errstate(all="ignore"):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            rel = diff / np.maximum(np.abs(w.astype(np.float64)), np.finfo(np.float64).tiny)
        problems.append(
            f"{name}: {len(bad)} of {w.size} elements differ (rtol={rtol}, atol={atol}); first at {first}: "
            f"got {g[first].item()!r}, want {w[first].item()!r}; max abs err {np.nanmax(diff):.3g}, "
            f"max rel err {np.nanmax(rel):.3g}")
    if problems:
        raise AssertionError("results differ:\n  " + "\n  ".join(problems))
