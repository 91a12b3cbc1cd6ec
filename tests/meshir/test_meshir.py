"""MeshIR: the builder's output, the verifier catching broken programs, the printer."""

from dataclasses import replace

import pytest

import mica
from mica.errors import MeshIRError
from mica.meshir.ir import Exchange, Loop
from mica.meshir.verify import verify
from mica.targets import get_target


def _matmul(mesh=(7, 5)):
    return mica.compile_affine(mica.ops.matmul(100, 37, 53), mesh=mesh, search=False)


def _with_exchange_ops(mp, change):
    """``mp`` with ``change(multicast)`` applied to every multicast of the step loop."""
    body = []
    for op in mp.body:
        if isinstance(op, Loop):
            inner = tuple(Exchange(e.name, tuple(change(c) for c in e.ops)) if isinstance(e, Exchange) else e
                          for e in op.body)
            op = Loop(op.var, op.count, inner)
        body.append(op)
    return replace(mp, body=tuple(body))


def test_region_classes_cover_partial_tiles():
    mp = _matmul().mesh_program
    k = mp.kernel("k_S1")
    # 37 columns in tiles of 6: six full columns of cores and a last one holding 1 column.
    assert [(c.region.x0, c.region.x1, c.region.y0, c.region.y1) for c in k.classes] == [(0, 6, 0, 5), (6, 7, 0, 5)]


def test_verifier_accepts_the_builder_output():
    p = _matmul()
    verify(p.mesh_program, p.target)


def test_verifier_catches_a_missing_route():
    p = _matmul()
    broken = _with_exchange_ops(p.mesh_program, lambda c: replace(c, routes=c.routes[1:]))
    with pytest.raises(MeshIRError, match="no route for colour"):
        verify(broken, p.target)


def test_verifier_catches_an_understated_hop_bound():
    p = _matmul()
    broken = _with_exchange_ops(p.mesh_program, lambda c: replace(c, max_hops=1))
    with pytest.raises(MeshIRError, match="more than the 1 declared"):
        verify(broken, p.target)


def test_verifier_catches_shared_colours_and_budget():
    p = _matmul()
    same = _with_exchange_ops(p.mesh_program, lambda c: replace(c, colour=0))
    with pytest.raises(MeshIRError, match="share a colour"):
        verify(same, p.target)
    with pytest.raises(MeshIRError, match="outside the budget"):
        verify(p.mesh_program, replace(get_target("wse2"), colours=1))


def _shifted(mp, kernel: str, ref: str, dim: int, by: int):
    """``mp`` with access ``ref`` of ``kernel`` indexing dimension ``dim`` ``by`` elements further."""
    from mica.affine.expr import Aff
    k = mp.kernel(kernel)

    def moved(a):
        if a.ref != ref:
            return a
        ix = list(a.index)
        ix[dim] = ix[dim] + by if isinstance(ix[dim], Aff) else ix[dim]
        return replace(a, index=tuple(ix))
    k2 = replace(k, write=moved(k.write), reads=tuple(moved(a) for a in k.reads))
    return replace(mp, kernels=tuple(k2 if x.name == kernel else x for x in mp.kernels))


def test_verifier_catches_a_kernel_access_past_its_box():
    """A kernel that wrote one row past its block would overwrite another buffer of the arena (a wrong answer
    with no error): the verifier proves every access of every kernel stays inside its buffer's box."""
    p = _matmul()
    mp = p.mesh_program
    k = mp.kernel("k_S1")
    with pytest.raises(MeshIRError, match=r"kernel k_S1 writes .* outside the box"):
        verify(_shifted(mp, "k_S1", k.write.ref, 0, 1), p.target)
    read = k.reads[-1]
    with pytest.raises(MeshIRError, match=r"kernel k_S1 reads .* outside the box"):
        verify(_shifted(mp, "k_S1", read.ref, 1, -1), p.target)


def test_verifier_catches_an_arena_over_sram():
    p = _matmul()
    with pytest.raises(MeshIRError, match="exceeds"):
        verify(p.mesh_program, replace(get_target("wse2"), sram_bytes=1024))


def test_printer_shows_tensors_kernels_and_routes():
    text = _matmul().meshir
    assert "A_recv     recv     f32 [y/20, t/11]" in text
    assert "kernel k_S1 (statement S1): C[i, j] = (C[i, j] + (A_recv[i, k] * B_recv[k, j]))" in text
    assert "for t in 0..5:" in text
    assert "route c0 [max(t, 1):min(t + 1, 6), 0:5]: RAMP -> RAMP|E|W" in text


def test_gemv_has_a_chain_reduction_towards_column_0():
    p = mica.compile_affine(mica.ops.gemv(37, 101), mesh=(6, 7), search=False)
    text = p.meshir
    assert "multicast x -> x_recv along y from root y = 0" in text
    assert "shift y -> y_in towards W" in text
    assert "host_store y <- y from home_y[0:1, 0:7]" in text


def test_sim_error_names_the_meshir_op():
    """A program whose routes are broken (here: built by hand, skipping the verifier) fails in the
    emulator with a SimError naming the core, the colour and the MeshIR op."""
    import numpy as np
    p = _matmul()
    broken = replace(p, mesh_program=_with_exchange_ops(p.mesh_program, lambda c: replace(c, routes=c.routes[1:])))
    ins = {"A": np.zeros((100, 53), np.float32), "B": np.zeros((53, 37), np.float32)}
    with pytest.raises(mica.SimError, match=r"colour 0 arriving from WEST at core \(1,0\).*\[exchange step_S1"):
        broken.run(ins)


def test_a_kernel_domain_is_written_the_same_whatever_isl_kept_of_it():
    """isl writes a set as its internal representation stands, which earlier queries on shared copies change:
    the printer writes a kernel's domain without redundant constraints, so the MeshIR text of a program does
    not depend on what was compiled before it in the process (trisolv's ``0 <= i`` implied by ``0 <= j < i``)."""
    from mica.meshir.printer import domain_text

    plain = "[__x, __y, __t] -> { S1[i, j] : i <= 29 and 0 <= j < i }"
    redundant = "[__x, __y, __t] -> { S1[i, j] : 0 <= i <= 29 and 0 <= j < i }"
    assert domain_text(plain) == domain_text(redundant) == plain
    assert domain_text("{ S[i] : 0 <= i < 4 }") != domain_text("{ S[i] : 0 <= i < 5 }")
