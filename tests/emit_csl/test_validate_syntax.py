"""The structural validator and the CSL grammar catch corrupted file sets."""

import json
from functools import lru_cache

import pytest

import mica
from mica.emit_csl import render
from mica.emit_csl.syntax import check, parse
from mica.emit_csl.validate import validate, validate_dir
from mica.errors import EmitError
from .programs import program, rendered


@lru_cache(maxsize=None)
def files(name="matmul_interleaved", target="wse2"):
    return rendered(name, target)


def _route_lines(text):
    return [i for i, ln in enumerate(text.splitlines()) if "@set_color_config" in ln]


def test_emitted_sets_validate():
    validate(files())
    validate(files("gemv_ktree", "wse3"))


def test_dropped_route_is_caught_with_file_and_line():
    f = files()
    lines = f["layout.csl"].splitlines()
    k = _route_lines(f["layout.csl"])[1]            # a pass-through hop of a 2-hop ring move
    del lines[k]
    bad = dict(f, **{"layout.csl": "\n".join(lines)})
    with pytest.raises(EmitError, match=r"layout\.csl:\d+: channel \d+ .*no route") as e:
        validate(bad)
    assert e.value.filename == "layout.csl" and e.value.line > 0


def test_renamed_symbol_is_caught():
    f = files()
    bad = dict(f, **{"run.py": f["run.py"].replace("runner.get_id('C')", "runner.get_id('C_out')")})
    with pytest.raises(EmitError, match=r"run\.py:\d+: symbol 'C_out' is not exported"):
        validate(bad)
    bad = dict(f, **{"layout.csl": f["layout.csl"].replace('@export_name("C",', '@export_name("C2",')})
    with pytest.raises(EmitError, match=r"symbol 'C' is not exported by layout\.csl"):
        validate(bad)


def test_oversized_buffer_is_caught():
    f = files()
    bad = dict(f, **{"pe_program.csl": f["pe_program.csl"].replace("var buf_C: [16]f32 = @zeros([16]f32);",
                                                                   "var buf_C: [13000]f32 = @zeros([13000]f32);")})
    with pytest.raises(EmitError, match=r"pe_program\.csl:\d+: buffer C has 52000 B, plan\.json records 64 B"):
        validate(bad)
    plan = json.loads(f["plan.json"])
    for b in plan["buffers"]:
        if b["name"] == "C":
            b["bytes"] = 52000
    with pytest.raises(EmitError, match=r"more than the 49152 B of SRAM"):
        validate(dict(bad, **{"plan.json": json.dumps(plan)}))


def test_missing_class_parameter_is_caught():
    f = files()
    bad = dict(f, **{"layout.csl": f["layout.csl"].replace("        .rx_mask = rx_mask(x, y),\n", "")})
    with pytest.raises(EmitError, match=r"pe_program\.csl:\d+: param rx_mask gets no value"):
        validate(bad)


def test_conflicting_router_settings_and_budget_are_caught():
    f = files()
    lines = f["layout.csl"].splitlines()
    k = _route_lines(f["layout.csl"])[0]
    lines.insert(k + 1, lines[k].replace(".tx = .{ WEST }", ".tx = .{ EAST }"))
    with pytest.raises(EmitError, match="two settings for colour"):
        validate(dict(f, **{"layout.csl": "\n".join(lines)}))
    plan = json.loads(f["plan.json"])
    plan["colour_budget"] = 1
    with pytest.raises(EmitError, match="more than the budget of 1"):
        validate(dict(f, **{"plan.json": json.dumps(plan)}))


def test_validate_dir(tmp_path, capsys):
    from mica.emit_csl.validate import main
    prog = program("gemv_chain", "wse2")
    prog.emit("csl", tmp_path)
    validate_dir(tmp_path)
    assert (tmp_path / "commands.sh").stat().st_mode & 0o111
    assert main([str(tmp_path)]) == 0
    (tmp_path / "run.py").write_text((tmp_path / "run.py").read_text().replace("'main'", "'start'"))
    with pytest.raises(EmitError, match="'start'"):
        validate_dir(tmp_path)
    assert main([str(tmp_path)]) == 1 and "run.py:" in capsys.readouterr().err


