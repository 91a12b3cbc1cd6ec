"""The emulator's C API is written once, in mica/runtime_c/mica_rt.h.

The cffi declarations of mica.native_sim.runtime are read from the header (``header_cdef``); these tests
check that they hold every declaration and #define of the header, that ``header_cdef`` refuses what cffi
cannot take, and that the kernel modules emit_c generates (which repeat the header's kernel and work
function typedefs, and define the functions a kernel module exports) agree with the header: the C
compiler itself compares them, the header included before the generated source."""

import re
import shutil
import subprocess

import pytest
from pycparser import c_ast, c_generator, c_parser

import mica
from mica.emit_c.build import compiler
from mica.emit_c.work import emit_work_module
from mica.errors import EmitError
from mica.native_sim import runtime
from mica.native_sim.runtime import CDEF, RUNTIME_DIR, ffi, header_cdef

HEADER = (RUNTIME_DIR / "mica_rt.h").read_text()

#: pycparser has no <stdint.h>: the header's integer types, as the parser needs them (sizes do not matter).
STDINT = ("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;"
          " typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;"
          " typedef unsigned long long uint64_t;\n")

DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(-?\d+)", re.M)


def parse(text: str) -> list:
    """The top-level declarations of C ``text`` (comments and preprocessor lines dropped) as pycparser
    nodes, in order."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    ast = c_parser.CParser().parse(STDINT + text, filename="<api>")
    return ast.ext[len(c_parser.CParser().parse(STDINT).ext):]


def declarations(text: str) -> list[str]:
    """Every top-level declaration of C ``text``, printed back in pycparser's canonical form, in order."""
    gen = c_generator.CGenerator()
    return [gen.visit(node) for node in parse(text)]


def test_the_cffi_declarations_are_every_declaration_of_the_header():
    from_header, from_cdef = declarations(HEADER), declarations(CDEF)
    assert from_cdef == from_header                       # nothing of the header left out of the cdef
    text = "\n".join(from_header)
    for name in ("mica_run", "mica_host_gather", "mica_core_timing", "mica_kernel_get", "mica_work_get",
                 "mica_prefetch_hint", "mica_totals", "mica_timing_totals", "MICA_T_IDLE", "mica_trace_start",
                 "mica_trace_copy", "mica_event", "MICA_EV_PREFETCH", "mica_set_wavelet", "mica_wave_totals",
                 "mica_set_dram", "mica_dram_bind"):
        assert name in text, name
    header_defines = {k: int(v) for k, v in DEFINE.findall(HEADER)}
    assert set(re.findall(r"^\s*#\s*define\s+(\w+)", HEADER, flags=re.M)) - set(header_defines) == {"MICA_RT_H"}
    assert {k: int(v) for k, v in DEFINE.findall(CDEF)} == header_defines and len(header_defines) == 20


def test_the_runtime_library_has_what_the_header_declares():
    lib = runtime.runtime_lib()
    for name, value in DEFINE.findall(HEADER):
        assert getattr(lib, name) == int(value), name
    assert (lib.MICA_T_CLOCK, lib.MICA_T_COMPUTE, lib.MICA_T_COMM, lib.MICA_T_IDLE) == (0, 1, 2, 3)
    module_exports = {"mica_kernel_count", "mica_kernel_get", "mica_work_get", "mica_prefetch_hint"}
    functions = {d.name for d in parse(HEADER)
                 if isinstance(d, c_ast.Decl) and isinstance(d.type, c_ast.FuncDecl)}
    assert module_exports <= functions and len(functions - module_exports) == 35   # 4 of the wavelet-level mode, 2 of DRAM, 3 of spilling
    for name in sorted(functions - module_exports):           # the emulator defines every one of them
        assert ffi.typeof(getattr(lib, name)).kind == "function", name
    nm = shutil.which("nm")
    if nm:                                                    # and exports nothing else
        path = runtime.compile_shared(runtime.runtime_source(), name="mica_rt", flags=runtime.include_flags())
        out = subprocess.run([nm, "-D", "--defined-only", str(path)], capture_output=True, text=True).stdout
        exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
        assert {name for name in exported if name.startswith("mica")} == functions - module_exports
    assert [f for f, _ in ffi.typeof("mica_totals").fields] == [
        "messages", "deliveries", "link_bytes", "link_messages", "max_hops", "exchanges", "computes",
        "arena_bytes", "arena_max", "dram_bytes"]
    assert ffi.sizeof("mica_timing_totals") == 24
    # the trace's events, as mica.native_sim.runtime.EVENT_DTYPE reads them
    assert [(f, ffi.offsetof("mica_event", f)) for f, _ in ffi.typeof("mica_event").fields] == [
        (f, runtime.EVENT_DTYPE.fields[f][1]) for f in runtime.EVENT_DTYPE.names]
    assert ffi.sizeof("mica_event") == runtime.EVENT_DTYPE.itemsize == 32
    assert (lib.MICA_EV_EXCHANGE, lib.MICA_EV_PREFETCH) == (runtime.EV_EXCHANGE, runtime.EV_PREFETCH)


