"""Compiling C source into shared libraries, with a content-addressed cache.

``compile_shared(source, name=..., flags=...)`` returns the path of a shared library built from
``source``. The library is cached under a key that is the SHA-256 of everything that determines the
output: the source text, the compiler's ``--version`` output, every compiler flag and
:data:`FORMAT_VERSION`. A later call with the same inputs returns the cached file without running the
compiler.

Cache directory: ``$MICA_CACHE_DIR``, else ``$XDG_CACHE_HOME/mica``, else ``~/.cache/mica``.
Compiler: ``$CC``, else ``cc``.

The library is written to a temporary file in the cache directory and moved into place with
:func:`os.replace`, so concurrent processes building the same library both succeed and nobody ever
sees a partial file. A failing compile raises :class:`mica.errors.EmitError` carrying the first lines
of the compiler's output.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from mica.errors import EmitError

#: Bumped whenever the way libraries are built changes, to invalidate old cache entries.
FORMAT_VERSION = "mica-build-1"

#: Flags every library is compiled with; ``flags`` given to :func:`compile_shared` come after them.
DEFAULT_FLAGS: tuple[str, ...] = ("-O3", "-std=c11", "-fPIC", "-shared", "-pthread", "-fno-strict-aliasing")

#: Lines of compiler output quoted in an :class:`EmitError`.
ERROR_LINES = 40

_COMPILE_TIMEOUT_S = 600


def cache_dir() -> Path:
    """The directory holding compiled libraries (not created here)."""
    explicit = os.environ.get("MICA_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mica"


def compiler() -> str:
    """The C compiler command: ``$CC`` or ``cc``."""
    return os.environ.get("CC") or "cc"


@functools.lru_cache(maxsize=None)
def compiler_version(cc: str) -> str:
    """The ``--version`` output of ``cc`` (part of the cache key); EmitError if it cannot run."""
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmitError(f"cannot run the C compiler {cc!r}: {exc}") from None
    if done.returncode != 0:
        raise EmitError(f"the C compiler {cc!r} failed to report its version: {_head(done.stderr)}")
    return done.stdout


def cache_key(source: str, cc_version: str, flags: tuple[str, ...]) -> str:
    """SHA-256 (hex) of the inputs that determine a compiled library."""
    h = hashlib.sha256()
    for part in (FORMAT_VERSION, cc_version, *flags, source):
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguity between parts
        h.update(data)
    return h.hexdigest()


def compile_shared(source: str, *, name: str, flags: tuple[str, ...] = ()) -> Path:
    """Compiles C ``source`` into a shared library and returns its path (cached by content).

    ``name`` only makes the file name readable; ``flags`` are extra compiler arguments (include
    directories, defines, libraries), placed after the source file so that ``-l`` options link.
    Raises :class:`EmitError` if the compiler fails or the cache directory is unusable.
    """
    cc = compiler()
    extra = tuple(flags)
    key = cache_key(source, compiler_version(cc), DEFAULT_FLAGS + extra)
    directory = cache_dir()
    target = directory / f"{_safe_name(name)}-{key[:24]}.so"
    if target.exists():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmitError(f"cannot create the MICA cache directory {directory}: {exc}") from None
    _build(cc, source, extra, target, name)
    return target


def _build(cc: str, source: str, extra: tuple[str, ...], target: Path, name: str) -> None:
    """Runs the compiler into a temporary file next to ``target``, then renames it into place."""
    src_fd, src_path = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".c", dir=target.parent)
    out_fd, out_path = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".so.tmp", dir=target.parent)
    os.close(out_fd)
    try:
        with os.fdopen(src_fd, "w") as f:
            f.write(source)
        cmd = [cc, *DEFAULT_FLAGS, src_path, *extra, "-o", out_path]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmitError(f"cannot run the C compiler {cc!r} for {name}: {exc}") from None
        if done.returncode != 0:
            output = (done.stderr + done.stdout).strip()
            raise EmitError(
                f"C compilation of {name} failed ({cc}, exit {done.returncode}):\n{_head(output)}",
                detail=output,
            )
        os.replace(out_path, target)
    finally:
        for path in (src_path, out_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _head(text: str, lines: int = ERROR_LINES) -> str:
    """The first ``lines`` lines of ``text``, with a marker if some were cut."""
    all_lines = text.splitlines()
    cut = all_lines[:lines]
    if len(all_lines) > lines:
        cut.append(f"... ({len(all_lines) - lines} more lines)")
    return "\n".join(cut)


def _safe_name(name: str) -> str:
    """``name`` reduced to characters that are safe in a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "lib"
