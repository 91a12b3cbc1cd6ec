"""The one error hierarchy of MICA.

Every error MICA raises on purpose is a :class:`MicaError`. Each names the construct it is about and
where it is (array, statement, loop, core, step, colour). Errors from isl, pycparser or the C compiler are
wrapped in one of these with context; they are never leaked raw. ::

    MicaError
    ├── MeshError        bad mesh shape (zero, negative, larger than the target's grid)
    ├── TargetError      unknown target or malformed target description
    ├── AffineError      a program that is malformed (front end, builders)
    │   └── NotAffineError   a construct outside the affine subset
    ├── ScheduleError    no legal/fitting schedule; a forced schedule that does not apply
    │   ├── SramError        per-core data that cannot fit the target's SRAM
    │   └── DramError        arrays that cannot fit the target's device DRAM
    ├── CommError        communication that cannot be derived, classified or routed
    ├── MeshIRError      a MeshIR program that fails verification
    ├── EmitError        code generation or native compilation failed
    ├── InputError       inputs given to ``run()`` are missing or of the wrong shape/dtype
    ├── ArgumentError    an argument of the wrong type (also a :class:`TypeError`)
    ├── LoadError        a file given to ``mica.load`` that is not a saved program, of another format, or damaged
    └── SimError         the emulator detected a fault (unrouted colour, unmatched receive, overflow)
"""

from __future__ import annotations


class MicaError(Exception):
    """Root of every error MICA raises on purpose.

    ``detail`` holds an optional longer explanation (the offending relation, the candidate list) that
    is not part of the short message; ``str(err)`` is the short message. ``cause`` is a typed reason where
    the raiser knows one a caller may act on (``"colours"``: more colours than a router holds;
    ``"double-buffers"``: only the second slots of double buffers overflow SRAM; ``"nothing-to-prefetch"``:
    double buffering asked for where nothing is received) — the schedule search sorts its rejections by it
    (:data:`mica.tiling.search.REJECTIONS`) instead of reading messages.
    """

    #: True on an error the lowering raised before it read how the plan combines partial results across
    #: cores (:attr:`Schedule.reduce`, :attr:`Schedule.group`): every plan that differs only in those fails the
    #: same way (:func:`mica.lower.build.build_mesh_program` sets it; the schedule search skips such plans).
    before_combining: bool = False

    def __init__(self, message: str, *, detail: str | None = None,
                 location: tuple[str, int, int] | None = None, cause: str | None = None):
        super().__init__(message)
        self.detail = detail
        self.cause = cause
        #: ``(filename, line, column)`` of the source construct the error is about (front ends), or None.
        self.location = location

    @property
    def filename(self) -> str | None:
        return self.location[0] if self.location else None

    @property
    def line(self) -> int | None:
        return self.location[1] if self.location else None

    @property
    def column(self) -> int | None:
        return self.location[2] if self.location else None

    def render(self, detailed: bool = False) -> str:
        """The short message, or with ``detailed=True`` the message followed by the detail."""
        if detailed and self.detail:
            return f"{self}\n{self.detail}"
        return str(self)


class MeshError(MicaError):
    """A mesh shape that is not usable: zero or negative, or larger than the target's grid."""


class TargetError(MicaError):
    """An unknown target name or an inconsistent target description."""


class AffineError(MicaError):
    """A program that is malformed: bad shapes, unknown arrays, accesses outside declared extents."""


class NotAffineError(AffineError):
    """A construct outside the affine subset MICA accepts (non-affine subscript, unsupported statement)."""


class ScheduleError(MicaError):
    """No legal schedule, or a schedule that does not apply to the program it is given."""


class BudgetError(ScheduleError):
    """A polyhedral step ran out of its isl operation budget (a pathological input); ``step`` names it."""

    def __init__(self, message: str, *, step: str = "", **kw):
        super().__init__(message, **kw)
        self.step = step


class SramError(ScheduleError):
    """Per-core data that cannot fit the target's SRAM; ``needed`` is the bytes per core the plan asked for,
    when known (the search shows the rejected plan that came closest)."""

    def __init__(self, message: str, *, needed: int | None = None, **kw):
        super().__init__(message, **kw)
        self.needed = needed


class DramError(ScheduleError):
    """Arrays that cannot fit the target's device DRAM (a plan streaming from DRAM keeps the program's inputs
    and outputs there); ``needed`` is the bytes asked for."""

    def __init__(self, message: str, *, needed: int | None = None, **kw):
        kw.setdefault("cause", "dram")
        super().__init__(message, **kw)
        self.needed = needed


class CommError(MicaError):
    """Communication that cannot be derived, classified into a pattern, or routed within the budget."""


class MeshIRError(MicaError):
    """A MeshIR program that fails verification (memory, routes, unmatched receives)."""


class EmitError(MicaError):
    """Code generation or native compilation failed."""


class InputError(MicaError):
    """Inputs given to ``CompiledProgram.run`` are missing, unexpected, or of the wrong shape or dtype."""


class ArgumentError(MicaError, TypeError):
    """An argument of the wrong type given to a MICA function (a number where a program is expected); also
    a :class:`TypeError`, so ``except TypeError`` catches it as Python's own functions would raise."""


class LoadError(MicaError):
    """A file given to :func:`mica.load` that is not a saved MICA program, was saved in another format
    version or by a MICA whose records differ, or is damaged (truncated, edited, not a pickle of MICA's
    records). The message names the file; compile the program again and save it."""


class SimError(MicaError):
    """A fault detected by the emulator: unrouted colour, unmatched receive, arena overflow, bad op."""
