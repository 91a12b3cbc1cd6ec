"""Whether an emulated mesh keeps its arenas in host memory or in a spill file.

A mesh's arenas (the emulated SRAM its program reserves) live in one pooled allocation. Emulating many large
programs at once -- a LLaMA-3-8B decoder's 32 layers, each resident on a 125x165 region with about 1 GB of
arenas -- can need more than the host has; the kernel would then kill the process. A *spilled* mesh backs
its pool with a shared mapping of a temporary file instead: the kernel pages the arenas out to the file under
memory pressure and back in when a run touches them. Runs compute the same bits either way; only the host's
wall time differs.

:data:`SPILL_ENV` chooses: ``auto`` (the default) spills a mesh whose pool is larger than the host's available
memory less :data:`SPILL_RESERVE_BYTES` at the moment it is committed (the first meshes of many stay in memory,
the later ones spill); ``always`` and ``never`` force it. The file goes to :data:`SPILL_DIR_ENV`, else the
temporary directory; it has no name (it is removed when the mesh is freed or the process ends).

Public API: :func:`spill_mode`, :func:`available_memory`, :func:`should_spill`, :func:`spill_file`.
"""

from __future__ import annotations

import os
import tempfile

from ..errors import SimError

#: Environment variable choosing when meshes spill: ``auto`` (default), ``always`` or ``never``.
SPILL_ENV = "MICA_SPILL"
#: Environment variable naming the directory of spill files (default: :func:`tempfile.gettempdir`).
SPILL_DIR_ENV = "MICA_SPILL_DIR"
SPILL_MODES = ("auto", "always", "never")
#: Host memory ``auto`` leaves free for everything but the arenas (the process, its inputs, the page cache).
SPILL_RESERVE_BYTES = 2 << 30


def spill_mode() -> str:
    """The mode :data:`SPILL_ENV` sets (``auto`` when unset); a :class:`SimError` naming the variable for
    any other value."""
    mode = os.environ.get(SPILL_ENV, "auto").strip().lower() or "auto"
    if mode not in SPILL_MODES:
        raise SimError(f"{SPILL_ENV}={os.environ[SPILL_ENV]!r}: expected one of {', '.join(SPILL_MODES)}")
    return mode


def available_memory() -> int | None:
    """Bytes of host memory available to new allocations without swapping (Linux's ``MemAvailable``; else
    the free physical pages), or None when the system tells neither."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def should_spill(pool_bytes: int, mode: str | None = None, available: int | None = -1) -> bool:
    """Whether a mesh whose arenas take ``pool_bytes`` spills, under ``mode`` (default :func:`spill_mode`)
    with ``available`` bytes of host memory (default :func:`available_memory`; None: unknown, so ``auto``
    keeps the arenas in memory). An empty pool never spills."""
    mode = spill_mode() if mode is None else mode
    if pool_bytes <= 0 or mode == "never":
        return False
    if mode == "always":
        return True
    available = available_memory() if available == -1 else available
    return available is not None and pool_bytes > available - SPILL_RESERVE_BYTES


def spill_file():
    """A new, empty, nameless read-write file in :data:`SPILL_DIR_ENV` (else the temporary directory) to
    back a mesh's arenas; a :class:`SimError` naming the directory when it cannot be made."""
    directory = os.environ.get(SPILL_DIR_ENV) or tempfile.gettempdir()
    try:
        return tempfile.TemporaryFile(dir=directory, prefix="mica-arenas-")
    except OSError as exc:
        raise SimError(f"cannot make a spill file for the mesh's arenas in {directory!r} ({SPILL_DIR_ENV}): "
                       f"{exc.strerror or exc}") from None
