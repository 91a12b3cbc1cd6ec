"""mica.codeprint: one expression printer, one affine printer and one isl AST walker, driven by a table per
language; the package stays below MeshIR and the back ends."""

import ast
from pathlib import Path

import islpy as isl
import pytest

import mica.codeprint as cp
from mica.affine.expr import Aff, Bin, Call, Cmp, Const, Neg, Read, Scalar, Select
from mica.errors import EmitError

E = Select(Cmp("<", Read("a"), Const(0.5)), Neg(Bin("*", Scalar("s"), Read("b"))), Call("sqrt", (Read("a"),)))


def _print(lang, e=E, elem="double"):
    return cp.print_expr(e, lang, lambda r: f"{r}[i]", lambda n: f"S_{n}", elem=elem, where="here")


def test_one_expression_tree_in_every_language():
    assert _print(cp.TEXT) == "((a[i] < 0.5) ? -(S_s * b[i]) : sqrt(a[i]))"
    assert _print(cp.C_KERNEL, elem="float") == \
        "((a[i] < (float)0x1.0000000000000p-1) ? (-(S_s * b[i])) : sqrtf(a[i]))"
    assert _print(cp.REFERENCE_C) == \
        "((a[i] < ((double)0x1.0000000000000p-1)) ? (-(S_s * b[i])) : sqrt(a[i]))"
    assert _print(cp.PYTHON) == "((-(S_s * b[i])) if (a[i] < 0.5) else np.sqrt(a[i]))"
    assert _print(cp.CSL, E.then, elem="f32") == "(-(S_s * b[i]))"
    assert _print(cp.CSL, Select(Cmp("<", Read("a"), Const(1)), Const(2), Read("b")), elem="f16") == \
        "(if ((a[i] < @as(f16, 1.0))) @as(f16, 2.0) else b[i])"
    assert _print(cp.METALIUM, Bin("-", Read("a"), Const(3))) == "(a[i] - 3.0f)"


def test_special_constants():
    assert _print(cp.C_KERNEL, Const(float("nan"))) == "NAN"
    assert _print(cp.REFERENCE_C, Neg(Const(float("-inf")))) == "(-(-INFINITY))"
    assert _print(cp.TEXT, Const(2)) == "2"            # the text form keeps the literal as written


@pytest.mark.parametrize("lang, e, message", [
    (cp.CSL, Const(float("inf")), "here: constant inf has no CSL literal"),        # f64: no CSL type
    (cp.CSL, Call("exp", (Read("a"),)), r"here: math function exp\(\) is not mapped"),
    (cp.METALIUM, Const(float("nan")), "here: constant nan in the generic path"),
    (cp.METALIUM, Call("exp", (Read("a"),)), "here: Call .* has no rendering on the data-movement RISC-V"),
])
def test_what_a_language_cannot_print_is_refused_with_the_callers_prefix(lang, e, message):
    with pytest.raises(EmitError, match=message):
        _print(lang, e, elem="f64" if lang is cp.CSL else "f32")


def test_csl_spells_non_finite_constants_as_bit_casts():
    assert _print(cp.CSL, Const(float("inf")), elem="f32") == "@bitcast(f32, @as(u32, 2139095040))"
    assert _print(cp.CSL, Const(float("-inf")), elem="f16") == "@bitcast(f16, @as(u16, 64512))"
    assert _print(cp.CSL, Const(float("nan")), elem="f32") == "@bitcast(f32, @as(u32, 2143289344))"


def test_a_scalar_without_a_home_is_refused():
    with pytest.raises(EmitError, match="kernel k: Scalar .* no scalar arguments there"):
        cp.print_expr(Scalar("s"), cp.METALIUM, str, where="kernel k")


def test_affine_index_in_every_language():
    a = Aff.of({"i": 1, "j": -2}, 3)
    env = {"i": "x0", "j": "x1"}
    assert cp.print_aff(a, env, cp.C_KERNEL) == "x0 + -2LL * x1 + 3LL"
    assert cp.print_aff(a, env, cp.CSL) == "(x0) + -2 * (x1) + 3"
    assert cp.print_aff(a, env, cp.PYTHON) == "(x0) + -2 * (x1) + 3"
    assert cp.print_aff(a, env, cp.METALIUM) == "(x0 + -2 * x1 + 3)"
    assert cp.print_aff(Aff(), env, cp.C_KERNEL) == "0LL"


def test_skew_block():
    assert cp.skew_block("cannon", 4, cp.C_KERNEL) == "(t + x + y) % 4LL"
    assert cp.skew_block("cannon", 4, cp.METALIUM) == "(t + x + y) % 4"
    assert cp.skew_block("interleaved", 4, cp.C_KERNEL) == \
        "(t + (x % 2 == 0 ? x / 2 : 3LL - x / 2) + (y % 2 == 0 ? y / 2 : 3LL - y / 2)) % 4LL"


def _triangle_ast():
    """isl's AST of ``S[i, j]`` over a triangle with a parameter and a stride, in lexicographic order."""
    dom = isl.UnionSet("[__n] -> { S[i, j] : 0 <= i < __n and 0 <= j <= i and j % 2 = 0 }")
    sched = isl.UnionMap("[__n] -> { S[i, j] -> [i, j] }").intersect_domain(dom)
    ctx = isl.Set("[__n] -> { : 0 <= __n <= 9 }")
    return isl.AstBuild.from_context(ctx).node_from_schedule_map(sched)


