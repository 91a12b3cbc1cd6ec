"""The ``mica`` command line.

    mica demo [--target wse2] [--mesh WxH] [--run-mesh WxH] [--size 512] [--plot DIR] [--trace FILE]
        compile a size^3 f32 matmul for the target's whole grid, print the plan and its modelled cost, then
        run the same plan on a small mesh in the emulator and check it against numpy.
    mica compile kernel.c [--function F] [--param N=4096 ...] [-D NAME=VALUE ...] [-I DIR ...] [--dtype f32]
                 [--target wse2] [--mesh WxH] [--emit c|csl|metalium] [--out DIR] [--explain]
        compile one C function and write the chosen back end's files into DIR.
    mica run kernel.c [the options of compile] [--seed S] [--threads N] [--plot DIR] [--trace FILE]
        compile one C function, run it in the emulator on random inputs and check it against the same C
        compiled natively.
    mica plot kernel.c [the options of run] [--out DIR]
        the same run, then every picture (per-core compute and idle time, per-link traffic, SRAM, operator
        placement) and the per-core trace into DIR.
    mica targets
        list the machine descriptions.

The mesh defaults to the target's whole grid for ``compile`` (750x994 on wse2, 8x8 on wormhole), and to
16x16 (or the grid, if smaller) where the emulator runs the plan. ``--emit csl`` defaults the target to
wse2 and ``--emit metalium`` to wormhole.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__, ops
from .affine.from_c import from_c
from .affine.retype import with_float_dtype
from .errors import EmitError, InputError, MicaError
from .pipeline import compile_affine
from .targets import DTYPES, TARGETS, get_target
from .native_sim.execute import NP_DTYPE
from .native_sim.plot import plot_files
from .testing import run_c, run_program

#: The back ends' machine families: a back end emits for these targets only.
BACKEND_TARGETS = {"csl": ("wse2", "wse3"), "metalium": ("wormhole", "blackhole")}
RUN_MESH = (16, 16)         # where the emulator runs a plan unless told otherwise


def _mesh(text: str) -> tuple[int, int]:
    try:
        w, h = text.lower().split("x")
        return int(w), int(h)
    except ValueError:
        raise argparse.ArgumentTypeError(f"mesh must look like 750x994, got {text!r}") from None


def _param(text: str) -> tuple[str, int]:
    try:
        name, value = text.split("=")
        return name.strip(), int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a parameter looks like N=4096, got {text!r}") from None


def _runtime(text: str) -> tuple[str, tuple[int, int]]:
    try:
        name, rng = text.split("=")
        lo, hi = rng.split(":")
        return name.strip(), (int(lo), int(hi))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a runtime parameter looks like pos=0:4096 (0 <= pos < 4096), "
                                         f"got {text!r}") from None


def _define(text: str) -> tuple[str, str | None]:
    name, eq, value = text.partition("=")
    if not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
        raise argparse.ArgumentTypeError(f"a macro looks like N or N=200, got {text!r}")
    return name.strip(), (value if eq else None)


def _target_name(args) -> str:
    """``--target``, else the one the back end asked for emits to, else wse2."""
    if args.target:
        return args.target
    emit = getattr(args, "emit", None)
    return BACKEND_TARGETS[emit][0] if emit in BACKEND_TARGETS else "wse2"


def _small_mesh(args, tgt) -> tuple[int, int]:
    return args.run_mesh or (min(RUN_MESH[0], tgt.grid[0]), min(RUN_MESH[1], tgt.grid[1]))


def _cli_words(message: str) -> str:
    """An error message of the Python API in the words of the command line."""
    message = re.sub(r"pass params=\{'(\w+)': \.\.\.\}", r"pass --param \1=...", message)
    message = re.sub(r"\bparams gives\b", "--param gives", message)
    message = message.replace("(function= in Python, --function on the command line)", "with --function")
    return message


def _outputs(args, res) -> None:
    if args.cmd == "plot":
        for path in plot_files(res, args.out or f"{res.program.name}_plots"):
            print(f"wrote {path}")
        return
    if getattr(args, "plot", None):
        for path in res.plot(args.plot):
            print(f"wrote {path}")
    if getattr(args, "trace", None):
        path = res.trace(args.trace)
        print(f"wrote {path} (open it in https://ui.perfetto.dev or chrome://tracing)")


def demo(args) -> int:
    n = args.size
    tgt = get_target(args.target)
    mesh = args.mesh or tgt.grid
    op = ops.matmul(n, n, n, dtype="f32")
    t0 = time.perf_counter()
    prog = compile_affine(op, mesh=mesh, target=tgt)
    dt = time.perf_counter() - t0
    print(f"== compiled matmul {n}x{n}x{n} f32 for mesh {mesh[0]}x{mesh[1]} ({tgt.name}) in {dt:.3f} s")
    print(prog.schedule)
    print(prog.schedule.explain())
    print(prog.cost)
    print()
    run_mesh = _small_mesh(args, tgt)
    print(f"== the same plan on a {run_mesh[0]}x{run_mesh[1]} mesh in the emulator")
    small = prog.retarget(run_mesh)
    print(small.meshir if args.verbose else small.schedule)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    t0 = time.perf_counter()
    res = small.run({"A": A, "B": B}, threads=args.threads, trace=bool(args.trace))
    dt = time.perf_counter() - t0
    ref = A.astype(np.float64) @ B.astype(np.float64)
    err = np.abs(res.outputs["C"] - ref).max()
    rel = err / np.abs(ref).max()
    print(f"ran in {dt:.2f} s; max |C - numpy| = {err:.3g} (relative {rel:.3g})")
    print(res.stats)
    _outputs(args, res)
    ok = np.allclose(res.outputs["C"], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    print("result matches numpy" if ok else "RESULT DOES NOT MATCH numpy")
    return 0 if ok else 1


def _program(args):
    """The C function of ``args.source`` as a Program (preprocessed, retyped by ``--dtype``) and its text."""
    try:
        source = Path(args.source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {args.source}: {exc}") from None
    defines = dict(args.define)
    program = from_c(source, args.function, params=dict(args.param), filename=args.source, defines=defines,
                     include_dirs=args.include, runtime=dict(args.runtime) or None)
    if args.dtype:
        program = with_float_dtype(program, args.dtype)
    return program, source


def _check_backend(args, program) -> None:
    """Refuses, before any search, what the chosen hardware back end cannot emit: f64 arrays (naming the
    flag that fixes it). (A plan compiled for another target than the back end's family is placed on the
    back end's device when it fits; the back end says so otherwise.)"""
    if args.emit not in BACKEND_TARGETS:
        return
    f64 = [a.name for a in program.arrays if a.dtype == "f64"]
    if f64:
        raise EmitError(f"{program.name} has f64 arrays ({', '.join(f64)}) and the {args.emit} back end has no "
                        f"f64; add --dtype f32 to compile its floating types as f32")


def compile_file(args) -> int:
    tgt = get_target(_target_name(args))
    program, _ = _program(args)
    _check_backend(args, program)
    mesh = args.mesh or tgt.grid
    t0 = time.perf_counter()
    prog = compile_affine(program, mesh=mesh, target=tgt)
    dt = time.perf_counter() - t0
    if args.emit:
        out = args.out or f"{program.name}_{args.emit}"
        try:
            paths = prog.emit(args.emit, out)
        except EmitError as exc:
            if not prog.schedule.placed:
                raise
            # The back end refuses the searched plan (operators side by side or streamed: see the message); the
            # operators one after another on the whole mesh are what it emitted before it wrote placed plans,
            # and still the way out.
            print(f"the {args.emit} back end cannot write the searched plan ({exc}); compiling the operators "
                  f"one after another instead", file=sys.stderr)
            prog = compile_affine(program, mesh=mesh, target=tgt, side_by_side=False)
            dt = time.perf_counter() - t0
            paths = prog.emit(args.emit, out)
    print(f"compiled {program.name} for {mesh[0]}x{mesh[1]} ({tgt.name}) in {dt:.3f} s")
    print(prog.explain() if args.explain else prog.schedule)
    print(prog.cost)
    if args.emit:
        for path in paths:
            print(f"wrote {path}")
    return 0


def _random_inputs(program, rng) -> dict:
    """Inputs for every array the program reads and every scalar: floats in [0.5, 1.5), integers in 1..9
    (positive, so that divisions and square roots of the data stay defined)."""
    ins = {}
    for name in program.inputs:
        a = program.array(name)
        dt = np.dtype(NP_DTYPE[a.dtype])
        shape = program.user_shape(name)          # as the C declares it (a folded loop's arrays too)
        ins[name] = (rng.integers(1, 10, shape).astype(dt) if dt.kind in "iu"
                     else rng.uniform(0.5, 1.5, shape).astype(dt))
    runtime = {n: lo for n, lo, _ in program.runtime}
    for name, _ in program.scalars:
        ins[name] = runtime[name] if name in runtime else float(rng.uniform(0.5, 1.5))
    return ins


def _runtime_values(program) -> list[dict[str, int]]:
    """The values of the runtime parameters ``mica run`` checks: each range's first, middle and last value
    (all parameters at once), or one empty assignment without runtime parameters."""
    if not program.runtime:
        return [{}]
    picks = [{n: v for n, lo, hi in program.runtime for v in [(lo, (lo + hi - 1) // 2, hi - 1)[k]]}
             for k in range(3)]
    return [p for k, p in enumerate(picks) if p not in picks[:k]]


#: Relative tolerance of the check against native C, per dtype (the mesh may sum in another order).
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "f16": 2e-2, "bf16": 5e-2}


def run_file(args) -> int:
    tgt = get_target(_target_name(args))
    program, source = _program(args)
    mesh = args.mesh or _small_mesh(args, tgt)
    t0 = time.perf_counter()
    prog = compile_affine(program, mesh=mesh, target=tgt)
    print(f"compiled {program.name} for {mesh[0]}x{mesh[1]} ({tgt.name}) in {time.perf_counter() - t0:.3f} s")
    print(prog.explain() if args.explain else prog.schedule)
    base = _random_inputs(prog.program, np.random.default_rng(args.seed))
    ok = True
    for values in _runtime_values(prog.program):
        ins = {**base, **values}
        if values:
            print("with " + ", ".join(f"{n} = {v}" for n, v in values.items()))
        ok &= _run_and_check(args, prog, program, source, ins)
    return 0 if ok else 1


def _run_and_check(args, prog, program, source, ins) -> bool:
    """Runs ``prog`` on ``ins`` in the emulator, prints its figures and compares every output with the
    reference (the native C, or the retyped program's C with ``--dtype``)."""
    t0 = time.perf_counter()
    res = prog.run(ins, threads=args.threads, trace=bool(args.trace) or args.cmd == "plot")
    print(f"ran in the emulator in {time.perf_counter() - t0:.2f} s")
    print(res.stats)
    if args.dtype:          # the reference: the retyped program as sequential C, compiled natively
        want = run_program(program, ins)
        what = f"the C of the program retyped to {args.dtype}"
    elif any(a.dtype == "bf16" for a in program.arrays):
        # GCC before 13 has no __bf16 arithmetic, so the user's C cannot be built natively here
        want = run_program(program, ins)
        what = "the program's sequential C (bf16 arrays: the front end's reading of the C, not the C itself)"
    else:
        want = run_c(source, args.function, ins, dict(args.param), filename=args.source,
                     defines=dict(args.define), include_dirs=args.include)
        what = "the native C"
    _outputs(args, res)
    ok = True
    for name, ref in sorted(want.items()):
        got = res.outputs[name]
        tol = TOLERANCE.get(program.array(name).dtype, 0.0)
        close = np.allclose(got, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max(initial=0))),
                            equal_nan=True)
        err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max(initial=0))
        print(f"{name}: max |mesh - reference| = {err:.3g}" + ("" if close else "  <-- DOES NOT MATCH"))
        ok &= bool(close)
    print(f"every output matches {what}" if ok else f"OUTPUTS DO NOT MATCH {what}")
    return ok


