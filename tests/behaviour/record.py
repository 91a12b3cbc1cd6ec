"""What the compiler decides for the sample programs, recorded as text: schedule (and its JSON), MeshIR,
modelled cost and ``explain()``. Refactors must leave every record byte-identical
(``python -m tests.behaviour.record`` rewrites them; a change must be named in the commit).

Search times are the only nondeterministic text; they are masked."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import mica
from mica.affine.from_c import from_c

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
KERNELS = HERE.parent / "frontend" / "kernels"

MVT_4096 = """
void mvt(float A[4096][4096], float x1[4096], float x2[4096], float y1[4096], float y2[4096]) {
  for (int i = 0; i < 4096; i++) for (int j = 0; j < 4096; j++) x1[i] = x1[i] + A[i][j] * y1[j];
  for (int i = 0; i < 4096; i++) for (int j = 0; j < 4096; j++) x2[i] = x2[i] + A[j][i] * y2[j];
}"""

CHAIN = """
void chain(float A[256][16], float B[16][16], float C[16][16], float T[256][16], float D[256][16]) {
  for (int i = 0; i < 256; i++) for (int j = 0; j < 16; j++) {
    T[i][j] = 0.0f; for (int k = 0; k < 16; k++) T[i][j] += A[i][k] * B[k][j]; }
  for (int i = 0; i < 256; i++) for (int j = 0; j < 16; j++) {
    D[i][j] = 0.0f; for (int k = 0; k < 16; k++) D[i][j] += T[i][k] * C[k][j]; }
}"""

SECONDS = re.compile(r"in \d+\.\d+ s")


def _polybench(name: str, mesh):
    import json
    params = json.loads((KERNELS / "manifest.json").read_text())[name]["params"]
    src = (KERNELS / f"{name}.c").read_text()
    return mica.compile_affine(from_c(src, params=params), mesh=mesh)


def _builders():
    mm = mica.ops.matmul(64, 48, 40)
    gv = mica.ops.gemv(96, 80)
    out = {
        "matmul_8x8": lambda: mica.compile_affine(mm, mesh=(8, 8)),
        "matmul_wafer": lambda: mica.compile_affine(mica.ops.matmul(512, 512, 512), mesh=(750, 994)),
        "gemv_wafer": lambda: mica.compile_affine(mica.ops.gemv(4096, 4096), mesh=(750, 994)),
        "gemv_5x3": lambda: mica.compile_affine(gv, mesh=(5, 3)),
        "matmul_wormhole": lambda: mica.compile_affine(mm, mesh=(4, 4), target="wormhole"),
        "matmul_wse3": lambda: mica.compile_affine(mm, mesh=(6, 5), target="wse3"),
    }
    for plan in ("summa", "cannon", "interleaved"):
        out[f"matmul_{plan}_4x4"] = (lambda plan=plan: mica.compile_affine(
            mica.ops.matmul(30, 20, 25), mesh=(4, 4), schedule=getattr(mica.plans, plan)(mica.ops.matmul(30, 20, 25), (4, 4))))
    for plan in ("chain", "ktree"):
        out[f"gemv_{plan}_6x4"] = (lambda plan=plan: mica.compile_affine(
            gv, mesh=(6, 4), schedule=getattr(mica.plans, plan)(gv, (6, 4))))
    return out


def samples() -> dict:
    """Name -> a function compiling the sample."""
    out = dict(_builders())
    for path in sorted(KERNELS.glob("*.c")):
        name = path.stem
        out[f"{name}_4x3"] = lambda name=name: _polybench(name, (4, 3))
    for name in ("2mm", "3mm", "mvt", "atax", "jacobi-2d", "gemm"):
        out[f"{name}_12x6"] = lambda name=name: _polybench(name, (12, 6))
    out["mvt_wafer"] = lambda: mica.compile_affine(from_c(MVT_4096), mesh=(750, 994))
    out["stream_2mm_8x8"] = lambda: mica.compile_affine(from_c(CHAIN), mesh=(8, 8))
    return out


def record(prog) -> str:
    """The text the refactor must keep (the C kernels the emulator runs included)."""
    parts = [
        "== schedule", str(prog.schedule),
        "== schedule json", prog.schedule.to_json(),
        "== cost", str(prog.cost),
        "== explain", SECONDS.sub("in _ s", prog.explain()),
        "== meshir", prog.meshir,
    ]
    for name, src in sorted(prog.kernels.items()):
        parts += [f"== C kernel {name}", src]
    return "\n".join(parts) + "\n"


def render(name: str) -> str:
    try:
        return record(samples()[name]())
    except mica.MicaError as exc:
        return f"== error\n{type(exc).__name__}: {exc}\n"


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    names = sys.argv[1:] or list(samples())
    for n in names:
        (GOLDEN / f"{n}.txt").write_text(render(n))
        print(n, flush=True)
