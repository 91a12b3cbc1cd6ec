"""The host side: ``run.py`` (SdkRuntime: load, run, memcpy_h2d of every input in the per-PE layout its
RegionTensor box defines, launch, memcpy_d2h, comparison with a sequential reference) and ``commands.sh``
(the cslc and cs_python command lines).

The reference in ``run.py`` is the original program executed in its textual order in plain Python over
numpy arrays (:func:`mica.codeprint.program_py`), so the script needs nothing but numpy and the SDK.

A plan that cuts the program into pieces streamed from slab to slab (:mod:`mica.affine.pieces`) holds
piece ``k`` of a cut array ``A`` in the MeshIR array ``A_s<k>``: ``run.py`` loads it from (and stores it
into) the slice ``bounds[k]`` of ``A`` along the cut dimension, a numpy view, so the host keeps the
program's own arrays (:func:`piece_sources`).

Public API: :func:`render_run_py`, :func:`render_commands`, :func:`piece_sources`.
"""

from __future__ import annotations

from ..affine.program import Program
from ..codeprint import program_py
from ..codeprint.reference import PY_INT_HELPERS
from ..errors import EmitError
from ..meshir import ir
from .plan import CslPlan

NP = {"f32": "np.float32", "f16": "np.float16", "i32": "np.int32", "i16": "np.int16", "i8": "np.int8",
      "u8": "np.uint8"}


#: The layout helpers of ``run.py``: each core's box of an array, and the per-PE arrays memcpy moves.
_PES_PY = ("",
           "",
           "def box(dims, x, y):",
           "    \"\"\"Per dimension of the box core (x, y) holds: (lo, n, own_lo, own_hi) -- global index of its",
           "    first element, elements it holds (the buffer's extent along it), and the global range it owns",
           "    (written back to the host). dims are (coord, tile, extent, padded, offset, span, origin) as in",
           "    the MeshIR RegionTensor (a window -- span > 0 -- holds span elements from tile*c + offset; c is",
           "    the core's coordinate less origin, the core holding block 0).\"\"\"",
           "    out = []",
           "    for coord, tile, extent, padded, offset, span, origin in dims:",
           "        if coord is None:",
           "            n = min(tile, extent)",
           "            out.append((0, n, 0, n))",
           "            continue",
           "        c = {'x': x, 'y': y}.get(coord, 0) - origin if coord != 'kb' else kb(x, y)",
           "        lo = tile * c + offset",
           "        n = span or (tile if (padded or coord == 'kb') else max(0, min(tile, extent - lo)))",
           "        out.append((lo, n, tile * c, min(tile * c + tile, extent)))",
           "    return out",
           "",
           "",
           "def to_pes(array, dims, x0, x1, y0, y1, elems):",
           "    \"\"\"The (rows, columns, elems) array memcpy_h2d copies: core (x, y)'s box, row-major, packed.\"\"\"",
           "    out = np.zeros((y1 - y0, x1 - x0, elems), dtype=array.dtype)",
           "    for y in range(y0, y1):",
           "        for x in range(x0, x1):",
           "            b = box(dims, x, y)",
           "            block = np.zeros([n for _, n, _, _ in b], dtype=array.dtype)",
           "            src, dst = [], []",
           "            for (lo, n, _, _), extent in zip(b, array.shape):",
           "                a, e = max(lo, 0), min(lo + n, extent)",
           "                src.append(slice(a, max(a, e)))",
           "                dst.append(slice(a - lo, a - lo + max(0, e - a)))",
           "            block[tuple(dst)] = array[tuple(src)]",
           "            flat = block.reshape(-1)",
           "            out[y - y0, x - x0, :flat.size] = flat",
           "    return out.reshape(-1)",
           "",
           "",
           "def widen16(flat):",
           "    \"\"\"f16 values as the 32-bit words a MEMCPY_16BIT transfer moves (the value in the low half).\"\"\"",
           "    return flat.view(np.uint16).astype(np.uint32)",
           "",
           "",
           "def narrow16(words):",
           "    \"\"\"The f16 values in the low halves of the 32-bit words a MEMCPY_16BIT transfer returns.\"\"\"",
           "    return words.astype(np.uint16).view(np.float16)",
           "",
           "",
           "def from_pes(flat, array, dims, x0, x1, y0, y1, elems):",
           "    \"\"\"Scatters what memcpy_d2h read back into ``array``: each core's owned elements.\"\"\"",
           "    pes = flat.reshape(y1 - y0, x1 - x0, elems)",
           "    for y in range(y0, y1):",
           "        for x in range(x0, x1):",
           "            b = box(dims, x, y)",
           "            n = int(np.prod([n for _, n, _, _ in b]))",
           "            block = pes[y - y0, x - x0, :n].reshape([n for _, n, _, _ in b])",
           "            src = tuple(slice(a - lo, e - lo) for lo, _, a, e in b)",
           "            array[tuple(slice(a, e) for _, _, a, e in b)] = block[src]",
           "",
           "")


