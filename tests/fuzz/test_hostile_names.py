"""Hostile identifiers and strings through the C front end and the Program builders.

User names -- C library functions (``system``, ``abort``, ``main``), identifiers of MICA's generated C
(``arena``, ``x``, ``b0``, ``c0``, ``mica_min``, ``k_S0_0`` ...), isl keywords in several cases, C++ and
GNU words, C keywords as far as pycparser lets them through, ``$``, non-ASCII letters, very long names --
in every role (function, size parameter, scalar, arrays, loop iterators, local temporary), and
``"); abort(); ("`` inside comments, pragmas, string literals and file names. Each program either raises
a MicaError, or compiles to C that contains no user string except inside an identifier MICA mangled
(``i_<loop>``, ``k_<statement>_<n>``) or one of MICA's comments restricted to identifier characters, and
its results still match the C compiled natively."""

import re

import numpy as np
import pytest

import mica
from mica.affine.expr import Aff, Bin, Read, Scalar
from mica.affine.from_c import from_c
from mica.affine.program import Access, Array, Program, Statement
from mica.errors import AffineError, MicaError
from mica.testing import run_c

MESH = (3, 2)
N = 5
INJECTION = '"); abort(); ("'

TEMPLATE = """void FN(int NN, double ALPHA, double AA[5][5], double BB[5], double CC[5])
{
  int II, JJ;
  double TMP;
  /* COMMENT */
  // COMMENT
#pragma COMMENT
  for (II = 0; II < NN; II++) {
    TMP = 0.0;
    for (JJ = 0; JJ <= II; JJ++)
      TMP += AA[II][JJ] * BB[JJ];
    CC[II] = ALPHA * TMP + BB[II];
  }
}
"""
ROLES = {"FN": "kernel", "NN": "n", "ALPHA": "alpha", "AA": "A", "BB": "B", "CC": "C", "II": "i", "JJ": "j",
         "TMP": "tmp"}

HOSTILE = [
    # C library
    "system", "abort", "main", "printf", "memcpy", "sqrt",
    # identifiers of MICA's generated C
    "arena", "x", "v", "t", "kb", "scalars", "b0", "b1", "c0", "i_i", "k_S0_0", "mica_min", "mica_table",
    "mica_kernel_get", "int64_t", "NAN", "INFINITY", "program",
    # isl keywords, in several cases
    "and", "min", "floor", "exists", "true", "infty", "rat", "xor", "NaN", "MAX", "TRUE",
    # C++ / GNU words that are identifiers in C
    "class", "new", "asm", "typeof",
    # C keywords (pycparser refuses them)
    "int", "restrict", "_Bool",
    # reserved, odd, long
    "__x", "_", "a$b", "caf\u00e9", "L" * 3000,
]

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Everything MICA itself writes in kernel modules: C words, its helpers, buffers b<k>, isl iterators c<k>,
# mangled loop variables i_<loop> and kernel functions k_<statement>_<n>.
_C_WORDS = {"include", "stdint", "math", "h", "typedef", "void", "uint8_t", "int64_t", "int32_t", "const",
            "double", "float", "static", "inline", "return", "for", "if", "else", "restrict", "NAN", "INFINITY",
            "arena", "x", "y", "v", "t", "kb", "scalars", "a", "b", "i"}
_MATH = {f + s for f in ("sqrt", "exp", "log", "pow", "fabs", "fmax", "fmin") for s in ("", "f")}
_MICA = re.compile(r"mica_\w+|b\d+|c\d+|i_\w+|k_\w+")


def _source(role: str, name: str, comment: str = "a comment") -> tuple[str, dict]:
    names = dict(ROLES)
    names[role] = name
    text = re.sub(r"\b(FN|NN|ALPHA|AA|BB|CC|II|JJ|TMP)\b", lambda m: names[m.group(1)], TEMPLATE)
    return text.replace("COMMENT", comment), names


