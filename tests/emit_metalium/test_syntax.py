"""Every generated C++ file compiles with ``g++ -std=c++17 -fsyntax-only`` against the declarations of the
tt-metal API subset (``mica/emit_metalium/include``, read from the tt-metal headers); a malformed file does
not, nor does code written against the older API (``matmul_tiles`` with six arguments, ``mm_init``, the
single-device ``EnqueueWriteBuffer`` / ``EnqueueProgram``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mica.emit_metalium import INCLUDE_DIR

from .programs import PROGRAMS, rendered

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def _write(files: dict[str, str], out: Path) -> None:
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)


def syntax_errors(files: dict[str, str], out: Path) -> dict[str, str]:
    """{file: g++ diagnostics} of every .cpp that does not compile (one g++ call for all of them)."""
    _write(files, out)
    sources = sorted(rel for rel in files if rel.endswith(".cpp"))
    errors = {}
    flags = [GXX, "-std=c++17", "-fsyntax-only", "-Werror=return-type", "-I", str(INCLUDE_DIR), "-I",
             str(out / "kernels")]
    if subprocess.run(flags + [str(out / rel) for rel in sources], capture_output=True).returncode == 0:
        return errors                                      # all at once; file by file only to name failures
    for rel in sources:
        r = subprocess.run([GXX, "-std=c++17", "-fsyntax-only", "-Werror=return-type", "-I", str(INCLUDE_DIR),
                            "-I", str(out / "kernels"), str(out / rel)], capture_output=True, text=True)
        if r.returncode != 0:
            errors[rel] = r.stderr
    return errors


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_generated_sources_compile_against_the_api_header(name, tmp_path):
    files = rendered(name)
    assert "host.cpp" in files and any(f.startswith("kernels/compute_") for f in files)
    assert syntax_errors(files, tmp_path) == {}


def test_a_malformed_kernel_fails_the_syntax_check(tmp_path):
    files = dict(rendered("matmul_summa_wormhole"))
    broken = dict(files)
    # an unbalanced brace, and a call the API does not have
    broken["kernels/reader_c0.cpp"] = files["kernels/reader_c0.cpp"].replace("void kernel_main() {", "void kernel_main() {{", 1)
    broken["kernels/compute_c0.cpp"] = files["kernels/compute_c0.cpp"].replace("matmul_tiles(", "matmul_tile(", 1)
    broken["host.cpp"] = files["host.cpp"].replace("EnqueueMeshWorkload(cq, workload, false);",
                                                   "EnqueueMeshWorkload(cq, workload);", 1)
    broken = {k: v for k, v in broken.items() if k.endswith(".h") or broken[k] != files[k]}
    errors = syntax_errors(broken, tmp_path)
    assert set(errors) == {"kernels/reader_c0.cpp", "kernels/compute_c0.cpp", "host.cpp"}
    assert "matmul_tile" in errors["kernels/compute_c0.cpp"]


def test_the_header_keeps_kernel_kinds_apart(tmp_path):
    """A compute kernel cannot call the NoC API and a data-movement kernel cannot call matmul_tiles."""
    files = dict(rendered("matmul_summa_wormhole"))
    files["kernels/compute_c0.cpp"] = files["kernels/compute_c0.cpp"].replace(
        "void kernel_main() {", "void kernel_main() {\n    noc_async_read_barrier();", 1)
    files = {k: v for k, v in files.items() if k.endswith(".h") or k in ("kernels/compute_c0.cpp",
                                                                          "kernels/reader_c0.cpp")}
    errors = syntax_errors(files, tmp_path)
    assert set(errors) == {"kernels/compute_c0.cpp"}


@pytest.mark.parametrize("old, new", [
    # tt-metal v0.55-era calls the header no longer declares
    ("matmul_tiles(cb_A_recv, cb_B_recv, mt * 1 + kt, kt * 1 + nt, 0);",
     "matmul_tiles(cb_A_recv, cb_B_recv, mt * 1 + kt, kt * 1 + nt, 0, false);"),
    ("matmul_init(cb_A_recv, cb_B_recv);", "mm_init_short(cb_A_recv, cb_B_recv);"),
    ("compute_kernel_hw_startup<SrcOrder::Reverse>(cb_A_recv, cb_B_recv, cb_C);", "mm_init(cb_A_recv, cb_B_recv, cb_C);"),
])
def test_the_old_compute_api_fails_the_check(old, new, tmp_path):
    files = dict(rendered("matmul_summa_wormhole"))
    path = "kernels/compute_c0.cpp"
    assert old in files[path]
    files = {k: v for k, v in files.items() if k.endswith(".h")} | {path: files[path].replace(old, new, 1)}
    assert set(syntax_errors(files, tmp_path)) == {path}


def test_the_old_host_api_fails_the_check(tmp_path):
    files = dict(rendered("matmul_summa_wormhole"))
    host = files["host.cpp"]
    old = host.replace("distributed::EnqueueMeshWorkload(cq, workload, false);", "EnqueueProgram(cq, program, false);", 1)
    assert old != host
    errors = syntax_errors({"host.cpp": old}, tmp_path)
    assert set(errors) == {"host.cpp"} and "EnqueueProgram" in errors["host.cpp"]
