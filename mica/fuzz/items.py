"""The generator's program tree: loops (:class:`_Loop`), and assignments or initialised declarations of C locals
(:class:`_Stmt`), rendered to C by :func:`mica.fuzz.generate`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _Loop:
    var: str
    lo: int                 # the iterator's range over every execution: [lo, hi] (inclusive)
    hi: int
    header: str = ""
    body: list = field(default_factory=list)


@dataclass
class _Stmt:
    lhs: str                # the written reference, or a declaration with an initialiser ("double t")
    op: str
    rhs: str

