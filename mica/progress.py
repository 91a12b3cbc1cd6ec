"""When MICA reports progress on stderr, and how: one policy for the schedule search and the emulator.

Progress is drawn when asked for (``progress=True`` on :func:`mica.compile_affine` or ``run``), never when
refused (``progress=False``); otherwise ``$MICA_PROGRESS`` decides (``0``/``1``), and without it only a
terminal gets it. On a terminal a line is redrawn in place (``\\r``); anywhere else (a log) each report is a
line of its own."""

from __future__ import annotations

import os
import sys

#: Environment variable: ``0`` turns the progress bar off, ``1`` turns it on even when stderr is no terminal.
PROGRESS_ENV = "MICA_PROGRESS"


def progress_wanted(enabled: bool | None = None, stream=None) -> bool:
    """Whether a run draws a progress bar: ``enabled`` if given, else ``$MICA_PROGRESS`` (``0``/``1``) if
    set, else whether ``stream`` (stderr) is a terminal."""
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if env in ("0", "no", "off", "false"):
        return False
    if env in ("1", "yes", "on", "true"):
        return True
    return _is_terminal(sys.stderr if stream is None else stream)


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):       # no isatty, or a closed stream
        return False


def search_reporter(enabled: bool | None = None, stream=None):
    """The schedule search's progress callback ``(count, total, elapsed, done=False)`` under the policy of
    :func:`progress_wanted`, or None when no progress is wanted."""
    stream = sys.stderr if stream is None else stream
    if not progress_wanted(enabled, stream):
        return None
    redraw = _is_terminal(stream)

    def report(count: int, total: int, elapsed: float, done: bool = False) -> None:
        end = "\n" if done or not redraw else "\r"
        print(f"mica: searching schedules {count}/{total} ({elapsed:.1f} s)", end=end, file=stream, flush=True)
    return report
