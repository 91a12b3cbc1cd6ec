"""The fuzzer itself (mica.fuzz): its programs are valid for the front end and in bounds by construction,
mean what the C means, replay from their choices, shrink, and the long run's worker pool reports
mismatches, crashed and hung workers with a shrunk reproducer (self-test with an injected bug)."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mica.affine.from_c import from_c
from mica.fuzz import (F32_TOL, F64_TOL, MAX_EXTENT, Outcome, RandomChooser, case_from_choices, case_from_seed,
                       cases, generate, main, make_inputs, read_reproducer, shrink, write_reproducer)
from mica.testing import run_c, run_program

ROOT = Path(__file__).resolve().parents[2]


def test_programs_are_in_the_subset_and_in_bounds():
    """from_c proves every access in bounds; the generator must never need it to."""
    features = set()
    for seed in range(300):
        case = case_from_seed(f"valid:{seed}")
        prog = from_c(case.source, params=case.params, filename="gen.c")
        # at most four loops, but a time loop around two 2D nests (mica.fuzz.shapes.time_loop_nest), which has five
        fors = case.source.count("for (")
        assert 1 <= len(prog.statements) <= 8 and (fors <= 4 or fors == 5 and re.search(r"for \((int )?k = 0; k < ",
                                                                                         case.source))
        for a in prog.arrays:
            assert all(n <= MAX_EXTENT for n in a.shape), (a, case.source)
        assert 1 <= case.mesh[0] <= 6 and 1 <= case.mesh[1] <= 5 and case.target == "wormhole"
        src = case.source
        features |= {k for k, pat in [("triangular", r"<= [ijk];|< [ijk] \+ 1;|= [ijk] \+ 1;"),
                                      ("offset", r"= 1;|- 1;"), ("down", r"--\)"), ("reduction", r"\] \+= "),
                                      ("scalar", r"alpha|beta"), ("f32", r"float"), ("nested", r"for .*\n\s+for"),
                                      ("min bound", r"\?"), ("param extent", r"\[n"), ("reversed", r"\[\d+ - [ijkl]")]
                     if re.search(pat, src)}
        if case.mesh[0] in (3, 5) and case.params["n"] % case.mesh[0]:
            features.add("mesh not dividing n")
    assert len(features) == 11, features


def test_programs_mean_what_the_c_means():
    """Each program run sequentially (mica.testing.run_program) equals the C: the generator's C stays
    inside what the front end translates faithfully, so the differential fuzz tests the mapping."""
    for seed in range(40):
        case = case_from_seed(f"meaning:{seed}", max_size=6)
        prog = from_c(case.source, params=case.params)
        ins = make_inputs(case.source, case.params, seed)
        want = run_c(case.source, None, ins, case.params)
        got = run_program(prog, {k: v for k, v in ins.items()
                                 if k in set(prog.inputs) | {s for s, _ in prog.scalars}})
        tol = F32_TOL if case.dtype == "f32" else F64_TOL
        for name in want:
            np.testing.assert_allclose(got[name], want[name], err_msg=case.source, **tol)


@settings(max_examples=50, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(cases())
def test_hypothesis_cases_replay_from_their_choices(case):
    again = case_from_choices(case.choices)
    assert (again.source, again.mesh, again.threads, again.params) == \
        (case.source, case.mesh, case.threads, case.params)


def test_seeded_cases_are_deterministic_and_replay():
    a, b = case_from_seed("x:1"), case_from_seed("x:1")
    assert a == b and a.choices == b.choices
    assert case_from_choices(a.choices) == a
    assert generate(RandomChooser("x:2")).source != a.source


def test_shrink_reduces_a_failing_program():
    """A fake evaluator 'fails' on programs with a reduction into a 2-d array: the shrinker must keep
    that and drop everything else."""
    def failing(src):
        return re.search(r"\w\[[^\]]+\]\[[^\]]+\] \+= ", src) is not None

    def evaluate(choices):
        src = case_from_choices(choices).source
        return Outcome("mismatch", "mismatch") if failing(src) else Outcome("ok")
    def statements(src):
        return len(re.findall(r"\] [-+]?= ", src))
    start = next(c for c in (case_from_seed(f"shrink:{k}") for k in range(200))
                 if failing(c.source) and statements(c.source) >= 3)
    small, out = shrink(start.choices, Outcome("mismatch", "mismatch"), evaluate, budget_s=60)
    src = case_from_choices(small).source
    assert failing(src) and out.kind == "mismatch"
    # (a 2-d += in as few loops as the generator makes one: two, or the contraction shape's three)
    assert statements(src) == 1 and src.count("for (") <= 3 and len(small) < len(start.choices), src


def test_reproducer_files_round_trip(tmp_path):
    case = case_from_seed("repro")
    path = tmp_path / "r.c"
    write_reproducer(str(path), case, Outcome("mismatch", "mismatch", "A: 1 of 4 elements differ */ x"), 5, 9)
    back = read_reproducer(str(path))
    assert (back.source, back.mesh, back.params, back.threads, back.dtype) == \
        (case.source, case.mesh, case.params, case.threads, case.dtype)
    assert case_from_choices(back.choices) == case
    from_c(path.read_text(), params=case.params)       # the file is the C function, with a comment header


@pytest.mark.parametrize("inject, counted", [("mismatch", "1 mismatches"), ("segfault", "1 died"),
                                             pytest.param("hang", "1 timeouts", marks=pytest.mark.slow)])
def test_the_long_run_reports_and_shrinks_failures(tmp_path, inject, counted):
    # a seed whose first two programs have no += update and whose third has one (the injected bug's trigger)
    seed = next(s for s in range(40, 400) if all("] +=" not in case_from_seed(f"{s}:{k}").source for k in range(2))
                and "] +=" in case_from_seed(f"{s}:2").source)
    cmd = [sys.executable, "-m", "mica.fuzz", "--seconds", "60", "--seed", str(seed), "--inject-bug", inject,
           "--timeout", "2", "--shrink-seconds", "8" if inject == "hang" else "30", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert counted in done.stdout and "3 programs" in done.stdout, done.stdout
    [repro] = tmp_path.glob(f"mica-fuzz-failure-{seed}-2.c")
    text = repro.read_text()
    kind = {"mismatch": "mismatch", "segfault": "died", "hang": "timeout"}[inject]
    assert text.startswith(f"/* MICA fuzz failure: {kind}") and "] +=" in text, text
    # shrunk: fewer generator decisions (what the shrinker minimises; a for loop's text may be longer)
    assert len(read_reproducer(str(repro)).choices) < len(case_from_seed(f"{seed}:2").choices)


def test_the_long_run_exits_zero_without_failures(tmp_path):
    seed = next(s for s in range(100) if all("] +=" not in case_from_seed(f"{s}:{k}").source for k in range(3)))
    assert main(["--seconds", "60", "--count", "3", "--seed", str(seed), "--inject-bug", "mismatch",
                 "--out", str(tmp_path)]) == 0
    assert not list(tmp_path.iterdir())


def test_the_malformed_run_is_clean(tmp_path, capsys):
    assert main(["--malformed", "--count", "300", "--seed", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "malformed C, seed 5: 300 inputs" in out and not list(tmp_path.iterdir())
