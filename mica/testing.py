"""Reference execution paths for differential tests of the front end.

* :func:`run_c` compiles the user's original C function natively and calls it on copies of numpy inputs:
  the ground truth.
* :func:`run_program` executes an affine :class:`~mica.affine.program.Program` sequentially in its
  original (textual) order, through the C :func:`mica.codeprint.reference.program_c` prints from the
  program alone (re-exported here as :func:`program_c`). Comparing the two checks that a front
  end captured the C's meaning, independently of any mesh mapping.
* :func:`assert_matches` compares result dicts with a readable message.

Both runners compile with :func:`mica.emit_c.build.compile_shared` (content-hash cached) and load the
library with cffi in ABI mode.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

import cffi
import numpy as np

from .affine.c_parse import error, find_function, fold_int, parse_c, signature, typedefs_of, written_names
from .affine.c_preprocess import prepare, relocated
from .affine.program import Program
from .codeprint.reference import program_c
from .emit_c.build import compile_shared
from .errors import InputError, MicaError
from .targets import NP_DTYPES

__all__ = ["run_c", "run_program", "program_c", "assert_matches"]

#: numpy's dtype of each MICA dtype (:data:`mica.targets.NP_DTYPES`: bf16 is ``ml_dtypes.bfloat16``) and of
#: C's float types.
NP_DTYPE = {**NP_DTYPES, "double": np.float64, "float": np.float32}


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
          filename: str = "<source>", defines: dict | None = None, include_dirs=(),
          preprocess: bool | None = None) -> dict[str, np.ndarray]:
    """Calls the C function ``function`` of ``source`` natively; returns every array parameter it writes.

    ``inputs`` gives arrays (copied, never modified; arrays not given start as zeros) and float scalars by
    name; ``params`` the int parameters. ``#include <math.h>`` is prepended; a small exported wrapper
    taking arrays as ``void *`` calls the function (so ``static`` functions work too). ``function=None``
    means the one function the source defines. ``defines``, ``include_dirs`` and ``preprocess`` are those of
    :func:`mica.affine.from_c.from_c`: the preprocessed text is what is compiled.
    """
    params = dict(params or {})
    pre = prepare(source, filename, defines=defines, include_dirs=include_dirs, preprocess=preprocess)
    if isinstance(source, str):
        source = pre.text
    try:
        ast = parse_c(source, filename)
        fdef = find_function(ast, function, filename, pre.in_main_file)
    except MicaError as exc:
        raise relocated(exc, pre) from None
    fname = fdef.decl.name
    sig = signature(fdef, typedefs_of(ast))
    decls, call_args, values, out = [], [], [], {}
    arrays = {}
    for p in sig:
        if p.kind == "array":
            if p.dtype is None:
                raise InputError(f"run_c: array parameter {p.name!r} has an unsupported element type "
                                 f"{p.ctype!r}")
            shape = _extents(p, params, filename)
            arr = _array_arg(p.name, inputs[p.name], shape, NP_DTYPE[p.dtype]) if p.name in inputs \
                else np.zeros(shape, NP_DTYPE[p.dtype])
            arrays[p.name] = arr
            decls.append(f"void *mica_arg_{p.name}")
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
            decls.append(f"{p.ctype} mica_arg_{p.name}")
            values.append(int(v))
        elif p.kind in ("double", "float"):
            if p.name not in inputs:
                raise InputError(f"run_c: scalar {p.name!r} of {fname} is missing from inputs")
            decls.append(f"{p.kind} mica_arg_{p.name}")
            values.append(_number(p.name, inputs[p.name]))
        else:
            raise InputError(f"run_c: parameter {p.name!r} of {fname} has a type run_c cannot pass")
        call_args.append(f"mica_arg_{p.name}")     # prefixed: a parameter named as the function would hide it
    entry = f"mica_ref_entry_{fname}"
    proto = f"void {entry}({', '.join(decls) or 'void'})"
    text = f"{_math_prelude(source)}\n{source}\n\n{proto} {{ {fname}({', '.join(call_args)}); }}\n"
    # -Bsymbolic: the wrapper calls the user's function, not a same-named one already in the process (a C
    # function called ``step`` or ``index`` would otherwise resolve to glibc's and crash).
    path = compile_shared(text, name=f"ref_{fname}", flags=("-lm", "-Wl,-Bsymbolic"))
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
    return _MATH_PROTOTYPES if _HEADERS_IN.search(source) else "#include <math.h>\n#include <stdint.h>"


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

def run_program(program: Program, inputs: dict) -> dict[str, np.ndarray]:
    """Executes ``program`` sequentially in its original order; returns its outputs by name.

    ``inputs`` must hold every array of ``program.inputs`` and every scalar of ``program.scalars``; other
    arrays (outputs, temporaries) start filled with NaN (integer arrays with their dtype's minimum) so that a
    read of a value nobody wrote shows up.
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
            bufs[a.name] = np.full(a.shape, np.iinfo(dt).min if np.issubdtype(dt, np.integer) else np.nan, dt)
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
