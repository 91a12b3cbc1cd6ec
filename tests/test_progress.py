"""Progress on stderr follows one policy for the search and the emulator: asked for, refused, or else
``$MICA_PROGRESS``, else only on a terminal; in a log every report is a line of its own."""

import io

import mica
import mica.tiling.search as search_mod
from mica.progress import PROGRESS_ENV, search_reporter


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_no_search_progress_off_a_terminal_or_when_refused(monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert search_reporter(None, io.StringIO()) is None
    assert search_reporter(False, _Tty()) is None
    monkeypatch.setenv(PROGRESS_ENV, "0")
    assert search_reporter(None, _Tty()) is None


def test_search_progress_redraws_on_a_terminal_and_writes_lines_in_a_log(monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    tty = _Tty()
    report = search_reporter(None, tty)
    report(3, 10, 2.5)
    report(10, 10, 3.0, done=True)
    assert tty.getvalue() == ("mica: searching schedules 3/10 (2.5 s)\r"
                              "mica: searching schedules 10/10 (3.0 s)\n")
    monkeypatch.setenv(PROGRESS_ENV, "1")
    log = io.StringIO()
    report = search_reporter(None, log)
    report(3, 10, 2.5)
    report(10, 10, 3.0, done=True)
    assert log.getvalue().splitlines() == ["mica: searching schedules 3/10 (2.5 s)",
                                           "mica: searching schedules 10/10 (3.0 s)"]


def test_compile_affine_progress_switch(monkeypatch, capsys):
    monkeypatch.setattr(search_mod, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setenv(PROGRESS_ENV, "1")
    op = mica.ops.gemv(32, 32)
    mica.compile_affine(op, mesh=(4, 4), progress=False)
    assert capsys.readouterr().err == ""
    mica.compile_affine(op, mesh=(4, 4))                       # $MICA_PROGRESS=1: wanted, one line each
    err = capsys.readouterr().err
    assert err.startswith("mica: searching schedules") and "\r" not in err
    monkeypatch.setenv(PROGRESS_ENV, "0")
    mica.compile_affine(op, mesh=(4, 4), progress=True)        # asked for beats the environment
    assert "mica: searching schedules" in capsys.readouterr().err
    mica.compile_affine(op, mesh=(4, 4))
    assert capsys.readouterr().err == ""
