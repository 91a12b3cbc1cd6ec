"""Random programs cut into pieces (mica.affine.pieces): for every dimension class a random affine
program can be cut along, its pieces run one after another on the cut inputs and pasted back give the
program's outputs bit for bit (both run as C compiled natively; unwritten elements stay NaN in both).
A class the cutter accepts must be one no dependence crosses; this is where a wrong acceptance shows."""

from hypothesis import HealthCheck, given, settings

from mica.affine.from_c import from_c
from mica.affine.pieces import cut_candidates, cut_program
from mica.fuzz import cases, make_inputs
from mica.testing import run_program

EXAMPLES = 300
seen = {"cut": 0}


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(case=cases(max_size=6))
def test_random_programs_cut_into_pieces_compute_the_same(case):
    prog = from_c(case.source, params=case.params)
    ins = make_inputs(case.source, case.params)
    ins = {k: v for k, v in ins.items() if k in prog.inputs or k in dict(prog.scalars)}
    want = None
    for array, dim in cut_candidates(prog):
        for count in (2, 3):
            pieces = cut_program(prog, array, dim, count)
            if want is None:
                want = run_program(prog, ins)
            got = pieces.join(run_program(pieces.program, pieces.split(ins)))
            for name in prog.outputs:
                assert got[name].tobytes() == want[name].tobytes(), (
                    f"{name} differs when cut into {count} along dimension {dim} of {array}:\n{case.source}")
            seen["cut"] += 1


def test_random_programs_were_cut():
    """The property above ran on programs with something to cut (it runs first in this module)."""
    assert seen["cut"] >= EXAMPLES // 10, seen