@pytest.mark.parametrize("section, why", [
    ("", "no cdef-begin"),
    ("/* cdef-begin */\n#include <stdio.h>\nint f(void);\n/* cdef-end */", "#include <stdio.h>"),
    ("/* cdef-begin */\n#define MICA_TWICE(x) ((x) * 2)\n/* cdef-end */", "MICA_TWICE"),
    ("/* cdef-begin */\n#define MICA_BIT (1 << 2)\n/* cdef-end */", "MICA_BIT"),
    ("/* cdef-begin */\n#ifdef MICA_X\nint f(void);\n#endif\n/* cdef-end */", "#ifdef"),
    ("/* cdef-end */ int f(void); /* cdef-begin */", "no cdef-begin"),
])
def test_header_cdef_refuses_what_cffi_cannot_take(section, why):
    with pytest.raises(EmitError, match=re.escape(why)):
        header_cdef("#include <stdint.h>\n" + section + "\n")


def test_header_cdef_keeps_declarations_and_integer_defines_only():
    text = ("#ifndef X\n#include <stdint.h>\n/* cdef-begin: notes */\n#define MICA_A  7 /* seven */\n"
            "/* a comment\n   over lines */ int32_t mica_f(int64_t x); /* cdef-end */\n"
            "int32_t outside(void);\n#endif\n")
    assert [line.strip() for line in header_cdef(text).splitlines()] == ["#define MICA_A  7",
                                                                          "int32_t mica_f(int64_t x);"]


# -- the kernel modules emit_c generates ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def module_source():
    """A generated kernel module with work functions and the prefetch hint (a blocked contraction), as the
    emulator loads it."""
    prog = mica.compile_affine(mica.ops.matmul(256, 192, 128), mesh=(4, 4))
    km = prog.kernel_module
    return km.source + emit_work_module(prog.mesh_program, prog.target, km.names)


def _compile_with_header(header_dir, source, tmp_path):
    src = tmp_path / "module.c"
    src.write_text('#include "mica_rt.h"\n' + source)
    return subprocess.run([compiler(), "-std=c11", "-fsyntax-only", "-Werror", "-I", str(header_dir), str(src)],
                          capture_output=True, text=True, timeout=300)


def test_generated_kernel_modules_agree_with_the_header(module_source, tmp_path):
    for pattern in (r"typedef void \(\*mica_kernel_fn\)", r"typedef double \(\*mica_work_fn\)",
                    r"\bint32_t mica_kernel_count\(void\)", r"\bmica_kernel_fn mica_kernel_get\(int32_t i\)",
                    r"\bmica_work_fn mica_work_get\(int32_t i\)", r"\bvoid mica_prefetch_hint\("):
        assert re.search(pattern, module_source), pattern          # the module repeats or defines it
    done = _compile_with_header(RUNTIME_DIR, module_source, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("old, new", [
    ("                               const double *scalars);",
     "                               double *scalars);"),                              # mica_kernel_fn
    ("typedef double (*mica_work_fn)(int64_t x, int64_t y, const int64_t *v, const double *scalars);",
     "typedef double (*mica_work_fn)(int64_t x, int64_t y, const int64_t *v, double *scalars);"),
    ("void mica_prefetch_hint(const uint8_t *next, int64_t bytes);",
     "void mica_prefetch_hint(const uint8_t *next, int32_t bytes);"),
    ("mica_work_fn mica_work_get(int32_t i);", "mica_work_fn mica_work_get(int64_t i);"),
])
def test_a_header_that_differs_from_the_generated_code_is_caught(module_source, tmp_path, old, new):
    """The check above has teeth: a header whose typedef or export differs does not compile with the module."""
    assert HEADER.count(old) == 1
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "mica_rt.h").write_text(HEADER.replace(old, new))
    done = _compile_with_header(tmp_path / "inc", module_source, tmp_path)
    assert done.returncode != 0 and "conflicting types" in done.stderr
