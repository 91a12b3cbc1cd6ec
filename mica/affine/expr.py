"""Affine index expressions and right-hand-side expression trees.

:class:`Aff` is an integer affine form over loop and parameter names (``2*i + j - 1``); it is what an
array subscript is. The expression tree (:class:`Const`, :class:`Scalar`, :class:`Read`, :class:`Bin`,
:class:`Neg`, :class:`Call`, :class:`Select`, :class:`Cmp`, :class:`Index`) is what a statement computes; its
leaves read arrays through tagged references (``Read.ref`` names an :class:`~mica.affine.program.Access`) or
take the value of an integer affine form of the statement's loop iterators (:class:`Index`: ``(float)n``,
``i - j``).
All records are frozen and hashable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

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


BIN_OPS = ("+", "-", "*", "/")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
CALLS = ("sqrt", "exp", "log", "pow", "fabs", "fmax", "fmin")


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
