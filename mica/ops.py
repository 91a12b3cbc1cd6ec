"""Builders: common operators as affine programs.

Each builder returns an :class:`~mica.affine.program.Program` with conventional tensor names:

* ``matmul(M, N, K)``: ``C = A @ B`` with ``A`` M×K, ``B`` K×N;
* ``gemv(M, N)``: ``y = A @ x`` with ``A`` M×N, ``x`` of length N;
* ``add(shape)`` / ``mul(shape)``: ``C = A + B`` / ``C = A * B`` elementwise;
* ``scaled_add(shape)``: ``C = alpha * A + B`` with scalar ``alpha`` passed to ``run()``;
* ``reduce_sum(shape, axis)``: ``B = A.sum(axis)``.

The builders state only the loop nest; the mapping onto the mesh is derived by the compiler.
"""

from __future__ import annotations

from .affine.expr import Aff, Bin, Const, Read, Scalar
from .affine.program import Access, Array, Program, Statement
from .errors import AffineError

_LOOPS = ("i", "j", "l", "m")


def _dom(name: str, loops: tuple[str, ...], extents: tuple[int, ...]) -> str:
    cons = " and ".join(f"0 <= {lp} < {n}" for lp, n in zip(loops, extents)) or "true"
    return f"{{ {name}[{', '.join(loops)}] : {cons} }}"


def _acc(ref: str, array: str, *index: str) -> Access:
    return Access(ref, array, tuple(Aff.var(i) for i in index))


def _order(loops: tuple[str, ...], last: int = 0, inner_pos: int | None = None) -> tuple:
    out: list = []
    for lp in loops:
        out += [0, lp]
    out.append(last)
    return tuple(out)


def _shape(shape, what: str) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if not 1 <= len(shape) <= len(_LOOPS):
        raise AffineError(f"{what}: rank must be 1..{len(_LOOPS)}, got shape {shape}")
    for n in shape:
        if not isinstance(n, int) or n <= 0:
            raise AffineError(f"{what}: extents must be positive integers, got {shape}")
    return shape


def _positive(what: str, **sizes: int) -> None:
    for k, v in sizes.items():
        if not isinstance(v, int) or v <= 0:
            raise AffineError(f"{what}: {k} must be a positive integer, got {v!r}")


def matmul(M: int, N: int, K: int, dtype: str = "f32") -> Program:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``: A is M×K, B is K×N, C is M×N."""
    _positive("matmul", M=M, N=N, K=K)
    init = Statement("S0", ("i", "j"), _dom("S0", ("i", "j"), (M, N)),
                     _acc("C_w0", "C", "i", "j"), Const(0), (), (0, "i", 0, "j", 0))
    upd = Statement(
        "S1", ("i", "j", "k"), _dom("S1", ("i", "j", "k"), (M, N, K)),
        _acc("C_w1", "C", "i", "j"),
        Bin("+", Read("C_r1"), Bin("*", Read("A_r1"), Read("B_r1"))),
        (_acc("C_r1", "C", "i", "j"), _acc("A_r1", "A", "i", "k"), _acc("B_r1", "B", "k", "j")),
        (0, "i", 0, "j", 1, "k", 0))
    arrays = (Array("A", (M, K), dtype), Array("B", (K, N), dtype), Array("C", (M, N), dtype))
    return Program("matmul", arrays, (init, upd), inputs=("A", "B"), outputs=("C",))


def gemv(M: int, N: int, dtype: str = "f32") -> Program:
    """``y[i] = sum_j A[i, j] * x[j]``: A is M×N, x has length N, y length M."""
    _positive("gemv", M=M, N=N)
    init = Statement("S0", ("i",), _dom("S0", ("i",), (M,)), _acc("y_w0", "y", "i"), Const(0), (),
                     (0, "i", 0))
    upd = Statement(
        "S1", ("i", "j"), _dom("S1", ("i", "j"), (M, N)), _acc("y_w1", "y", "i"),
        Bin("+", Read("y_r1"), Bin("*", Read("A_r1"), Read("x_r1"))),
        (_acc("y_r1", "y", "i"), _acc("A_r1", "A", "i", "j"), _acc("x_r1", "x", "j")),
        (0, "i", 1, "j", 0))
    arrays = (Array("A", (M, N), dtype), Array("x", (N,), dtype), Array("y", (M,), dtype))
    return Program("gemv", arrays, (init, upd), inputs=("A", "x"), outputs=("y",))


def _elementwise(name: str, shape, dtype: str, op: str, scaled: bool) -> Program:
    shape = _shape(shape, name)
    loops = _LOOPS[:len(shape)]
    lhs = Read("A_r0")
    if scaled:
        lhs = Bin("*", Scalar("alpha"), lhs)
    st = Statement("S0", loops, _dom("S0", loops, shape), _acc("C_w0", "C", *loops),
                   Bin(op, lhs, Read("B_r0")),
                   (_acc("A_r0", "A", *loops), _acc("B_r0", "B", *loops)), _order(loops))
    arrays = tuple(Array(n, shape, dtype) for n in ("A", "B", "C"))
    scalars = (("alpha", dtype),) if scaled else ()
    return Program(name, arrays, (st,), inputs=("A", "B"), outputs=("C",), scalars=scalars)


def add(shape, dtype: str = "f32") -> Program:
    """``C = A + B`` elementwise over ``shape``."""
    return _elementwise("add", shape, dtype, "+", False)


def mul(shape, dtype: str = "f32") -> Program:
    """``C = A * B`` elementwise over ``shape``."""
    return _elementwise("mul", shape, dtype, "*", False)


def scaled_add(shape, dtype: str = "f32") -> Program:
    """``C = alpha * A + B`` elementwise; ``alpha`` is a scalar given to ``run()``."""
    return _elementwise("scaled_add", shape, dtype, "+", True)


def reduce_sum(shape, axis: int = -1, dtype: str = "f32") -> Program:
    """``B = A.sum(axis)``: A has ``shape``; B drops dimension ``axis`` (a 0-d result for 1-d A)."""
    shape = _shape(shape, "reduce_sum")
    if not -len(shape) <= axis < len(shape):
        raise AffineError(f"reduce_sum: axis {axis} out of range for shape {shape}")
    axis %= len(shape)
    loops = _LOOPS[:len(shape)]
    keep = tuple(lp for d, lp in enumerate(loops) if d != axis)
    out_shape = tuple(n for d, n in enumerate(shape) if d != axis)
    init = Statement("S0", keep, _dom("S0", keep, out_shape), _acc("B_w0", "B", *keep), Const(0), (),
                     _order(keep))
    order1 = []
    for lp in keep:
        order1 += [0, lp]
    order1 += [1, loops[axis], 0]
    upd = Statement("S1", loops, _dom("S1", loops, shape), _acc("B_w1", "B", *keep),
                    Bin("+", Read("B_r1"), Read("A_r1")),
                    (_acc("B_r1", "B", *keep), _acc("A_r1", "A", *loops)), tuple(order1))
    arrays = (Array("A", shape, dtype), Array("B", out_shape, dtype))
    return Program("reduce_sum", arrays, (init, upd), inputs=("A",), outputs=("B",))
