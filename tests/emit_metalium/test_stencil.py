"""Stencils and halo copies on tile hardware instead of the generic path (:mod:`mica.emit_metalium.stencil`):
the halo pack / unpack kernels are data-movement copies of bits on the reader, the Jacobi stencil is gathered
into shifted views, combined by add_tiles and an SFPU multiply by 0.2 in the C statement's order, and scattered
back; only what truly needs it stays generic, each named in plan.json with its reason."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from .programs import GOLDEN, HAVE_HALO, rendered
from .test_functional import _check_lines, run_emitted

GOLDEN_DIR = Path(__file__).parent / "golden"
GXX = shutil.which("g++")

#: generic kernels over the goldens before stencils and copies left the generic path (main at 77e4703): all 18
#: in jacobi2d (8 halo packs, 8 unpacks, 2 stencils)
GENERIC_BEFORE = {"jacobi2d_wormhole": 18}


def _golden_plans() -> dict[str, dict]:
    return {d.name: json.loads((d / "plan.json").read_text()) for d in sorted(GOLDEN_DIR.iterdir())
            if (d / "plan.json").exists()}


def test_generic_kernels_in_the_goldens_went_down_and_each_has_a_reason():
    plans = _golden_plans()
    assert set(plans) == set(GOLDEN)
    before = sum(GENERIC_BEFORE.values())
    now_same = sum(1 for n in GENERIC_BEFORE for o in plans[n]["tile_ops"] if o["kind"] == "generic")
    assert now_same < before
    total = 0
    for name, plan in plans.items():
        generic = [o["kernel"] for o in plan["tile_ops"] if o["kind"] == "generic"]
        assert [g["kernel"] for g in plan["generic"]] == generic, name
        assert all(g["reason"].strip() for g in plan["generic"]), name
        total += len(generic)
    # what remains: triangle_sqrt's square root and trisolv's division x[j] / L[j, j]
    assert total == 2, {n: p["generic"] for n, p in plans.items() if p["generic"]}


@pytest.mark.skipif(not HAVE_HALO, reason="needs mica.plans.halo")
def test_jacobi_runs_on_tile_hardware_and_data_movement_only():
    files = rendered("jacobi2d_wormhole")
    plan = json.loads(files["plan.json"])
    kinds = {o["kernel"]: o["kind"] for o in plan["tile_ops"]}
    assert plan["generic"] == []
    assert {k for k, v in kinds.items() if v == "stencil"} == {"k_S0", "k_S1"}
    assert all(v == "copy" for k, v in kinds.items() if "pack" in k)
    s0 = next(o for o in plan["tile_ops"] if o["kernel"] == "k_S0")
    # (((A[i,j] + A[i,j-1]) + A[i,j+1]) + A[i+1,j]) + A[i-1,j], then * 0.2: the statement's order
    assert s0["views"] == [["A", ["i", "j"]], ["A", ["i", "j - 1"]], ["A", ["i", "j + 1"]], ["A", ["i + 1", "j"]],
                           ["A", ["i - 1", "j"]]]
    assert s0["passes"] == ["cb_sacc = add_tiles(cb_sv0[i], cb_sv1[i])", "cb_sacc = add_tiles(cb_sacc, cb_sv2[i])",
                            "cb_sacc = add_tiles(cb_sacc, cb_sv3[i])", "cb_sacc = add_tiles(cb_sacc, cb_sv4[i])",
                            "cb_sacc = cb_sacc mul 0.20000000298023224"]
    for path, text in files.items():
        if path.startswith("kernels/reader_"):
            assert "generic path" not in text and "float*" not in text, path    # no software floating point
            assert "uint32_t* const" in text
        if path.startswith("kernels/compute_") and "tile_k_S0();" in text:
            assert "add_tiles(cb_sacc, cb_sv2, 0, i, 0);" in text and "mul_unary_tile(0, 0x3e4ccccdu);" in text


@pytest.mark.skipif(GXX is None or not HAVE_HALO, reason="needs g++ and mica.plans.halo")
def test_a_wrong_stencil_pass_changes_the_result(tmp_path):
    """The functional model checks the passes: one add turned into a subtract fails the reference check."""
    files = dict(rendered("jacobi2d_wormhole"))
    changed = 0
    for path in [p for p in files if p.startswith("kernels/compute_")]:
        new = files[path].replace("add_tiles(cb_sacc, cb_sv3, 0, i, 0);", "sub_tiles(cb_sacc, cb_sv3, 0, i, 0);")
        changed += new != files[path]
        files[path] = new
    assert changed
    rc, out = run_emitted(files, tmp_path)
    assert rc == 1 and "MISMATCH" in out, out


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_a_triangle_stencil_scatters_only_its_instances(tmp_path):
    """C[i][j] = A[i][j] + 2 B[i][j] over a triangle: two views, an SFPU multiply and add_tiles; the scatter writes
    the triangle only (the rest of C keeps its input), exactly as the reference."""
    files = rendered("triangle_wormhole")
    plan = json.loads(files["plan.json"])
    (op,) = plan["tile_ops"]
    assert op["kind"] == "stencil" and op["passes"] == ["cb_sacc = cb_sv1[i] mul 2.0",
                                                        "cb_sacc = add_tiles(cb_sv0[i], cb_sacc)"]
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    assert [c[2] for c in _check_lines(out)] == ["ok"]


def test_stencil_forms_and_reasons():
    """Which statements become stencils, and the reason recorded for those that do not."""
    import mica
    from mica.emit_metalium import render
    cases = {
        # a tree that is not left-deep needs a second result CB
        "C[i][j] = (A[i][j+1] - A[i][j]) * (B[i][j] + 1.0f);": ("stencil", None),
        "C[i][j] = -A[i][j] / 4.0f;": ("stencil", None),
        "C[i][j] = A[i][j] / B[i][j];": ("generic", "operator / between two arrays"),
        "C[i][j] = A[i][j] * B[j][i];": ("stencil", None),          # any element an instance reads is a view
        "C[i][j] = C[i - 1][j] + A[i][j];": ("generic", "where it writes C[i, j"),
        "C[i][0] = C[i][0] + A[i][j];": ("generic", "more than once (a reduction"),
    }
    for stmt, (kind, reason) in cases.items():
        src = ("void f(float A[40][40], float B[40][40], float C[40][40]) {\n"
               f"  for (int i = 1; i < 39; i++) for (int j = 1; j <= i; j++) {stmt}\n}}")
        c = mica.compile_affine(mica.affine.from_c(src), mesh=(2, 2), target="wormhole")
        plan = json.loads(render(c)["plan.json"])
        got = [o for o in plan["tile_ops"] if o["statement"].startswith("C[")]
        assert got and got[0]["kind"] == kind, (stmt, got)
        if reason:
            assert any(reason in g["reason"] for g in plan["generic"]), (stmt, plan["generic"])
        else:
            assert re.search(r"cb_s", " ".join(got[0]["passes"]))


def test_stencils_whose_scratch_does_not_fit_take_the_generic_path_with_that_reason(monkeypatch):
    """When the scratch CBs do not fit L1 beside the tensors, the stencils go back to the generic path, each
    named with that reason (the program still emits and validates)."""
    from mica.emit_metalium import plan as plan_mod
    from mica.emit_metalium import render

    from .programs import compiled
    c = compiled("triangle_wormhole")
    real = plan_mod._fit_scratch
    monkeypatch.setattr(plan_mod, "_fit_scratch", lambda mp, dt, db, two, ops, l1: real(mp, dt, db, two, ops, 70000))
    plan = json.loads(render(c)["plan.json"])
    assert [o["kind"] for o in plan["tile_ops"]] == ["generic"]
    assert "do not fit the 70000 B of L1" in plan["generic"][0]["reason"]
    assert not any(cb["kind"] == "scratch" for cb in plan["circular_buffers"])
