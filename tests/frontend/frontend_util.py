"""Shared helpers for the C front-end tests: the kernel manifest and seeded input generation.

(A plain module rather than a conftest.py, so that importing it never clashes with another conftest.)"""

import json
from pathlib import Path

import numpy as np

from mica.affine.c_parse import find_function, fold_int, parse_c, signature, typedefs_of

KERNEL_DIR = Path(__file__).parent / "kernels"
MANIFEST = json.loads((KERNEL_DIR / "manifest.json").read_text())


def kernel_source(name: str) -> str:
    return (KERNEL_DIR / f"{name}.c").read_text()


def kernel_function(name: str) -> str:
    return "kernel_" + name.replace("-", "_")


#: PolyBench/C 4.2.1's SMALL_DATASET sizes of every kernel (each kernel's header; the dataset its authors size to
#: about 128 KB of data, more than one core of a wafer holds). The manifest's sizes are smaller, for emulation in CI.
POLYBENCH_SMALL = {
    "correlation": {"m": 80, "n": 100}, "covariance": {"m": 80, "n": 100},
    "gemm": {"ni": 60, "nj": 70, "nk": 80}, "gemver": {"n": 120}, "gesummv": {"n": 90},
    "symm": {"m": 60, "n": 80}, "syr2k": {"m": 60, "n": 80}, "syrk": {"m": 60, "n": 80},
    "trmm": {"m": 60, "n": 80}, "2mm": {"ni": 40, "nj": 50, "nk": 70, "nl": 80},
    "3mm": {"ni": 40, "nj": 50, "nk": 60, "nl": 70, "nm": 80}, "atax": {"m": 116, "n": 124},
    "bicg": {"m": 116, "n": 124}, "doitgen": {"nq": 20, "nr": 25, "np": 30}, "mvt": {"n": 120},
    "cholesky": {"n": 120}, "durbin": {"n": 120}, "gramschmidt": {"m": 60, "n": 80}, "lu": {"n": 120},
    "ludcmp": {"n": 120}, "trisolv": {"n": 120}, "deriche": {"w": 192, "h": 128},
    "floyd-warshall": {"n": 180}, "nussinov": {"n": 180}, "adi": {"tsteps": 40, "n": 60},
    "fdtd-2d": {"tmax": 40, "nx": 60, "ny": 80}, "heat-3d": {"tsteps": 40, "n": 20},
    "jacobi-1d": {"tsteps": 40, "n": 120}, "jacobi-2d": {"tsteps": 40, "n": 90},
    "seidel-2d": {"tsteps": 40, "n": 120},
}


def sized_kernel(name: str, sizes: dict[str, int]) -> tuple[str, dict]:
    """Kernel ``name``'s source and parameters with ``sizes`` (parameter -> value) instead of the manifest's:
    every array extent written ``<manifest value> + 0`` for a sized parameter becomes its new value (a time-loop
    count that shares its manifest value with an extent is not an extent)."""
    src, params = kernel_source(name), dict(MANIFEST[name]["params"])
    extents = {p: v for p, v in params.items() if p in sizes}
    for p, v in sizes.items():
        shared = any(extents[q] == extents[p] for q in extents if q != p)
        if not (shared and p in ("tsteps", "tmax")):
            src = src.replace(f"{extents[p]} + 0", str(v))
        params[p] = v
    return src, params


INT_NP = {"i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8}


def _array(kind, shape, dtype, rng):
    integer = np.issubdtype(dtype, np.integer)
    if kind is None:                   # the default: uniform [0, 1), integers in [-100, 100) (or the type's range)
        if not integer:
            return rng.uniform(0.0, 1.0, shape).astype(dtype)
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 99) + 1, shape).astype(dtype)
    if isinstance(kind, list):
        lo, hi = kind
        if integer:
            return rng.integers(lo, hi, shape).astype(dtype)
        return rng.uniform(lo, hi, shape).astype(dtype)
    if kind == "nonzero":              # integer divisors: +-1 .. +-9
        return (rng.integers(1, 10, shape) * rng.choice([-1, 1], shape)).astype(dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if kind == "diag_dominant":
        a = rng.uniform(0.0, 1.0, shape)
        return (a + shape[0] * np.eye(shape[0], shape[1])).astype(dtype)
    if kind == "spd":
        m = rng.uniform(0.0, 1.0, shape)
        return (m @ m.T + shape[0] * np.eye(shape[0])).astype(dtype)
    if kind == "constant_column":      # one column with zero deviation (exercises the eps guard)
        a = rng.uniform(0.0, 1.0, shape)
        a[:, 3] = 0.5
        return a.astype(dtype)
    if kind == "bases":                # nucleotides coded 0..3
        return rng.integers(0, 4, shape).astype(dtype)
    raise ValueError(kind)


def make_inputs(source: str, function: str | None, params: dict, spec: dict | None = None, seed: int = 0):
    """Inputs for every array and scalar parameter of ``function``: uniform [0, 1) arrays (integer arrays:
    integers in [-100, 100) within their type's range) and scalars in [0.5, 1.5) unless ``spec``
    (``{"inputs": {name: kind}, "scalars": {name: value}}``) says otherwise."""
    spec = spec or {}
    rng = np.random.default_rng(seed)
    ast = parse_c(source, "<kernel>")
    fdef = find_function(ast, function, "<kernel>")
    out = {}
    for p in signature(fdef, typedefs_of(ast)):
        if p.kind == "array":
            shape = tuple(fold_int(d, lambda n: params[n.name], "<kernel>", "extent") for d in p.dims)
            dtype = INT_NP.get(p.dtype) or (np.float64 if p.elem == "double" else np.float32)
            out[p.name] = _array(spec.get("inputs", {}).get(p.name), shape, dtype, rng)
        elif p.kind in ("double", "float"):
            out[p.name] = float(spec.get("scalars", {}).get(p.name, rng.uniform(0.5, 1.5)))
    return out
