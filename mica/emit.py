"""Back-end dispatch: :meth:`CompiledProgram.emit` writes one of the emitted forms of a compiled program.

Each back end is a package with ``emit(compiled, out_dir) -> list[pathlib.Path]`` that renders the
compiled program's MeshIR (never re-deriving the plan), so every back end implements the plan the
emulator runs.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .errors import EmitError

BACKENDS = {
    "c": "mica.emit_c.files",
    "csl": "mica.emit_csl",
    "metalium": "mica.emit_metalium",
}


def emit(compiled, kind: str, out_dir) -> list[Path]:
    """Writes ``compiled`` as ``kind`` (a key of :data:`BACKENDS`) into ``out_dir`` (created if missing)."""
    if kind not in BACKENDS:
        raise EmitError(f"unknown back end {kind!r}; choose one of {', '.join(sorted(BACKENDS))}")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmitError(f"cannot create output directory {out}: {exc.strerror}") from None
    module = importlib.import_module(BACKENDS[kind])
    return list(module.emit(compiled, out))
