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
