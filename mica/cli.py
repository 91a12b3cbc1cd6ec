"""The ``mica`` command line.

    mica demo [--mesh 750x994] [--run-mesh 16x16] [--size 512] [--target wse2] [--threads N]
        compile a size^3 f32 matmul for the big mesh, print the plan and its modelled cost, then run the
        same plan on the small mesh in the emulator and report the error against numpy and the traffic.
    mica compile kernel.c [--function F] [--param N=4096 ...] [--mesh 750x994] [--target wse2]
                 [--emit c|csl|metalium] [--out DIR] [--explain]
        compile one C function (after preprocessing) and write the chosen back end's files into DIR.
    mica targets
        list the machine descriptions.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import ops
from .affine.from_c import from_c
from .errors import InputError, MicaError
from .pipeline import compile_affine
from .targets import TARGETS


def _mesh(text: str) -> tuple[int, int]:
    try:
        w, h = text.lower().split("x")
        return int(w), int(h)
    except ValueError:
        raise argparse.ArgumentTypeError(f"mesh must look like 750x994, got {text!r}") from None


def demo(args) -> int:
    n = args.size
    op = ops.matmul(n, n, n, dtype="f32")
    t0 = time.perf_counter()
    prog = compile_affine(op, mesh=args.mesh, target=args.target)
    dt = time.perf_counter() - t0
    print(f"== compiled matmul {n}x{n}x{n} f32 for mesh {args.mesh[0]}x{args.mesh[1]} "
          f"({args.target}) in {dt:.3f} s")
    print(prog.schedule)
    print(prog.schedule.explain())
    print(prog.cost)
    print()
    print(f"== the same plan on a {args.run_mesh[0]}x{args.run_mesh[1]} mesh in the emulator")
    small = prog.retarget(args.run_mesh)
    print(small.meshir if args.verbose else small.schedule)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    t0 = time.perf_counter()
    res = small.run({"A": A, "B": B}, threads=args.threads)
    dt = time.perf_counter() - t0
    ref = A.astype(np.float64) @ B.astype(np.float64)
    err = np.abs(res.outputs["C"] - ref).max()
    rel = err / np.abs(ref).max()
    print(f"ran in {dt:.2f} s; max |C - numpy| = {err:.3g} (relative {rel:.3g})")
    print(res.stats)
    ok = np.allclose(res.outputs["C"], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    print("result matches numpy" if ok else "RESULT DOES NOT MATCH numpy")
    return 0 if ok else 1


def _param(text: str) -> tuple[str, int]:
    try:
        name, value = text.split("=")
        return name.strip(), int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a parameter looks like N=4096, got {text!r}") from None


def compile_file(args) -> int:
    try:
        source = open(args.source, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {args.source}: {exc}") from None
    program = from_c(source, args.function, params=dict(args.param), filename=args.source)
    t0 = time.perf_counter()
    # CSL and Metalium lay out blocks from core (0, 0): their plans run operators one after another.
    prog = compile_affine(program, mesh=args.mesh, target=args.target,
                          side_by_side=args.emit not in ("csl", "metalium"))
    dt = time.perf_counter() - t0
    print(f"compiled {program.name} for {args.mesh[0]}x{args.mesh[1]} ({args.target}) in {dt:.3f} s")
    print(prog.schedule.explain() if args.explain else prog.schedule)
    print(prog.cost)
    if args.emit:
        out = args.out or f"{program.name}_{args.emit}"
        for path in prog.emit(args.emit, out):
            print(f"wrote {path}")
    return 0


def targets(args) -> int:
    for t in TARGETS.values():
        print(f"{t.name:<10} grid {t.grid[0]}x{t.grid[1]}, SRAM {t.sram_bytes} B/core, {t.clock_ghz} GHz, "
              f"f32 {t.flops('f32')} FLOP/cycle, link {t.link_bytes_per_cycle} B/cycle, "
              f"hop {t.hop_latency} cycles, {t.colours} colours  ({t.notes})")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mica", description="MICA: compiler for mesh accelerators")
    p.add_argument("--detail", action="store_true",
                   help="on an error, also print its detail (the isl relation, the rejected candidates)")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="compile a matmul for the wafer and check it in the emulator")
    d.add_argument("--mesh", type=_mesh, default=(750, 994))
    d.add_argument("--run-mesh", type=_mesh, default=(16, 16))
    d.add_argument("--size", type=int, default=512)
    d.add_argument("--target", default="wse2")
    d.add_argument("--threads", type=int, default=None)
    d.add_argument("-v", "--verbose", action="store_true", help="print the small mesh's MeshIR")
    d.set_defaults(fn=demo)
    c = sub.add_parser("compile", help="compile a C function and emit code for a back end")
    c.add_argument("source", help="C file (after preprocessing) holding the function")
    c.add_argument("--function", default=None, help="the function to compile (default: the only one)")
    c.add_argument("--param", type=_param, action="append", default=[], help="size parameter, N=4096")
    c.add_argument("--mesh", type=_mesh, default=(750, 994))
    c.add_argument("--target", default="wse2")
    c.add_argument("--emit", choices=("c", "csl", "metalium"), default=None)
    c.add_argument("--out", default=None, help="output directory (default: <function>_<back end>)")
    c.add_argument("--explain", action="store_true", help="list the candidates the search considered")
    c.set_defaults(fn=compile_file)
    t = sub.add_parser("targets", help="list machine descriptions")
    t.set_defaults(fn=targets)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except MicaError as exc:
        print(f"mica: {type(exc).__name__}: {exc.render(detailed=args.detail)}", file=sys.stderr)
        if exc.detail and not args.detail:
            print("mica: (--detail shows the relation or candidates behind this error)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
