"""The program shapes the generator mixes into its random programs (issue 17): max/min reductions in
every spelling, arg-min/arg-max (value, index) pairs, the online softmax's (running max, rescaled sum) pair, temporaries (C locals, scalar and array, rewritten
in every iteration of an outer loop), writes to parts of an array another core owns (symmetric fill,
transposed and strided writes), uniform dependences (wavefronts, Gauss-Seidel, recurrences,
Floyd-Warshall, triangular solve) and time loops around nests that want opposite layouts (phase loops).

Each ``*_nest(g)`` builds one top-level loop nest from the decisions of the generator ``g``
(:class:`mica.fuzz.generate._Gen`: its chooser, loops, subscripts, expressions and array bookkeeping) and
returns its items, or None when the nest does not fit the program's remaining loop budget or array names.
Every subscript stays in bounds (ranges are recorded with ``g.mark``), every local is written before it
is read in the same iteration, and a zero draw gives the simplest variant of each shape.
"""

from __future__ import annotations

from .items import _Loop, _Stmt

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}      # a op b  ==  b FLIP[op] a
_NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}       # not (a op b)  ==  a NEG[op] b


def condition(g, kind: str):
    """A random spelling of "the new value ``e`` wins over ``x``" for a ``kind`` ('max'/'min')
    reduction: (``cond(e, x)`` text builder, whether the new value is the ``then`` branch). Ties keep
    ``x`` or take ``e`` depending on the drawn comparison (``>`` vs ``>=``), so both tie rules occur."""
    ch = g.ch
    wins = ch.choice([">", ">="] if kind == "max" else ["<", "<="])
    form = ch.draw(4)
    if form == 0:
        return (lambda e, x: f"{e} {wins} {x}"), True
    if form == 1:
        return (lambda e, x: f"{x} {_FLIP[wins]} {e}"), True
    if form == 2:
        return (lambda e, x: f"{e} {_NEG[wins]} {x}"), False
    return (lambda e, x: f"{x} {_FLIP[_NEG[wins]]} {e}"), False


def select(cond, new_first: bool, e: str, x: str, new: str, old: str) -> str:
    c = cond(e, x)
    return f"{c} ? {new} : {old}" if new_first else f"{c} ? {old} : {new}"


def minmax(g, kind: str, x: str, e: str) -> str:
    """``x`` updated to the max/min of ``x`` and ``e``: ``fmax``/``fmin`` (``f`` suffix for float), either
    argument order, or one of the ternary spellings."""
    ch = g.ch
    if g.dtype != "int" and ch.coin(0.4):
        f = "f" if g.dtype == "float" else ""
        a, b = (x, e) if not ch.coin(0.5) else (e, x)
        return f"f{kind}{f}({a}, {b})"
    cond, first = condition(g, kind)
    return select(cond, first, e, x, e, x)


def identity(g, kind: str) -> str:
    """The identity of a max/min: an infinity, or for int a value below/above every one the programs compute."""
    if g.dtype == "int":
        return "-1000000" if kind == "max" else "1000000"
    return "-INFINITY" if kind == "max" else "INFINITY"


def cast(g, text: str) -> str:
    return f"({g.dtype})" + (text if text.isidentifier() else f"({text})")


def iterator_value(g, scope: list[_Loop]) -> str:
    """A loop iterator used as a value: ``(double)j``, ``(double)(j + 1)``, ``(double)(i - j)`` (double
    only: f32 programs stay free of cancellation) or ``(double)n``."""
    ch = g.ch
    v = scope[-1] if not ch.coin(0.3) else scope[ch.draw(len(scope))]
    k = ch.draw(4)
    if k == 1:
        return cast(g, f"{v.var} + 1")
    if k == 2 and len(scope) > 1 and g.dtype == "double":
        u = scope[0] if scope[0] is not v else scope[1]
        return cast(g, f"{u.var} - {v.var}")
    if k == 3:
        return cast(g, "n")
    return cast(g, v.var)


