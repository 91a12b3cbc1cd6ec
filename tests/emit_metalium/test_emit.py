"""The Metalium file set: what prog.emit writes, the pinned version in every file, what each kernel renders
as, and the errors for programs the back end cannot place or render."""

from __future__ import annotations

import json
import re

import pytest

import mica
from mica.emit_metalium.api import TT_METAL_VERSION
from mica.errors import EmitError

from .programs import compiled, rendered


def test_emit_writes_host_kernels_and_plan(tmp_path):
    paths = compiled("gemv_ktree_wormhole").emit("metalium", tmp_path)
    rel = sorted(str(p.relative_to(tmp_path)) for p in paths)
    assert "host.cpp" in rel and "plan.json" in rel
    plan = json.loads((tmp_path / "plan.json").read_text())
    classes = [c["name"] for c in plan["core_classes"]]
    assert len(classes) == 4                      # column 0 / row 0 / both / interior, never one per core
    for c in classes:
        for kind in ("reader", "compute", "writer"):
            assert f"kernels/{kind}_{c}.cpp" in rel
    # each class is a set of rectangles covering the 4x4 work region exactly once
    cells = [(x, y) for c in plan["core_classes"] for x0, x1, y0, y1 in c["ranges"]
             for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
    assert sorted(cells) == sorted((x, y) for x in range(4) for y in range(4))


@pytest.mark.parametrize("name", ["matmul_summa_wormhole", "matmul_summa_blackhole", "mm2_wormhole"])
def test_every_file_states_the_pinned_api_version(name):
    files = rendered(name)
    for rel, text in files.items():
        if rel.endswith(".json"):
            assert json.loads(text)["tt_metal"] == TT_METAL_VERSION
        else:
            assert TT_METAL_VERSION in text.splitlines()[1], rel
    arch = "Blackhole" if "blackhole" in name else "Wormhole"
    assert f"Target: Tenstorrent {arch}" in files["host.cpp"]


def test_summa_renders_multicasts_with_the_handshake():
    files = rendered("matmul_summa_wormhole")
    reader = files["kernels/reader_c0.cpp"]
    assert reader.count("mica_send_multicast(") == 2 and "mica_send_unicast(" not in reader
    assert reader.index("phase 1") < reader.index("phase 2") < reader.index("phase 3")
    helpers = files["kernels/mica_dataflow.h"]
    for call in ("noc_semaphore_wait(ready, n_dests)", "noc_async_write_multicast_loopback_src(",
                 "noc_semaphore_set_multicast(", "noc_semaphore_inc("):
        assert call in helpers
    compute = files["kernels/compute_c0.cpp"]
    assert "matmul_tiles(cb_A_recv, cb_B_recv" in compute and "matmul_init(cb_A_recv, cb_B_recv)" in compute
    assert "compute_kernel_hw_startup<SrcOrder::Reverse>(cb_A_recv, cb_B_recv, cb_C)" in compute
    assert len(re.findall(r"compute_kernel_hw_startup(<[^>]*>)?\(", compute)) == 1 and "mm_init" not in compute
    assert "copy_tile(cb_C, 0, 0)" in compute     # partial results reloaded: the sum runs across steps


def test_ring_shifts_are_unicasts_into_a_landing_buffer():
    files = rendered("matmul_interleaved_wormhole")
    reader = files["kernels/reader_c0.cpp"]
    assert reader.count("mica_send_unicast(") == 8       # 4 colour groups per ring, 2 rings
    assert "get_write_ptr(cb_A_ring_landing)" in reader and "mica_local_copy(" in reader
    plan = json.loads(files["plan.json"])
    assert {e["pattern"] for e in plan["exchanges"]} == {"ring_shift/interleaved"}
    assert all(e["guard"] == "v_t" for e in plan["exchanges"])


def test_gemv_ktree_renders_fill_matmul_and_eltwise_add():
    plan = json.loads(rendered("gemv_ktree_wormhole")["plan.json"])
    kinds = {o["kernel"]: (o["kind"], o["op"]) for o in plan["tile_ops"]}
    assert kinds == {"k_fill0_y": ("fill", ""), "k_S0": ("fill", ""), "k_S1": ("matmul", ""),
                     "k_accx_y": ("eltwise", "+")}
    compute = rendered("gemv_ktree_wormhole")["kernels/compute_c0.cpp"]
    assert "add_tiles(cb_y, cb_y_in, 0, i, 0)" in compute    # y = y + y_in, in place
    assert {e["pattern"] for e in plan["exchanges"]} == {"multicast", "shift"}


def test_partial_boxes_span_several_tiles():
    plan = json.loads(rendered("matmul_partial_wormhole")["plan.json"])
    pages = {c["tensor"]: c["pages"] for c in plan["circular_buffers"] if c["kind"] == "tensor"}
    assert pages["C"] == 2 * 1                    # a 50x24 box of C: 2 x 1 tiles
    op = next(o for o in plan["tile_ops"] if o["kind"] == "matmul")
    assert op["tiles"][0] * op["tiles"][1] == pages["C"]


def test_a_mesh_larger_than_the_tensix_grid_is_an_error():
    op = mica.ops.matmul(64, 64, 64)
    prog = mica.compile_affine(op, mesh=(16, 4), target="wse2", schedule=mica.plans.summa(op, (16, 4)))
    with pytest.raises(EmitError, match=r"mesh 16x4 \(compiled for wse2\) is larger than the wormhole Tensix grid of 8x8"):
        prog.emit("metalium", "/nonexistent/never-written")


def test_f64_programs_are_an_error_naming_the_tensor(tmp_path):
    op = mica.ops.matmul(32, 32, 32, dtype="f64")
    prog = mica.compile_affine(op, mesh=(2, 2), target="wormhole", schedule=mica.plans.summa(op, (2, 2)))
    with pytest.raises(EmitError, match=r"tensor \w+ of matmul is f64; Tenstorrent has no such data format"):
        prog.emit("metalium", tmp_path)
    assert not any(tmp_path.iterdir())            # nothing half-written


def test_scalar_arguments_reach_the_generic_path_as_runtime_args(tmp_path):
    """``C = alpha * A + B``: alpha is a runtime arg of the readers (its f32 bits, ``sc_alpha``), drawn by
    host.cpp and given to the reference too; the emitted program computes the reference in the functional
    model; in a bf16 program host.cpp rounds the drawn value to bf16 first (the value the reference reads),
    and the generic path rounds what it stores as the reference does: exact too."""
    from .test_functional import run_emitted
    prog = mica.compile_affine(mica.ops.scaled_add((64, 64)), mesh=(2, 2), target="wormhole")
    from mica.emit_metalium import render
    files = render(prog)
    reader = next(t for r, t in files.items() if r.startswith("kernels/reader_"))
    assert "const float sc_alpha = mica_bits_f32(get_arg_val<uint32_t>(" in reader
    assert "mica_f32_bits(sc_alpha)" in files["host.cpp"]
    assert "const double scalars[1] = {(double)sc_alpha};" in files["host.cpp"]
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0 and re.search(r"^C: max \|device - reference\| = 0 \(scale \S+\) ok$", out, re.M), out
    half = mica.compile_affine(mica.ops.scaled_add((64, 64), "bf16"), mesh=(2, 2), target="wormhole")
    files = render(half)
    assert "reference::mica_bf16_to_f32(reference::mica_f32_to_bf16(scalar_dist(scalar_rng)))" in files["host.cpp"]
    (tmp_path / "bf16").mkdir()
    rc, out = run_emitted(files, tmp_path / "bf16")
    assert rc == 0 and re.search(r"^C: max \|device - reference\| = 0 \(scale \S+\) ok$", out, re.M), out


def test_a_scalar_chain_renders_on_the_sfpu():
    files = rendered("chain3_wormhole")
    plan = json.loads(files["plan.json"])
    op = next(o for o in plan["tile_ops"] if o["kind"] == "scalar")
    assert op["statement"] == "z[i] = ((2.0 * y[i]) + 1.0)"
    compute = next(t for r, t in files.items() if r.startswith("kernels/compute_") and "tile_p1_k_S2();" in t)
    assert "mul_unary_tile(0, 0x40000000u);  // mul 2.0" in compute
    assert "add_unary_tile(0, 0x3f800000u);  // add 1.0" in compute


def test_kernels_run_only_where_their_domain_is_not_empty():
    from mica.emit_metalium.classify import box_domain_guard
    mp = compiled("gemv_ktree_wormhole").mesh_program
    k = mp.kernel("k_S1")
    assert box_domain_guard(mp, k, k.classes[0].region, 1) is None      # outside loops: t = 0 always
    assert box_domain_guard(mp, k, k.classes[0].region, 4) == "(t == 0LL)"
    s0 = mp.kernel("k_S0")
    assert box_domain_guard(mp, s0, s0.classes[0].region, 1) is None    # x = 0 is its class's region


def test_kernels_without_a_tile_routine_take_the_generic_path():
    files = rendered("triangle_sqrt_wormhole")
    plan = json.loads(files["plan.json"])
    assert [o["kind"] for o in plan["tile_ops"]] == ["generic"]
    assert [g["kernel"] for g in plan["generic"]] == ["k_S0"] and "call of sqrt" in plan["generic"][0]["reason"]
    reader = files["kernels/reader_c0.cpp"]
    assert "generic path, kernel class" in reader and "mica_tile_offset(" in reader
    assert "tile_k_" not in files["kernels/compute_c0.cpp"]       # the compute kernel only waits
    assert "mica_compute_turn();" not in reader


def test_a_comm_op_field_the_back_end_does_not_render_is_an_error():
    import dataclasses

    from mica.emit_metalium.plan import _check_fields
    from mica.meshir.ir import Shift
    mp = compiled("gemv_ktree_wormhole").mesh_program
    shift = next(c for op, _ in mp.walk() if hasattr(op, "ops") for c in op.ops if isinstance(c, Shift))
    _check_fields(shift)
    Extended = dataclasses.make_dataclass("Shift", [("window", int, dataclasses.field(default=0))], bases=(Shift,),
                                          frozen=True)
    _check_fields(Extended(**{f.name: getattr(shift, f.name) for f in dataclasses.fields(Shift)}))
    with pytest.raises(EmitError, match=r"Shift y partials .*: field window = 3 has no Metalium rendering"):
        _check_fields(Extended(**{f.name: getattr(shift, f.name) for f in dataclasses.fields(Shift)}, window=3))


def test_a_matmul_of_two_operands_with_nonzero_padding_is_an_error():
    """Whole-tile routines also compute the zero padding of partial tiles; after ``+ 1.0`` it is 1.0, which
    a matmul adds into the result unless the other operand's padding is zero."""
    from types import SimpleNamespace

    from mica.emit_metalium.classify import TileOp
    from mica.emit_metalium.plan import _check_padding
    from mica.meshir.ir import Compute, Loop, Rect
    r = Rect.of(0, 1, 0, 1)
    ops = {"inc_x": TileOp("inc_x", "scalar", "X", ("X",), chain=(("add", 1.0),)),
           "scale_y": TileOp("scale_y", "scalar", "Y", ("Y",), chain=(("mul", 2.0),)),
           "inc_y": TileOp("inc_y", "scalar", "Y", ("Y",), chain=(("add", 1.0),)),
           "mm": TileOp("mm", "matmul", "W", ("X", "Y"))}
    fine = SimpleNamespace(body=(Compute("inc_x", r), Compute("scale_y", r), Compute("mm", r)))
    _check_padding(fine, ops)                            # Y's padding is still zero: exact
    bad = SimpleNamespace(body=(Compute("inc_x", r), Loop("t", 2, (Compute("mm", r), Compute("inc_y", r)))))
    with pytest.raises(EmitError, match=r"kernel mm: both operands X and Y may have non-zero tile padding"):
        _check_padding(bad, ops)                         # found on the loop's second trip
