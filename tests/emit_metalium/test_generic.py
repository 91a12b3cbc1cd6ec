"""The generic path computes what the emulator computes: its loop nest, cut out of the emitted reader
kernel, is compiled with g++ and run per core on tilized boxes, and the untilized result is compared with
the emulator's run of the same program."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from mica.emit_metalium.classify import tile_grid

from .programs import compiled, rendered
from .test_staging import tilize

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def untilize(flat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    out = np.zeros((rows * 32, cols * 32), np.float32)
    k = 0
    for tr in range(rows):
        for tc in range(cols):
            for fr, fc in ((0, 0), (0, 16), (16, 0), (16, 16)):
                r0, c0 = tr * 32 + fr, tc * 32 + fc
                out[r0:r0 + 16, c0:c0 + 16] = flat[k:k + 256].reshape(16, 16)
                k += 256
    return out


def test_generic_loops_match_the_emulator(tmp_path):
    name = "triangle_sqrt_wormhole"
    prog, files = compiled(name), rendered(name)
    mp = prog.mesh_program
    reader = files["kernels/reader_c0.cpp"]
    block = reader[reader.index("        // generic path"):reader.index("    // Everything is computed")]
    block = block[:block.rindex("}")]                       # drop the closing brace of the rect test
    cbs = dict(re.findall(r"constexpr uint32_t (cb_\w+) = (\d+);", reader))
    rng = np.random.default_rng(3)
    A, B, C = (rng.standard_normal((70, 70)).astype(np.float32) for _ in range(3))
    want = prog.run({"A": A, "B": B, "C": C}).outputs["C"]
    tensors = {t.name: t for t in mp.tensors}
    arrays = {"A": A, "B": B, "C": C}
    mesh_h = files["kernels/mica_mesh.h"]
    src = [mesh_h, "#include <cstdio>", "#include <vector>", "static std::vector<float> cb[32];",
           "static uint32_t get_write_ptr(uint32_t i) { return (uint32_t)i; }",
           "#define reinterpret_cast static_cast",                # addresses are CB numbers here
           "template <typename T> struct Ptr { uint32_t i; float& operator[](int64_t k) const { return cb[i][k]; } };",
           "void run(int32_t my_x, int32_t my_y) {",
           block.replace("float* const", "const Ptr<float>").replace("reinterpret_cast<float*>(", "Ptr<float>{")
                .replace("(get_write_ptr(", "(get_write_ptr(").replace("));  //", ")};  //"),
           "}", "int main() {"]
    for n, idx in cbs.items():
        src.append(f"    const uint32_t {n} = {idx}; (void){n};")
    got = np.zeros((70, 70), np.float32)
    for y in range(2):
        for x in range(2):
            for n in ("A", "B", "C"):
                t = tensors[n]
                rows, cols = tile_grid(t)
                block_ = arrays[n][35 * y:35 * y + 35, 35 * x:35 * x + 35]
                data = ", ".join(f"{float(v).hex()}f" for v in tilize(block_, rows, cols))
                src.append(f"    cb[{n and cbs['cb_' + n]}] = std::vector<float>{{{data}}};")
            src += [f"    run({x}, {y});", f"    std::printf(\"%d %d\", {x}, {y});",
                    f"    for (float v : cb[{cbs['cb_C']}]) std::printf(\" %.9g\", v);", "    std::printf(\"\\n\");"]
    src += ["    return 0;", "}"]
    text = "\n".join(src).replace("#pragma once", "")
    # the block declares its CB names as locals of kernel_main in the real kernel: give them file scope
    text = text.replace("void run(int32_t my_x, int32_t my_y) {",
                        "\n".join(f"static const uint32_t {n} = {i};" for n, i in cbs.items())
                        + "\nvoid run(int32_t my_x, int32_t my_y) {")
    text = text.replace("int main() {\n" + "\n".join(f"    const uint32_t {n} = {i}; (void){n};" for n, i in cbs.items()),
                        "int main() {")
    (tmp_path / "g.cpp").write_text(text)
    r = subprocess.run([GXX, "-std=c++17", "-O1", "-o", str(tmp_path / "g"), str(tmp_path / "g.cpp")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]
    out = subprocess.run([str(tmp_path / "g")], check=True, capture_output=True, text=True).stdout
    rows, cols = tile_grid(tensors["C"])
    for line in out.splitlines():
        x, y, *vals = line.split()
        x, y = int(x), int(y)
        box = untilize(np.array(vals, np.float32), rows, cols)[:35, :35]
        got[35 * y:35 * y + 35, 35 * x:35 * x + 35] = box
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, C)                   # it did compute something


SOFT_MATH_CHECK = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
static int64_t ordered(float f) { int32_t i; std::memcpy(&i, &f, 4); return i < 0 ? (int64_t)INT32_MIN - i : i; }
static float bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static bool same(float a, float b) { return (a != a && b != b) || std::memcmp(&a, &b, 4) == 0 || (a == b); }
// ulps between two results; NaN against NaN is 0, NaN against a number far
static int64_t ulps(float a, float b) {
    if (a != a || b != b) return (a != a && b != b) ? 0 : (int64_t)1 << 40;
    const int64_t d = ordered(a) - ordered(b);
    return d < 0 ? -d : d;
}
int main() {
    int64_t worst = 0; float at = 0; long n = 0, bad_minmax = 0;
    int64_t worst_exact[5] = {0}, worst_glibc[5] = {0};
    for (uint64_t u = 0; u <= 0xffffffffull; u += 1021) {
        const float a = bits((uint32_t)u), b = bits((uint32_t)(u * 2654435761ull));
        if (!same(mica_fmaxf(a, b), fmaxf(a, b)) || !same(mica_fminf(a, b), fminf(a, b))) ++bad_minmax;
        if (a != a) { if (mica_expf(a) == mica_expf(a)) return 3; continue; }
        int64_t d = ordered(mica_expf(a)) - ordered(expf(a));
        if (d < 0) d = -d;
        if (d > worst) { worst = d; at = a; }
        ++n;
        // log, tanh, erf, pow (two exponents: a spread float, and one of modest size with either sign)
        const float y = bits((uint32_t)((u * 40503u) >> 7) | ((u & 1) ? 0x80000000u : 0) | 0x3c000000u);
        const float mine[5] = {mica_logf(a), mica_tanhf(a), mica_erff(a), mica_powf(a, b), mica_powf(a, y)};
        const float exact[5] = {(float)logl(a), (float)tanhl(a), (float)erfl(a), (float)powl(a, b), (float)powl(a, y)};
        const float glibc[5] = {logf(a), tanhf(a), erff(a), powf(a, b), powf(a, y)};
        for (int i = 0; i < 5; ++i) {
            const int64_t e = ulps(mine[i], exact[i]), g = ulps(mine[i], glibc[i]);
            if (e > worst_exact[i]) worst_exact[i] = e;
            if (g > worst_glibc[i]) worst_glibc[i] = g;
        }
    }
    const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f, 1e-30f, -1e-30f,
                              16777216.0f, -16777217.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    for (float a : specials) {
        const float one[4] = {mica_logf(a), mica_tanhf(a), mica_erff(a), 0.0f};
        const float ref[4] = {logf(a), tanhf(a), erff(a), 0.0f};
        for (int i = 0; i < 3; ++i) if (ulps(one[i], ref[i]) > 1 || (one[i] == 0 && std::signbit(one[i]) != std::signbit(ref[i]))) return 4;
        for (float b : specials) {                 // C99 Annex F's special cases of pow, signed zeros included
            const float m = mica_powf(a, b), r = powf(a, b);
            if (ulps(m, r) > 1 || (m == 0 && std::signbit(m) != std::signbit(r))) {
                std::printf("pow(%a, %a) = %a, libm %a\n", a, b, m, r);
                return 5;
            }
        }
    }
    const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 88.7228f, 88.72284f, -87.3365f, -100.0f, -103.9720f, -103.9721f,
                           -150.0f, 1e-30f, -1e-30f, INFINITY, -INFINITY};
    for (float a : edges) {
        int64_t d = ordered(mica_expf(a)) - ordered(expf(a));
        if (d < 0) d = -d;
        if (d > worst) { worst = d; at = a; }
    }
    std::printf("%ld values, worst %lld ulp at %a, fmax/fmin differences %ld\n", n, (long long)worst, at, bad_minmax);
    std::printf("log tanh erf pow pow': worst ulp against the exact value");
    for (int i = 0; i < 5; ++i) std::printf(" %lld", (long long)worst_exact[i]);
    std::printf(", against glibc");
    for (int i = 0; i < 5; ++i) std::printf(" %lld", (long long)worst_glibc[i]);
    std::printf("\n");
    return 0;
}
"""