def test_the_python_walk_visits_exactly_the_instances_in_order():
    lines = ["def run(n):", "    out = []"]

    def user(call, indent):
        args = [cp.ast_expr(call.get_op_arg(k), cp.PYTHON) for k in range(1, call.get_op_n_arg())]
        lines.append(f"{indent}out.append(({', '.join(args)},))")
    cp.walk(_triangle_ast(), lines, "    ", cp.PYTHON, user)
    lines.append("    return out")
    ns = {}
    exec("\n".join(lines), ns)                                   # noqa: S102 - text printed above
    for n in range(10):
        assert ns["run"](n) == [(i, j) for i in range(n) for j in range(0, i + 1, 2)]


def test_c_and_csl_walks_share_the_structure():
    c, csl = [], []
    cp.walk(_triangle_ast(), c, "", cp.C_KERNEL, lambda call, ind: c.append(ind + "S;"))
    iterators = set()
    cp.walk(_triangle_ast(), csl, "", cp.CSL, lambda call, ind: csl.append(ind + "S;"), iterators=iterators)
    assert [ln.strip() for ln in c if ln.strip() == "S;"] == ["S;"]
    assert c[0].startswith("for (int64_t c0 = 0LL; (c0 < n); c0 += 1LL) {") and c[-1] == "}"
    assert csl[0] == "for (@range(i32, 0, n, 1)) |c0| {" and csl[-1] == "}"
    assert len(c) == len(csl) and not iterators


def test_a_loop_hook_may_print_a_loop_itself():
    lines = []

    def hook(nd, indent):
        lines.append(indent + "LOOP " + cp.ast_expr(nd.for_get_iterator(), cp.C_KERNEL))
        return True
    cp.walk(_triangle_ast(), lines, "", cp.C_KERNEL, lambda call, ind: None, hook)
    assert lines == ["LOOP c0"]


def test_reference_c_and_python_of_a_program():
    import mica
    prog = mica.ops.matmul(3, 4, 5, dtype="f64")
    c = cp.program_c(prog)
    assert "void mica_program(void **arrays, const double *scalars) {" in c and c.count("for (") == 3
    py = "\n".join(cp.program_py(prog))
    assert py.startswith("def reference(arrays, scalars):") and py.count("while ") == 3


# -- layering ------------------------------------------------------------------------------------------

ALLOWED = {"mica.affine", "mica.errors", "mica.targets", "mica.codeprint"}


def _imports(path: Path) -> set[str]:
    """The ``mica.<package>`` modules a file of ``mica/<package>/`` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(["mica", path.parent.name][:3 - node.level] + [node.module or ""])
            else:
                mod = node.module
            names = [mod]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {".".join(n.strip(".").split(".")[:2]) for n in names if n.startswith("mica")}
    return out


def test_codeprint_imports_only_what_is_below_it():
    root = Path(cp.__file__).parent
    for f in root.glob("*.py"):
        assert _imports(f) <= ALLOWED, f"{f.name} imports {sorted(_imports(f) - ALLOWED)}"


def test_affine_does_not_import_codeprint():
    import mica.affine
    for f in Path(mica.affine.__file__).parent.glob("*.py"):
        assert "mica.codeprint" not in _imports(f), f.name


def test_gelu_calls_and_infinities_in_every_language():
    from mica.affine.expr import Conv
    g = Bin("*", Call("tanh", (Read("a"),)), Call("erf", (Neg(Const(float("inf"))),)))
    assert _print(cp.TEXT, g) == "(tanh(a[i]) * erf(-inf))"
    assert _print(cp.C_KERNEL, g, elem="float") == "(tanhf(a[i]) * erff((-INFINITY)))"
    assert _print(cp.REFERENCE_C, g) == "(tanh(a[i]) * erf((-INFINITY)))"
    py = _print(cp.PYTHON, g)
    assert py == '(np.tanh(a[i]) * __import__("math").erf((-np.inf)))'
    import math
    import numpy as np
    assert eval(py.replace("a[i]", "0.5"), {"np": np}) == math.tanh(0.5) * -1.0
    with pytest.raises(EmitError, match=r"here: math function tanh\(\) is not mapped to CSL"):
        _print(cp.CSL, g, elem="f32")
    with pytest.raises(EmitError, match=r"here: Call Call\(fn='tanh'.* has no rendering on the data-movement"):
        _print(cp.METALIUM, g, elem="f32")
    assert _print(cp.METALIUM, Bin("+", Read("a"), Const(float("-inf")))) == "(a[i] + (-__builtin_inff()))"
    # a conversion to a 16-bit type rounds there and goes on in f32
    assert _print(cp.C_KERNEL, Conv("f16", Read("a")), elem="float") == "((float)(_Float16)(a[i]))"
    assert _print(cp.C_KERNEL, Conv("bf16", Read("a")), elem="float") == "mica_bf16_to_f32(mica_f32_to_bf16(a[i]))"


def test_half_loads_and_stores_in_c():
    from mica.codeprint import half
    assert half.load_c("f16", "b0[3]") == "((float)b0[3])" and half.store_c("f16", "x") == "((_Float16)(x))"
    assert half.load_c("bf16", "b0[3]") == "mica_bf16_to_f32(b0[3])"
    assert half.store_c("bf16", "x") == "mica_f32_to_bf16(x)"
    assert half.load_c("f32", "b0[3]") == "b0[3]" and half.store_c("i32", "x") == "x"
    assert half.support_c(["f32", "f16"]) == "" and "mica_f32_to_bf16" in half.support_c(["bf16"])
    assert cp.float_dtype(Read("a"), lambda leaf: "bf16", "bf16") == "f32"