def _for(g, var: str, lo_t: str, ub_t: str, lo: int, hi: int) -> _Loop:
    decl = f"int {var}" if g.decl_in_for else var
    return _Loop(var, lo, hi, f"for ({decl} = {lo_t}; {var} < {ub_t}; {var}++)")


def _loops(g, need: int) -> bool:
    """Claims ``need`` loops of the program's budget of 4."""
    if g.fors + need > 4:
        return False
    g.fors += need
    return True


def _size(g, most: int = 12) -> tuple[str, int]:
    """A loop extent text and its value (a size parameter or a constant), at most ``most``."""
    t, v = g.size_text()
    if v > most:
        return str(most), most
    return t, v


# -- max/min reductions ---------------------------------------------------------------------------------
def minmax_nest(g):
    """``X[i] = max(X[i], e)`` over an inner loop (or every iteration into ``X[0]``), optionally from the
    identity ``-INFINITY``/``INFINITY``, optionally followed by a softmax-like use of the maximum."""
    ch = g.ch
    names = g.fresh(2)
    if names is None or not _loops(g, 2):
        return None
    X, Y = names
    kind = ch.choice(["max", "min"])
    outer = g.loop([])
    inner = g.loop([outer])
    full = ch.coin(0.25)
    xs = "0" if full else outer.var
    g.mark(X, [[0, 0] if full else [outer.lo, outer.hi]])
    xref = f"{X}[{xs}]"
    e = g.expr([outer, inner])
    inner.body = [_Stmt(xref, "=", minmax(g, kind, xref, e))]
    k = ch.draw(3)          # 0: X starts from the input, 1: from the identity, 2: from a first value
    init = None
    if k == 1:
        init = _Stmt(xref, "=", identity(g, kind))
    elif k == 2:
        init = _Stmt(xref, "=", g.expr([outer] if not full else []))
    if full:
        outer.body = [inner]
        return ([init] if init else []) + [outer]
    outer.body = ([init] if init else []) + [inner]
    if init is not None and k == 2 and _loops(g, 1) and ch.coin(0.5):
        use = g.loop([outer])       # the max subtracted (double) or scaled by (float), as in softmax
        g.mark(Y, [[outer.lo, outer.hi], [use.lo, use.hi]])
        op = "*" if g.dtype == "float" else "-"
        use.body = [_Stmt(f"{Y}[{outer.var}][{use.var}]", "=", f"{g.expr([outer, use])} {op} {xref}")]
        outer.body.append(use)
    g.avoid.discard(Y)
    return [outer]


def _pair_refs(g, names: tuple[str, str], outer: _Loop, full: bool) -> tuple[str, str]:
    """The elements a pair's two statements update: element 0 of both arrays (``full``: every iteration
    reduces into one element) or element ``[outer]``; their ranges marked."""
    xs = "0" if full else outer.var
    for a in names:
        g.mark(a, [[0, 0] if full else [outer.lo, outer.hi]])
    return f"{names[0]}[{xs}]", f"{names[1]}[{xs}]"


