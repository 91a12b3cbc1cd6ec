"""Every tt-metal name the Metalium back end writes, name by name, against the declarations in
``mica/emit_metalium/include``, each of which names the tt-metal file and commit it was read from.

Two sources find the names in the emitted files of the golden programs:

* the compiler: the files are compiled with ``-DMICA_API_TRACE``, which turns the ``MICA_API`` marker of
  every declaration read from tt-metal into ``[[deprecated("mica-api")]]``, so g++ reports each use of a
  tt-metal function, type or enumerator in an emitted file together with the line of its declaration;
* a scan of the emitted text (comments and strings removed): names in call position, qualified names
  (``X::y``), type names that start a declaration, designated-initializer fields (``.page_size = ``) and
  macros of the header (``tt_l1_ptr``, ``get_compile_time_arg_val``).

A scanned name must be one the compiler traced to a declaration, a macro or struct field declared in the
header, something the emitted files define themselves, or C++ / the standard library. A traced declaration
must carry its ``// <tt-metal path> @ <commit>`` comment. The test prints the table name -> header ->
tt-metal file @ commit (``pytest -s`` or ``-rP`` shows it). A name with no such declaration fails, as does
any compile error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from mica.emit_metalium import INCLUDE_DIR

from .programs import GOLDEN, rendered

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

#: the comment a declaration read from tt-metal carries: ``// <path> @ <40-hex commit>``
ANNOTATION = re.compile(r"^\s*// (tt_metal/\S+) @ ([0-9a-f]{40})\b")
_WARN = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):\d+: warning: '(?P<what>.*)' is deprecated: mica-api")
_NOTE = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):\d+: note: declared here")

#: C++ keywords and the standard library / C names the emitted host and kernels use without ``std::``
_CXX = set("""
    alignas alignof auto bool break case char const constexpr continue default delete do double else enum explicit
    extern false float for goto if inline int long namespace new nullptr operator private public reinterpret_cast
    return short signed sizeof static static_cast struct switch template this true typedef typename union unsigned
    using void volatile while const_cast dynamic_cast
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t uintptr_t
    NAN INFINITY stderr printf fprintf fabs fabsf fmax fmin fmaxf fminf sqrt sqrtf exp expf floor ceil isnan
    __builtin_memcpy
    main
""".split())
#: namespaces the emitted code names (the API's namespaces are checked through the names inside them)
_NAMESPACES = {"std", "tt", "tt_metal", "distributed", "ckernel", "reference"}
#: member functions of standard containers the emitted host calls
_STD_MEMBERS = {"data", "size", "resize", "push_back", "get", "begin", "end"}


def _strip(text: str) -> str:
    """The text without comments, string and character literals (same line structure)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])'", "''", text)


def _simple_name(what: str) -> str:
    """g++'s description of a deprecated entity -> its name with the API namespaces dropped
    (``'static std::shared_ptr<..> tt::tt_metal::distributed::MeshBuffer::create(..)'`` -> ``MeshBuffer::create``)."""
    what = re.sub(r" \[with .*\]$", "", what)
    if what.startswith("using "):
        return what.split()[1]
    m = re.match(r"template<.*> (?:struct|class) (\w+)$", what)
    if m:
        return m.group(1)
    head = what.split("(", 1)[0] if "(" in what else what
    name = head.split()[-1] if head.split() else head
    for ns in ("tt::tt_metal::distributed::", "tt::tt_metal::", "tt::", "ckernel::"):
        if name.startswith(ns):
            name = name[len(ns):]
    return name


@lru_cache(maxsize=None)
def _header_lines(path: str) -> tuple[str, ...]:
    return tuple(Path(path).read_text().splitlines())


def annotation_of(path: str, line: int) -> list[tuple[str, str]]:
    """The ``(tt-metal file, commit)`` comments of the declaration at ``path:line``: those of its paragraph
    (the lines above it up to a blank line), which for a class member or an enumerator is its class's."""
    lines = _header_lines(path)
    i = line - 1
    while i > 0 and lines[i - 1].strip():
        i -= 1
    found = []
    for text in lines[i:line]:
        m = ANNOTATION.match(text)
        if m:
            found.append((m.group(1), m.group(2)))
    return found