def test_soft_math_matches_the_host_libm(tmp_path):
    """``mica_expf`` (no libm on the data-movement RISC-V) is within 1 ulp of the host's expf on every 1,021st
    float and at the edges (overflow to inf, subnormal results, underflow to 0, NaN); ``mica_fmaxf`` /
    ``mica_fminf`` give fmaxf / fminf's values, quiet and signaling NaN arguments included. ``mica_logf``,
    ``mica_tanhf``, ``mica_erff`` and ``mica_powf`` are correctly rounded (the long double value rounded to float)
    on the same floats, pow against a second float spread over the whole range and against exponents of modest
    size of both signs, and within 1 ulp of glibc (tanhf: 2, glibc's own error); C99's special values of pow
    (zeros of both signs, infinities, NaN, 1, odd and even integer exponents) are libm's, signs of zero included.
    Compiled without FMA contraction, as the software floating point of the RISC-V computes."""
    from mica.emit_metalium.kernels import MESH_H
    (tmp_path / "mica_mesh.h").write_text(MESH_H)
    (tmp_path / "check.cpp").write_text('#include "mica_mesh.h"\n' + SOFT_MATH_CHECK)
    exe = tmp_path / "check"
    r = subprocess.run([GXX, "-O2", "-std=c++17", "-ffp-contract=off", "-I", str(tmp_path), str(tmp_path / "check.cpp"),
                        "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"(\d+) values, worst (\d+) ulp at (\S+), fmax/fmin differences (\d+)", r.stdout)
    assert m and int(m.group(1)) > 4_000_000, r.stdout
    assert int(m.group(2)) <= 1, r.stdout
    assert int(m.group(4)) == 0, r.stdout
    m = re.search(r"against the exact value (\d+) (\d+) (\d+) (\d+) (\d+), against glibc (\d+) (\d+) (\d+) (\d+) (\d+)",
                  r.stdout)
    assert m, r.stdout
    exact, glibc = [int(v) for v in m.groups()[:5]], [int(v) for v in m.groups()[5:]]
    assert exact == [0, 0, 0, 0, 0], r.stdout
    assert glibc[1] <= 2 and max(glibc[0], *glibc[2:]) <= 1, r.stdout
