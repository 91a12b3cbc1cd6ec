"""Affine index expressions and right-hand-side expression trees.

:class:`Aff` is an integer affine form over loop and parameter names (``2*i + j - 1``); it is what an
array subscript is. The expression tree (:class:`Const`, :class:`Scalar`, :class:`Read`, :class:`Bin`,
:class:`Neg`, :class:`Call`, :class:`Select`, :class:`Cmp`, :class:`Index`, :class:`Conv`) is what a statement
computes; its leaves read arrays through tagged references (``Read.ref`` names an
:class:`~mica.affine.program.Access`) or take the value of an integer affine form of the statement's loop
iterators (:class:`Index`: ``(float)n``, ``i - j``); :class:`Conv` is an explicit conversion. All records are frozen and hashable.

Types follow C (:func:`int_typed`): a read of an integer array (``i32``/``i16``/``i8``/``u8``), a scalar of
an integer dtype, an :class:`Index` (a C ``int`` iterator's value) and a :class:`Conv` to an integer dtype
are *integer*; a :class:`Const` whose value is a Python ``int`` is *neutral* (it takes the type of what it
is combined with, like a C integer literal next to a float); a float :class:`Const`, a float read or scalar,
a :class:`Call` and a :class:`Conv` to a float dtype are *float*. An operator with a float operand is
float; with integer (or neutral) operands only it is C's 32-bit ``int`` arithmetic: ``/`` truncates toward
zero, ``%`` (integers only) takes the dividend's sign, narrow operands promote to ``int``. Storing converts
to the written array's dtype (a float value to an integer array truncates toward zero). A tree without
integer leaves means what it always meant.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable, Iterator, Mapping

from ..errors import AffineError
from .isl_names import aff_text, check_ident


@dataclass(frozen=True)
class Aff:
    """``sum(c * name for name, c in coeffs) + const``; coefficients sorted by name, zeros dropped."""

    coeffs: tuple[tuple[str, int], ...] = ()
    const: int = 0

    def __post_init__(self):
        for name, c in self.coeffs:
            check_ident(name, "affine variable")
            if not isinstance(c, int) or c == 0:
                raise AffineError(f"bad coefficient {c!r} for {name!r} in an affine expression")
        if list(self.coeffs) != sorted(self.coeffs):
            raise AffineError("Aff coefficients must be sorted by name; use Aff.of()")

    @staticmethod
    def of(terms: Mapping[str, int] | None = None, const: int = 0) -> "Aff":
        terms = terms or {}
        return Aff(tuple(sorted((k, int(v)) for k, v in terms.items() if v)), int(const))

    @staticmethod
    def var(name: str) -> "Aff":
        return Aff(((name, 1),), 0)

    def coeff(self, name: str) -> int:
        return dict(self.coeffs).get(name, 0)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.coeffs)

    def single_var(self) -> str | None:
        """The variable name if this is exactly ``name`` (coefficient 1, constant 0), else None."""
        if self.const == 0 and len(self.coeffs) == 1 and self.coeffs[0][1] == 1:
            return self.coeffs[0][0]
        return None

    def offset_var(self) -> str | None:
        """The variable name if this is ``name + constant`` (coefficient 1), else None."""
        if len(self.coeffs) == 1 and self.coeffs[0][1] == 1:
            return self.coeffs[0][0]
        return None

    def text(self) -> str:
        return aff_text(self.coeffs, self.const)

    def evaluate(self, env: Mapping[str, int]) -> int:
        return self.const + sum(c * env[n] for n, c in self.coeffs)

    def __add__(self, other: "Aff | int") -> "Aff":
        if isinstance(other, int):
            return Aff(self.coeffs, self.const + other)
        d = dict(self.coeffs)
        for n, c in other.coeffs:
            d[n] = d.get(n, 0) + c
        return Aff.of(d, self.const + other.const)

    def __str__(self) -> str:
        return self.text()


class Expr:
    """Base of right-hand-side expression nodes."""

    def children(self) -> tuple["Expr", ...]:
        return ()

    def walk(self) -> Iterator["Expr"]:
        yield self
        for c in self.children():
            yield from c.walk()

    def refs(self) -> tuple[str, ...]:
        return tuple(e.ref for e in self.walk() if isinstance(e, Read))

    def with_children(self, kids: tuple["Expr", ...]) -> "Expr":
        """This node with its child expressions replaced by ``kids`` (in :meth:`children` order)."""
        vals = {}
        it = iter(kids)
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Expr):
                vals[f.name] = next(it)
            elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
                vals[f.name] = tuple(next(it) for _ in v)
        return replace(self, **vals)


@dataclass(frozen=True)
class Const(Expr):
    value: float | int


@dataclass(frozen=True)
class Scalar(Expr):
    """A scalar parameter of the program (e.g. ``alpha``), passed to ``run()`` by name."""
    name: str


@dataclass(frozen=True)
class Index(Expr):
    """The value of the integer affine form ``aff`` of the statement's loop iterators (the GLOBAL iteration
    indices: ``(float)n``, ``i - j``), converted to the statement's element type. Every printer gives it
    the text of the global index, whatever local loops a kernel runs."""
    aff: Aff


@dataclass(frozen=True)
class Read(Expr):
    """A read of an array element through the access tagged ``ref``."""
    ref: str


BIN_OPS = ("+", "-", "*", "/", "%")    # '%' on integer operands only
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
CALLS = ("sqrt", "exp", "log", "pow", "fabs", "fmax", "fmin", "tanh", "erf")


@dataclass(frozen=True)
class Bin(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def __post_init__(self):
        if self.op not in BIN_OPS:
            raise AffineError(f"unsupported binary operator {self.op!r}")

    def children(self):
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class Neg(Expr):
    arg: Expr

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]

    def __post_init__(self):
        if self.fn not in CALLS:
            raise AffineError(f"unsupported function {self.fn!r}; supported: {', '.join(CALLS)}")

    def children(self):
        return self.args


@dataclass(frozen=True)
class Cmp(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def __post_init__(self):
        if self.op not in CMP_OPS:
            raise AffineError(f"unsupported comparison {self.op!r}")

    def children(self):
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class Select(Expr):
    cond: Expr
    then: Expr
    other: Expr

    def children(self):
        return (self.cond, self.then, self.other)


#: Dtypes a :class:`Conv` may convert to (those of :data:`mica.targets.DTYPE_BYTES`).
CONV_DTYPES = ("f64", "f32", "f16", "bf16", "i32", "i16", "i8", "u8")
INT_DTYPES = ("i32", "i16", "i8", "u8")


@dataclass(frozen=True)
class Conv(Expr):
    """An explicit conversion of ``arg`` to ``dtype`` (a C cast: ``(int)x`` truncates toward zero, ``(double)n``
    makes the division it feeds a float one)."""
    dtype: str
    arg: Expr

    def __post_init__(self):
        if self.dtype not in CONV_DTYPES:
            raise AffineError(f"unsupported conversion to {self.dtype!r}")

    def children(self):
        return (self.arg,)


def int_typed(e: Expr, dtype_of: Callable[[Expr], str]) -> bool | None:
    """True if ``e`` computes with C integer arithmetic, False if with floating point, None if it is neutral
    (made of integer literals only: it takes its context's type). ``dtype_of(leaf)`` gives the dtype of a
    :class:`Read` or :class:`Scalar` leaf."""
    if isinstance(e, Const):
        return None if isinstance(e.value, int) and not isinstance(e.value, bool) else False
    if isinstance(e, (Read, Scalar)):
        return dtype_of(e) in INT_DTYPES
    if isinstance(e, Index):
        return True
    if isinstance(e, Conv):
        return e.dtype in INT_DTYPES
    if isinstance(e, Call):
        return False
    if isinstance(e, Neg):
        return int_typed(e.arg, dtype_of)
    if isinstance(e, (Bin, Cmp)):
        return combine_types(int_typed(e.lhs, dtype_of), int_typed(e.rhs, dtype_of))
    if isinstance(e, Select):
        return combine_types(int_typed(e.then, dtype_of), int_typed(e.other, dtype_of))
    return False


def combine_types(a: bool | None, b: bool | None) -> bool | None:
    """The type of an operator on operands of types ``a`` and ``b`` (C's usual arithmetic conversions)."""
    if a is False or b is False:
        return False
    if a or b:
        return True
    return None