_HEADER_DECL = [
    re.compile(r"\s*#define (\w+)"),                                              # macros
    re.compile(r"\s*(?:class|struct|enum(?: class)?) MICA_API (\w+)"),            # types
    re.compile(r"\s*using (\w+) MICA_API ="),                                      # type aliases
    re.compile(r"\s+(?:MICA_API\s+)?[\w:<>, ]+?\s+(\w+)(?:\s*=[^;()]*)?;$"),        # struct fields
]


@lru_cache(maxsize=None)
def header_names() -> dict[str, list[tuple[str, int, tuple[tuple[str, str], ...]]]]:
    """Macros, types and struct fields of the header: name -> [(header, line, annotations)], annotated ones
    only. (The compiler's trace cannot see a macro or a designated-initializer field, and g++ does not report
    a deprecated type used in a functional cast ``T{...}``; those names are matched here by declaration.)"""
    out: dict[str, list] = {}
    for h in sorted(INCLUDE_DIR.rglob("*.h*")):
        for n, text in enumerate(_header_lines(str(h)), 1):
            for pattern in _HEADER_DECL:
                m = pattern.match(text)
                if m:
                    ann = tuple(annotation_of(str(h), n))
                    if ann:
                        out.setdefault(m.group(1), []).append((str(h.relative_to(INCLUDE_DIR)), n, ann))
                    break
    return out


def trace(files: dict[str, str], out: Path) -> tuple[dict[str, set], str]:
    """Compiles the emitted files with MICA_API_TRACE: ({name: {(header, line)}}, the compiler's errors)."""
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    sources = sorted(rel for rel in files if rel.endswith(".cpp"))
    r = subprocess.run([GXX, "-std=c++17", "-fsyntax-only", "-DMICA_API_TRACE", "-fdiagnostics-plain-output",
                        "-I", str(INCLUDE_DIR), "-I", "kernels", *sources], capture_output=True, text=True, cwd=out,
                       env={**os.environ, "LC_ALL": "C"})
    used: dict[str, set] = {}
    pending = None
    for line in r.stderr.splitlines():
        line = line.replace("\u2018", "'").replace("\u2019", "'")
        m = _WARN.match(line)
        if m:
            pending = m.group("what") if not Path(m.group("file")).is_absolute() else None
            continue
        m = _NOTE.match(line)
        if m and pending is not None:
            used.setdefault(_simple_name(pending), set()).add((m.group("file"), int(m.group("line"))))
            pending = None
    errors = "\n".join(ln for ln in r.stderr.splitlines() if ": error:" in ln)
    return used, errors


def scanned_names(files: dict[str, str]) -> dict[str, str]:
    """Names of the emitted text that are not the emitted files' own: {name: kind of use}."""
    text = "\n".join(_strip(t) for rel, t in sorted(files.items()) if rel.endswith((".cpp", ".h")))
    local = set(re.findall(r"\bstruct\s+(\w+)", text)) | set(re.findall(r"\bnamespace\s+(\w+)", text))
    local |= set(re.findall(r"^[ \t]*(?:static\s+|inline\s+|constexpr\s+)*[\w:<>]+[\s*&]+(\w+)\s*\([^;{}]*\)\s*\{",
                            text, flags=re.M))                                    # functions defined here
    local |= set(re.findall(r"(?<![=(,.>])\b(?!return\b|else\b|case\b)[A-Za-z_][\w:]*(?:<[^;(){}]*>)?[\s*&]+(\w+)\s*[(\[=;{,]",
                            text))                                                 # variables declared here
    local |= {n for n in re.findall(r"#define\s+(\w+)", text)}
    found: dict[str, str] = {}
    for m in re.finditer(r"(?<![.\w])(?<!->)(?<!::)\b([A-Za-z_]\w*)\s*(?:<[^;(){}<>]*(?:<[^;(){}<>]*>)?[^;(){}<>]*>)?\s*\(",
                         text):
        found.setdefault(m.group(1), "call")
    for m in re.finditer(r"\b([A-Za-z_]\w*)::([A-Za-z_]\w*)", text):
        if m.group(1) != "std":
            found.setdefault(m.group(1), "qualifier")
            found.setdefault(m.group(2), "qualified name")
    for m in re.finditer(r"^[ \t]*(?:const\s+|static\s+|constexpr\s+)*([A-Z]\w*)(?:<[^;]*?>)?\s+\w+\s*[=({;\[]", text,
                         flags=re.M):
        found.setdefault(m.group(1), "type")
    for m in re.finditer(r"[{,]\s*\.(\w+)\s*=", text):
        found.setdefault("." + m.group(1), "designated field")
    macros = {n for n, decls in header_names().items() if any("#define" in _header_lines(str(INCLUDE_DIR / d[0]))[d[1] - 1]
                                                              for d in decls)}
    for name in sorted(macros & set(re.findall(r"\b\w+\b", text))):
        found.setdefault(name, "macro")
    return {n: k for n, k in found.items()
            if n not in local and n not in _CXX and n not in _NAMESPACES and n not in _STD_MEMBERS}


