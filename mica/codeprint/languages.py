"""The languages MICA prints code in, one table each: how a language spells literals, operators, calls,
affine index expressions, isl AST expressions and the loops and branches of an isl AST.

The visitors (:mod:`.expr`, :mod:`.aff`, :mod:`.isl_ast`) hold no language knowledge; adding a language is
adding a :class:`Language` here. What a language cannot print is refused with :class:`~mica.errors.EmitError`
through the ``no_*`` reasons (``{v}`` a constant, ``{fn}`` a function, ``{kind}``/``{e}`` the node).

Tables: :data:`TEXT` (the MeshIR / affine text form), :data:`C_KERNEL` (the emulator's kernels),
:data:`REFERENCE_C` (a Program's sequential reference in C), :data:`CSL` (Cerebras kernels),
:data:`PYTHON` (the CSL host script's reference), :data:`METALIUM` (the Tenstorrent generic path, C++ on a
data-movement RISC-V).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Mapping

from ..errors import EmitError
from .half import ROUND_C, STORAGE_CTYPES

# -- literals ---------------------------------------------------------------------------------------------


def _finite(v: float) -> bool:
    return v == v and abs(v) != float("inf")


def _c_special(v: float) -> str:
    return "NAN" if v != v else ("INFINITY" if v > 0 else "(-INFINITY)")


def _c_kernel_const(value, elem: str) -> str:
    v = float(value)
    return f"({elem}){v.hex()}" if _finite(v) else _c_special(v)


def _reference_c_const(value, elem: str) -> str:
    v = float(value)
    return f"(({elem}){v.hex()})" if _finite(v) else _c_special(v)


#: IEEE bit patterns of the non-finite values per CSL float type: CSL has no literal for them, so they are
#: spelled as a bit cast of the pattern, in decimal (``@bitcast(f32, @as(u32, 2139095040))``: 0x7f800000).
_CSL_SPECIAL = {"f32": ("u32", 0x7F800000, 0xFF800000, 0x7FC00000), "f16": ("u16", 0x7C00, 0xFC00, 0x7E00)}


def _csl_const(value, elem: str) -> str | None:
    v = float(value)
    if _finite(v):
        return f"@as({elem}, {v!r})"
    if elem not in _CSL_SPECIAL:
        return None
    bits, pos, neg, nan = _CSL_SPECIAL[elem]
    pattern = nan if v != v else (pos if v > 0 else neg)
    return f"@bitcast({elem}, @as({bits}, {pattern}))"


def _metalium_const(value, elem: str) -> str | None:
    v = float(value)
    if v != v:
        return None
    return f"{v!r}f" if _finite(v) else ("__builtin_inff()" if v > 0 else "(-__builtin_inff())")


def _python_const(value, elem: str) -> str:
    v = float(value)
    return repr(v) if _finite(v) else ("np.nan" if v != v else ("np.inf" if v > 0 else "(-np.inf)"))


def _python_call(fn: str, elem: str) -> str:
    # numpy has no erf; the reference runs on scalars, and the host script imports numpy only
    return '__import__("math").erf' if fn == "erf" else f"np.{fn}"


def _c_call(fn: str, elem: str) -> str:
    return fn + ("f" if elem == "float" else "")


# -- loops of an isl AST: (opening lines, closing lines, whether the iterator needs a declaration) -------

def _c_for(it: str, init: str, cond: str, inc: str, stop: str | None):
    return [f"for (int64_t {it} = {init}; {cond}; {it} += {inc}) {{"], ["}"], False


def _csl_for(it: str, init: str, cond: str, inc: str, stop: str | None):
    # it <= ub (it < ub): CSL's loop over @range, the iterator a capture; anything else a while loop whose
    # iterator is assigned (declared once by the caller: sibling loops reuse isl's names).
    if stop is not None:
        return [f"for (@range(i32, {init}, {stop}, {inc})) |{it}| {{"], ["}"], False
    return [f"{it} = {init};", f"while {cond} : ({it} += {inc}) {{"], ["}"], True


def _py_for(it: str, init: str, cond: str, inc: str, stop: str | None):
    return [f"{it} = {init}", f"while {cond}:"], [f"    {it} += {inc}"], False


@dataclass(frozen=True)
class Language:
    """How one language spells what MICA prints (format strings take positional operands)."""

    name: str
    # expression trees (mica.affine.expr): literal of a value for an element type (None: none exists)
    const: Callable[[object, str], str | None]
    call: Callable[[str, str], str] | None       # callee of a math function for an element type; None: no calls
    binary: str = "({} {} {})"                   # lhs, operator, rhs (arithmetic and comparisons)
    neg: str = "(-{})"
    select: str = "({} ? {} : {})"               # cond, then, else
    no_const: str = "constant {v} has no literal"
    no_call: str = "cannot print expression {e}"
    no_scalar: str = "cannot print expression {e}"
    index: str | None = "(({1})({0}))"           # an iterator's integer value (text, element type) as a value
    no_index: str = "the value of loop index {aff} cannot be printed here"
    repr_unknown: bool = False                   # print an unknown node as its repr (else refuse it)
    # integer arithmetic (mica.affine.expr.int_typed): an integer literal (None: the language has no integer
    # arithmetic for expression trees), a conversion (type name, operand) and the type names by dtype
    int_const: Callable[[int], str] | None = None
    int_div: str | None = None                   # integer / and % (format with the operator's name), or None:
    #                                              the language's own operators
    conv: str | None = None
    types: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    conv_round: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # a conversion to a
    #                                              16-bit float dtype by dtype (one operand), before ``conv``
    no_int: str = "integer arithmetic ({e}) is not supported in this language"
    explicit_conv: bool = False                  # an integer value in float arithmetic (and a float one stored
    #                                              to an integer) needs ``conv`` (CSL has no implicit conversions)
    # affine index expressions (mica.affine.expr.Aff) and other integer text
    int_lit: str = "{}"
    aff_var: str = "{}"                          # a variable with coefficient 1
    aff_term: str = "{} * {}"                    # coefficient, variable
    aff_group: str = "{}"                        # the whole sum
    # isl AST expressions (integer arithmetic on loop iterators and parameters)
    isl_int: str = "{}"
    isl_exact_div: str = "({} / {})"             # isl div, pdiv_q: exact, or non-negative dividend
    isl_floor_div: str = "mica_floord({}, {})"   # isl fdiv_q
    isl_mod: str = "({} % {})"                   # isl pdiv_r, zdiv_r: compared with 0, or non-negative
    isl_and: str = "({} && {})"
    isl_or: str = "({} || {})"
    isl_max: str = "mica_max"
    isl_min: str = "mica_min"
    isl_nary: bool = False                       # max/min take every operand (else nested pairs)
    isl_select: str = "({} ? {} : {})"
    isl_who: str = ""                            # prefix of a refusal ("CSL back end: ")
    # isl AST statements
    step: str = "  "                             # one level of indentation
    loop: Callable = _c_for
    if_open: str = "if ({}) {{"
    if_else: str = "} else {"
    if_close: str | None = "}"


#: The MeshIR / affine text form (``mica.meshir.printer``; what a compiler engineer reads).
TEXT = Language("text", const=lambda value, elem: repr(value), call=lambda fn, elem: fn, neg="-{}",
                repr_unknown=True, index="({0})", int_const=repr, conv="{}({})",
                types=MappingProxyType({d: d for d in ("f64", "f32", "f16", "bf16", "i32", "i16", "i8", "u8")}))

#: C spellings of MICA's dtypes as stored in arrays: the 16-bit floats as :data:`.half.STORAGE_CTYPES`
#: (``_Float16``; bf16 bits in a ``uint16_t``), read and written through :mod:`.half`'s conversions.
C_TYPES = MappingProxyType({"f64": "double", "f32": "float", "i32": "int32_t", "i16": "int16_t",
                            "i8": "int8_t", "u8": "uint8_t", **STORAGE_CTYPES})


def _c_int(value: int) -> str:
    """A C integer literal of type int where ``value`` fits in 32 bits (as in the user's C), else long long."""
    return str(value) if -2**31 < value < 2**31 else f"{value}LL"


#: C of the emulator's kernels (``mica.emit_c``): 64-bit integer literals, float or double arithmetic; integer
#: division and remainder through ``mica_idiv``/``mica_imod`` (C's, except that they do not trap where C is
#: undefined: the emulator must not die of a user's division by zero).
C_KERNEL = Language("C", const=_c_kernel_const, call=_c_call, int_lit="{}LL", aff_term="{}LL * {}",
                    isl_int="{}LL", int_const=_c_int, conv="(({})({}))", types=C_TYPES,
                    int_div="mica_i{}({}, {})", conv_round=ROUND_C)

#: C of a Program's sequential reference (:func:`mica.codeprint.reference.program_c`).
REFERENCE_C = replace(C_KERNEL, name="reference C", const=_reference_c_const, int_div=None)

def _csl_int(value: int) -> str:
    """A CSL ``i32`` literal (C's ``int``); a value outside 32 bits has no CSL integer type MICA uses."""
    if not -2**31 <= value < 2**31:
        raise EmitError(f"CSL back end: integer constant {value} does not fit CSL's i32")
    return f"@as(i32, {value})"


#: CSL (Cerebras): i32 index arithmetic through the helpers ``imin``/``imax``/``floord``/``pmod``/``sel``;
#: integer arrays' arithmetic in ``i32`` with C's truncating ``/`` and ``%`` through ``cdiv``/``cmod``
#: (:data:`mica.emit_csl.csltext.INT_HELPERS`), every conversion between integer and float an explicit ``@as``,
#: a conversion to a narrower integer ``wrap_<dtype>`` of the ``i32`` value. (CSL's ``@as`` from a float to an
#: integer "rounds the value towards zero" -- sdk.cerebras.ai, CSL builtins, ``@as`` -- as C's conversion does.)
CSL = Language("CSL", const=_csl_const, call=None, select="(if ({}) {} else {})", index="@as({1}, {0})",
               int_const=_csl_int, int_div="c{}({}, {})", conv="@as({}, {})", explicit_conv=True,
               types=MappingProxyType({"i32": "i32", "f32": "f32", "f16": "f16"}),
               conv_round=MappingProxyType({d: f"wrap_{d}(@as(i32, {{}}))" for d in ("i8", "u8", "i16")}),
               no_const="constant {v} has no CSL literal",
               no_call="math function {fn}() is not mapped to CSL's <math> library yet",
               aff_var="({})", aff_term="{} * ({})",
               isl_exact_div="floord({}, {})", isl_floor_div="floord({}, {})", isl_mod="pmod({}, {})",
               isl_and="({} and {})", isl_or="({} or {})", isl_max="imax", isl_min="imin",
               isl_select="sel({}, {}, {})", isl_who="CSL back end: ",
               loop=_csl_for, if_open="if {} {{")

#: Python over numpy (the CSL host script's sequential reference).
PYTHON = Language("Python", const=_python_const, call=_python_call,
                  index="{1}({0})", int_const=repr, int_div="mica_i{}({}, {})", conv="{}({})",
                  types=MappingProxyType({"i32": "int", "i16": "int", "i8": "int", "u8": "int", "f64": "float",
                                          "f32": "float"}),
                  select="({1} if {0} else {2})", aff_var="({})", aff_term="{} * ({})",
                  isl_exact_div="({} // {})", isl_floor_div="({} // {})", isl_and="({} and {})",
                  isl_or="({} or {})", isl_max="max", isl_min="min", isl_nary=True,
                  isl_select="({1} if {0} else {2})", isl_who="CSL back end: ",
                  step="    ", loop=_py_for, if_open="if {}:", if_else="else:", if_close=None)

#: C++ of the Metalium generic path: f32 literals, no math library on the data-movement RISC-V (its software
#: forms come through ``call``) and scalar arguments only through the printer's ``scalar`` callback (runtime
#: args); isl's index arithmetic as in C.
_RISCV = ("{kind} {e} has no rendering on the data-movement RISC-V (no math library, no scalar arguments "
          "there)")
METALIUM = replace(C_KERNEL, name="Metalium C++", const=_metalium_const, call=None, int_const=None, conv=None,
                   conv_round=MappingProxyType({}),
                   no_const="constant {v} in the generic path", no_call=_RISCV, no_scalar=_RISCV,
                   index="((float)({0}))",
                   int_lit="{}", aff_term="{} * {}", aff_group="({})")
