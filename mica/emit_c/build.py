"""Compiling C source into shared libraries, with a content-addressed, verified cache.

``compile_shared(source, name=..., flags=...)`` returns the path of a shared library built from
``source``. The library is cached under a key that is the SHA-256 of everything that determines the
output: :data:`FORMAT_VERSION`, the emulator's ABI (a hash of ``mica_rt.h``), the compiler (its resolved
path and its ``--version`` output), every compiler flag and the source text. A later call with the same
inputs returns the cached file without running the compiler. The emulator itself is a unity build
(``mica_rt.c`` includes the other parts of ``mica/runtime_c``): its source text carries
:func:`runtime_sources_digest`, a hash of every ``.c``/``.h`` file there, so editing any part rebuilds it.

Cache directory: ``$MICA_CACHE_DIR``, else ``$XDG_CACHE_HOME/mica`` (an absolute ``XDG_CACHE_HOME``
only, as the XDG specification asks), else ``~/.cache/mica``. It is created private (mode 0700). Since
the cache holds code that MICA loads into the process, a directory that other users could write to is
refused with :class:`mica.errors.EmitError`: the directory must be owned by the current user and not be
writable by group or others, and no directory above it may be world-writable without the sticky bit.
Compiler: ``$CC``, else ``cc``.

Every artifact ends with a trailer (``MICA-ARTIFACT <key> <sha256>``) holding its cache key and the
SHA-256 of the key and the library's bytes (a loader ignores bytes after the ELF image). A cached file is
used only if its trailer verifies, so a truncated, overwritten or misplaced entry is detected and rebuilt.
The library is written to a temporary file in the cache directory, given its trailer and moved into place
with :func:`os.replace`: concurrent processes building the same library both succeed, end up sharing one
file, and nobody ever sees a partial one. A failing compile raises :class:`EmitError` naming the library,
the compiler and its exit status, with the first lines of the compiler's output (all of it in
``detail``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from mica.errors import EmitError

#: Bumped whenever the way libraries are built or stored changes, to invalidate old cache entries.
#: (2: artifacts carry a verified trailer; the key covers the compiler's path and the runtime ABI.)
FORMAT_VERSION = "mica-build-2"

#: Flags every library is compiled with; ``flags`` given to :func:`compile_shared` come after them.
#: ``-fno-tree-loop-vectorize``: GCC 12.2's loop vectorizer vectorizes outer loops across a (1, 1)
#: dependence and returns wrong results (tests/fuzz/found/gcc-o3-miscompile-standalone.c, a plain C
#: reproducer). Correctness first: loop vectorization stays off (basic-block SLP vectorization stays on)
#: until kernels are written so that the compiler needs no loop vectorizer (register-blocked micro-kernels:
#: contractions are vectorized by hand in emit_c.kernels with GCC vector types, not by the loop vectorizer).
#: ``-ffp-contract=off``: no fused multiply-adds behind the program's back (ISO C mode already implies it
#: with GCC; spelled out because the blocked contractions promise results bit-identical to the plain loops).
#: ``-fno-tree-loop-distribution``: GCC 12.2's loop distribution (on at -O3) miscompiles plain C where a
#: statement reads an array that a later inner loop of the same body writes (fuzz bug 14,
#: tests/fuzz/found/gcc-o3-loop-distribution-standalone.c): the natively compiled reference and MICA's
#: kernels are built with the same flags, so both would be wrong alike.
#: ``-fno-tree-ch``: with the flags above, GCC 12.2's loop header copying lets a read move after a later
#: write of the same element in MICA's own generated loops (fuzz bug 15,
#: tests/fuzz/found/gcc-o3-header-copying-standalone.c); about 8% of emulated matmul FLOP/s.
DEFAULT_FLAGS: tuple[str, ...] = ("-O3", "-fno-tree-loop-vectorize", "-fno-tree-loop-distribution",
                                  "-ffp-contract=off", "-std=c11", "-fPIC", "-shared", "-pthread",
                                  "-fno-strict-aliasing", "-fno-tree-ch")

#: Environment variable that turns off ``-march=native`` for generated kernels (``0``, ``no``, ``off``).
NATIVE_ENV = "MICA_NATIVE_ARCH"

#: Lines of compiler output quoted in an :class:`EmitError`.
ERROR_LINES = 40

_COMPILE_TIMEOUT_S = 600

_RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime_c"
_RUNTIME_HEADER = _RUNTIME_DIR / "mica_rt.h"

#: Suffixes of the emulator's source files (:func:`runtime_sources_digest`).
RUNTIME_SUFFIXES = (".c", ".h")

_MAGIC = b"\n\0MICA-ARTIFACT "
_TRAILER_LEN = len(_MAGIC) + 64 + 1 + 64 + 1      # magic, key, space, digest, newline


def cache_dir() -> Path:
    """The directory holding compiled libraries (not created here)."""
    explicit = os.environ.get("MICA_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".cache"
    return base / "mica"


def compiler() -> str:
    """The C compiler command: ``$CC`` or ``cc``."""
    return os.environ.get("CC") or "cc"


@functools.lru_cache(maxsize=None)
def compiler_version(cc: str) -> str:
    """The resolved path and ``--version`` output of ``cc`` (part of the cache key); EmitError if it
    cannot run."""
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmitError(f"cannot run the C compiler {cc!r}: {exc}") from None
    if done.returncode != 0:
        raise EmitError(f"the C compiler {cc!r} failed to report its version: {_head(done.stderr)}")
    where = shutil.which(cc)
    return f"{os.path.realpath(where) if where else cc}\n{done.stdout}"


@functools.lru_cache(maxsize=None)
def runtime_abi() -> str:
    """SHA-256 of the emulator's interface ``mica_rt.h`` (kernels and the runtime must agree on it)."""
    try:
        return hashlib.sha256(_RUNTIME_HEADER.read_bytes()).hexdigest()
    except OSError:
        return "no-runtime-header"