#: The end of ``run.py``'s ``main``: the comparison with the reference, and the script's entry point.
_COMPARE_PY = ("    runner.stop()",
               "",
               "    # the reference computes floats in double, integer arrays (exactly) in Python ints",
               "    want = reference({k: v.astype(np.float64 if v.dtype.kind == 'f' else object) "
               "for k, v in arrays.items()}, scalars)",
               "    ok = True",
               "    for name, value in got.items():",
               "        ref = want[name]",
               "        if value.dtype.kind in 'iu':",
               "            good = np.array_equal(value, ref.astype(value.dtype))",
               "            ref = ref.astype(np.float64)",
               "        else:",
               "            tol = 1e-2 if value.dtype == np.float16 else 1e-4",
               "            good = np.allclose(value, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max())))",
               "        print(f'{name}: max |device - reference| = {float(np.abs(value - ref).max()):.3g}', "
               "'OK' if good else 'MISMATCH')",
               "        ok = ok and good",
               "    print('SUCCESS' if ok else 'FAILURE')",
               "    return 0 if ok else 1",
               "",
               "",
               "if __name__ == '__main__':",
               "    raise SystemExit(main())",
               "")


def piece_sources(pieces) -> dict[str, tuple[str, int, int, int]]:
    """MeshIR array -> (program array, cut dimension, lo, hi) for every piece of a cut array of ``pieces``
    (a :class:`mica.affine.pieces.Pieces`, or None: no pieces, an empty map)."""
    return pieces.sources() if pieces is not None else {}


def _view(array: str, sources: dict) -> tuple[str, str]:
    """(program array, numpy index text) holding MeshIR array ``array``: a piece's slice, else the whole."""
    if array not in sources:
        return array, ""
    a, d, lo, hi = sources[array]
    return a, "[" + ", ".join([":"] * d + [f"{lo}:{hi}"]) + "]"


def render_run_py(compiled, mp: ir.MeshProgram, plan: CslPlan) -> str:
    prog: Program = compiled.program
    sources = piece_sources(compiled.pieces)
    L = _run_py_head(mp, plan)
    L += _PES_PY
    L += _runtime_py(mp)
    ref = program_py(prog)
    if any("mica_i" in line or "mica_u8(" in line for line in ref):
        L += PY_INT_HELPERS
    L += ref
    L += _main_setup(prog, plan, mp.runtime)
    L += _host_loads(mp, plan, sources)
    L += _host_stores(prog, plan, sources)
    L += _COMPARE_PY
    return "\n".join(L)


def _run_py_head(mp: ir.MeshProgram, plan: CslPlan) -> list[str]:
    """The script's docstring, imports and mesh size, and the skew's block function when the program has one."""
    w, h = plan.mesh
    L = ['#!/usr/bin/env cs_python',
         f'"""Host script for MICA program {mp.name!r} ({plan.arch}, {w}x{h} PEs), generated by MICA.',
         "",
         "Loads every input into the PEs that own it (per-PE layout = the MeshIR RegionTensor box, row-major, ",
         "partial tiles packed at the front), launches main, reads every output back and compares it with the ",
         'original program run sequentially in Python.  Run: cs_python run.py --name out [--cmaddr IP:PORT]"""',
         "",
         "import argparse",
         "",
         "import numpy as np",
         "from cerebras.sdk.runtime.sdkruntimepybind import MemcpyDataType, MemcpyOrder, SdkRuntime",
         "",
         f"WIDTH, HEIGHT = {w}, {h}",
         ]
    if mp.skew is not None:
        s = mp.skew
        L.append(f"SKEW_KIND, SKEW_N = {s.kind!r}, {s.n}")
        L += ["",
              "def ring_pos(c):",
              "    return c if SKEW_KIND == 'cannon' else (c // 2 if c % 2 == 0 else SKEW_N - 1 - c // 2)",
              "",
              "def kb(x, y):",
              "    \"\"\"The block core (x, y) holds at step 0 of the skewed loop.\"\"\"",
              "    return (ring_pos(x) + ring_pos(y)) % SKEW_N"]
    return L


