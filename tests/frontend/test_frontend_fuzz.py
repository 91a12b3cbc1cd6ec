"""Random mutations of a valid kernel: from_c returns a Program or raises a located MicaError, nothing else."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mica.affine.from_c import from_c
from mica.affine.program import Program
from mica.errors import MicaError

SEED = """void kernel_mix(int n, int m, double alpha, double A[12 + 0][14 + 0], double x[14 + 0], double y[12 + 0])
{
  int i, j;
  double t;
#pragma scop
  for (i = 0; i < n; i++) {
    t = 0.0;
    for (j = (i > 2 ? i - 2 : 0); j <= (m - 1 < i + 3 ? m - 1 : i + 3); j++)
      t += A[i][j] * x[j];
    if (i % 2 == 0 || i > n - 3)
      y[i] = alpha * t + (y[i] < t ? y[i] : sqrt(t));
    else
      y[i] -= i < 4 ? t : 2.0 * t;
  }
  for (i = n - 1; i >= 1; i--)
    y[i - 1] = y[i - 1] + y[i] / 3.0;
#pragma endscop
}
"""

ALPHABET = "ijnmxyAt0123()[]{};=+-*/<>?:!&|%.,# \nfor if else double int sqrt while"

mutation = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 6)),
    st.tuples(st.just("duplicate"), st.integers(0, 10_000), st.integers(1, 12)),
    st.tuples(st.just("replace"), st.integers(0, 10_000), st.sampled_from(list(ALPHABET) + ["for", "if", "i",
                                                                                          "1000", "-1"])),
)


def mutate(text: str, muts) -> str:
    for kind, pos, arg in muts:
        if not text:
            break
        p = pos % len(text)
        if kind == "delete":
            text = text[:p] + text[p + arg:]
        elif kind == "duplicate":
            text = text[:p] + text[p:p + arg] + text[p:]
        else:
            text = text[:p] + arg + text[p + 1:]
    return text


def test_seed_is_valid():
    prog = from_c(SEED, params={"n": 12, "m": 14})
    assert isinstance(prog, Program) and len(prog.statements) >= 5


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(mutation, min_size=1, max_size=4), st.sampled_from([None, "kernel_mix"]))
def test_mutations_give_a_program_or_a_located_mica_error(muts, function):
    text = mutate(SEED, muts)
    try:
        prog = from_c(text, function, params={"n": 12, "m": 14}, filename="mut.c")
    except MicaError as err:
        assert err.location is not None, str(err)
        assert str(err).startswith(f"mut.c:{err.line}:{err.column}: "), str(err)
        assert "internal error" not in str(err), str(err)
    else:
        assert isinstance(prog, Program)