def softmax_nest(g):
    """The online softmax's pair over an inner loop (or every iteration into element 0): the rescaled sum
    ``Y = Y * exp(X - max(X, e)) + exp(e - max(X, e))`` right before the running max ``X = max(X, e)`` (the max
    in any spelling :func:`minmax` gives, the factors and terms in either order), optionally from
    (``-INFINITY``, 0). Not for int programs (no ``exp``)."""
    ch = g.ch
    if g.dtype == "int":
        return None
    names = g.fresh(2)
    if names is None or not _loops(g, 2):
        return None
    X, Y = names
    outer = g.loop([])
    inner = g.loop([outer])
    full = ch.coin(0.25)
    xref, yref = _pair_refs(g, (X, Y), outer, full)
    e = g.expr([outer, inner])
    top = minmax(g, "max", xref, e)
    exp, m = "expf" if g.dtype == "float" else "exp", f"({top})"      # (a ternary max needs its parentheses)
    scaled = f"{yref} * {exp}({xref} - {m})" if ch.coin(0.5) else f"{exp}({xref} - {m}) * {yref}"
    fresh = f"{exp}({e} - {m})"
    inner.body = [_Stmt(yref, "=", f"{scaled} + {fresh}" if ch.coin(0.5) else f"{fresh} + {scaled}"),
                  _Stmt(xref, "=", top)]
    init = []
    if ch.coin(0.6):
        zero = "0.0f" if g.dtype == "float" else "0.0"
        init = [_Stmt(xref, "=", identity(g, "max")), _Stmt(yref, "=", zero)]
    g.avoid -= {X, Y}
    if full:
        outer.body = [inner]
        return init + [outer]
    outer.body = init + [inner]
    return [outer]


def argmin_nest(g):
    """An arg-min/arg-max pair ``I = e < X ? v : I; X = e < X ? e : X;`` (every spelling of the condition,
    strict or not, ``v`` an iterator value), over an inner loop or all iterations, optionally from
    (``INFINITY``, -1). Its programs run on small-integer data, so ties occur and the tie rule is tested
    across cores."""
    ch = g.ch
    names = g.fresh(2)
    if names is None or not _loops(g, 2):
        return None
    X, I = names
    kind = ch.choice(["min", "max"])
    down = ch.coin(0.2)             # a downward reduced loop is no pair (the tie rule): one core
    outer = g.loop([], down)
    inner = g.loop([outer], down)
    full = ch.coin(0.3)
    xref, iref = _pair_refs(g, (X, I), outer, full)
    e = g.expr([outer, inner])
    v = iterator_value(g, [outer, inner] if not full else [outer, inner])
    cond, first = condition(g, kind)
    inner.body = [_Stmt(iref, "=", select(cond, first, e, xref, v, iref)),
                  _Stmt(xref, "=", select(cond, first, e, xref, e, xref))]
    init = []
    if ch.coin(0.7):
        one = {"float": "-1.0f", "double": "-1.0", "int": "-1"}[g.dtype]
        init = [_Stmt(xref, "=", identity(g, kind)), _Stmt(iref, "=", one)]
    g.small_ints = True
    if full:
        outer.body = [inner]
        return init + [outer]
    outer.body = init + [inner]
    return [outer]


def argpair_stmts(g, scope: list[_Loop]):
    """An arg-min/arg-max pair inside random loops (no initialisation: the accumulators start from the
    input), reducing over the innermost loop of ``scope``; None when no two array names are left."""
    names = g.fresh(2)
    if names is None:
        return None
    X, I = names
    kind = g.ch.choice(["min", "max"])
    kept = scope[:-1][-3:]
    for a in (X, I):
        g.mark(a, [[v.lo, v.hi] for v in kept] or [[0, 0]])
    sub = "".join(f"[{v.var}]" for v in kept) or "[0]"
    xref, iref = X + sub, I + sub
    e = g.expr(scope)
    v = iterator_value(g, scope)
    cond, first = condition(g, kind)
    g.avoid -= {X, I}
    g.small_ints = True
    return [_Stmt(iref, "=", select(cond, first, e, xref, v, iref)), _Stmt(xref, "=", select(cond, first, e, xref, e, xref))]


