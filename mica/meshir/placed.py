"""Whether a mesh program places blocks away from core (0, 0) (operators side by side,
:mod:`mica.lower.place`): back ends that lay out blocks from the first core only refuse such programs
with one message."""

from __future__ import annotations

from .ir import BoxDim, MeshProgram, RegionTensor


def placed_refusal(mp: MeshProgram, backend: str) -> str | None:
    """Why the ``backend`` back end, which lays out blocks from core (0, 0) only, cannot write ``mp``
    (naming its first placed buffer, see :func:`placed_tensor`), or None when nothing is placed."""
    placed = placed_tensor(mp)
    if placed is None:
        return None
    t, d = placed
    return (f"{mp.name}: buffer {t.name} holds its blocks from core {d.coord} = {d.origin} (operators placed "
            f"side by side); the {backend} back end lays out blocks from core (0, 0) only (compile with "
            f"side_by_side=False to run the operators one after another)")


def placed_tensor(mp: MeshProgram) -> tuple[RegionTensor, BoxDim] | None:
    """The first buffer of ``mp`` whose blocks start away from core (0, 0) (an operator placed side by side),
    with its offending dimension, or None: for back ends that only lay out blocks from the first core."""
    for t in mp.tensors:
        for d in t.box:
            if d.origin:
                return t, d
    return None