def _runtime_py(mp: ir.MeshProgram) -> list[str]:
    """``RUNTIME`` (the declared ranges of the runtime parameters) and ``runtime_values``, which checks a
    run's values against them and returns what the host writes to ``rparams`` on every PE; nothing when the
    program has no runtime parameters."""
    if not mp.runtime:
        return []
    ranges = ", ".join(f"{n!r}: ({lo}, {hi})" for n, lo, hi in mp.runtime)
    return ["#: Runtime parameters: name -> (lo, hi), the program was compiled for every lo <= value < hi.",
            f"RUNTIME = {{{ranges}}}",
            "",
            "",
            "def runtime_values(values):",
            "    \"\"\"The int32 array written to the symbol rparams of every PE before a launch: the value of each",
            "    runtime parameter in RUNTIME's order; ValueError when one is missing, not an integer or outside",
            "    its declared range.\"\"\"",
            "    out = []",
            "    for name, (lo, hi) in RUNTIME.items():",
            "        if name not in values:",
            "            raise ValueError(f'runtime parameter {name!r} is missing ({lo} <= {name} < {hi})')",
            "        v = values[name]",
            "        if isinstance(v, bool) or int(v) != v:",
            "            raise ValueError(f'runtime parameter {name!r} must be an integer, got {v!r}')",
            "        if not lo <= int(v) < hi:",
            "            raise ValueError(f'runtime parameter {name!r} = {int(v)} is outside its declared range '",
            "                             f'{lo} <= {name} < {hi}')",
            "        out.append(int(v))",
            "    return np.array(out, dtype=np.int32)",
            "",
            ""]


def _main_setup(prog: Program, plan: CslPlan, runtime=()) -> list[str]:
    """The start of ``main``: arguments (one ``--<name>`` per runtime parameter), the arrays (random inputs,
    zeros elsewhere) and scalars (the runtime parameters' values checked against their ranges), and the
    runtime with the symbols of the buffers it loads and stores, loaded and running."""
    L = ["",
         "",
         "def main():",
         "    ap = argparse.ArgumentParser()",
         "    ap.add_argument('--name', default='out', help='the compile output directory')",
         "    ap.add_argument('--cmaddr', default=None, help='IP:port of a CS system; omit it to run on the simulator')",
         "    ap.add_argument('--seed', type=int, default=0)"]
    for n, lo, hi in runtime:
        L.append(f"    ap.add_argument('--{n}', type=int, default={lo}, help='runtime parameter {n}, "
                 f"{lo} <= {n} < {hi}')")
    L += ["    args = ap.parse_args()",
          "    rng = np.random.default_rng(args.seed)",
          "    arrays = {}"]
    for a in prog.arrays:
        if a.dtype not in NP:
            raise EmitError(f"CSL back end: array {a.name} has dtype {a.dtype}; MICA emits CSL for f32, f16 and "
                            f"integer arrays only")
        if a.name in prog.inputs and a.dtype == "u8":
            L.append(f"    arrays[{a.name!r}] = rng.integers(1, 100, {a.shape}).astype(np.uint8)")
        elif a.name in prog.inputs and a.dtype in NP and a.dtype.startswith("i"):
            # signed and never 0 (C leaves a division by zero undefined; the array may be a divisor)
            L.append(f"    arrays[{a.name!r}] = (rng.integers(1, 100, {a.shape}) * rng.choice([-1, 1], {a.shape}))"
                     f".astype({NP[a.dtype]})")
        elif a.name in prog.inputs:
            L.append(f"    arrays[{a.name!r}] = rng.standard_normal({a.shape}).astype({NP[a.dtype]})")
        else:
            L.append(f"    arrays[{a.name!r}] = np.zeros({a.shape}, dtype={NP[a.dtype]})")
    rt = [n for n, _, _ in runtime]
    L.append("    scalars = {" + ", ".join(f"{n!r}: " + (f"args.{n}" if n in rt else "1.5") for n, _ in prog.scalars) + "}")
    if runtime:
        L += ["    try:",
              "        rparams = runtime_values(scalars)",
              "    except ValueError as exc:",
              "        ap.error(str(exc))"]
    L += ["",
          "    # cmaddr only for a CS system: SdkRuntime runs on simfabric when the keyword is omitted",
          "    runner = SdkRuntime(args.name, cmaddr=args.cmaddr) if args.cmaddr else SdkRuntime(args.name)"]
    syms = sorted({ld.buffer for ld in plan.loads} | {st.buffer for st in plan.stores})
    for s in syms:
        L.append(f"    sym_{s} = runner.get_id({s!r})")
    L.append("    sym_scalars = runner.get_id('scalars')")
    if runtime:
        L.append("    sym_rparams = runner.get_id('rparams')")
    L += ["    runner.load()",
          "    runner.run()"]
    return L


def _memcpy_type(b) -> str:
    """The memcpy data type of buffer ``b`` (f16 moves as the low halves of 32-bit words)."""
    return "MemcpyDataType.MEMCPY_16BIT" if b.dtype == "f16" else "MemcpyDataType.MEMCPY_32BIT"


