"""The program generator produces the shapes of issue 17 -- max/min reductions, arg-min/arg-max pairs, the
online softmax's (running max, rescaled sum) pair, loop iterators as values, temporaries (C locals), writes
to disjoint parts of one array in one nest (remote writes), uniform dependences and time loops around
several nests (phase loops) -- each many times over 500 derandomized hypothesis cases, as MICA's own
analyses see them (tests/fuzz/shapes_util.py), and the programs with arg pairs run on small-integer data so
that ties happen. Generation only: test_fuzz_programs.py compiles and runs 300 programs of its own."""

from collections import Counter

from hypothesis import HealthCheck, given, settings
from shapes_util import SHAPES, shapes_of

from mica.affine.deps import reductions
from mica.affine.from_c import from_c
from mica.fuzz import cases

EXAMPLES = 500
seen: Counter = Counter()


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(case=cases(max_size=8))
def test_generated_programs_have_the_new_shapes(case):
    found = shapes_of(case)
    seen.update(found)
    seen["programs"] += 1
    if "arg pair" in found:
        assert case.data == "small-int", case.source
        rules = {r.strict for r in reductions(from_c(case.source, params=case.params)).values()
                 if r.op.startswith("arg")}
        seen.update(f"arg pair, strict={s}" for s in rules)


def test_each_shape_occurs_dozens_of_times():
    """(runs after the property above, which fills ``seen``)"""
    assert seen["programs"] == EXAMPLES, seen
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(seen.items())))
    for shape in SHAPES:
        assert seen[shape] >= 15, (shape, seen)
    assert seen["arg pair, strict=True"] >= 3 and seen["arg pair, strict=False"] >= 3, seen
    # Floyd-Warshall and its pivot-row relatives (one variant of the uniform-dependence nest): cut at the pivot
    assert seen["pivot"] >= 8, seen