def test_every_emitted_file_parses_and_malformed_ones_do_not():
    for target in ("wse2", "wse3"):
        for name in ("matmul_summa", "two_ops"):
            f = files(name, target)
            parse(f["layout.csl"], "layout.csl")
            parse(f["pe_program.csl"], "pe_program.csl")
    pe = files()["pe_program.csl"]
    unbalanced = pe.replace("fn finish() void {", "fn finish() void {{", 1)
    with pytest.raises(EmitError, match=r"pe_program\.csl:\d+:\d+: not valid CSL") as e:
        check(unbalanced, "pe_program.csl")
    assert e.value.line > 0
    with pytest.raises(EmitError, match="not valid CSL"):
        check(pe[: len(pe) // 2], "pe_program.csl")       # truncated
    with pytest.raises(EmitError, match="not valid CSL"):
        check(pe.replace("pending -= 1;", "pending -= ;"), "pe_program.csl")
    with pytest.raises(EmitError, match="not valid CSL"):
        check(files()["layout.csl"].replace("@set_rectangle(4, 4);", "@set_rectangle(4, 4)"), "layout.csl")


def test_vector_updates_become_dsd_operations():
    pe = files()["pe_program.csl"]
    assert "@fmacs(" not in pe or "@fmacs(" in pe
    mm = files("matmul_summa", "wse2")["pe_program.csl"]
    assert "@fmacs(" in mm            # C[i, j] += A[i, k] * B[k, j] over j
    gv = files("gemv_ktree", "wse2")["pe_program.csl"]
    assert "@fadds(" in gv and "@fmovs(" in gv    # accumulate / fill; the dot product stays a loop


def test_wse3_binds_queues_and_microthreads():
    w3 = files("matmul_interleaved", "wse3")["pe_program.csl"]
    w2 = files("matmul_interleaved", "wse2")["pe_program.csl"]
    assert "@initialize_queue(@get_input_queue(" in w3 and ".ut_id = @get_ut_id(" in w3
    assert "@initialize_queue" not in w2 and ".ut_id" not in w2
    for pe in (w2, w3):
        assert pe.count("sys_mod.unblock_cmd_stream();") == 1


def test_unsupported_constructs_raise_emit_errors():
    op = mica.ops.matmul(8, 8, 8, dtype="f64")
    with pytest.raises(EmitError, match="dtype f64"):
        render(mica.compile_affine(op, mesh=(2, 2), target="wse2"))
    with pytest.raises(EmitError, match="targets wse2 and wse3"):
        render(mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=(2, 2), target="wormhole"))
    mm = mica.ops.matmul(16, 16, 16)
    # a 4x4 SUMMA on WSE-3 is relayed hop by hop (test_relay.py); with a guard on its exchange it is not
    from dataclasses import replace
    from mica.meshir import ir
    summa = mica.compile_affine(mm, mesh=(4, 4), target="wse3", schedule=mica.plans.summa(mm, (4, 4)))
    mp = summa.mesh_program
    body = tuple(replace(op, body=tuple(replace(e, guard=ir.Lin(1)) if isinstance(e, ir.Exchange) else e
                                        for e in op.body)) if isinstance(op, ir.Loop) else op for op in mp.body)
    with pytest.raises(EmitError, match="fabric queues"):
        render(replace(summa, mesh_program=replace(mp, body=body)))


def test_landing_buffers_that_overflow_sram_are_an_emit_error():
    op = mica.ops.matmul(4096, 4096, 4096)
    prog = mica.compile_affine(op, mesh=(64, 64), target="wse2", schedule=mica.plans.interleaved(op, (64, 64)))
    assert prog.mesh_program.arena_bytes <= 49152          # the emulator's plan fits ...
    with pytest.raises(EmitError, match=r"landing buffers of A_ring, B_ring"):
        render(prog)                                       # ... but not with CSL's landing buffers


def test_constructs_outside_the_csl_back_end_name_themselves():
    from dataclasses import dataclass, replace

    from mica.emit_csl.plan import build_plan
    from mica.meshir import ir
    prog = program("gemv_chain", "wse2")
    mp, tgt = prog.mesh_program, prog.target
    load = next(op for op in mp.body if isinstance(op, ir.HostLoad))
    with pytest.raises(EmitError, match=r"HostLoad of x in the middle of the program"):
        build_plan(replace(mp, body=mp.body[:-1] + (replace(load, array="x"),) + mp.body[-1:]), tgt)

    @dataclass(frozen=True)
    class Halo:
        name: str = "halo_A"
    with pytest.raises(EmitError, match=r"pattern Halo \('halo_A'\) is not supported"):
        build_plan(replace(mp, body=mp.body[:-1] + (ir.Exchange("halo", (Halo(),)),) + mp.body[-1:]), tgt)
    deep = ir.Loop("a", 1, (ir.Loop("b", 1, (ir.Loop("c", 1, (ir.Loop("d", 1, (ir.Loop("e", 1, ()),)),)),)),))
    with pytest.raises(EmitError, match="loop e nests deeper than 4"):
        build_plan(replace(mp, body=mp.body[:-1] + (deep,) + mp.body[-1:]), tgt)


def test_user_names_never_clash_with_generated_ones():
    """Arrays named like the PE program's own identifiers (coordinates, loop state, isl iterators)."""
    src = """
void f(float x[8][8], float y[8], float pc[8], float c0[8]) {
  for (int i = 0; i < 8; i++) { y[i] = 0.0f; for (int j = 0; j < 8; j++) y[i] += x[i][j] * pc[j]; }
  for (int i = 0; i < 8; i++) c0[i] = y[i] * 2.0f;
}"""
    prog = mica.compile_affine(mica.affine.from_c(src), mesh=(2, 2), target="wse2")
    f = render(prog)                     # validates: no local shadows a top-level name
    assert "var buf_y:" in f["pe_program.csl"] and "var buf_pc:" in f["pe_program.csl"]
    pe = f["pe_program.csl"].replace("fn finish() void {", "fn finish() void {\n  var pc: u16 = 0;")
    with pytest.raises(EmitError, match=r"pe_program\.csl:\d+: pc is declared again"):
        validate(dict(f, **{"pe_program.csl": pe}))


def test_one_core_sequence_kernel_loops_are_ranges():
    src = """
void f(float A[16], float B[16], float C[16]) {
  for (int i = 1; i < 16; i++) A[i] = A[i-1] + B[i];
  for (int i = 1; i < 16; i++) C[i] = C[i-1] * 0.5f + A[i];
}"""
    prog = mica.compile_affine(mica.affine.from_c(src), mesh=(2, 2), target="wse3")
    assert prog.mesh_program.region.cores == 1
    f = render(prog)
    pe = f["pe_program.csl"]
    body = pe[pe.index("fn k_program_0"):]
    body = body[:body.index("\n}\n")]
    assert body.count("for (@range(i32, 1, 15 + 1, 1)) |c1| {") == 2       # sibling loops, one name
    bad = pe.replace("fn k_program_0() void {\n", "fn k_program_0() void {\n  var c1: i32 = 0;\n", 1)
    with pytest.raises(EmitError, match="c1 is declared again"):
        validate(dict(f, **{"pe_program.csl": bad}))


def test_f16_programs_use_half_precision_operations_and_16_bit_memcpy():
    prog = mica.compile_affine(mica.ops.matmul(16, 16, 16, dtype="f16"), mesh=(4, 4), target="wse3")
    f = render(prog)
    pe, run = f["pe_program.csl"], f["run.py"]
    assert "@fmach(" in pe and "@mov16(" in pe and "@mov32(" not in pe and "[16]f16" in pe
    assert "widen16(to_pes(" in run and "narrow16(flat)" in run and "MEMCPY_16BIT" in run
    ns = {"__name__": "run_py"}
    exec(compile(run.replace("from cerebras.sdk.runtime.sdkruntimepybind import", "# "), "run.py", "exec"), ns)
    import numpy as np
    v = np.array([1.5, -2.25, 65504.0], dtype=np.float16)
    words = ns["widen16"](v)
    assert words.dtype == np.uint32 and (ns["narrow16"](words) == v).all()


def test_emitted_code_does_not_grow_with_the_mesh():
    """A chain reduction has one route table per stage; the PE program and the layout's routes stay the
    same size on a wider mesh (per-stage channels share colours and merge into strided rectangles)."""
    g = mica.ops.gemv(64, 256)
    sizes = []
    for w in (16, 32):
        prog = mica.compile_affine(g, mesh=(w, 2), target="wse2", schedule=mica.plans.chain(g, (w, 2)))
        f = render(prog)
        plan = json.loads(f["plan.json"])
        assert len(plan["channels"]) >= w - 1
        routes = [ln for ln in f["layout.csl"].splitlines() if "@set_color_config" in ln]
        sizes.append((len(f["pe_program.csl"]), len(routes)))
    assert sizes[0][1] == sizes[1][1] and abs(sizes[0][0] - sizes[1][0]) < 200
