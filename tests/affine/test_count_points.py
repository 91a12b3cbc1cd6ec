"""count_points against isl's own count and a point-by-point enumeration, on random sets: boxes, triangles,
strides (existential divisions), unions of overlapping pieces, empty sets, and parametric sets whose
parameters are fixed, fixed by the set's own equalities, or projected out."""

import random

import islpy as isl
import pytest

from mica.affine.isl_names import count_param_values, count_points, iset

PARAMS = ("p", "q")


def _constraint(rng, dims, params):
    """One random affine constraint over ``dims`` (and maybe the parameters): a bound, a coupling, or a stride."""
    d = rng.choice(dims)
    kind = rng.randrange(4)
    if kind == 0:
        return f"{d} <= {rng.randrange(3, 12)}"
    if kind == 1 and len(dims) > 1:
        e = rng.choice([x for x in dims if x != d])
        return f"{d} <= {e} + {rng.randrange(0, 4)}"
    if kind == 2:
        return f"{d} % {rng.randrange(2, 4)} = {rng.randrange(0, 2)}"
    if params:
        p = rng.choice(params)
        return f"{d} <= {p} + {rng.randrange(0, 3)}" if rng.random() < 0.5 else f"{d} >= {p}"
    return f"{d} >= {rng.randrange(0, 3)}"


def _random_set(rng):
    n = rng.randrange(1, 4)
    dims = [f"i{k}" for k in range(n)]
    params = list(PARAMS[:rng.randrange(0, 3)])
    pieces = []
    for _ in range(rng.randrange(1, 3)):
        cons = [f"0 <= {d} <= {rng.randrange(0, 14)}" for d in dims]
        cons += [_constraint(rng, dims, params) for _ in range(rng.randrange(0, 4))]
        if params and rng.random() < 0.3:
            cons.append(f"{params[0]} = {rng.randrange(0, 6)}")          # a parameter the set fixes itself
        if rng.random() < 0.1:
            cons.append(f"{dims[0]} < 0")                                   # an empty piece
        pieces.append(f"S[{', '.join(dims)}] : {' and '.join(cons)}")
    head = f"[{', '.join(params)}] -> " if params else ""
    return isl.Set(head + "{ " + "; ".join(pieces) + " }"), params


def _enumerated(s):
    points = []
    s.foreach_point(points.append)
    return len(points)


def _reference(s, fix, drop):
    for name, v in fix.items():
        s = s.fix_val(isl.dim_type.param, s.find_dim_by_name(isl.dim_type.param, name), v)
    for name in drop:
        s = s.project_out(isl.dim_type.param, s.find_dim_by_name(isl.dim_type.param, name), 1)
    return s


@pytest.mark.parametrize("seed", range(300))
def test_count_points_equals_isl_count_and_enumeration(seed):
    rng = random.Random(seed)
    s, params = _random_set(rng)
    drop = [p for p in params if rng.random() < 0.3]
    fix = {p: rng.randrange(0, 8) for p in params if p not in drop}
    ref = _reference(s, fix, drop)
    want = int(ref.count_val().to_str())
    assert count_points(s, fix, drop) == want
    # the parameters now all fixed: the set's points for those values
    fixed = ref.project_out(isl.dim_type.param, 0, ref.dim(isl.dim_type.param))
    assert want == _enumerated(fixed)
    assert count_points(s, fix, drop) == want           # memoised: the same answer


@pytest.mark.parametrize("text, fix, drop, want", [
    # a core's tile of a streamed 4096^3 matmul: __x, __y fixed, __t projected out: a 512x512x4096 box
    ("[__x, __y, __t] -> { S1[i, j, k] : 512__y <= i <= 511 + 512__y and 0 <= i <= 4095 and 512__x <= j <= "
     "511 + 512__x and 0 <= j <= 4095 and 32__t <= k <= 31 + 32__t and 0 <= k <= 4095 }",
     {"__x": 3, "__y": 7}, ("__t",), 512 * 512 * 4096),
    ("[__x, __t] -> { S[i, j] : __t = 0 and 3__x <= i <= 3__x + 2 and 0 <= j <= i - 3__x }", {"__x": 5}, (), 6),
    ("[n] -> { S[i, j] : 0 <= i < n and 0 <= j < n and n = 4096 }", {}, (), 4096 * 4096),
    ("[n] -> { S[i] : 0 <= i < n and 2 <= i }", {"n": 1}, (), 0),
])
def test_count_points_substitutes_fixed_parameters(text, fix, drop, want):
    """Fixed parameters are substituted before counting, so a large tile of a parametric domain is a box
    counted in constant time (isl's count_val would enumerate a billion points): it stays so under a budget
    too small for enumeration."""
    from mica.affine.isl_names import _count_cached, isl_budget
    assert count_points(iset(text), fix, drop) == want
    _count_cached.cache_clear()                                        # counted again, not remembered
    with isl_budget("counting", ops=20_000):
        assert count_points(iset(text), fix, drop) == want


def test_count_param_values_with_fixed_parameters():
    s = iset("[__x, __t] -> { S[i] : __x = 2 and 0 <= __t <= 9 and __t % 3 = 0 and 0 <= i <= __t }")
    assert count_param_values(s, "__t", {"__x": 2}) == 4
    assert count_param_values(s, "__t", {"__x": 1}) == 0
