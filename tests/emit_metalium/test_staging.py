"""The host's staging code (emitted into host.cpp) puts every core's box into 32x32 tiles of four 16x16
faces exactly as the emulator stages it (``mica.native_sim.staging``) and reads outputs back losslessly.

The staging helpers are cut out of the emitted host.cpp, compiled with g++ and run on the host."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mica.meshir.ir import HostLoad
from mica.native_sim.staging import needs_staging, staged_load

from .programs import compiled, rendered

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def tilize(block: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """A 2-D block (zero-padded to rows x cols tiles) in the documented tile layout, as a flat array."""
    pad = np.zeros((rows * 32, cols * 32), np.float32)
    pad[:block.shape[0], :block.shape[1]] = block
    out = []
    for tr in range(rows):
        for tc in range(cols):
            t = pad[tr * 32:(tr + 1) * 32, tc * 32:(tc + 1) * 32]
            out += [t[:16, :16], t[:16, 16:], t[16:, :16], t[16:, 16:]]
    return np.concatenate([f.ravel() for f in out])


@pytest.mark.parametrize("name", ["matmul_interleaved_wormhole", "matmul_partial_wormhole", "gemv_ktree_wormhole"])
def test_host_staging_matches_the_emulator(name, tmp_path):
    prog = compiled(name)
    mp = prog.mesh_program
    host = rendered(name)["host.cpp"]
    helpers = host[host.index("}  // namespace reference") + len("}  // namespace reference"):host.index("int main()")]
    loads = [op for op, _ in mp.walk() if isinstance(op, HostLoad)]
    lines = ["#include <cstdio>", "#include <cstddef>", "#include <vector>", helpers, "int main() {"]
    rng = np.random.default_rng(0)
    arrays = {}
    for ld in loads:
        shape = prog.program.array(ld.array).shape
        arrays[ld.array] = rng.standard_normal(shape).astype(np.float32)
    for k, ld in enumerate(loads):
        t = mp.tensor(ld.buffer)
        box = next(ln.strip() for ln in host.splitlines()
                   if ln.strip().startswith("const Box box =") and host.index(ln) > host.index(f"host_load {ld.array} -> {ld.buffer}"))
        a = arrays[ld.array]
        lines += ["    {", f"        {box}", f"        std::vector<float> a{{{', '.join(repr(float(v)) + 'f' for v in a.ravel())}}};",
                  "        std::vector<float> tiles((size_t)box.pages * 1024);"]
        for y in range(ld.region.y0, ld.region.y1):
            for x in range(ld.region.x0, ld.region.x1):
                lines += [f"        stage(a, box, {x}, {y}, tiles.data(), true);",
                          f"        std::printf(\"{k} {x} {y}\");",
                          "        for (float v : tiles) std::printf(\" %.9g\", v);", "        std::printf(\"\\n\");",
                          # round trip: unstaging gives back the box's elements
                          "        { std::vector<float> b(a.size(), 0.0f); stage(b, box, %d, %d, tiles.data(), false);" % (x, y),
                          "          for (size_t i = 0; i < a.size(); ++i) if (b[i] != 0.0f && b[i] != a[i]) std::printf(\"BAD\\n\"); }"]
        lines.append("    }")
    lines += ["    return 0;", "}"]
    src = tmp_path / "stage.cpp"
    src.write_text("\n".join(lines))
    exe = tmp_path / "stage"
    subprocess.run([GXX, "-std=c++17", "-O0", "-o", str(exe), str(src)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert "BAD" not in out
    got = {}
    for line in out.splitlines():
        k, x, y, *vals = line.split()
        got[(int(k), int(x), int(y))] = np.array(vals, dtype=np.float32)
    from mica.emit_metalium.classify import tile_grid
    for k, ld in enumerate(loads):
        t = mp.tensor(ld.buffer)
        dims = [d.alloc for d in t.box]
        if needs_staging(t):                      # as the emulator stages it: core (x, y)'s buffer at [y, x]
            full = staged_load(arrays[ld.array], t, ld.region, mp.skew)[0]
        rows, cols = tile_grid(t)
        for y in range(ld.region.y0, ld.region.y1):
            for x in range(ld.region.x0, ld.region.x1):
                if needs_staging(t):
                    block = np.asarray(full[y, x]).reshape(dims)
                else:                             # a plain block: the emulator copies the box as it is
                    block = np.zeros(dims, np.float32)
                    lo = [d.tile * {"x": x, "y": y}[d.coord] if d.coord else 0 for d in t.box]
                    part = arrays[ld.array][tuple(slice(a, a + n) for a, n in zip(lo, dims))]
                    block[tuple(slice(0, n) for n in part.shape)] = part
                block = block.reshape(-1, 1) if block.ndim == 1 else block
                np.testing.assert_array_equal(got[(k, x, y)], tilize(block, rows, cols), err_msg=f"{ld.buffer} ({x},{y})")
