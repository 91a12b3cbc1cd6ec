"""``prog.emit("c", out_dir)``: the generated per-class C kernels and the MeshIR they run under."""

from __future__ import annotations

from pathlib import Path


def emit(compiled, out: Path) -> list[Path]:
    """Writes ``kernels.c`` (every region-class function the emulator loads), ``meshir.txt`` and
    ``schedule.json``; returns their paths."""
    module = compiled.kernel_module
    files = {
        "kernels.c": module.source,
        "meshir.txt": compiled.meshir,
        "schedule.json": compiled.schedule.to_json(),
    }
    paths = []
    for name, text in files.items():
        path = out / name
        path.write_text(text if text.endswith("\n") else text + "\n")
        paths.append(path)
    return paths