def runtime_sources(directory: Path | None = None) -> list[Path]:
    """Every ``.c`` and ``.h`` file of the emulator's directory (``mica/runtime_c`` unless ``directory``
    is given, subdirectories included), sorted by relative path: the parts of the unity build
    ``mica_rt.c`` and its header."""
    root = Path(directory) if directory is not None else _RUNTIME_DIR
    files = [p for p in root.rglob("*") if p.suffix in RUNTIME_SUFFIXES and p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def runtime_sources_digest(directory: Path | None = None) -> str:
    """SHA-256 over the relative path and bytes of every file of :func:`runtime_sources`: part of the
    runtime library's cache key, so that editing any part of the emulator (or adding one) rebuilds it.
    Read on every call (not cached)."""
    root = Path(directory) if directory is not None else _RUNTIME_DIR
    h = hashlib.sha256()
    for path in runtime_sources(root):
        for data in (path.relative_to(root).as_posix().encode(), path.read_bytes()):
            h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguity between files
            h.update(data)
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def host_target(cc: str) -> str | None:
    """What ``-march=native`` means for ``cc`` on this machine: the compiler's resolved target options
    (``-march=native -Q --help=target``: the CPU model it detected and every instruction-set flag), or
    None when the compiler cannot target the host. Part of the cache key of every library built with
    ``-march=native``, so a cache shared between machines never hands one CPU's code to another."""
    try:
        done = subprocess.run([cc, "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout:
        return None
    return f"{platform.machine()}\n{done.stdout}"


def native_flags(cc: str | None = None) -> tuple[str, ...]:
    """``("-march=native",)`` when the compiler supports it and ``$MICA_NATIVE_ARCH`` does not turn it
    off, else ``()``."""
    if os.environ.get(NATIVE_ENV, "").strip().lower() in ("0", "no", "off", "false"):
        return ()
    return ("-march=native",) if host_target(cc or compiler()) is not None else ()


def cache_key(source: str, cc_version: str, flags: tuple[str, ...]) -> str:
    """SHA-256 (hex) of the inputs that determine a compiled library."""
    h = hashlib.sha256()
    for part in (FORMAT_VERSION, runtime_abi(), cc_version, *flags, source):
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguity between parts
        h.update(data)
    return h.hexdigest()


def compile_shared(source: str, *, name: str, flags: tuple[str, ...] = (), native: bool = False) -> Path:
    """Compiles C ``source`` into a shared library and returns its path (cached by content).

    ``name`` only makes the file name readable; ``flags`` are extra compiler arguments (include
    directories, defines, libraries), placed after the source file so that ``-l`` options link.
    ``native`` adds :func:`native_flags` (``-march=native``; the cache key then also covers
    :func:`host_target`, the CPU the code is built for).
    Raises :class:`EmitError` if the compiler fails or the cache directory is unusable or not private.
    """
    cc = compiler()
    arch = native_flags(cc) if native else ()
    extra = arch + tuple(flags)
    version = compiler_version(cc) + (f"\n{host_target(cc)}" if arch else "")
    key = cache_key(source, version, DEFAULT_FLAGS + extra)
    directory = cache_dir()
    if not directory.is_dir():
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise EmitError(f"cannot create the MICA cache directory {directory}: {exc}") from None
    check_private_dir(directory)
    target = directory / f"{_safe_name(name)}-{key[:24]}.so"
    if verify_artifact(target, key):
        return target
    _build(cc, source, extra, target, name, key)
    return target


# -- the cache directory ------------------------------------------------------------------------------

def check_private_dir(directory: Path) -> None:
    """Raises :class:`EmitError` unless ``directory`` is a directory only the current user can write to
    (owned by them, no group/other write bit) under parents that are not world-writable without the
    sticky bit (a sticky ``/tmp`` is fine: nobody else may rename entries there)."""
    fix = "set MICA_CACHE_DIR to a directory only you can write to"
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise EmitError(f"cannot use the MICA cache directory {directory}: {exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise EmitError(f"the MICA cache path {directory} is not a directory; {fix}")
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid != uid:
        raise EmitError(f"refusing the MICA cache directory {directory}: it is owned by uid {st.st_uid}, "
                        f"not by you (uid {uid}), and MICA loads code from it; {fix}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise EmitError(f"refusing the MICA cache directory {directory}: it is writable by "
                        f"{'others' if st.st_mode & stat.S_IWOTH else 'its group'} (mode "
                        f"{stat.S_IMODE(st.st_mode):04o}), and MICA loads code from it; run "
                        f"'chmod go-w {directory}' or {fix}")
    for parent in Path(os.path.realpath(directory)).parents:
        try:
            pst = os.stat(parent)
        except OSError:
            continue
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            raise EmitError(f"refusing the MICA cache directory {directory}: its parent {parent} is "
                            f"world-writable without the sticky bit (mode {stat.S_IMODE(pst.st_mode):04o}), "
                            f"so anyone could replace the cache; {fix}")


# -- artifacts -------------------------------------------------------------------------------------------

def _trailer(key: str, body: bytes) -> bytes:
    digest = hashlib.sha256(key.encode() + body).hexdigest()
    return _MAGIC + key.encode() + b" " + digest.encode() + b"\n"


def verify_artifact(path: Path, key: str) -> bool:
    """Whether ``path`` is a complete artifact built for ``key`` (its trailer matches its bytes)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False
    except OSError as exc:
        raise EmitError(f"cannot read the cached library {path}: {exc}") from None
    if len(data) <= _TRAILER_LEN:
        return False
    body, trailer = data[:-_TRAILER_LEN], data[-_TRAILER_LEN:]
    return trailer == _trailer(key, body)


def _build(cc: str, source: str, extra: tuple[str, ...], target: Path, name: str, key: str) -> None:
    """Runs the compiler into a temporary file next to ``target``, appends the trailer, then renames the
    file into place."""
    src_fd, src_path = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".c", dir=target.parent)
    out_fd, out_path = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".so.tmp", dir=target.parent)
    os.close(out_fd)
    try:
        with os.fdopen(src_fd, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(source)
        cmd = [cc, *DEFAULT_FLAGS, src_path, *extra, "-o", out_path]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                  timeout=_COMPILE_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmitError(f"cannot run the C compiler {cc!r} for {name}: {exc}") from None
        if done.returncode != 0:
            output = (done.stderr + done.stdout).strip()
            raise EmitError(
                f"C compilation of {name} failed ({cc}, exit {done.returncode}):\n{_head(output)}",
                detail=output,
            )
        try:
            with open(out_path, "r+b") as f:
                body = f.read()
                if not body:
                    raise EmitError(f"the C compiler {cc!r} produced an empty library for {name}")
                f.write(_trailer(key, body))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(out_path, 0o755)
            os.replace(out_path, target)
        except OSError as exc:
            raise EmitError(f"cannot store the compiled library {target}: {exc}") from None
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
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))[:64].lstrip(".") or "lib"
