"""Channels active at different times share colours and queues (a stencil's halo exchanges reuse a few
colours across statements and sweeps, as the MeshIR does); the plan keeps that safe and the validator
checks it independently from the emitted files."""

import json

import pytest

from mica.emit_csl import render
from mica.emit_csl.plan import Box, RouteBox, _RouteTable
from mica.emit_csl.validate import _check_shared_colours, _Table, validate
from mica.errors import EmitError
from .programs import jacobi_halo, rendered


def _cells(b):
    x0, x1, xs, y0, y1, ys = b
    return [(x, y) for y in range(y0, y1, ys) for x in range(x0, x1, xs)]


def _per_core(plan, role):
    """core -> {colour: queue} of the colours it receives (role "recv") or sends on."""
    box, kind = ("receivers", "input") if role == "recv" else ("senders", "output")
    out: dict = {}
    for c in plan["channels"]:
        for cell in _cells(c[box]):
            out.setdefault(cell, {})[c["colour"]] = plan["queues"][kind][str(c["colour"])]
    return out


@pytest.mark.parametrize("name", ["jacobi_halo", "jacobi_halo_5x4"])
def test_halo_exchanges_reuse_colours_and_fit_wse3_queues(name):
    plan = json.loads(rendered(name, "wse3")["plan.json"])
    chans = plan["channels"]
    # two statements x two axes x (hi, lo) x (even, odd senders): 16 channels ...
    assert len(chans) == 16 and len({c["exchange"] for c in chans}) == 4
    # ... on 8 colours: statement S1's exchanges reuse S0's colours (same routes, same senders)
    assert len(plan["colours"]) == 8
    s0 = {(c["exchange"][-1], c["meshir_colour"]): c["colour"] for c in chans if "_S0_" in c["exchange"]}
    s1 = {(c["exchange"][-1], c["meshir_colour"]): c["colour"] for c in chans if "_S1_" in c["exchange"]}
    assert s0 == s1
    # x and y exchanges route differently on the same MeshIR colours: never one colour for both
    assert not {v for (ax, _), v in s0.items() if ax == "x"} & {v for (ax, _), v in s0.items() if ax == "y"}
    for role in ("recv", "send"):
        for core, qs in _per_core(plan, role).items():
            # every core binds each of its queues to one colour (WSE-3), 4 of them per direction at most
            assert len(set(qs.values())) == len(qs) <= 4, (role, core, qs)
    mesh = plan["mesh"]
    inner = (1, 1)
    assert len(_per_core(plan, "recv")[inner]) == (4 if mesh[0] > 2 and mesh[1] > 2 else None)


def test_halo_scales_past_3x3_on_wse3():
    """Mesh sizes up to a core per two rows and columns: the same 8 colours and 4 + 4 queues."""
    for mesh in ((4, 4), (5, 3), (7, 7)):
        files = render(jacobi_halo(mesh, "wse3"))
        plan = json.loads(files["plan.json"])
        assert len(plan["colours"]) == 8 and max(plan["queues"]["input"].values()) <= 7
        assert plan["mesh"] == list(mesh)


def test_validator_catches_a_colour_shared_in_one_exchange_instance():
    files = rendered("jacobi_halo", "wse3")
    plan = json.loads(files["plan.json"])
    a = next(c for c in plan["channels"] if c["exchange"] == "halo_S0_x")
    b = next(c for c in plan["channels"] if c["exchange"] != a["exchange"] and c["colour"] == a["colour"])
    b["exchange_index"] = a["exchange_index"]          # as if both were one exchange's
    with pytest.raises(EmitError, match=rf"channels {a['id']} and {b['id']} share color_{a['colour']} and router .* "
                                        r"in one exchange instance"):
        validate(dict(files, **{"plan.json": json.dumps(plan)}))


def test_validator_catches_a_queue_bound_to_two_colours_on_wse3():
    files = rendered("jacobi_halo", "wse3")
    plan = json.loads(files["plan.json"])
    # core (1, 0) receives on colours 0 and 2 (x halo from its east and west neighbours)
    got = _per_core(plan, "recv")[(1, 0)]
    c0, c1 = sorted(got)[:2]
    q0 = got[c0]
    pe = files["pe_program.csl"]
    bad = plan.copy()
    bad["queues"] = {"input": dict(plan["queues"]["input"], **{str(c1): q0}), "output": plan["queues"]["output"]}
    with pytest.raises(EmitError, match=rf"binds input queue {q0} to color_{c0} and color_{c1}"):
        validate(dict(files, **{"plan.json": json.dumps(bad)}))
    # the PE program must use the queues plan.json records
    line = next(ln for ln in pe.splitlines() if ln.startswith(f"const fin_c{c1} = "))
    wrong = line.replace(f"@get_input_queue({got[c1]})", f"@get_input_queue({q0})")
    with pytest.raises(EmitError, match=rf"pe_program\.csl:\d+: input queue {q0} for color_{c1}"):
        validate(dict(files, **{"pe_program.csl": pe.replace(line, wrong)}))