def check_generated_c(source: str) -> None:
    """No user string outside MICA's own vocabulary; comments hold identifier characters only."""
    for c in re.findall(r"/\*(.*?)\*/", source, re.S):
        assert re.fullmatch(r"[\w\s\[\]:,().-]*", c), f"comment with unexpected characters: {c!r}"
    code = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    assert "/*" not in code and "*/" not in code and "//" not in code
    assert '"' not in code and "'" not in code and "abort()" not in code
    code = re.sub(r"\b0x[0-9a-fA-F]*\.?[0-9a-fA-F]*p[+-]?\d+|\b\d\w*", " ", code)     # numbers
    for tok in sorted(set(_IDENT.findall(code))):
        assert tok in _C_WORDS or tok in _MATH or _MICA.fullmatch(tok), \
            f"identifier {tok!r} in the generated C is not one MICA writes"


def compile_and_compare(src: str, names: dict, filename: str = "hostile.c") -> str:
    """'refused: ...' for a MicaError from the front end; else compiles, checks the C and the results."""
    try:
        prog = from_c(src, params={names["NN"]: N}, filename=filename)
    except MicaError as err:
        assert "internal error" not in str(err), str(err)
        return f"refused: {type(err).__name__}"
    compiled = mica.compile_affine(prog, mesh=MESH, target="wormhole")
    check_generated_c(compiled.kernel_module.source)
    rng = np.random.default_rng(1)
    benign = {"A": rng.random((N, N)) + 1.0, "B": rng.random(N), "C": rng.random(N), "alpha": 0.75}
    # The reference is the same function with plain names: the user's own text may not compile next to
    # the <math.h> run_c includes (an array called NAN is valid C, but not after that header).
    want = run_c(_source("FN", "kernel")[0], None, benign, {"n": N})
    role_of = {v: k for k, v in ROLES.items()}
    ins = {names[role_of[k]]: v for k, v in benign.items()}
    given = {k: v for k, v in ins.items() if k in set(prog.inputs) | {s for s, _ in prog.scalars}}
    got = compiled.run(given).outputs
    assert set(got) == {names[role_of[k]] for k in want}
    for k in want:
        np.testing.assert_allclose(got[names[role_of[k]]], want[k], rtol=1e-12, err_msg=k)
    return "ok"


def test_the_template_compiles():
    src, names = _source("FN", "kernel")
    assert compile_and_compare(src, names) == "ok"


MUST = ("system", "abort", "arena", "x", "b0", "c0", "mica_min", "k_S0_0", "class")
BAD = ("int", "restrict", "_Bool", "caf\u00e9")


def _names_for(role: str, everything: bool) -> list[str]:
    """Every hostile name (the slow run), or in CI the names that must pass or must be refused plus every
    other name of the list in alternate roles (each name is still tried in four or five of the nine)."""
    if everything:
        return HOSTILE
    k = sorted(ROLES).index(role)
    return [n for i, n in enumerate(HOSTILE) if n in MUST or n in BAD or i % 2 == k % 2]


def _check_role(role: str, everything: bool) -> None:
    outcomes = {}
    for name in _names_for(role, everything):
        src, names = _source(role, name)
        outcomes[name[:20]] = compile_and_compare(src, names)
    ok = [n for n, o in outcomes.items() if o == "ok"]
    # plain C identifiers that are neither C keywords nor reserved must be accepted in every role
    for must in MUST:
        assert outcomes[must] == "ok", (role, must, outcomes[must])
    for bad in BAD:        # pycparser refuses these
        assert outcomes[bad].startswith("refused"), (role, bad)
    assert len(ok) >= (25 if everything else 14), outcomes


@pytest.mark.parametrize("role", sorted(ROLES))
def test_hostile_names_in_every_role(role):
    _check_role(role, everything=False)


@pytest.mark.slow
@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_hostile_name_in_every_role(role):
    _check_role(role, everything=True)


@pytest.mark.parametrize("where", ["comment", "line comment", "pragma", "filename"])
def test_injection_text_never_reaches_the_generated_c(where):
    src, names = _source("FN", "kernel")
    filename = "hostile.c"
    if where == "comment":
        src = src.replace("/* a comment */", f"/* {INJECTION} */")
    elif where == "line comment":
        src = src.replace("// a comment", f"// {INJECTION} */ /*")
    elif where == "pragma":
        src = src.replace("#pragma a comment", f"#pragma omp {INJECTION}\n#define X {INJECTION}")
    else:
        filename = f"x{INJECTION}*/.c"
    assert INJECTION in src or where == "filename"
    assert compile_and_compare(src, names, filename) == "ok"


