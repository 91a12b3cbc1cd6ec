"""The polyhedral front: affine programs, their dataflow, and the front ends that build them.

``from_c(source, function=None, *, params=None)`` turns C loop nests into a :class:`Program`.
"""

from .from_c import from_c
from .program import Access, Array, Program, Statement

__all__ = ["from_c", "Program", "Statement", "Access", "Array"]
