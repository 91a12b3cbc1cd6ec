"""Saved files: one MICA object (a compiled program) in a single file, a header line and a pickle.

    MICA saved object\\n                                       the magic line
    {"format": 1, "kind": ..., "mica": ..., "sha256": ..., "records": {...}}\\n    the header (JSON, one line)
    <pickle, protocol 5>                                       the payload

``kind`` is the saved object's class; ``sha256`` the digest of the payload; ``records`` every MICA record
class (dataclass) the payload holds, with its field names. :func:`load_file` checks all of them before it
unpickles anything, and refuses with a :class:`~mica.errors.LoadError` naming the file: a file that is not
one (no magic line, a header that is not JSON), another :data:`FORMAT_VERSION`, a payload that does not
match its digest (truncated or edited), a record whose fields differ from this MICA's (saved by an older or
newer MICA: compile again), a pickle that fails or names anything but MICA's record classes and errors, and
an object of another kind. Objects are pickled as they are: their classes drop what they cache (isl objects,
generated C, mappingproxies) in ``__getstate__``, so a loaded object rebuilds those on first use.

Loading a file unpickles it, and unpickling can run code: load only files you (or someone you trust)
wrote. The checks above (the loader resolves nothing outside MICA's record classes) narrow that but are not
a sandbox.

Public API: :data:`FORMAT_VERSION`, :func:`save_file`, :func:`load_file`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import pickle
import sys
from pathlib import Path

from .errors import LoadError, MicaError

#: The version of the file layout and of the meaning of the pickled records; raise it whenever a record
#: keeps its fields but changes what they mean (a change of fields is caught by the header's ``records``).
FORMAT_VERSION = 1
MAGIC = b"MICA saved object\n"
_MAX_HEADER = 1 << 20        # bytes: a header line longer than this is not one


def _qualname(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _ours(module: str) -> bool:
    return module == "mica" or module.startswith("mica.")


class _Pickler(pickle.Pickler):
    """Records the field names of every MICA record class it pickles (the header's ``records``)."""

    def __init__(self, file):
        super().__init__(file, protocol=5)
        self.records: dict[str, list[str]] = {}

    def reducer_override(self, obj):
        cls = type(obj)
        if dataclasses.is_dataclass(cls) and _ours(cls.__module__):
            name = _qualname(cls)
            if name not in self.records:
                self.records[name] = [f.name for f in dataclasses.fields(cls)]
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    """Resolves MICA's record classes (dataclasses) and error classes only."""

    def find_class(self, module, name):
        if _ours(module):
            obj = super().find_class(module, name)
            if isinstance(obj, type) and (dataclasses.is_dataclass(obj) or issubclass(obj, MicaError)):
                return obj
        raise pickle.UnpicklingError(f"it names {module}.{name}, which is not a MICA record class")


def _version() -> str:
    return str(getattr(sys.modules.get("mica"), "__version__", "unknown"))


def save_file(obj, path) -> Path:
    """Writes ``obj`` to the file ``path`` (replaced whole: written beside it, then renamed) and returns the
    path. I/O failures raise the usual :class:`OSError`."""
    path = Path(path)
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    pickler.dump(obj)
    payload = buf.getvalue()
    header = {"format": FORMAT_VERSION, "kind": _qualname(type(obj)), "mica": _version(),
              "sha256": hashlib.sha256(payload).hexdigest(), "records": dict(sorted(pickler.records.items()))}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
            f.write(payload)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def load_file(path, kind: type):
    """The object of class ``kind`` saved in ``path`` by :func:`save_file`; :class:`LoadError` when the file
    is not one, is of another format version or MICA, or is damaged (see the module docstring). A missing
    or unreadable file raises the usual :class:`OSError`."""
    data = Path(path).read_bytes()
    what = f"{path} is not a saved MICA program"
    if not data.startswith(MAGIC):
        raise LoadError(f"{what} (it does not start with the line {MAGIC.decode().strip()!r})")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_HEADER)
    try:
        if end < 0:
            raise ValueError("no header line")
        header = json.loads(data[len(MAGIC):end])
        fmt, digest, records = header["format"], header["sha256"], header["records"]
        saved_by, saved_kind = str(header.get("mica", "unknown")), header["kind"]
        if not isinstance(records, dict):
            raise ValueError("records is not a mapping")
    except (ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"{path}: damaged MICA file: its header cannot be read ({exc})") from None
    if type(fmt) is not int or fmt != FORMAT_VERSION:
        raise LoadError(f"{path} was saved in MICA file format {fmt!r} (by MICA {saved_by}); this MICA reads format "
                        f"{FORMAT_VERSION} only: compile the program again and save it")
    payload = data[end + 1:]
    if hashlib.sha256(payload).hexdigest() != digest:
        raise LoadError(f"{path}: damaged MICA file: its contents do not match their checksum "
                        f"(truncated or modified after saving)")
    if saved_kind != _qualname(kind):
        raise LoadError(f"{path} holds a {saved_kind}, not a {_qualname(kind)}")
    for name, fields in records.items():
        now = _fields_now(name)
        if now != fields:
            was = ", ".join(map(str, fields)) if isinstance(fields, list) else repr(fields)
            raise LoadError(f"{path} was saved by MICA {saved_by}, whose record {name} had the fields ({was}); "
                            f"this MICA's " + (f"has ({', '.join(now)})" if now is not None else "has no such record")
                            + ": compile the program again and save it")
    try:
        obj = _Unpickler(io.BytesIO(payload)).load()
    except Exception as exc:       # whatever a damaged pickle raises becomes one LoadError
        raise LoadError(f"{path}: damaged MICA file: its contents cannot be read "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(obj, kind):
        raise LoadError(f"{path} holds a {type(obj).__name__}, not a {kind.__name__}")
    return obj


def _fields_now(name: str) -> list[str] | None:
    """The field names of record class ``module:qualname`` in this MICA, or None when it has no such class."""
    module, _, qual = name.partition(":")
    if not _ours(module):
        return None
    try:
        __import__(module)
        obj = sys.modules[module]
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        return None
    return [f.name for f in dataclasses.fields(obj)]
