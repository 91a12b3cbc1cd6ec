"""C preprocessing for the front end: ``#define``, ``#include``, ``#if`` through the system C preprocessor,
with every line of the result traced back to the file and line it came from.

    pre = preprocess_text(text, "gemm.c", defines={"N": 200}, include_dirs=["include"])
    pre.text                 # what the parser reads: preprocessed C with its line markers blanked out
    pre.origin(12)           # ('gemm.c', 7): where line 12 of pre.text was written
    pre.in_main_file(12)     # True unless line 12 came from an included header

The preprocessor is ``$MICA_CPP`` if set (a command, e.g. ``clang -E``), else ``cpp``, else ``cc -E`` /
``gcc -E`` / ``clang -E`` (the first on ``PATH``). Text that only holds ``#pragma`` lines and line markers
needs none: :func:`needs_preprocessing` says when it is run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import AffineError

#: Directives that only the preprocessor can carry out. ``#pragma`` lines and line markers are read as they
#: are, and ``#include <header>`` of a system header alone is blanked (the front end knows the names
#: ``<math.h>`` and ``<stdint.h>`` declare), so such text needs no preprocessor.
_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*(define|undef|include[ \t]*"|include_next|if|ifdef|ifndef|elif|else|'
                        r'endif|error|warning|line[ \t]+\D)', re.M)
#: A line marker ``# 12 "file.c" 1 3`` (GNU) or ``#line 12 "file.c"``.
_MARKER = re.compile(r'^[ \t]*#[ \t]*(?:line[ \t]+)?(\d+)[ \t]+"((?:[^"\\]|\\.)*)"')
_STDIN = "<stdin>"
TIMEOUT_S = 60


@dataclass(frozen=True)
class Preprocessed:
    """Preprocessed text and where each of its lines came from: ``lines[k]`` is the ``(file, line)`` of
    line ``k + 1`` of ``text`` (``main`` is the name of the file that was preprocessed)."""

    text: str
    lines: tuple[tuple[str, int], ...]
    main: str

    def origin(self, line: int) -> tuple[str, int]:
        """``(file, line)`` where line ``line`` (1-based) of :attr:`text` was written."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return (self.main, line)

    def in_main_file(self, line: int) -> bool:
        """Whether line ``line`` of :attr:`text` comes from the main file (not from an included one)."""
        return self.origin(line)[0] == self.main


def needs_preprocessing(text: str) -> bool:
    """Whether ``text`` has a directive only a preprocessor can carry out (``#define``, ``#include "file"``,
    ``#if``...); ``#pragma`` lines, line markers and ``#include <header>`` are not such directives."""
    return bool(_DIRECTIVE.search(text))


def unprocessed(text: str, filename: str) -> Preprocessed:
    """``text`` as it is, each line its own origin (for text that needs no preprocessing)."""
    n = text.count("\n") + 1
    return Preprocessed(text, tuple((filename, k) for k in range(1, n + 1)), filename)


def preprocessor_command() -> list[str]:
    """The preprocessor's command line (without arguments); :class:`AffineError` when there is none."""
    env = os.environ.get("MICA_CPP", "").strip()
    if env:
        return shlex.split(env)
    for cmd in (["cpp"], ["cc", "-E"], ["gcc", "-E"], ["clang", "-E"]):
        if shutil.which(cmd[0]):
            return cmd
    raise AffineError("the C source has preprocessor directives (#define, #include, #if) and no C "
                      "preprocessor was found (cpp, cc, gcc, clang on PATH, or $MICA_CPP); install one, or "
                      "preprocess the file first (cpp file.c > file.i)")


def _define_flag(name, value) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise AffineError(f"a macro name must be a C identifier, got {name!r}")
    if value is None or value is True:
        return f"-D{name}"
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AffineError(f"macro {name}: its value must be a number or C text, got {type(value).__name__}")
    return f"-D{name}={value}"


