"""A statement that reads a 2D array in both orientations (``T[i][j] + T[j][i]``, ``Tᵀ T``): the read in
the other orientation goes through a *mirror*, a second home with the mesh axes swapped. An input's
mirror is loaded from the host in that layout; an array an earlier operator produced is transposed into it
on the mesh (one-hop shifts only). Every program is compared with the original C run natively."""

import re

import numpy as np
import pytest

import mica
from mica.meshir.ir import HostLoad, Multicast, Shift
from mica.tiling.homes import swap_home
from mica.lower.relayout import relayout_cycles
from mica.targets import get_target
from mica.testing import run_c


def symmetrise_produced(n: int, ctype: str = "double") -> str:
    """T = A B, then D = T + Tᵀ: the second operator reads the intermediate both ways."""
    return f'''
void f({ctype} A[{n}][{n}], {ctype} B[{n}][{n}], {ctype} T[{n}][{n}], {ctype} D[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    T[i][j] = 0; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) D[i][j] = T[i][j] - 0.5 * T[j][i];
}}'''


def symmetrise_input(n: int) -> str:
    return f'''
void f(double A[{n}][{n}], double D[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) D[i][j] = A[i][j] + 2.0 * A[j][i];
}}'''


def gram_produced(n: int, m: int) -> str:
    """T = A * B elementwise, then D = Tᵀ T: the panels of T[k][i] come from the mirror by multicast."""
    return f'''
void f(double A[{n}][{m}], double B[{n}][{m}], double T[{n}][{m}], double D[{m}][{m}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {m}; j++) T[i][j] = A[i][j] * B[i][j];
  for (int i = 0; i < {m}; i++) for (int j = 0; j < {m}; j++) {{
    D[i][j] = 0; for (int k = 0; k < {n}; k++) D[i][j] += T[k][i] * T[k][j]; }}
}}'''


def gram_input(n: int, m: int) -> str:
    return f'''
void f(double A[{n}][{m}], double D[{m}][{m}]) {{
  for (int i = 0; i < {m}; i++) for (int j = 0; j < {m}; j++) {{
    D[i][j] = 0; for (int k = 0; k < {n}; k++) D[i][j] += A[k][i] * A[k][j]; }}
}}'''


def check(compiled, src: str, seed: int = 0, rtol: float = 1e-12):
    prog = compiled.program
    rng = np.random.default_rng(seed)
    dt = np.float32 if prog.arrays[0].dtype == "f32" else np.float64
    ins = {a: rng.standard_normal(prog.array(a).shape).astype(dt) for a in prog.inputs}
    every = {a.name: ins.get(a.name, np.zeros(a.shape, dt)) for a in prog.arrays}
    want = run_c(src, "f", every)
    got = compiled.run(ins).outputs
    for k in prog.outputs:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=rtol)


def mirrors(compiled):
    return [t for t in compiled.mesh_program.tensors if t.role == "mirror"]


def loads(compiled):
    return {op.buffer for op in compiled.mesh_program.body if isinstance(op, HostLoad)}


@pytest.mark.parametrize("n, mesh", [(12, (4, 4)), (13, (4, 4)), (10, (3, 3)), (29, (7, 7)), (40, (8, 8))])
def test_an_intermediate_read_both_ways_is_transposed_on_the_mesh(n, mesh):
    src = symmetrise_produced(n)
    compiled = mica.compile_affine(src, mesh=mesh)
    assert compiled.mesh_program.region.cores > 1
    (m,) = mirrors(compiled)
    assert m.array == "T" and "T" not in {o.array for o in compiled.mesh_program.body if isinstance(o, HostLoad)}
    # the transposition is one-hop shifts only
    moved = [c for op, _ in compiled.mesh_program.walk() if hasattr(op, "ops") for c in op.ops
             if c.src.startswith(m.name)]
    assert moved and all(isinstance(c, Shift) and c.max_hops == 1 for c in moved)
    assert "transposed on the mesh" in compiled.explain()
    check(compiled, src, seed=n)