def targets(args) -> int:
    for t in TARGETS.values():
        print(f"{t.name:<10} grid {t.grid[0]}x{t.grid[1]}, SRAM {t.sram_bytes} B/core, {t.clock_ghz} GHz, "
              f"f32 {t.flops('f32')} FLOP/cycle, link {t.link_bytes_per_cycle} B/cycle, "
              f"hop {t.hop_latency} cycles, {t.colours} colours  ({t.notes})")
    return 0


def _source_options(c) -> None:
    """The options shared by ``compile`` and ``run``: which function, its sizes, preprocessing, types,
    target and mesh."""
    c.add_argument("source", help="C file holding the function (#define/#include/#if are preprocessed)")
    c.add_argument("--function", default=None, help="the function to compile (needed when the file defines "
                                                     "several)")
    c.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=INT",
                   help="value of an int size parameter of the function, e.g. --param ni=64 (repeatable)")
    c.add_argument("--runtime", type=_runtime, action="append", default=[], metavar="NAME=LO:HI",
                   help="an int parameter left for every run, LO <= NAME < HI, usable in subscripts and bounds "
                        "(e.g. --runtime pos=0:4096; repeatable); 'mica run' checks its first, middle and last "
                        "value")
    c.add_argument("-D", "--define", type=_define, action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro, as cc -D does (repeatable)")
    c.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                   help="search DIR for #include \"...\" files, as cc -I does (repeatable)")
    c.add_argument("--dtype", choices=DTYPES, default=None,
                   help="compile the function's floating-point arrays and scalars as this type (the "
                        "hardware back ends have no f64: --dtype f32)")
    c.add_argument("--target", choices=sorted(TARGETS), default=None,
                   help="machine to compile for (default: wse2; wormhole with --emit metalium)")
    c.add_argument("--explain", action="store_true",
                   help="print every candidate plan the search considered with its modelled cycles or the "
                        "reason it was rejected, instead of the chosen plan only")