def preprocess_text(text: str, filename: str = "<source>", *, defines=None, include_dirs=()) -> Preprocessed:
    """``text`` run through the C preprocessor with ``defines`` (``{name: value}``; a value of None or True
    defines the name as ``1``, as ``-DNAME`` does) and ``include_dirs`` searched for ``#include`` (after
    the directory of ``filename`` when it is a path). Line markers are blanked, so the result parses with
    the front end; :meth:`Preprocessed.origin` maps its lines back. A preprocessor error (a missing header,
    an unterminated ``#if``, ``#error``) is an :class:`AffineError` carrying the preprocessor's own
    ``file:line:`` message, with the source's name in place of ``<stdin>``."""
    cmd = preprocessor_command()
    flags = [_define_flag(k, v) for k, v in (defines or {}).items()]
    dirs = list(include_dirs or ())
    parent = Path(filename).parent if filename and not filename.startswith("<") else None
    if parent is not None and parent.is_dir():
        dirs.insert(0, str(parent))
    flags += [f"-I{d}" for d in dirs]
    try:
        done = subprocess.run([*cmd, "-x", "c", *flags, "-"], input=text, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AffineError(f"{filename}:1:1: the C preprocessor ({' '.join(cmd)}) failed to run: {exc}",
                          location=(filename, 1, 1)) from None
    if done.returncode != 0:
        msg = done.stderr.replace(_STDIN, filename).strip() or f"exit status {done.returncode}"
        m = re.search(re.escape(filename) + r":(\d+):(?:(\d+):)?", msg)
        loc = (filename, int(m.group(1)), int(m.group(2) or 1)) if m else (filename, 1, 1)
        first = next((ln for ln in msg.splitlines() if "error" in ln), msg.splitlines()[0])
        raise AffineError(f"{loc[0]}:{loc[1]}:{loc[2]}: the C preprocessor refused the source: "
                          f"{first.split(': ', 1)[-1] if first.startswith(filename) else first}",
                          detail=msg, location=loc)
    return _traced(done.stdout, filename)


def _traced(out: str, filename: str) -> Preprocessed:
    """Preprocessor output ``out`` with its line markers blanked and every line's origin recorded."""
    lines = out.split("\n")
    origins, kept = [], []
    where, at = filename, 1
    for ln in lines:
        m = _MARKER.match(ln)
        if m:
            origins.append((where, at))
            kept.append("")
            name = m.group(2).encode().decode("unicode_escape") if "\\" in m.group(2) else m.group(2)
            where, at = (filename if name == _STDIN else name), int(m.group(1))
            continue
        origins.append((where, at))
        kept.append(ln)
        at += 1
    return Preprocessed("\n".join(kept), tuple(origins), filename)


def prepare(text: str, filename: str, *, defines=None, include_dirs=(), preprocess: bool | None = None
            ) -> Preprocessed:
    """``text`` ready for the parser: preprocessed when ``preprocess`` is True, or when it is None and
    either ``defines``/``include_dirs`` are given or :func:`needs_preprocessing` says so; else as it is."""
    if not isinstance(text, str):
        return unprocessed("", filename)           # the parser reports the wrong type
    if preprocess is None:
        preprocess = bool(defines) or bool(include_dirs) or needs_preprocessing(text)
    if not preprocess:
        if defines or include_dirs:
            raise AffineError(f"{filename}:1:1: defines and include_dirs need preprocess=True (or None)",
                              location=(filename, 1, 1))
        return unprocessed(text, filename)
    return preprocess_text(text, filename, defines=defines, include_dirs=include_dirs)


def relocated(exc, pre: Preprocessed):
    """``exc`` (a :class:`~mica.errors.MicaError` located ``file:line:col:`` in ``pre.text``) with its
    location and message prefix moved to the file and line the text came from; ``exc`` itself, changed."""
    loc = getattr(exc, "location", None)
    if not loc or loc[0] != pre.main or not exc.args or not isinstance(exc.args[0], str):
        return exc
    name, line = pre.origin(loc[1])
    if (name, line) == (loc[0], loc[1]):
        return exc
    old = f"{loc[0]}:{loc[1]}:{loc[2]}:"
    msg = exc.args[0]
    if msg.startswith(old):
        msg = f"{name}:{line}:{loc[2]}:" + msg[len(old):]
    exc.args = (msg, *exc.args[1:])
    exc.location = (name, line, loc[2])
    return exc