@pytest.mark.parametrize("n, mesh", [(12, (4, 4)), (13, (4, 4)), (9, (3, 3)), (12, (4, 2)), (10, (3, 5))])
def test_an_input_read_both_ways_is_loaded_in_both_layouts(n, mesh):
    src = symmetrise_input(n)
    compiled = mica.compile_affine(src, mesh=mesh)
    (m,) = mirrors(compiled)
    assert m.name in loads(compiled) and "loaded from the host" in compiled.explain()
    assert compiled.mesh_program.region.cores == min(mesh) ** 2
    # the read is local in the mirror: no communication at all, and no ghost zones standing in for it
    assert not any(hasattr(op, "ops") for op, _ in compiled.mesh_program.walk())
    assert all(not d.window for t in compiled.mesh_program.tensors for d in t.box)
    check(compiled, src, seed=n)


#: (n, m, mesh) where the searched plan of each gram matrix multicasts from the mirror. With T produced on the
#: mesh, a 4x4 mesh's plan reduces over k instead (a K-tree; the two panels of the mirrored plan would share
#: each core's ramp), so those sizes run on 6x6 and 8x8.
GRAM_INPUT = [(12, 12, (4, 4)), (13, 11, (4, 4)), (20, 16, (4, 4)), (9, 9, (3, 3))]
GRAM_PRODUCED = [(48, 48, (8, 8)), (50, 44, (8, 8)), (45, 45, (8, 8)), (36, 36, (6, 6))]


@pytest.mark.parametrize("n, m, mesh, produced", [(*a, False) for a in GRAM_INPUT] + [(*a, True) for a in GRAM_PRODUCED])
def test_gram_matrix_multicasts_panels_from_the_mirror(n, m, mesh, produced):
    src = (gram_produced if produced else gram_input)(n, m)
    compiled = mica.compile_affine(src, mesh=mesh)
    (mir,) = mirrors(compiled)
    casts = [c for op, _ in compiled.mesh_program.walk() if hasattr(op, "ops") for c in op.ops
             if isinstance(c, Multicast)]
    assert any(c.src == mir.name for c in casts), "a panel is multicast from the mirror"
    assert (mir.name in loads(compiled)) != produced
    check(compiled, src, seed=n + m)


def test_a_mirrored_plan_round_trips_and_retargets():
    src = symmetrise_produced(12, "float")
    compiled = mica.compile_affine(src, mesh=(4, 4))
    back = mica.Schedule.from_json(compiled.schedule.to_json())
    assert mica.compile_affine(src, mesh=(4, 4), schedule=back).meshir == compiled.meshir
    bigger = compiled.retarget((6, 6))
    assert mirrors(bigger) and bigger.mesh_program.region.cores > 1
    check(bigger, src, rtol=1e-4)


def test_the_transposition_is_in_the_modelled_cost():
    """The plan with a mirror pays for its transposition: matmul, then the same elementwise operator
    reading an input (loaded in both layouts by the host), cost less by what the transposition of T's
    8x8 blocks costs on its own."""
    n, mesh = 32, (8, 8)
    produced = mica.compile_affine(symmetrise_produced(n), mesh=mesh)
    alone = mica.compile_affine(symmetrise_input(n), mesh=mesh)
    matmul = mica.compile_affine(mica.ops.matmul(n, n, n, dtype="f64"), mesh=mesh)
    extra = produced.cost.total_cycles - matmul.cost.total_cycles - alone.cost.total_cycles
    (home,) = [h for h in produced.schedule.phases[0].homes if h.array == "T"]
    moving = relayout_cycles(produced.program, home, swap_home(home), mesh, get_target("wse2"))
    assert 0 < moving < float("inf") and extra >= 0.9 * moving


@pytest.mark.parametrize("n, mesh", [(12, (4, 2)), (10, (3, 5))])
def test_on_a_rectangular_mesh_the_operators_take_its_largest_square(n, mesh):
    """The matmul alone would take every core of the rectangle, and then T's blocks (a rectangular
    grid) could not be transposed: the operators are also mapped on the largest square of the mesh, where
    both spread (the second reads T's transpose through a mirror or as halos on fewer cores). The plan
    chosen is no dearer than that one and uses at least its cores (on 3x5 the matmul takes all 15 and T is
    gathered onto the core that symmetrises it: the model's choice)."""
    src = symmetrise_produced(n)
    compiled = mica.compile_affine(src, mesh=mesh)
    side = min(mesh)
    square = re.search(rf"([\d,]+) cycles  2 operators \(loop nests\), in program order on the {side}x{side} "
                       rf"square of the mesh", compiled.explain())
    assert compiled.mesh == mesh and square
    assert compiled.cost.total_cycles <= float(square.group(1).replace(",", ""))
    assert compiled.cost.cores >= side * side and compiled.schedule.phases[0].space
    check(compiled, src, seed=n)