def test_validator_catches_a_queue_number_used_twice_in_one_exchange():
    files = rendered("jacobi_halo", "wse2")
    plan = json.loads(files["plan.json"])
    # in exchange halo_S0_x core (1, 0) receives on one colour and sends on another
    got_in, got_out = _per_core(plan, "recv")[(1, 0)], _per_core(plan, "send")[(1, 0)]
    x_cols = {c["colour"] for c in plan["channels"] if c["exchange"] == "halo_S0_x"}
    cin = min(c for c in got_in if c in x_cols)
    cout = min(c for c in got_out if c in x_cols)
    bad = dict(plan, queues={"input": plan["queues"]["input"],
                             "output": dict(plan["queues"]["output"], **{str(cout): got_in[cin]})})
    with pytest.raises(EmitError, match=rf"uses queue number {got_in[cin]} for .* in one exchange instance"):
        validate(dict(files, **{"plan.json": json.dumps(bad)}))


def _chan(cid, xi, senders, receivers, routes):
    return {"id": cid, "colour": 0, "exchange": f"e{xi}", "exchange_index": xi, "pattern": "p", "uses": [{}],
            "senders": senders, "receivers": receivers,
            "routes": [{"box": b, "rx": rx, "tx": tx} for b, rx, tx in routes]}


def test_a_shared_receiver_fed_by_different_senders_is_rejected():
    """Core 1 of a 3x1 row accepts colour 0 from both sides: channel 0 brings core 0's message, channel 1
    (a later exchange) core 2's. One static table serves both, but core 2 may run ahead and its message
    overtake core 0's: the plan never shares the colour, and the validator rejects a layout that does."""
    w, h = 3, 1
    left = [([0, 1, 1, 0, 1, 1], ["RAMP"], ["E"]), ([1, 2, 1, 0, 1, 1], ["W", "E"], ["RAMP"])]
    right = [([2, 3, 1, 0, 1, 1], ["RAMP"], ["W"]), ([1, 2, 1, 0, 1, 1], ["W", "E"], ["RAMP"])]
    plan = {"channels": [_chan(0, 0, [0, 1, 1, 0, 1, 1], [1, 2, 1, 0, 1, 1], left),
                         _chan(1, 1, [2, 3, 1, 0, 1, 1], [1, 2, 1, 0, 1, 1], right)]}
    names = {"RAMP": "RAMP", "E": "EAST", "W": "WEST"}
    layout = "\n".join(
        f"for (@range(i16, {b[0]}, {b[1]}, {b[2]})) |x| {{ for (@range(i16, {b[3]}, {b[4]}, {b[5]})) |y| {{ "
        f"@set_color_config(x, y, color_0, .{{ .routes = .{{ .rx = .{{ {', '.join(names[d] for d in rx)} }}, "
        f".tx = .{{ {', '.join(names[d] for d in tx)} }} }} }}); }} }}"
        for b, rx, tx in left + right[:1])
    table = _Table(layout, w, h)
    with pytest.raises(EmitError, match=r"core \(1, 0\) receives color_0 from \(0, 0\) in channel 0 but from "
                                        r"\(2, 0\) in channel 1"):
        _check_shared_colours(plan, table, layout)
    # the same two channels in the plan: equal settings on the shared router, different senders
    def table_of(c):
        d = {"routes": tuple(RouteBox(Box(*r["box"]), tuple(r["rx"]), tuple(r["tx"])) for r in c["routes"]),
             "senders": Box(*c["senders"]), "receivers": Box(*c["receivers"])}
        return _RouteTable(d, w, h)
    ta, tb = (table_of(c) for c in plan["channels"])
    assert ta.overlaps(tb) and not ta.compatible(tb)
    assert table_of(plan["channels"][0]).compatible(table_of(plan["channels"][0]))
    assert ta.sender_of() == {(1, 0): (0, 0)} and tb.sender_of() == {(1, 0): (2, 0)}


def test_moving_root_multicasts_still_get_a_colour_per_root_and_wse3_fits_three_roots():
    """SUMMA's roots route differently on shared routers: one colour each. With input and output queues
    as separate pools, a 3x3 SUMMA (3 roots per axis, 6 input queues) now fits WSE-3; 4x4 raises."""
    import mica
    mm = mica.ops.matmul(16, 16, 16)
    plan = json.loads(render(mica.compile_affine(mm, mesh=(3, 3), target="wse3",
                                                 schedule=mica.plans.summa(mm, (3, 3))))["plan.json"])
    assert len(plan["colours"]) == 6 and sorted(plan["queues"]["input"].values()) == [2, 3, 4, 5, 6, 7]
    plan = json.loads(rendered("matmul_summa", "wse2")["plan.json"])
    assert len(plan["colours"]) == 8


def test_queue_assignment_searches_when_first_fit_fails():
    from mica.emit_csl.plan import _assign
    edges = {("a", "d"), ("b", "c"), ("c", "d")}

    def clash(x, y):
        return (x, y) in edges or (y, x) in edges
    # first fit in this order: a=0, b=0, c=1, then d clashes with both; the search finds a=0, b=1, c=0, d=1
    got = _assign(["a", "b", "c", "d"], clash, (0, 1), lambda: "none")
    assert all(got[x] != got[y] for x, y in edges)
    edges |= {("a", "c")}                              # a triangle a-c-d: two values cannot do
    with pytest.raises(EmitError, match="none"):
        _assign(["a", "b", "c", "d"], clash, (0, 1), lambda: "none")