def _match(name: str, used: dict[str, set]) -> list[tuple[str, str, str]]:
    """(header, tt-metal file, commit) of ``name``: a traced declaration (by full or last component) or a
    macro / field of the header."""
    out = []
    bare = name.lstrip(".")
    for traced, decls in used.items():
        if traced == bare or traced.split("::")[-1] == bare:
            for hdr, line in decls:
                for path, sha in annotation_of(hdr, line) or [("NO ANNOTATION", "")]:
                    out.append((str(Path(hdr).relative_to(INCLUDE_DIR)), path, sha))
    if not out:
        for hdr, _line, ann in header_names().get(bare, []):
            out += [(hdr, path, sha) for path, sha in ann]
    return sorted(set(out))


# stencil_forms: every stencil pass kind (sub_tiles, mul_tiles, the SFPU's add / mul / div / rsub by constants)
@pytest.mark.parametrize("name", GOLDEN + ("matmul_summa_bf16_wormhole", "stencil_forms_wormhole"))
def test_every_api_name_has_a_declaration_read_from_tt_metal(name, tmp_path):
    files = rendered(name)
    used, errors = trace(files, tmp_path)
    assert errors == ""
    assert used, "the trace found no tt-metal name at all"
    unannotated = sorted(n for n, decls in used.items() for hdr, line in decls if not annotation_of(hdr, line))
    assert unannotated == [], f"declarations without their tt-metal file and commit: {unannotated}"
    names = scanned_names(files)
    report, missing = [], []
    for n in sorted(set(names) | set(used)):
        matches = _match(n, used)
        if not matches:
            missing.append(f"{n} ({names.get(n, 'traced')})")
        for hdr, path, sha in matches:
            report.append(f"  {n:<40} {hdr:<45} {path} @ {sha[:12]}")
    print(f"\n{name}: {len(set(names) | set(used))} tt-metal names")     # the table: pytest -s (or -rP) shows it
    print("\n".join(report))
    assert missing == [], f"names the emitter writes with no declaration read from tt-metal: {missing}"


def test_a_name_the_header_does_not_declare_fails(tmp_path):
    """The old API is caught name by name: mm_init is neither traced nor declared, so it is reported."""
    files = dict(rendered("matmul_summa_wormhole"))
    path = "kernels/compute_c0.cpp"
    files[path] = files[path].replace("matmul_init(cb_A_recv, cb_B_recv);", "mm_init_short(cb_A_recv, cb_B_recv);", 1)
    used, errors = trace(files, tmp_path)
    assert "mm_init_short" in errors
    assert "mm_init_short" in scanned_names(files) and _match("mm_init_short", used) == []


def test_every_declaration_of_the_header_names_its_source():
    """Every MICA_API declaration in include/ has a ``// <tt-metal path> @ <commit>`` comment in its paragraph."""
    bad = []
    for h in sorted(INCLUDE_DIR.rglob("*.h*")):
        for n, text in enumerate(_header_lines(str(h)), 1):
            code = text.strip()
            if "MICA_API" in code and not code.startswith(("#", "//")) and not annotation_of(str(h), n):
                bad.append(f"{h.relative_to(INCLUDE_DIR)}:{n}")
    assert bad == []