@pytest.mark.parametrize("snippet", [
    f'char *s = "{INJECTION}";',
    f'const char s[] = "{INJECTION}";',
    f"printf(\"{INJECTION}\");",
    f"TMP = sizeof(\"{INJECTION}\");",
    f"C[0] = 1.0; /* {INJECTION}",
])
def test_strings_in_code_are_refused_with_a_mica_error(snippet):
    src, names = _source("FN", "kernel")
    src = src.replace("  // a comment", "  " + snippet.replace("TMP", "tmp"))
    with pytest.raises(MicaError) as info:
        from_c(src, params={"n": N}, filename="hostile.c")
    assert "internal error" not in str(info.value)


@pytest.mark.parametrize("snippet", ['asm("nop");', f'__asm__ volatile ("{INJECTION}");',
                                     f'__attribute__((section("{INJECTION}"))) double z;'])
def test_gnu_extensions_in_the_function_never_reach_the_generated_c(snippet):
    # from_c blanks GNU extensions (asm, __attribute__) wherever they are -- see tests/fuzz/FOUND.md
    src, names = _source("FN", "kernel")
    src = src.replace("  // a comment", "  " + snippet)
    try:
        prog = from_c(src, params={"n": N}, filename="hostile.c")
    except MicaError as err:
        assert "internal error" not in str(err)
        return
    check_generated_c(mica.compile_affine(prog, mesh=MESH, target="wormhole").kernel_module.source)


# -- the Program builders ---------------------------------------------------------------------------------

def _builder_program(arr_a="A", arr_b="B", loop="i", stmt="S", prog_name="p", scalar="alpha") -> Program:
    """``B[i] = alpha * A[i] + B[i]`` over i < 7 with the given names."""
    i = Aff.var(loop)
    st = Statement(stmt, (loop,), f"{{ {stmt}[{loop}] : 0 <= {loop} < 7 }}",
                   Access("w", arr_b, (i,)),
                   Bin("+", Bin("*", Scalar(scalar), Read("r0")), Read("r1")),
                   (Access("r0", arr_a, (i,)), Access("r1", arr_b, (i,))), (0, loop, 0))
    return Program(prog_name, (Array(arr_a, (7,), "f64"), Array(arr_b, (7,), "f64")), (st,),
                   (arr_a, arr_b), (arr_b,), ((scalar, "f64"),))


@pytest.mark.parametrize("field", ["arr_a", "arr_b", "loop", "stmt", "prog_name", "scalar"])
@pytest.mark.parametrize("name", [INJECTION, "a b", "a;b", "a*/b", "1abc", "", "caf\u00e9", "a$b", "a\nb",
                                  "a-b", "x\x00y"])
def test_builders_refuse_names_that_are_not_identifiers(field, name):
    with pytest.raises(AffineError):
        _builder_program(**{field: name})


@pytest.mark.parametrize("field", ["arr_a", "arr_b", "loop", "stmt", "prog_name", "scalar"])
@pytest.mark.parametrize("name", ["system", "arena", "x", "b0", "c0", "k_S_0", "program", "mica_min", "main",
                                  "L" * 500])
def test_builders_with_hostile_identifiers_compile_to_clean_c(field, name):
    try:
        prog = _builder_program(**{field: name})
    except AffineError:
        return                                                      # refused with a MicaError: fine
    compiled = mica.compile_affine(prog, mesh=(3, 2), target="wormhole")
    check_generated_c(compiled.kernel_module.source)
    rng = np.random.default_rng(2)
    arr_a, arr_b = (name if field == "arr_a" else "A"), (name if field == "arr_b" else "B")
    scalar = name if field == "scalar" else "alpha"
    a, b = rng.random(7), rng.random(7)
    got = compiled.run({arr_a: a, arr_b: b, scalar: 1.5}).outputs
    np.testing.assert_allclose(got[arr_b], 1.5 * a + b, rtol=1e-15)