def _host_loads(mp: ir.MeshProgram, plan: CslPlan, sources: dict) -> list[str]:
    """The ``memcpy_h2d`` of every MeshIR host_load (each core's box of the array, or of the slice of it a
    piece is, ``sources``) and of the scalars."""
    L: list[str] = []
    bufs = {b.name: b for b in plan.buffers}
    for ld in plan.loads:
        b = bufs[ld.buffer]
        r = ld.region
        a, index = _view(ld.array, sources)
        L.append(f"    # MeshIR host_load {ld.array} -> {ld.buffer} on {r}" + (f" ({a}{index})" if index else ""))
        data = f"to_pes(arrays[{a!r}]{index}, {b.dims!r}, {r.x0}, {r.x1}, {r.y0}, {r.y1}, {b.elems})"
        if b.dtype == "f16":
            data = f"widen16({data})"
        elif mp.tensor(ld.buffer).dtype != b.dtype:       # a narrow integer array: i32 words
            data = f"{data}.astype({NP[b.dtype]})"
        L.append(f"    runner.memcpy_h2d(sym_{ld.buffer}, {data}, {r.x0}, {r.y0}, {r.x1 - r.x0}, {r.y1 - r.y0}, "
                 f"{b.elems}, streaming=False, data_type={_memcpy_type(b)}, order=MemcpyOrder.ROW_MAJOR, "
                 f"nonblock=False)")
    sc = ", ".join(f"scalars[{n!r}]" for n in mp.scalars) or "0.0"
    reg = mp.region
    L.append(f"    # scalar arguments, on every PE of the program region {reg}")
    L.append(f"    runner.memcpy_h2d(sym_scalars, np.tile(np.array([{sc}], dtype=np.float32), "
             f"{reg.cores}), {reg.x0}, {reg.y0}, {reg.x1 - reg.x0}, {reg.y1 - reg.y0}, {max(1, len(mp.scalars))}, "
             f"streaming=False, data_type=MemcpyDataType.MEMCPY_32BIT, order=MemcpyOrder.ROW_MAJOR, nonblock=False)")
    if mp.runtime:
        L.append(f"    # runtime parameters {', '.join(n for n, _, _ in mp.runtime)} (int32), on every PE of the program "
                 f"region {reg}: kernels read rp_<name> from rparams")
        L.append(f"    runner.memcpy_h2d(sym_rparams, np.tile(rparams, {reg.cores}), {reg.x0}, {reg.y0}, "
                 f"{reg.x1 - reg.x0}, {reg.y1 - reg.y0}, {len(mp.runtime)}, streaming=False, "
                 f"data_type=MemcpyDataType.MEMCPY_32BIT, order=MemcpyOrder.ROW_MAJOR, nonblock=False)")
    return L


def _host_stores(prog: Program, plan: CslPlan, sources: dict) -> list[str]:
    """The launch of ``main``, then the ``memcpy_d2h`` of every MeshIR host_store, scattered into ``got``
    (a piece into its slice of the program's array, ``sources``)."""
    L = ["    runner.launch('main', nonblock=False)",
         "    got = {}"]
    bufs = {b.name: b for b in plan.buffers}
    made = set()
    for st in plan.stores:
        b = bufs[st.buffer]
        r = st.region
        name, index = _view(st.array, sources)
        a = prog.array(name)
        L.append(f"    # MeshIR host_store {st.array} <- {st.buffer} from {r}" + (f" ({name}{index})" if index else ""))
        L.append(f"    flat = np.zeros({r.cores * b.elems}, dtype={'np.uint32' if b.dtype == 'f16' else NP[b.dtype]})")
        L.append(f"    runner.memcpy_d2h(flat, sym_{st.buffer}, {r.x0}, {r.y0}, {r.x1 - r.x0}, {r.y1 - r.y0}, "
                 f"{b.elems}, streaming=False, data_type={_memcpy_type(b)}, order=MemcpyOrder.ROW_MAJOR, "
                 f"nonblock=False)")
        if not index or name not in made:
            L.append(f"    got[{name!r}] = np.zeros({a.shape}, dtype={NP[a.dtype]})")
            made.add(name)
        flat = "narrow16(flat)" if b.dtype == "f16" else "flat"
        L.append(f"    from_pes({flat}, got[{name!r}]{index}, {b.dims!r}, {r.x0}, {r.x1}, {r.y0}, {r.y1}, {b.elems})")
    return L


def render_commands(plan: CslPlan) -> str:
    w, h = plan.mesh
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# Compile and run MICA program {plan.name!r} for {plan.arch} (generated by MICA).",
        "# Fabric = program rectangle + 7 columns and + 2 rows for the memcpy infrastructure, offsets 4,1",
        "# (csl-examples convention). For a real system give its fabric dimensions and --cmaddr.",
        "set -euo pipefail",
        f"cslc --arch={plan.arch} layout.csl --fabric-dims={w + 7},{h + 2} --fabric-offsets=4,1 "
        f"--params=width:{w},height:{h} --memcpy --channels=1 -o out",
        "cs_python run.py --name out",
        ""])