def _run_options(c) -> None:
    """The options of ``run`` and ``plot``: the source's, and where and how the emulator runs it."""
    _source_options(c)
    c.add_argument("--mesh", type=_mesh, default=None, metavar="WxH",
                   help="cores to compile for and run on (default: 16x16, or the grid if smaller)")
    c.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    c.add_argument("--threads", type=int, default=None, help="emulator threads (default: one per CPU)")


def _picture_options(c) -> None:
    """``--plot`` and ``--trace`` of a command that runs the emulator."""
    c.add_argument("--plot", default=None, metavar="DIR", help="write PNG heatmaps of the run into DIR")
    c.add_argument("--trace", default=None, metavar="FILE",
                   help="write per-core timelines of the run (Chrome trace JSON, opens in Perfetto)")


def parser() -> argparse.ArgumentParser:
    """The ``mica`` argument parser."""
    p = argparse.ArgumentParser(prog="mica", description="MICA: a polyhedral compiler for mesh accelerators")
    p.add_argument("--version", action="version", version=f"mica {__version__}")
    p.add_argument("--detail", action="store_true",
                   help="on an error, also print its detail (the isl relation, the rejected candidates)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{demo,compile,run,plot,targets}")
    d = sub.add_parser("demo", help="compile a matmul for the whole chip and check it in the emulator",
                       description="Compile a size^3 f32 matmul for the target's whole grid, print the plan "
                                   "and its cost, run the plan on a small mesh and check it against numpy.")
    d.add_argument("--target", choices=sorted(TARGETS), default="wse2", help="machine to compile for")
    d.add_argument("--mesh", type=_mesh, default=None, metavar="WxH",
                   help="cores to compile for (default: the target's whole grid)")
    d.add_argument("--run-mesh", type=_mesh, default=None, metavar="WxH",
                   help="cores the emulator runs the same plan on (default: 16x16, or the grid if smaller)")
    d.add_argument("--size", type=int, default=512, help="matrix side (default 512)")
    d.add_argument("--threads", type=int, default=None, help="emulator threads (default: one per CPU)")
    _picture_options(d)
    d.add_argument("-v", "--verbose", action="store_true", help="print the small mesh's MeshIR")
    d.set_defaults(fn=demo)
    c = sub.add_parser("compile", help="compile a C function and emit code for a back end",
                       description="Compile one C function for a mesh and write a back end's files.")
    _source_options(c)
    c.add_argument("--mesh", type=_mesh, default=None, metavar="WxH",
                   help="cores to compile for (default: the target's whole grid)")
    c.add_argument("--emit", choices=("c", "csl", "metalium"), default=None,
                   help="back end to write: c (the emulator's kernels), csl (Cerebras), metalium (Tenstorrent)")
    c.add_argument("--out", default=None, metavar="DIR", help="output directory (default: <function>_<back end>)")
    c.set_defaults(fn=compile_file)
    r = sub.add_parser("run", help="compile a C function, run it in the emulator, check it against native C",
                       description="Compile one C function, run it in the emulator on random inputs and "
                                   "compare every output with the same C compiled natively.")
    _run_options(r)
    _picture_options(r)
    r.set_defaults(fn=run_file, run_mesh=None)
    g = sub.add_parser("plot", help="run a C function in the emulator and write its pictures and trace",
                       description="Compile one C function, run it in the emulator on random inputs, check it "
                                   "against native C, and write PNG heatmaps (per-core compute and idle time, "
                                   "per-link traffic, SRAM use, operator placement) and trace.json (per-core "
                                   "timelines, Chrome trace format: open it in https://ui.perfetto.dev).")
    _run_options(g)
    g.add_argument("--out", default=None, metavar="DIR", help="output directory (default: <function>_plots)")
    g.set_defaults(fn=run_file, run_mesh=None, plot=None, trace=None)
    t = sub.add_parser("targets", help="list the machine descriptions")
    t.set_defaults(fn=targets)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except MicaError as exc:
        print(f"mica: {type(exc).__name__}: {_cli_words(exc.render(detailed=args.detail))}", file=sys.stderr)
        if exc.detail and not args.detail:
            print("mica: (--detail shows the relation or candidates behind this error)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