# -- temporaries ----------------------------------------------------------------------------------------
def temporary_nest(g):
    """A C local rewritten in every iteration of an outer loop: a scalar accumulated over an inner loop
    (declared in the function or in the loop body), locals declared in a loop body and read by two
    statements (in-place rotation, as RoPE), or a local array filled and read back in each iteration."""
    ch = g.ch
    k = ch.draw(3)
    T = g.dtype
    if k == 0:
        names = g.fresh(1)
        if names is None or not _loops(g, 2):
            return None
        (Y,) = names
        outer = g.loop([])
        inner = g.loop([outer])
        init_v = g.literal() if ch.coin(0.5) else g.expr([outer])
        if ch.coin(0.5):
            g.decls.append(f"{T} t")
            init = _Stmt("t", "=", init_v)
        else:
            init = _Stmt(f"{T} t", "=", init_v)
        a = ch.draw(3)
        e = g.expr([outer, inner])
        if a == 0:
            inner.body = [_Stmt("t", "+=", e)]
        elif a == 1:
            inner.body = [_Stmt("t", "=", minmax(g, ch.choice(["max", "min"]), "t", e))]
        else:
            inner.body = [_Stmt("t", "=", f"t * {g.literal()} + {e}")]
        g.mark(Y, [[outer.lo, outer.hi]])
        use = _Stmt(f"{Y}[{outer.var}]", ch.choice(["=", "+="]), f"t * {g.literal()}")
        outer.body = [init, inner, use]
        g.avoid.discard(Y)
        return [outer]
    if k == 1:
        names = g.fresh(1)
        if names is None or not _loops(g, 2):
            return None
        (Q,) = names
        outer = g.loop([])
        h = ch.between(1, 4)
        inner = _for(g, LOOP_J, "0", str(h), 0, h - 1)
        g.mark(Q, [[outer.lo, outer.hi], [0, 2 * h - 1]])
        i, j = outer.var, inner.var
        c = g.expr([outer, inner]) if ch.coin(0.5) else g.literal()
        s = g.expr([outer, inner]) if ch.coin(0.5) else g.literal()
        minus = "+" if T == "float" else "-"
        inner.body = [_Stmt(f"{T} a", "=", f"{Q}[{i}][{j}]"), _Stmt(f"{T} b", "=", f"{Q}[{i}][{j} + {h}]"),
                      _Stmt(f"{Q}[{i}][{j}]", "=", f"a * {c} {minus} b * {s}"),
                      _Stmt(f"{Q}[{i}][{j} + {h}]", "=", f"b * {c} + a * {s}")]
        outer.body = [inner]
        return [outer]
    names = g.fresh(1)
    if names is None or not _loops(g, 3):
        return None
    (Y,) = names
    outer = g.loop([])
    nt, nv = _size(g)
    fill = _for(g, LOOP_J, "0", nt, 0, nv - 1)
    use = _for(g, LOOP_J, "0", nt, 0, nv - 1)
    g.decls.append(f"{T} s[{nv}]")
    fill.body = [_Stmt(f"s[{fill.var}]", "=", g.expr([outer, fill]))]
    j = use.var
    other = f"s[{nt} - 1 - {j}]" if ch.coin(0.5) else g.literal()
    g.mark(Y, [[outer.lo, outer.hi], [0, nv - 1]])
    use.body = [_Stmt(f"{Y}[{outer.var}][{j}]", "=", f"s[{j}] * {g.literal()} + {other}")]
    outer.body = [fill, use]
    g.avoid.discard(Y)
    return [outer]


LOOP_I, LOOP_J, LOOP_K = "i", "j", "k"


