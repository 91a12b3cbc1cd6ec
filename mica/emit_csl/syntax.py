"""Syntax check of emitted CSL against ``csl.lark`` (the subset MICA emits), with lark's LALR parser.

lark is needed only here; it is imported lazily so the rest of the back end (and MICA) runs without it,
and a missing lark is reported as an :class:`EmitError` naming the file it could not check.

Public API: :func:`check`, :func:`parse`.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..errors import EmitError


@lru_cache(maxsize=1)
def _parser():
    try:
        import lark
    except ImportError:
        raise EmitError("the CSL syntax check needs lark (pip install lark, or mica[test])") from None
    grammar = resources.files("mica.emit_csl").joinpath("csl.lark").read_text(encoding="utf-8")
    return lark.Lark(grammar, parser="lalr", propagate_positions=True)


def parse(text: str, name: str = "<csl>"):
    """The lark tree of ``text``; :class:`EmitError` naming ``name``, line and column when it is not in
    the CSL subset."""
    import lark
    try:
        return _parser().parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        line, col = getattr(exc, "line", 0), getattr(exc, "column", 0)
        src = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
        raise EmitError(f"{name}:{line}:{col}: not valid CSL (MICA's subset): {type(exc).__name__}\n  {src.strip()}",
                        location=(name, line, col)) from None


def check(text: str, name: str = "<csl>") -> None:
    """Raises :class:`EmitError` when ``text`` does not parse."""
    parse(text, name)
