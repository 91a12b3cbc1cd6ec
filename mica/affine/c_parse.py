"""pycparser handling for the C front end: parsing, locations, types, signatures, constant folding.

:func:`parse_c` turns preprocessed C text into a pycparser AST (``#`` directive lines -- ``#pragma``,
line markers -- are blanked first so that line numbers stay those of the text given); pycparser's own
errors become :class:`~mica.errors.AffineError` with a ``file:line:column:`` location.
:func:`find_function` picks the function to compile and :func:`signature` describes its parameters
(:class:`Param`). :func:`error` builds located errors for a node; :func:`fold_int` evaluates integer
constant expressions with C semantics; :func:`parse_number` reads C literals.

Also used by :mod:`mica.testing` to compile and call the original C function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
from pycparser import c_ast, c_parser

from ..errors import AffineError, MicaError, NotAffineError

INT_WORDS = frozenset({"int", "long", "short", "unsigned", "signed", "char", "_Bool"})


# -- locations and errors -----------------------------------------------------------------------------

def location(node, filename: str) -> tuple[str, int, int]:
    """``(filename, line, column)`` of a pycparser node (1-based; (1, 1) if the node has none)."""
    coord = getattr(node, "coord", None)
    line = getattr(coord, "line", None) or 1
    col = getattr(coord, "column", None) or 1
    return (filename, int(line), int(col))


def error(cls: type[MicaError], where, filename: str, message: str) -> MicaError:
    """``cls("file:line:col: message", location=...)``; ``where`` is a node or a (line, column) pair."""
    if isinstance(where, tuple):
        loc = (filename, int(where[0]), int(where[1]))
    else:
        loc = location(where, filename)
    return cls(f"{loc[0]}:{loc[1]}:{loc[2]}: {message}", location=loc)


# -- parsing ------------------------------------------------------------------------------------------

def strip_directives(text: str, filename: str = "<source>") -> str:
    """``text`` with preprocessor lines (``#pragma``, ``# 12 "f.c"``, ``#include``) and comments blanked.

    Every removed character except newlines becomes a space, so line numbers and columns of the remaining
    code are unchanged. (pycparser accepts neither comments nor directives other than ``#pragma``.)
    """
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        ch = text[i]
        if ch == "\n":
            line_start = True
            i += 1
            continue
        if ch in " \t\r\f\v":
            i += 1
            continue
        if line_start and ch == "#":
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        nxt = text[i + 1] if i + 1 < n else ""
        if ch == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                line = text.count("\n", 0, i) + 1
                col = i - (text.rfind("\n", 0, i) + 1) + 1
                raise AffineError(f"{filename}:{line}:{col}: unterminated comment",
                                  location=(filename, line, col))
            blank(i, j + 2)
            i = j + 2
        elif ch == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return "".join(out)


# GNU extensions that system headers bring into `gcc -E` output, replaced by equally long text so that
# positions do not move: keywords dropped, attributes/asm labels dropped with their parentheses, and the
# extended types mapped to a standard one (they only occur in the declarations around the function).
_GNU_DROP = frozenset({"__extension__", "__restrict", "__restrict__", "__volatile__", "__volatile",
                       "__thread", "__auto_type"})
_GNU_RENAME = {"__inline": "inline", "__inline__": "inline", "__const": "const", "__signed__": "signed",
               "__signed": "signed", "__builtin_va_list": "int", "_Float128": "double", "_Float64x": "double",
               "_Float64": "double", "_Float32x": "double", "_Float32": "float",
               "__int128": "long", "__float128": "double", "__alignof__": "sizeof", "__complex__": "",
               "_Complex": "", "__real__": "", "__imag__": ""}
_GNU_PARENS = frozenset({"__attribute__", "__attribute", "__asm__", "__asm", "asm", "__declspec",
                         "__typeof__", "__typeof", "typeof"})
_GNU_WORD = re.compile(r"\b(__\w+|_Float\w+|_Complex|asm|typeof)\b")


def strip_gnu(text: str) -> str:
    """``text`` with the GNU extensions of system headers blanked (same length, same line breaks)."""
    if "__" not in text and "_Float" not in text and "asm" not in text and "typeof" not in text:
        return text
    out = list(text)
    n = len(text)
    pos = 0
    for m in _GNU_WORD.finditer(text):
        a, b = m.span()
        if a < pos:
            continue
        w = m.group(1)
        if w in _GNU_DROP:
            out[a:b] = " " * (b - a)
        elif w in _GNU_RENAME:
            rep = _GNU_RENAME[w]
            out[a:b] = rep + " " * (b - a - len(rep))
        elif w in _GNU_PARENS:
            j = b
            while j < n and text[j] in " \t\r\n":
                j += 1
            while text.startswith("volatile", j) or text.startswith("__volatile__", j):
                j = text.index("e", j + 7) + 1 if text.startswith("volatile", j) else j + 12
                while j < n and text[j] in " \t\r\n":
                    j += 1
            if j < n and text[j] == "(":
                depth, k = 0, j
                while k < n:
                    c = text[k]
                    if c == "(":
                        depth += 1
                    elif c == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    elif c == '"':
                        k += 1
                        while k < n and text[k] != '"':
                            k += 2 if text[k] == "\\" else 1
                    k += 1
                end = min(k + 1, n)
                for q in range(a, end):
                    if out[q] != "\n":
                        out[q] = " "
                pos = end
        pos = max(pos, b)
    return "".join(out)


_PARSE_MSG = re.compile(r"^:(\d+)(?::(\d+))?:\s*(.*)$", re.S)

#: The <stdint.h> names the front end knows without the header (a source that includes it is parsed with
#: the directive blanked): their MICA dtype, or None for the ones it refuses as array elements.
STDINT = {"int32_t": "i32", "int16_t": "i16", "int8_t": "i8", "uint8_t": "u8", "int64_t": None,
          "uint16_t": None, "uint32_t": None, "uint64_t": None}


class _Parser(c_parser.CParser):
    """pycparser with the <stdint.h> type names predeclared (unless the text declares them itself)."""

    def __init__(self, known: frozenset[str]):
        super().__init__()
        self._known = known

    def _is_type_in_scope(self, name: str) -> bool:
        for scope in reversed(self._scope_stack):
            if name in scope:
                return scope[name]
        return name in self._known


#: The compiler's 16-bit float type names (GCC: ``_Float16`` on x86-64 and AArch64, ``__bf16``) and their
#: MICA dtypes; the front end knows them as type names (their arithmetic is f32: :mod:`mica.codeprint.half`).
HALF_CTYPES = {"_Float16": "f16", "__bf16": "bf16"}


def _stdint_names(text: str) -> frozenset[str]:
    """The <stdint.h> names and 16-bit float type names ``text`` uses without a typedef of its own."""
    return frozenset(n for n in (*STDINT, *HALF_CTYPES) if re.search(rf"\b{n}\b", text)
                     and not re.search(rf"\btypedef\b[^;{{}}]*\b{n}\s*;", text))


def parse_c(text: str, filename: str) -> c_ast.FileAST:
    """The pycparser AST of ``text``; any parser failure is an :class:`AffineError` with a location."""
    if not isinstance(text, str):
        raise AffineError(f"{filename}:1:1: C source must be a str, got {type(text).__name__}",
                          location=(filename, 1, 1))
    clean = strip_gnu(strip_directives(text, filename))
    parser = _Parser(_stdint_names(clean))
    try:
        return parser.parse(clean, filename)
    except c_parser.ParseError as exc:
        msg = str(exc)
        rest = msg[len(filename):] if msg.startswith(filename) else msg
        m = _PARSE_MSG.match(rest)
        what = rest.lstrip(": ").strip() or "syntax error"
        tok = _current_token(parser)
        if m:
            line, col, what = int(m.group(1)), int(m.group(2) or 1), m.group(3)
        elif tok is not None:   # no position in the message: the token the parser stopped at
            line, col = tok
        else:                   # the parser ran out of input
            lines = clean.split("\n")
            line, col = len(lines), len(lines[-1]) + 1
            if "end of input" not in what.lower():
                what += " at end of input"
            what += " (is the source truncated?)"
        raise AffineError(f"{filename}:{line}:{col}: C syntax error: {what}",
                          location=(filename, line, col)) from None
    except RecursionError:
        raise AffineError(f"{filename}:1:1: C source is nested too deeply to parse",
                          location=(filename, 1, 1)) from None
    except Exception as exc:  # pycparser bugs on odd input: never leak them raw
        raise AffineError(f"{filename}:1:1: C parser failed: {type(exc).__name__}: {exc}",
                          location=(filename, 1, 1)) from None


def _current_token(parser) -> tuple[int, int] | None:
    """(line, column) of the token pycparser stopped at, if it can tell (private API, best effort)."""
    try:
        tok = parser._tokens.peek()
        if tok is None:
            return None
        return int(tok.lineno), int(tok.column or 1)
    except Exception:
        return None


def typedefs_of(ast: c_ast.FileAST) -> dict[str, c_ast.Node]:
    """Top-level ``typedef`` names and the type they stand for."""
    return {e.name: e.type for e in ast.ext if isinstance(e, c_ast.Typedef)}


def find_function(ast: c_ast.FileAST, function: str | None, filename: str, mine=None) -> c_ast.FuncDef:
    """The definition of ``function``, or with None the one function the source defines. ``mine(line)``
    tells whether a line is the source's own (not an included header's); with None every line is. Several
    functions and no name is an :class:`AffineError` listing them."""
    defs = [e for e in ast.ext if isinstance(e, c_ast.FuncDef)]
    own = [d for d in defs if mine is None or mine(location(d, filename)[1])]
    if not own:
        raise AffineError(f"{filename}:1:1: no function definition in the source", location=(filename, 1, 1))
    if function is None:
        if len(own) > 1:
            loc = location(own[1], filename)
            raise AffineError(f"{filename}:{loc[1]}:{loc[2]}: the source defines {len(own)} functions "
                              f"({', '.join(d.decl.name for d in own)}); say which one to compile (function= "
                              f"in Python, --function on the command line)", location=loc)
        return own[0]
    for d in defs:
        if d.decl.name == function:
            return d
    names = ", ".join(d.decl.name for d in own)
    raise AffineError(f"{filename}:1:1: no function named {function!r} in the source (found: {names})",
                      location=(filename, 1, 1))


# -- types --------------------------------------------------------------------------------------------

def resolve_names(names: list[str], typedefs: Mapping[str, c_ast.Node], depth: int = 0) -> list[str] | None:
    """The base type words of an ``IdentifierType``, following typedefs of plain types; None if unknown."""
    if len(names) == 1 and names[0] in typedefs and depth < 20:
        t = typedefs[names[0]]
        if isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.IdentifierType):
            return resolve_names(list(t.type.names), typedefs, depth + 1)
        return None
    return list(names)


def scalar_kind(names: list[str] | None) -> str | None:
    """``'double'``, ``'float'``, ``'int'``, ``'void'`` for base type words, or None if unsupported."""
    if not names:
        return None
    ws = set(names)
    if "double" in ws:
        return None if "long" in ws else "double"
    if ws == {"float"} or (len(names) == 1 and names[0] in HALF_CTYPES):
        return "float"           # _Float16 and __bf16 compute in float (mica.codeprint.half)
    if ws == {"void"}:
        return "void"
    if ws <= INT_WORDS or (len(names) == 1 and names[0] in STDINT):
        return "int"
    return None


def type_words(tdecl, typedefs) -> tuple[str | None, list[str] | None]:
    """(kind, base words) of a ``TypeDecl``."""
    inner = getattr(tdecl, "type", None)
    if isinstance(inner, c_ast.IdentifierType):
        words = resolve_names(list(inner.names), typedefs)
        return scalar_kind(words), words
    return None, None


_INT_DTYPES = (({"int"}, "i32"), ({"signed", "int"}, "i32"), ({"signed"}, "i32"),
               ({"short"}, "i16"), ({"short", "int"}, "i16"), ({"signed", "short"}, "i16"),
               ({"signed", "short", "int"}, "i16"),
               ({"char"}, "i8"), ({"signed", "char"}, "i8"), ({"unsigned", "char"}, "u8"))


def int_dtype(words: list[str] | None) -> str | None:
    """The MICA dtype of an integer C type (``int``/``int32_t`` i32, ``short``/``int16_t`` i16, ``char``/
    ``signed char``/``int8_t`` i8 -- plain ``char`` is signed on the hosts MICA runs on --, ``unsigned char``/
    ``uint8_t`` u8), or None (``unsigned``, ``long``, ``_Bool`` ... have no MICA dtype)."""
    if not words:
        return None
    if len(words) == 1 and words[0] in STDINT:
        return STDINT[words[0]]
    ws = list(words)
    for s, d in _INT_DTYPES:
        if sorted(ws) == sorted(s):
            return d
    return None


def ctype_text(kind: str, words: list[str] | None) -> str:
    """C text of a scalar type for a prototype (``double``, ``float``, ``unsigned int`` ...)."""
    if kind in ("double", "float", "void"):
        return words[0] if words and len(words) == 1 and words[0] in HALF_CTYPES else kind
    return " ".join(words or ["int"])


DTYPE_OF = {"double": "f64", "float": "f32"}


def elem_dtype(kind: str | None, words: list[str] | None) -> str | None:
    """The MICA dtype of an array element or local of C type ``kind``/``words`` (:func:`type_words`):
    ``f64``, ``f32``, ``f16`` (``_Float16``), ``bf16`` (``__bf16``), an integer dtype, or None."""
    if kind == "int":
        return int_dtype(words)
    if kind == "float" and words and len(words) == 1 and words[0] in HALF_CTYPES:
        return HALF_CTYPES[words[0]]
    return DTYPE_OF.get(kind) if kind else None


@dataclass
class Param:
    """One parameter of the C function.

    ``kind``: ``'array'`` (element ``elem`` ``'double'``/``'float'``/``'int'``, ``dims`` the extent nodes,
    outermost first; an integer element's MICA dtype in ``dtype``, None if it has none), ``'int'``,
    ``'double'``, ``'float'`` (scalars), ``'pointer'`` or ``'other'``.
    """

    name: str
    kind: str
    node: c_ast.Node
    ctype: str = ""
    elem: str | None = None
    dims: tuple = ()
    dtype: str | None = None


def signature(fdef: c_ast.FuncDef, typedefs: Mapping[str, c_ast.Node]) -> list[Param]:
    """The parameters of ``fdef`` (``f(void)`` has none)."""
    fdecl = fdef.decl.type
    plist = getattr(fdecl, "args", None)
    out: list[Param] = []
    if plist is None:
        return out
    for p in plist.params:
        if isinstance(p, c_ast.EllipsisParam):
            out.append(Param("...", "other", p))
            continue
        if isinstance(p, c_ast.Typename):   # f(void) or an unnamed parameter
            kind, _ = type_words(p.type, typedefs) if isinstance(p.type, c_ast.TypeDecl) else (None, None)
            if kind == "void" and len(plist.params) == 1:
                return []
            out.append(Param("<unnamed>", "other", p))
            continue
        if not isinstance(p, c_ast.Decl):
            out.append(Param("<unnamed>", "other", p))
            continue
        t = p.type
        if isinstance(t, c_ast.TypeDecl):
            kind, words = type_words(t, typedefs)
            if kind in ("int", "double", "float"):
                out.append(Param(p.name, kind, p, ctype_text(kind, words)))
            else:
                out.append(Param(p.name, "other", p))
        elif isinstance(t, c_ast.ArrayDecl):
            dims = []
            while isinstance(t, c_ast.ArrayDecl):
                dims.append(t.dim)
                t = t.type
            if isinstance(t, c_ast.TypeDecl):
                kind, words = type_words(t, typedefs)
                dtype = elem_dtype(kind, words)
                out.append(Param(p.name, "array", p, ctype_text(kind, words) if kind else " ".join(words or []),
                                 kind, tuple(dims), dtype))
            else:
                out.append(Param(p.name, "pointer" if isinstance(t, c_ast.PtrDecl) else "other", p))
        elif isinstance(t, c_ast.PtrDecl):
            out.append(Param(p.name, "pointer", p))
        else:
            out.append(Param(p.name or "<unnamed>", "other", p))
    return out


# -- literals and integer constant expressions --------------------------------------------------------

_INT_LIT = re.compile(r"^(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$")


def parse_number(node: c_ast.Constant, filename: str) -> tuple[int | float, str]:
    """(value, ``'int'``/``'double'``/``'float'``) of a numeric literal."""
    text = node.value
    if node.type in ("int", "unsigned int", "long int", "unsigned long int", "long long int",
                     "unsigned long long int", "long", "unsigned long", "long long", "unsigned long long") \
            or _INT_LIT.match(text or ""):
        m = _INT_LIT.match(text)
        if not m:
            raise error(NotAffineError, node, filename, f"unsupported integer literal {text!r}")
        digits = m.group(1)
        if digits[:2] in ("0x", "0X"):
            v = int(digits, 16)
        elif digits[:2] in ("0b", "0B"):
            v = int(digits[2:], 2)
        elif digits.startswith("0") and len(digits) > 1:
            v = int(digits, 8)
        else:
            v = int(digits)
        return v, "int"
    if node.type in ("float", "double", "long double"):
        body = text
        suffix = ""
        if body[-1:] in "fFlL":
            suffix, body = body[-1].lower(), body[:-1]
        try:
            v = float.fromhex(body) if body[:2] in ("0x", "0X") else float(body)
        except ValueError:
            raise error(NotAffineError, node, filename, f"unsupported floating literal {text!r}") from None
        if suffix == "l":
            raise error(NotAffineError, node, filename, f"long double literal {text!r} is not supported")
        if suffix == "f":
            return float(np.float32(v)), "float"
        return v, "double"
    raise error(NotAffineError, node, filename, f"{node.type} literal {text} is not supported")


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - b * c_div(a, b)


def fold_int(node, lookup: Callable[[c_ast.ID], int], filename: str, what: str) -> int:
    """Value of an integer constant expression (C semantics); ``lookup(id_node)`` gives names' values."""
    rec = lambda n: fold_int(n, lookup, filename, what)  # noqa: E731
    if isinstance(node, c_ast.Constant):
        v, t = parse_number(node, filename)
        if t != "int":
            raise error(NotAffineError, node, filename, f"{what}: {node.value} is not an integer")
        return v
    if isinstance(node, c_ast.ID):
        return lookup(node)
    if isinstance(node, c_ast.UnaryOp):
        if node.op == "-":
            return -rec(node.expr)
        if node.op == "+":
            return rec(node.expr)
        if node.op == "!":
            return int(not rec(node.expr))
    if isinstance(node, c_ast.Cast):
        kind, _ = type_words(node.to_type.type, {}) if isinstance(node.to_type.type, c_ast.TypeDecl) \
            else (None, None)
        if kind == "int":
            return rec(node.expr)
    if isinstance(node, c_ast.TernaryOp):
        return rec(node.iftrue) if rec(node.cond) else rec(node.iffalse)
    if isinstance(node, c_ast.BinaryOp):
        a, b = rec(node.left), rec(node.right)
        op = node.op
        if op in ("/", "%"):
            if b == 0:
                raise error(AffineError, node, filename, f"{what}: division by zero")
            return c_div(a, b) if op == "/" else c_mod(a, b)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<": lambda: int(a < b),
               "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
               "==": lambda: int(a == b), "!=": lambda: int(a != b), "&&": lambda: int(bool(a and b)),
               "||": lambda: int(bool(a or b))}
        if op in ops:
            return ops[op]()
        if op in ("<<", ">>") and 0 <= b < 64:
            return a << b if op == "<<" else a >> b
    raise error(NotAffineError, node, filename, f"{what} must be an integer constant expression")


# -- syntactic scans ----------------------------------------------------------------------------------

def lvalue_base(node) -> c_ast.ID | None:
    """The variable an lvalue ``A[i][j]`` / ``x`` names, or None."""
    while isinstance(node, c_ast.ArrayRef):
        node = node.name
    return node if isinstance(node, c_ast.ID) else None


def written_names(fdef: c_ast.FuncDef) -> set[str]:
    """Names of every variable the function assigns to (``=``, ``op=``, ``++``, ``--``), syntactically."""
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            b = lvalue_base(n.lvalue)
            if b is not None:
                out.add(b.name)
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            if n.op in ("++", "--", "p++", "p--"):
                b = lvalue_base(n.expr)
                if b is not None:
                    out.add(b.name)
            self.generic_visit(n)

    V().visit(fdef.body)
    return out