# -- remote writes --------------------------------------------------------------------------------------
def remote_write_nest(g):
    """Writes to disjoint parts of one array in one nest, so that some land on elements another core
    owns: a symmetric fill ``C[j][i] = C[i][j]``, two triangles written as rows and as columns, a
    transposed copy of a value computed in the same iteration, or even/odd elements ``X[2*i]``,
    ``X[2*i + 1]``."""
    ch = g.ch
    k = ch.draw(4)
    names = g.fresh(2)
    if names is None or not _loops(g, 1 if k == 3 else 2):
        return None
    C, U = names
    if k == 3:
        nt, nv = _size(g, 6)
        lp = _for(g, LOOP_I, "0", nt, 0, nv - 1)
        g.mark(C, [[0, 2 * nv - 1]])
        lp.body = [_Stmt(f"{C}[2 * {lp.var}]", "=", g.expr([lp])),
                   _Stmt(f"{C}[2 * {lp.var} + 1]", ch.choice(["=", "+="]), g.expr([lp]))]
        g.avoid.discard(U)
        return [lp]
    nt, nv = _size(g)
    outer = _for(g, LOOP_I, "0", nt, 0, nv - 1)
    i = outer.var
    if k == 2:
        inner = _for(g, LOOP_J, "0", nt, 0, nv - 1)
        j = inner.var
        g.mark(C, [[0, nv - 1], [0, nv - 1]])
        g.mark(U, [[0, nv - 1], [0, nv - 1]])
        inner.body = [_Stmt(f"{C}[{i}][{j}]", "=", g.expr([outer, inner])),
                      _Stmt(f"{U}[{j}][{i}]", "=", f"{C}[{i}][{j}] * {g.literal()}")]
        outer.body = [inner]
        return [outer]
    inner = _for(g, LOOP_J, f"{i} + 1", nt, 1, nv - 1)
    j = inner.var
    g.mark(C, [[0, nv - 1], [0, nv - 1]])
    mirror = f"{C}[{i}][{j}]" if k == 0 else g.expr([outer, inner])
    inner.body = [_Stmt(f"{C}[{i}][{j}]", "=", g.expr([outer, inner])), _Stmt(f"{C}[{j}][{i}]", "=", mirror)]
    outer.body = ([_Stmt(f"{C}[{i}][{i}]", "=", g.expr([outer]))] if ch.coin(0.6) else []) + [inner]
    g.avoid.discard(U)
    return [outer]


