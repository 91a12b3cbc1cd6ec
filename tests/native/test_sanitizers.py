"""The emulator (mica/runtime_c/mica_rt.c) and generated kernels under AddressSanitizer +
UndefinedBehaviorSanitizer (and ThreadSanitizer), driven by a standalone C program written here.

The driver replays real compiled programs -- SUMMA multicasts, Cannon and interleaved ring shifts with
staged loads, chain and K-tree reductions, partial tiles, scalars -- with 1, 2, 3 and 7 threads, and checks
every output byte for byte against what the ordinary (unsanitized) build computed through the Python
binding (the runs on 1, 3 and 7 threads also record the per-core trace of half the mesh, and check it); then it drives the error paths (bad mesh shapes, an arena larger than SRAM, a receive nobody
sends to, a message routed off the mesh, a missing kernel, truncated and garbage op code, bad host copies)
on several threads and checks that each fails with a message. Any sanitizer report, a leak included,
fails the test. The test is skipped only if the C compiler cannot build a trivial sanitized program.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache

import numpy as np
import pytest

import mica
from mica.native_sim import opcode as oc
from mica.native_sim.execute import check_inputs
from mica.native_sim.lower import box, lower, rect
from mica.native_sim.runtime import RUNTIME_DIR
from mica.native_sim.staging import needs_staging, staged_load

CC = os.environ.get("CC") or "cc"
ASAN = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all")
TSAN = ("-fsanitize=thread",)
REPORT_WORDS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "runtime error", "WARNING:", "ERROR:")
THREADS = (1, 2, 3, 7)


@lru_cache(maxsize=None)
def sanitizer_support(flags: tuple[str, ...], tmp: str) -> str | None:
    """None if ``CC`` builds a trivial program with ``flags``, else the reason it cannot."""
    src = os.path.join(tmp, "trivial.c")
    with open(src, "w") as f:
        f.write("#include <stdlib.h>\nint main(void) { char *p = malloc(4); p[0] = 1; free(p); return 0; }\n")
    try:
        done = subprocess.run([CC, *flags, src, "-o", os.path.join(tmp, "trivial")], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run the C compiler {CC!r}: {exc}"
    if done.returncode != 0:
        return (f"the C compiler {CC!r} lacks sanitizer support ({' '.join(flags)}): "
                f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return None


# -- programs to replay ---------------------------------------------------------------------------------

def _words(name: str, words) -> str:
    return f"static const int64_t {name}[] = {{{', '.join(str(int(w)) for w in words) or '0'}}};"


def _bytes(name: str, data: bytes) -> str:
    """A uint64_t array holding ``data`` (padded), so the buffer is 8-byte aligned."""
    padded = data + b"\0" * (-len(data) % 8)
    words = np.frombuffer(padded, dtype="<u8") if padded else np.zeros(1, "<u8")
    return f"static uint64_t {name}[] = {{{', '.join(f'{int(w)}ULL' for w in words)}}};"


def _programs():
    """(label, compiled program, inputs): plans covering each communication pattern of the emulator."""
    rng = np.random.default_rng(3)
    out = []
    mm = mica.ops.matmul(7, 6, 5, dtype="f64")
    ab = {"A": rng.random((7, 5)), "B": rng.random((5, 6))}
    for plan, mesh in (("summa", (3, 2)), ("cannon", (3, 3)), ("interleaved", (4, 4))):
        sched = mica.plans.REFERENCE_PLANS[plan](mm, mesh)
        out.append((f"matmul_{plan}", mica.compile_affine(mm, mesh=mesh, target="wormhole", schedule=sched), ab))
    gv = mica.ops.gemv(9, 11, dtype="f32")
    xa = {"A": rng.random((9, 11)).astype(np.float32), "x": rng.random(11).astype(np.float32)}
    for plan, mesh in (("chain", (4, 3)), ("ktree", (6, 2))):
        sched = mica.plans.REFERENCE_PLANS[plan](gv, mesh)
        out.append((f"gemv_{plan}", mica.compile_affine(gv, mesh=mesh, target="wormhole", schedule=sched), xa))
    sa = mica.ops.scaled_add((5, 7), dtype="f64")
    out.append(("scaled_add", mica.compile_affine(sa, mesh=(2, 3), target="wormhole"),
                {"A": rng.random((5, 7)), "B": rng.random((5, 7)), "alpha": 0.75}))
    tri = """void tri(double L[6][6], double b[6], double x[6]) {
      for (int i = 0; i < 6; i++) { x[i] = b[i];
        for (int j = 0; j < i; j++) x[i] -= L[i][j] * x[j];
        x[i] = x[i] / L[i][i]; } }"""
    lt = rng.random((6, 6)) + 6 * np.eye(6)
    out.append(("one_core", mica.compile_affine(tri, mesh=(3, 2), target="wormhole"),
                {"L": lt, "b": rng.random(6)}))
    # The same solve at n = 12 on a line of four cores: aligned column by column, x[j] multicast each step from
    # the core owning it, whose column floor(t / 3) the emulator's affine values divide out.
    tri12 = tri.replace("[6]", "[12]").replace("< 6", "< 12")
    out.append(("step_owner", mica.compile_affine(tri12, mesh=(4, 1)),
                {"L": rng.random((12, 12)) + 12 * np.eye(12), "b": rng.random(12)}))
    return out


def _hints(km) -> bool:
    """Whether a kernel module exports the prefetch hint of mica_rt.h (modules with blocked contractions)."""
    return "void mica_prefetch_hint(" in km.source


def _program_c(label: str, compiled, inputs) -> tuple[str, str]:
    """(driver part, kernel module) replaying ``compiled`` on ``inputs``; the expected outputs are those
    the ordinary build computes."""
    prog, mp, tgt = compiled.program, compiled.mesh_program, compiled.target
    arrays, scalars = check_inputs(prog, inputs)
    expected = compiled.run(inputs, threads=2).outputs
    km = compiled.kernel_module
    low = lower(mp, km)
    w, h = mp.mesh
    r = mp.region
    lines = [f"/* {label}: {compiled.schedule.name} on {w}x{h} */",
             _words(f"{label}_code", low.code),
             f"static const double {label}_scalars[] = {{{', '.join(float(s).hex() for s in scalars) or '0'}}};"]
    body = [f"static int run_{label}(int threads) {{",
            "  char err[1024] = {0}; int bad = 0;",
            f"  mica_mesh *m = mica_mesh_new({w}, {h}, {tgt.colours}, {tgt.sram_bytes}LL, err, sizeof err);",
            f"  if (!m) {{ printf(\"{label}: mesh: %s\\n\", err); return 1; }}",
            f"  CHECK(\"{label} reserve\", mica_mesh_reserve(m, {r.x0}, {r.x1}, {r.y0}, {r.y1}, "
            f"{mp.arena_bytes}LL, err, sizeof err));",
            f"  CHECK(\"{label} commit\", mica_mesh_commit(m, err, sizeof err));",
            # 1, 3 and 7 threads record the west half's timelines, at most TRACE_CAP events per core
            "  int traced = threads % 2 == 1;",
            f"  if (traced) CHECK(\"{label} trace\", mica_trace_start(m, 0, {(w + 1) // 2}, 0, {h}, TRACE_CAP, err, "
            "sizeof err));"]
    for i, ld in enumerate(low.loads):
        t = mp.tensor(ld.buffer)
        if needs_staging(t):
            data, bx, rc = staged_load(arrays[ld.array], t, ld.region, mp.skew)
        else:
            data, bx, rc = arrays[ld.array], box(t, {}), rect(ld.region.rect, {})
        lines += [_bytes(f"{label}_in{i}", np.ascontiguousarray(data).tobytes()),
                  _words(f"{label}_in{i}_box", bx.words()), _words(f"{label}_in{i}_rect", oc.as_rect(rc).words())]
        body.append(f"  CHECK(\"{label} load {ld.array}\", mica_host_copy(m, 0, {label}_in{i}, {label}_in{i}_box, "
                    f"{label}_in{i}_rect, err, sizeof err));")
    n = len(km.names)
    body += [f"  mica_kernel_fn table[{max(n, 1)}];",
             f"  for (int i = 0; i < {n}; i++) table[i] = {label}_kernel_get(i);",
             f"  if ({label}_kernel_count() != {n}) {{ printf(\"{label}: kernel count\\n\"); bad = 1; }}",
             *([f"  mica_set_prefetch(m, {label}_prefetch_hint);"] if _hints(km) else []),
             f"  CHECK(\"{label} run\", mica_run(m, {label}_code, {len(low.code)}, table, {n}, {label}_scalars, "
             f"threads, err, sizeof err));",
             f"  if (traced) bad |= check_trace(\"{label}\", m, {w}, {h});"]
    for i, st in enumerate(low.stores):
        t = mp.tensor(st.buffer)
        want = np.ascontiguousarray(expected[st.array]).tobytes()
        lines += [_bytes(f"{label}_out{i}", want), _words(f"{label}_out{i}_box", box(t, {}).words()),
                  _words(f"{label}_out{i}_rect", rect(st.region.rect, {}).words())]
        body += ["  {",
                 f"    void *got = calloc(1, {len(want)} + 8);",
                 f"    CHECK(\"{label} store {st.array}\", mica_host_copy(m, 1, got, {label}_out{i}_box, "
                 f"{label}_out{i}_rect, err, sizeof err));",
                 f"    if (memcmp(got, {label}_out{i}, {len(want)}) != 0) {{ printf(\"{label}: {st.array} differs "
                 f"with %d threads\\n\", threads); bad = 1; }}",
                 "    free(got);",
                 "  }"]
    body += ["  mica_mesh_free(m);", "  return bad;", "}"]
    renames = [f"#define {nm} {label}__{nm}" for nm in km.names]    # each module's kernels are extern
    if _hints(km):
        renames.append(f"#define mica_prefetch_hint {label}_prefetch_hint")
    kernels = "\n".join([f"#define mica_kernel_count {label}_kernel_count",
                         f"#define mica_kernel_get {label}_kernel_get", *renames, km.source])
    decl = f"int32_t {label}_kernel_count(void);\nmica_kernel_fn {label}_kernel_get(int32_t i);"
    if _hints(km):
        decl += f"\nvoid {label}_prefetch_hint(const uint8_t *next, int64_t bytes);"
    return "\n".join([decl, *lines, *body]), kernels


#: Events per core the traced runs keep (programs of a few steps record more on some cores: drops).
TRACE_CAP = 4

# The trace of a run (mica_rt.h "Trace"): every traced core's events follow each other from cycle 0 and,
# unless some were dropped, the last ends at the core's clock (the driver sets no work functions, so only
# exchanges move clocks); a core never keeps more than the cap.
TRACE_C = r"""
static int check_trace(const char *label, mica_mesh *m, int w, int h) {
  int32_t rect[4];
  int64_t n = mica_trace_counts(m, rect, NULL, NULL);
  if (n <= 0 || n != (int64_t)(rect[1] - rect[0]) * (rect[3] - rect[2])) { printf("%s: trace of %lld cores\n", label, (long long)n); return 1; }
  int64_t *counts = calloc((size_t)n, sizeof *counts), *dropped = calloc((size_t)n, sizeof *dropped), total = 0;
  mica_trace_counts(m, rect, counts, dropped);
  for (int64_t i = 0; i < n; i++) total += counts[i];
  mica_event *ev = calloc((size_t)total + 1, sizeof *ev);
  double *clock = calloc((size_t)w * (size_t)h, sizeof *clock);
  mica_trace_copy(m, ev);
  mica_core_timing(m, MICA_T_CLOCK, clock);
  int bad = 0;
  const mica_event *e = ev;
  for (int64_t i = 0; i < n; e += counts[i], i++) {
    int64_t x = rect[0] + i % (rect[1] - rect[0]), y = rect[2] + i / (rect[1] - rect[0]);
    double t = 0.0;
    for (int64_t k = 0; k < counts[i]; k++) {
      if (e[k].start != t || e[k].end <= e[k].start || e[k].comm < 0 || e[k].comm > e[k].end - e[k].start) bad = 1;
      t = e[k].end;
    }
    if (counts[i] > TRACE_CAP || (dropped[i] && counts[i] != TRACE_CAP) || (!dropped[i] && t != clock[y * w + x])) bad = 1;
  }
  if (bad) printf("%s: bad trace\n", label);
  free(counts); free(dropped); free(ev); free(clock);
  return bad;
}
"""


# -- the error paths --------------------------------------------------------------------------------------

def _fault_programs() -> list[tuple[str, np.ndarray, str]]:
    """(name, op code, a word the error message must hold), each run on a 3x2 mesh with a 64-byte arena."""
    one = oc.Box(0, 8, ())
    cell = oc.Rect.cell
    out = [
        ("unmatched receive", oc.encode([oc.Exchange(5, (oc.Route(0, oc.EAST, oc.RAMP, cell(1, 0)),), (),
                                                     (oc.Recv(0, cell(1, 0), one),))]), "op 5"),
        ("off the mesh", oc.encode([oc.Exchange(2, (oc.Route(1, oc.RAMP, oc.EAST, cell(2, 1)),),
                                                (oc.Send(1, 4, cell(2, 1), one),), ())]), "op 2"),
        ("missing kernel", oc.encode([oc.Compute(3, ((99, oc.Rect.const(0, 3, 0, 2)),))]), "kernel index 99"),
        ("too many hops", oc.encode([oc.Exchange(4, (oc.Route(0, oc.RAMP, oc.EAST, cell(0, 0)),
                                                     oc.Route(0, oc.WEST, oc.EAST, cell(1, 0)),
                                                     oc.Route(0, oc.WEST, oc.RAMP, cell(2, 0))),
                                                 (oc.Send(0, 1, cell(0, 0), one),),
                                                 (oc.Recv(0, cell(2, 0), one),))]), "op 4"),
        ("box outside the arena", oc.encode([oc.Exchange(6, (oc.Route(0, oc.RAMP, oc.RAMP, cell(0, 0)),),
                                                         (oc.Send(0, 0, cell(0, 0), oc.Box(4096, 8, ())),),
                                                         (oc.Recv(0, cell(0, 0), one),))]), "op 6"),
    ]
    good = oc.encode([oc.Loop(0, 3, (oc.Compute(7, ((0, oc.Rect.const(0, 3, 0, 2)),)),))])
    out.append(("truncated op code", good[:-5], ""))
    out.append(("garbage op code", np.array([3, 1, 1 << 40, 77, -5, 9], dtype=np.int64), ""))
    out.append(("unknown opcode", np.array([42, 0, 0], dtype=np.int64), ""))
    return out


FAULTS_C = r"""
static void k_touch(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
  (void)s; int64_t val = x * 100 + y * 10 + v[0]; memcpy(a + 8, &val, sizeof val);
}

