"""Randomly generated affine C functions (loops up and down, min/max bounds, if/else, affine and
data-dependent ternaries, scalar temporaries): the Program run sequentially equals the native C.

Derandomized, so the same programs come back on every run and their compiled libraries are cached."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mica.affine.from_c import from_c
from mica.testing import assert_matches, run_c, run_program

from frontend_util import make_inputs

N = 10          # the value of n; arrays have 12 elements per dimension, so i + 1 stays inside


class Gen:
    """A random affine C function from a seed (plain ``random`` is much faster than nested strategies)."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.budget = 14            # statements and headers left

    def sub(self, vars_):
        r = self.r
        if vars_ and r.random() < 0.6:
            v = r.choice(vars_)
            return r.choice([v, f"{v} + 1", f"n - 1 - {v}"])
        return r.choice(["0", "n - 1", "3"])

    def leaf(self, vars_):
        r = self.r
        k = r.randrange(3)
        if k == 0:
            return f"A[{self.sub(vars_)}]"
        if k == 1:
            return f"B[{self.sub(vars_)}][{self.sub(vars_)}]" if r.random() < 0.7 else f"T[{self.sub(vars_)}]"
        return r.choice(["0.5", "2.0", "s", "alpha", "(double)n", "1.5f"])

    def expr(self, vars_, depth=0):
        r = self.r
        if depth >= 2:
            return self.leaf(vars_)
        kind = r.randrange(8)
        e = lambda: self.expr(vars_, depth + 1)  # noqa: E731
        if kind <= 2:
            return self.leaf(vars_)
        if kind == 3:
            return f"({e()} {r.choice(['+', '-', '*'])} {e()})"
        if kind == 4:
            return f"({e()} < {e()} ? {e()} : {e()})"
        if kind == 5 and vars_:
            v = r.choice(vars_)
            return f"({v} % 2 == 0 || {v} > 6 ? {e()} : {e()})"
        if kind == 6:
            return r.choice([f"sqrt(fabs({e()}) + 1.0)", f"({e()} > 0.5 && {e()} < 1.5 ? {e()} : {e()})",
                             f"fmax({e()}, {e()})"])
        return f"(-{e()})"

    def condition(self, vars_):
        r = self.r
        v = r.choice(vars_)
        w = r.choice(vars_ + ["4", "n - 3"])
        atom = f"{v} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {w}"
        return r.choice([atom, f"{atom} && {v} != 5", f"!({atom}) || {v} == 0", f"({v} + {w}) % 3 == 1"])

    def header(self, var, outer):
        r = self.r
        lo = ["0", "1"] + list(outer) + [f"({o} > 2 ? {o} - 2 : 0)" for o in outer]
        hi = ["n", "n - 1"] + [f"{o} + 1" for o in outer] + [f"({o} + 3 < n ? {o} + 3 : n)" for o in outer]
        a, b = r.choice(lo), r.choice(hi)
        if r.random() < 0.5:
            return f"for ({var} = {a}; {var} < {b}; {var}++)"
        return f"for ({var} = {b} - 1; {var} >= {a}; {var}--)"

    def block(self, vars_, depth, indent):
        r = self.r
        out = []
        pad = "  " * indent
        for _ in range(r.randint(1, 3)):
            if self.budget <= 0:
                break
            self.budget -= 1
            kind = r.randrange(6)
            if kind <= 1 and len(vars_) < 3 and depth < 4:
                var = ["i", "j", "k"][len(vars_)]
                out.append(pad + self.header(var, vars_) + " {")
                out += self.block(vars_ + [var], depth + 1, indent + 1)
                out.append(pad + "}")
            elif kind == 2 and vars_ and depth < 4:
                out.append(pad + f"if ({self.condition(vars_)}) {{")
                out += self.block(vars_, depth + 1, indent + 1)
                if r.random() < 0.5:
                    out.append(pad + "} else {")
                    out += self.block(vars_, depth + 1, indent + 1)
                out.append(pad + "}")
            else:
                lhs = r.choice([f"A[{self.sub(vars_)}]", f"B[{self.sub(vars_)}][{self.sub(vars_)}]", "s",
                                f"T[{self.sub(vars_)}]"])
                out.append(pad + f"{lhs} {r.choice(['=', '+=', '-=', '*='])} {self.expr(vars_)};")
        return out or [pad + "s = s + 1.0;"]

    def program(self) -> str:
        lines = ["void kernel_rand(int n, double alpha, double A[12], double B[12][12])", "{",
                 "  int i, j, k;", "  double s, T[12];", "  s = alpha;",
                 "  for (k = 0; k < 12; k++)", "    T[k] = A[k] * 0.5;"]
        lines += self.block([], 0, 1)
        lines.append("}")
        return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**32 - 1))
def test_random_affine_programs_match_native_c(seed):
    src = Gen(seed).program()
    params = {"n": N}
    prog = from_c(src, params=params, filename="rand.c")
    ins = make_inputs(src, None, params, seed=5)
    want = run_c(src, None, ins, params)
    assert_matches(run_program(prog, ins), want, rtol=1e-12), src