# -- uniform dependences --------------------------------------------------------------------------------
def uniform_nest(g):
    """Loops that carry dependences of constant distance: a 2D wavefront ``A[i][j] = (A[i-1][j] +
    A[i][j-1]) * 0.5 + e``, an in-place Gauss-Seidel sweep, a first-order recurrence along the inner
    loop, Floyd-Warshall (``D[i][j] = min(D[i][j], D[i][k] + D[k][j])``) and its pivot-row relatives, or a
    triangular solve."""
    ch = g.ch
    k = ch.draw(5)
    names = g.fresh(1)
    if names is None or not _loops(g, 3 if k == 3 else 2):
        return None
    (A,) = names
    half = {"float": "* 0.5f", "double": "* 0.5", "int": "/ 2"}[g.dtype]
    quarter = {"float": "* 0.25f", "double": "* 0.25", "int": "/ 4"}[g.dtype]
    if k == 3:                                       # Floyd-Warshall
        nt, nv = _size(g)
        kk = _for(g, LOOP_I, "0", nt, 0, nv - 1)
        ii = _for(g, LOOP_J, "0", nt, 0, nv - 1)
        jj = _for(g, LOOP_K, "0", nt, 0, nv - 1)
        K, I, J = kk.var, ii.var, jj.var
        g.mark(A, [[0, nv - 1], [0, nv - 1]])
        d = f"{A}[{I}][{J}]"
        # Floyd-Warshall; a pivot-row update (every row from row k, row k itself included); or an
        # elimination step without the guard (rows and columns from row and column k). Each reads the pivot
        # row its own step rewrites: spread only cut at the pivot (mica.affine.isplit).
        variant = nv % 3           # from the size already drawn: no new draw, the other shapes' draws unchanged
        if variant == 1 or (variant == 2 and g.dtype == "int"):
            jj.body = [_Stmt(d, "=", f"{d} {half} + {A}[{K}][{J}]")]
        elif variant == 2:
            jj.body = [_Stmt(d, "-=", f"{A}[{I}][{K}] * {A}[{K}][{J}] {quarter}")]
        else:
            jj.body = [_Stmt(d, "=", minmax(g, "min", d, f"{A}[{I}][{K}] + {A}[{K}][{J}]"))]
        ii.body, kk.body = [jj], [ii]
        return [kk]
    if k == 4:                                       # triangular solve (forward substitution)
        nt, nv = _size(g)
        outer = _for(g, LOOP_I, "0", nt, 0, nv - 1)
        i = outer.var
        inner = _for(g, LOOP_J, "0", i, 0, nv - 2)
        j = inner.var
        L = g.fresh(1)
        g.mark(A, [[0, nv - 1]])
        if L is None:
            lref = "2" if g.dtype == "int" else "0.5"
        else:
            g.mark(L[0], [[0, nv - 1], [0, nv - 1]])
            lref = f"{L[0]}[{i}][{j}]"
        op, scale = ("-=", "") if g.dtype != "float" else ("+=", f" {quarter}")
        inner.body = [_Stmt(f"{A}[{i}]", op, f"{lref} * {A}[{j}]{scale}")]
        outer.body = [_Stmt(f"{A}[{i}]", "=", g.expr([outer])), inner,
                      _Stmt(f"{A}[{i}]", "=", f"{A}[{i}] {half}")]
        return [outer]
    nt, nv = _size(g)
    mt, mv = _size(g)
    if nv < 3 or mv < 3:
        nt, nv, mt, mv = "4", 4, "5", 5
    if k == 2:                                       # recurrence along j
        outer = _for(g, LOOP_I, "0", nt, 0, nv - 1)
        inner = _for(g, LOOP_J, "1", mt, 1, mv - 1)
        i, j = outer.var, inner.var
        g.mark(A, [[0, nv - 1], [0, mv - 1]])
        inner.body = [_Stmt(f"{A}[{i}][{j}]", "=", f"{A}[{i}][{j} - 1] {half} + {g.expr([outer, inner])}")]
        outer.body = [inner]
        return [outer]
    if k == 1:                                       # Gauss-Seidel, in place
        outer = _for(g, LOOP_I, "1", f"{nt} - 1", 1, nv - 2)
        inner = _for(g, LOOP_J, "1", f"{mt} - 1", 1, mv - 2)
        i, j = outer.var, inner.var
        g.mark(A, [[0, nv - 1], [0, mv - 1]])
        nb = " + ".join(f"{A}[{a}][{b}]" for a, b in ((f"{i} - 1", j), (i, f"{j} - 1"), (f"{i} + 1", j),
                                                       (i, f"{j} + 1")))
        inner.body = [_Stmt(f"{A}[{i}][{j}]", "=", f"({nb}) {quarter}")]
        outer.body = [inner]
        return [outer]
    outer = _for(g, LOOP_I, "1", nt, 1, nv - 1)                # wavefront
    inner = _for(g, LOOP_J, "1", mt, 1, mv - 1)
    i, j = outer.var, inner.var
    g.mark(A, [[0, nv - 1], [0, mv - 1]])
    terms = [f"{A}[{i} - 1][{j}]", f"{A}[{i}][{j} - 1]"] + ([f"{A}[{i} - 1][{j} - 1]"] if ch.coin(0.4) else [])
    coef = half if len(terms) == 2 else quarter
    rhs = f"({' + '.join(terms)}) {coef}"
    if ch.coin(0.6):
        rhs += f" + {g.expr([outer, inner])}"
    inner.body = [_Stmt(f"{A}[{i}][{j}]", "=", rhs)]
    outer.body = [inner]
    return [outer]


# -- contractions ---------------------------------------------------------------------------------------
#: Index orders of a contraction's operands over (i, j, k): a matrix product's and a batched one's, where a 3D
#: operand is indexed by both spatial loops and the reduced one (attention's ``K[l][h][d]``).
_OPERANDS = (("i", "k"), ("k", "i"), ("i", "j", "k"), ("j", "i", "k"), ("k", "i", "j"), ("i", "k", "j"))