def test_a_plan_on_a_square_of_the_mesh_is_retargeted_onto_a_square_of_the_new_mesh():
    """The plan mapped on the 4x4 square of 4x6 records that square (``Schedule.grid``); re-instantiated for
    other meshes, its operators keep their decisions on a square as large as the new mesh has (where they
    were mapped on the whole new mesh before, and could fail there), and compute what the C does."""
    src = symmetrise_produced(24)
    compiled = mica.compile_affine(src, mesh=(4, 6))
    assert compiled.schedule.grid == (4, 4) and '"grid"' in compiled.schedule.to_json()
    assert mica.Schedule.from_json(compiled.schedule.to_json()).grid == (4, 4)
    for mesh, grid in [((5, 3), (3, 3)), ((8, 8), (4, 4)), ((2, 7), (2, 2))]:
        moved = compiled.retarget(mesh)
        assert moved.mesh == mesh and moved.schedule.grid == grid, mesh
        assert not any("searched anew" in r for r in moved.schedule.reasons), mesh
        r = moved.mesh_program.region
        assert r.x1 - r.x0 <= grid[0] and r.y1 - r.y0 <= grid[1] and moved.cost.cores > 1, mesh
        check(moved, src, seed=mesh[0])


def test_wafer_scale_reads_both_ways_on_a_square_of_the_rectangle():
    """On the default 750x994 mesh a 4096^2 input read both ways takes the largest square grid whose
    tiles are equal on both axes (so the mirror is local), compiled without enumerating cores."""
    src = symmetrise_input(4096).replace("double", "float")
    compiled = mica.compile_affine(src, mesh=(750, 994))
    r = compiled.mesh_program.region
    assert r.x1 == r.y1 and r.cores > 400_000 and mirrors(compiled)
    assert compiled.cost.sram_bytes <= get_target("wse2").sram_bytes


def _random_program(rng) -> tuple[str, tuple[int, int]]:
    """A producer (matmul, elementwise or none: T an input) and a consumer that reads T both ways, in a
    random expression, elementwise or as a reduction (Tᵀ X); a random size and mesh."""
    n = int(rng.integers(5, 21))
    side = int(rng.integers(2, 6))
    mesh = (side, side) if rng.random() < 0.6 else (side, int(rng.integers(2, 6)))
    producer = rng.choice(["matmul", "elementwise", "input"])
    a, b = ("T[i][j]", "T[j][i]") if rng.random() < 0.5 else ("T[j][i]", "T[i][j]")
    c = float(rng.integers(-3, 4))
    consumer = rng.choice(["add", "mul", "gram"])
    body = {"add": f"D[i][j] = {a} + {c} * {b} - X[i][j];",
            "mul": f"D[i][j] = {a} * {b} + {c};",
            "gram": f"D[i][j] = {c} * {b}; for (int k = 0; k < {n}; k++) D[i][j] += T[k][i] * X[k][j];"}[consumer]
    make = {"matmul": f"T[i][j] = 0; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * A[k][j];",
            "elementwise": "T[i][j] = A[i][j] * A[i][j] - 1.0;", "input": ""}[producer]
    first = f"  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{ {make} }}\n" if make else ""
    src = (f"void f(double A[{n}][{n}], double T[{n}][{n}], double X[{n}][{n}], double D[{n}][{n}]) {{\n"
           f"{first}  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{ {body} }}\n}}")
    return src, mesh


def test_random_programs_reading_an_array_both_ways_match_the_c():
    """Differential: random producers and consumers of T read both ways, sizes and meshes, against the C
    run natively; most of them must actually go through a mirror (else this test tests nothing)."""
    rng = np.random.default_rng(20261121)
    used = 0
    for _ in range(12):
        src, mesh = _random_program(rng)
        compiled = mica.compile_affine(src, mesh=mesh)
        used += bool(mirrors(compiled))
        check(compiled, src, seed=used)
    assert used >= 6