static int expect_fault(const char *what, const int64_t *code, int64_t n, const char *word, int threads) {
  char err[256] = {0};
  mica_mesh *m = mica_mesh_new(3, 2, 4, 64, err, sizeof err);
  if (!m) { printf("%s: mesh: %s\n", what, err); return 1; }
  int bad = 0;
  if (mica_mesh_reserve(m, 0, 3, 0, 2, 64, err, sizeof err) || mica_mesh_commit(m, err, sizeof err)) {
    printf("%s: setup: %s\n", what, err); bad = 1;
  } else {
    mica_kernel_fn table[1] = {k_touch};
    int rc = mica_run(m, code, n, table, 1, NULL, threads, err, sizeof err);
    if (rc == 0 || err[0] == 0 || strstr(err, word) == NULL) {
      printf("%s (%d threads): expected a fault naming '%s', got rc=%d '%s'\n", what, threads, word, rc, err);
      bad = 1;
    }
  }
  mica_mesh_free(m);
  return bad;
}

static int setup_faults(void) {
  char err[256] = {0};
  int bad = 0;
  mica_mesh *m;
  if ((m = mica_mesh_new(0, 3, 4, 1024, err, sizeof err)) != NULL || !err[0]) { printf("0-wide mesh accepted\n"); bad = 1; }
  mica_mesh_free(m);
  err[0] = 0;
  if ((m = mica_mesh_new(3, -1, 4, 1024, err, sizeof err)) != NULL || !err[0]) { printf("negative mesh accepted\n"); bad = 1; }
  mica_mesh_free(m);
  err[0] = 0;
  /* a tiny error buffer must be respected (ASan checks the writes) */
  char tiny[4];
  if ((m = mica_mesh_new(0, 0, 4, 1024, tiny, sizeof tiny)) != NULL || strlen(tiny) >= sizeof tiny) { printf("tiny buffer\n"); bad = 1; }
  mica_mesh_free(m);
  m = mica_mesh_new(2, 2, 4, 128, err, sizeof err);
  if (!m) { printf("mesh: %s\n", err); return 1; }
  if (mica_mesh_reserve(m, 0, 2, 0, 2, 4096, err, sizeof err) == 0) { printf("arena larger than SRAM accepted\n"); bad = 1; }
  err[0] = 0;
  if (mica_mesh_reserve(m, 0, 2, 0, 2, 64, err, sizeof err) || mica_mesh_commit(m, err, sizeof err)) {
    printf("setup: %s\n", err); bad = 1;
  } else {
    double host[4] = {1, 2, 3, 4};
    int64_t box[15] = {60, 8, 1, 0, 4, 4};         /* 32 bytes at offset 60 of a 64-byte arena */
    int64_t rect[110] = {0};                       /* AFFINEs of 6 words: constant, 4 coefficients, divisor */
    for (int k = 0; k < 4; k++) { rect[6 * k] = 0; rect[24 + 6 * k] = 2; rect[48 + 6 * k] = 0; rect[72 + 6 * k] = 2; }
    for (int k = 0; k < 16; k++) rect[6 * k + 5] = 1;
    rect[96] = 1; rect[102] = 1; rect[103] = 1; rect[109] = 1;
    if (mica_host_copy(m, 0, host, box, rect, err, sizeof err) == 0) { printf("box outside the arena accepted\n"); bad = 1; }
    err[0] = 0;
    box[0] = 0; box[1] = 3;                        /* element size 3 */
    if (mica_host_copy(m, 0, host, box, rect, err, sizeof err) == 0) { printf("element size 3 accepted\n"); bad = 1; }
    err[0] = 0;
    box[1] = 8; box[2] = 9;                        /* rank 9 */
    if (mica_host_copy(m, 0, host, box, rect, err, sizeof err) == 0) { printf("rank 9 accepted\n"); bad = 1; }
    if (mica_run(m, NULL, 0, NULL, 0, NULL, 0, err, sizeof err) == 0) { printf("0 threads accepted\n"); bad = 1; }
  }
  mica_mesh_free(m);
  return bad;
}
"""


def _driver(parts: list[str], labels: list[str], faults) -> str:
    fault_lines, calls = [], []
    for i, (name, code, word) in enumerate(faults):
        fault_lines.append(_words(f"fault{i}", code))
        for threads in (1, 4):
            calls.append(f'  bad |= expect_fault("{name}", fault{i}, {len(code)}, "{word}", {threads});')
    runs = [f"  for (int t = 0; t < {len(THREADS)}; t++) bad |= run_{lb}(threads[t]);" for lb in labels]
    return "\n".join([
        "#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
        '#include "mica_rt.h"',
        '#define CHECK(what, call) do { if ((call) != 0) { printf("%s: %s\\n", what, err); bad = 1; '
        'mica_mesh_free(m); return bad; } } while (0)',
        f"#define TRACE_CAP {TRACE_CAP}", TRACE_C,
        *parts, FAULTS_C, *fault_lines,
        "int main(void) {",
        "  int bad = 0;",
        f"  static const int threads[] = {{{', '.join(map(str, THREADS))}}};",
        *runs, *calls,
        "  bad |= setup_faults();",
        '  printf(bad ? "FAILED\\n" : "ALL OK\\n");',
        "  return bad;",
        "}", ""])


@pytest.fixture(scope="module")
def driver_sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("sanitizers")
    parts, labels, files = [], [], []
    for label, compiled, inputs in _programs():
        part, kernels = _program_c(label, compiled, inputs)
        parts.append(part)
        labels.append(label)
        path = d / f"kernels_{label}.c"
        path.write_text(kernels)
        files.append(str(path))
    drv = d / "driver.c"
    drv.write_text(_driver(parts, labels, _fault_programs()))
    return d, [str(drv), str(RUNTIME_DIR / "mica_rt.c"), *files]


def _build_and_run(d, sources, flags, env_extra, name):
    exe = d / name
    cmd = [CC, "-O1", "-g", "-std=c11", "-pthread", *flags, "-I", str(RUNTIME_DIR), *sources, "-o", str(exe), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"build failed:\n{' '.join(cmd)}\n{done.stderr[-4000:]}"
    env = {**os.environ, **env_extra}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600, env=env)
    report = run.stdout[-3000:] + run.stderr[-6000:]
    assert run.returncode == 0, f"exit {run.returncode}:\n{report}"
    assert run.stdout.strip().endswith("ALL OK"), report
    for word in REPORT_WORDS:
        assert word not in run.stderr, report
    return run


def test_emulator_under_address_and_undefined_behaviour_sanitizers(driver_sources, tmp_path):
    why = sanitizer_support(ASAN, str(tmp_path))
    if why:
        pytest.skip(why)
    d, sources = driver_sources
    _build_and_run(d, sources, ASAN, {
        "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:"
                        "strict_string_checks=1:check_initialization_order=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}, "driver_asan")


def test_emulator_under_thread_sanitizer(driver_sources, tmp_path):
    why = sanitizer_support(TSAN, str(tmp_path))
    if why:
        pytest.skip(why)
    d, sources = driver_sources
    _build_and_run(d, sources, TSAN, {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"}, "driver_tsan")