def contraction_nest(g):
    """``S[i][j] (+)= P[..] * Q[..]`` summed over ``k``: a matrix product (``P[i][k] * Q[k][j]``, either operand
    transposed) or a batched one whose operands hold ``i``, ``j`` and ``k`` in any order, with ``S`` zeroed
    first or accumulated onto: plans step ``k`` as SUMMA panels or as Cannon / interleaved rings, which must
    carry each operand's panels only along the mesh axis its reduced dimension is laid out on."""
    ch = g.ch
    names = g.fresh(3)
    if names is None or not _loops(g, 3):
        return None
    S, P, Q = names
    loops = {}
    for var in ("i", "j", "k"):
        t, v = _size(g, 8)
        loops[var] = _for(g, var, "0", t, 0, v - 1)
    i, j, k = loops["i"], loops["j"], loops["k"]
    p_dims = ch.choice(_OPERANDS)
    q_dims = tuple("j" if d == "i" else "i" if d == "j" else d for d in ch.choice(_OPERANDS))
    for name, dims in ((P, p_dims), (Q, q_dims)):
        g.mark(name, [[loops[d].lo, loops[d].hi] for d in dims])
    g.mark(S, [[i.lo, i.hi], [j.lo, j.hi]])
    ref = lambda name, dims: name + "".join(f"[{d}]" for d in dims)      # noqa: E731
    k.body = [_Stmt(f"{S}[i][j]", "+=", f"{ref(P, p_dims)} * {ref(Q, q_dims)}")]
    j.body = ([_Stmt(f"{S}[i][j]", "=", "0")] if ch.coin(0.6) else []) + [k]
    i.body = [j]
    return [i]


# -- phase loops ----------------------------------------------------------------------------------------
def time_loop_nest(g):
    """A sequential time loop around two nests that feed each other, wanting opposite layouts (ADI's
    shape, a phase loop: :mod:`mica.affine.repeat`): a recurrence down the columns of ``A`` reading ``B``,
    then the rows of ``B`` from ``A`` transposed, with or without a recurrence along them; ``B`` read at the
    same element or one column back. Each iteration reads what the one before wrote."""
    ch = g.ch
    names = g.fresh(2)
    if names is None or not _loops(g, 4):          # the whole budget: its five loops are the program's loops
        return None
    A, B = names
    half = {"float": "* 0.5f", "double": "* 0.5", "int": "/ 2"}[g.dtype]
    quarter = {"float": "* 0.25f", "double": "* 0.25", "int": "/ 4"}[g.dtype]
    steps = 2 + ch.draw(2)
    nt, nv = _size(g, 8)
    mt, mv = _size(g, 8)
    if nv < 2 or mv < 3:
        nt, nv, mt, mv = "3", 3, "4", 4
    time = _for(g, LOOP_K, "0", str(steps), 0, steps - 1)
    g.mark(A, [[0, mv - 1], [0, nv - 1]])
    g.mark(B, [[0, nv - 1], [0, mv - 1]])
    nests = []
    for second in (False, True):
        outer = _for(g, LOOP_I, "0", nt, 0, nv - 1)
        inner = _for(g, LOOP_J, "1", mt, 1, mv - 1)
        i, j = outer.var, inner.var
        if not second:
            b = f"{B}[{i}][{j} - 1]" if ch.coin(0.3) else f"{B}[{i}][{j}]"
            inner.body = [_Stmt(f"{A}[{j}][{i}]", "=", f"{A}[{j} - 1][{i}] {half} + {b} {quarter}")]
        else:
            rec = f"{B}[{i}][{j} - 1] {half} + " if ch.coin(0.6) else ""
            inner.body = [_Stmt(f"{B}[{i}][{j}]", "=", f"{rec}{A}[{j}][{i}] {quarter}")]
        outer.body = [inner]
        nests.append(outer)
    time.body = nests
    return [time]


NESTS = (contraction_nest, argmin_nest, temporary_nest, time_loop_nest, minmax_nest, remote_write_nest,
         uniform_nest, softmax_nest)
