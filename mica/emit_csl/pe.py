"""The PE program (``pe_program.csl``): one source for every core, specialised per region class by its
parameters (colours it receives / sends on, the kernel class of each kernel).

Structure of the generated file:

* buffers, one per MeshIR RegionTensor, sized from its box; host-visible ones exported through pointers;
* the kernel classes (``kernels.py``): DSD vector operations where the innermost loop is a vector update;
* fabric DSDs per colour (input queue / output queue from the plan; on WSE-3 each queue is bound to its
  colour with ``@initialize_queue`` at comptime, on WSE-2 the DSD names the colour);
* the MeshIR body as a state machine ``run()`` over a program counter: a compute step calls the core's
  kernel class when the core is in the op's rectangle; an exchange step starts one asynchronous ``@mov32``
  (``@mov16`` for f16) per message this core sends or receives, and joins them with the activate/unblock
  idiom: the step task is blocked, activated at once, and unblocked by the completion task of the last
  operation to finish; loops keep their variables in ``lv`` (slot = nesting depth, phase loops from the
  last slot, as in the emulator);
* ``main`` (host-launched) starts the machine; the last step calls ``sys_mod.unblock_cmd_stream()`` so the
  host's following memcpy commands run.

Public API: :func:`render_pe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ..meshir import ir
from . import boxes
from .csltext import FLOAT_HELPERS, HELPERS, INT_HELPERS, rect_test
from .kernels import MATH_MODULE, kernel_functions
from .plan import LOOP_SLOTS, CslPlan, families, parts_of, storage_type, use_ranges


def _len_expr(t: ir.RegionTensor, slots: dict[str, int]) -> str:
    """Elements of ``t``'s box on core (px, py) at the current loop values (row-major, packed)."""
    parts = []
    for d in t.box:
        c = {"x": "px", "y": "py"}.get(d.coord) or (f"lv[{slots[d.coord]}]" if d.coord in slots else "0")
        parts.append(boxes.size_csl(d, c))
    return " * ".join(parts) or "1"


def use_condition(uses, scope_counts: dict[str, int], slots: dict[str, int]) -> str:
    """CSL condition: the loop variables hold one of ``uses`` (empty when that is every iteration).
    One variable: arithmetic progressions (``lv[d] >= a and lv[d] <= b and pmod(lv[d] - a, k) == 0``);
    several: boxes of ranges."""
    uses = sorted(set(uses))
    total = prod(scope_counts.values()) if scope_counts else 1
    if len(uses) == total:
        return ""
    alts = []
    if uses and len(uses[0]) == 1:
        var = uses[0][0][0]
        v = f"lv[{slots[var]}]"
        for a, b, k in progressions([u[0][1] for u in uses]):
            if a == b:
                alts.append(f"{v} == {a}")
            elif k == 1:
                alts.append(f"{v} >= {a} and {v} <= {b}")
            else:
                alts.append(f"{v} >= {a} and {v} <= {b} and pmod({v} - {a}, {k}) == 0")
    else:
        for box in use_ranges(uses):
            conds = [f"lv[{slots[v]}] == {lo}" if hi == lo + 1 else f"lv[{slots[v]}] >= {lo} and lv[{slots[v]}] < {hi}"
                     for v, (lo, hi) in box.items()]
            alts.append(" and ".join(conds) or "true")
    return " or ".join(f"({a})" for a in alts) if len(alts) > 1 else (alts[0] if alts else "false")


def progressions(values: list[int]) -> list[tuple[int, int, int]]:
    """Sorted distinct ``values`` as maximal arithmetic runs ``(first, last, step)``, greedily."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(values):
        if i + 1 == len(values):
            out.append((values[i], values[i], 1))
            break
        k = values[i + 1] - values[i]
        j = i + 1
        while j + 1 < len(values) and values[j + 1] - values[j] == k:
            j += 1
        out.append((values[i], values[j], k))
        i = j + 1
    return out


def _id_ranges(ids: list[int]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" if k == 1 else f"{a}-{b} step {k}"
                     for a, b, k in progressions(sorted(ids)))


def _rel(dbl, plus: int = 0) -> str:
    """The iteration of a double-buffered exchange counted from its first, plus ``plus`` (CSL text): the
    slot parity."""
    d, _, first = dbl
    k = plus - first
    return f"lv[{d}] + {k}" if k > 0 else f"lv[{d}] - {-k}" if k < 0 else f"lv[{d}]"


@dataclass(frozen=True)
class _Family:
    """One family of channels of exchange ``xi`` (one part of one pattern): what its receives and sends share."""
    xi: int
    pattern: str
    part: int
    src: str
    dst: str
    senders: ir.Rect
    receivers: ir.Rect
    colours: list[int]
    slots: dict[str, int]
    dbl: tuple | None
    mov: str
    chunked: bool

    @property
    def single(self) -> bool:
        return len(self.colours) == 1


def render_pe(mp: ir.MeshProgram, plan: CslPlan, exported: list[str]) -> str:
    ks = plan.kernels if plan.kernels is not None else kernel_functions(mp, frozenset(plan.double.buffers))
    funcs, dsds = ks.functions, ks.dsds
    decl = _declarations(mp, plan)
    if any(f"{MATH_MODULE}." in text for _, text in funcs):
        decl.insert(-1, f'const {MATH_MODULE} = @import_module("<math>");  // sqrt / exp (_f32, _f16) of the kernels')
    if any("mica_fm" in text or "mica_fabs" in text for _, text in funcs):
        decl.insert(-1, "// C's fmaxf / fminf (the other operand when one is a NaN) and fabsf\n" + FLOAT_HELPERS)
    if any("cdiv(" in text or "cmod(" in text or "wrap_" in text for _, text in funcs):
        decl.insert(-1, "// C's integer / and % (truncating toward zero) and narrow conversions\n" + INT_HELPERS)
    L = (decl + _buffers(mp, plan, exported) + _state(mp, plan) + _dsds(plan, dsds)
         + _kernels(funcs) + _exchanges(mp, plan) + _machine(mp, plan) + _main(plan, exported, bool(mp.runtime)))
    return "\n".join(L) + "\n"


def _declarations(mp: ir.MeshProgram, plan: CslPlan) -> list[str]:
    """The file's head: the parameters (memcpy, colours, region-class masks and kernel classes) and modules."""
    L = [f"// pe_program.csl -- generated by MICA from MeshIR program {mp.name!r} for {plan.arch}.",
         "// One source for every core; the layout gives each region class its parameter values.",
         "// Each block names the MeshIR op it implements.",
         "",
         "param memcpy_params: comptime_struct;"]
    add = L.append
    for c in plan.colours_used:
        add(f"param color_{c}: color;")
    add("// Region-class parameters: bit k set = this core receives (rx_mask) / sends (tx_mask) on colour k;")
    add("// kc_<kernel> = the kernel class this core runs for that kernel (255: none).")
    add("param rx_mask: u32;")
    add("param tx_mask: u32;")
    for k in mp.kernels:
        add(f"param kc_{k.name}: u16;")
    add("")
    add('const sys_mod = @import_module("<memcpy/memcpy>", memcpy_params);')
    add('const layout_mod = @import_module("<layout>");')
    add("")
    return L


def _buffers(mp: ir.MeshProgram, plan: CslPlan, exported: list[str]) -> list[str]:
    """One buffer per MeshIR RegionTensor (double buffers hold two slots), the pointers the host reads and
    writes them through, and the scalar arguments."""
    L = ["// ---- buffers: one per MeshIR RegionTensor (box tiles; partial tiles use a prefix) ----"]
    add = L.append
    for b in plan.buffers:
        box = ", ".join((f"{c}/{tile}" if c else f":{min(tile, ext)}") + (" padded" if pad else "")
                        + (f" window {off:+d}..+{sp}" if sp else "") + (f" from core {c} = {org}" if org else "")
                        for c, tile, ext, pad, off, sp, org in b.dims)
        if b.slots == 1:
            add(f"// {b.name}: {b.role} {b.array}[{box}], {b.bytes} B")
        else:
            add(f"// {b.name}: {b.role} {b.array}[{box}], {b.bytes} B x {b.slots} slots (double buffer: elements "
                f"[0, {b.elems}) and [{b.elems}, {2 * b.elems}))")
        add(f"var buf_{b.name}: [{b.alloc_elems}]{b.dtype} = @zeros([{b.alloc_elems}]{b.dtype});")
    for name in exported:
        b = next(x for x in plan.buffers if x.name == name)
        add(f"var buf_{name}_ptr: [*]{b.dtype} = &buf_{name};")
    nsc = max(1, len(mp.scalars))
    add(f"// scalar arguments {list(mp.scalars)} (written by the host)")
    add(f"var scalars: [{nsc}]f32 = @zeros([{nsc}]f32);")
    add("var scalars_ptr: [*]f32 = &scalars;")
    if mp.runtime:
        names = ", ".join(f"{n} ({lo} <= {n} < {hi})" for n, lo, hi in mp.runtime)
        add(f"// runtime parameters {names}: written by the host before each launch (every PE of the region);")
        add("// kernels read rp_<name> = rparams[k]")
        add(f"var rparams: [{len(mp.runtime)}]i32 = @zeros([{len(mp.runtime)}]i32);")
        add("var rparams_ptr: [*]i32 = &rparams;")
    add("")
    return L


def _state(mp: ir.MeshProgram, plan: CslPlan) -> list[str]:
    """The state machine's variables, the local task IDs, the integer helpers and the skew's block function."""
    L = ["// ---- state of the MeshIR body ----",
         "var px: i32 = 0;  // this core's column",
         "var py: i32 = 0;  // this core's row",
         f"var lv = @zeros([{LOOP_SLOTS}]i32);  // loop variables by slot (nesting depth; phase loops from the last)",
         "var pc: u16 = 0;  // next step of run()",
         "var pending: u16 = 0;  // asynchronous operations of the current exchange still running"]
    add = L.append
    for buf, land in sorted(plan.landing.items()):
        add(f"var n_{land}: u16 = 0;  // elements received into buf_{land} by the current exchange")
    for b in plan.buffers:
        if b.slots == 2:
            add(f"var slot_{b.name}: i32 = 0;  // element offset of the slot of buf_{b.name} computes read")
    if plan.rounds > 1:
        add(f"var lround: i32 = 0;  // round of an exchange into itself ({plan.rounds} rounds of landing chunks)")
    add("")
    add("// ---- local tasks ----")
    for name, tid in plan.task_ids.items():
        add(f"const {name}_id: local_task_id = @get_local_task_id({tid});")
    add("")
    add(HELPERS)
    if mp.skew is not None:
        s = mp.skew
        add(f"// MeshIR skew ({s.kind}, n = {s.n}): the block core (x, y) works on at step t")
        if s.kind == "cannon":
            add("fn ring_pos(c: i32) i32 { return c; }")
        else:
            add(f"fn ring_pos(c: i32) i32 {{ if (urem(c, 2) == 0) {{ return udiv(c, 2); }} return {s.n - 1} - udiv(c, 2); }}")
        add(f"fn skew_block(x: i32, y: i32, t: i32) i32 {{ return pmod(t + ring_pos(x) + ring_pos(y), {s.n}); }}")
    add("")
    return L


def _dsds(plan: CslPlan, dsds: dict) -> list[str]:
    """The memory DSDs of the vector operations and of the messages, and the fabric DSDs of each colour."""
    L = ["// ---- memory DSDs the vector operations start from (offset and length set per use) ----"]
    add = L.append
    for name, (buf, stride, extent, _ty) in sorted(dsds.items()):
        acc = f"buf_{buf}[i]" if stride == 1 else f"buf_{buf}[i * {stride}]"
        add(f"const {name} = @get_dsd(mem1d_dsd, .{{ .tensor_access = |i|{{{extent}}} -> {acc} }});")
    add("// whole-buffer DSDs for messages")
    moved = sorted({c.src for c in plan.channels} | {c.dst for c in plan.channels} | set(plan.landing.values()))
    for name in moved:
        b = next(x for x in plan.buffers if x.name == name)
        add(f"const mem_{name} = @get_dsd(mem1d_dsd, .{{ .tensor_access = |i|{{{b.alloc_elems}}} -> buf_{name}[i] }});")
    add("")
    add("// ---- fabric DSDs: one per colour and direction; queues from the plan ----")
    ext_in: dict[int, int] = {}
    ext_out: dict[int, int] = {}
    for c in plan.channels:
        ext_in[c.colour] = max(ext_in.get(c.colour, 1), next(b.elems for b in plan.buffers if b.name == c.dst))
        ext_out[c.colour] = max(ext_out.get(c.colour, 1), next(b.elems for b in plan.buffers if b.name == c.src))
    for col, q in sorted(plan.in_queue.items()):
        add(f"const fin_c{col} = @get_dsd(fabin_dsd, .{{ .extent = {ext_in[col]}, .fabric_color = color_{col}, "
            f".input_queue = @get_input_queue({q}) }});")
    for col, q in sorted(plan.out_queue.items()):
        add(f"const fout_c{col} = @get_dsd(fabout_dsd, .{{ .extent = {ext_out[col]}, .fabric_color = color_{col}, "
            f".output_queue = @get_output_queue({q}) }});")
    add("")
    return L


def _kernels(funcs: list[tuple[str, str]]) -> list[str]:
    """The kernel classes' functions (``kernels.py``), one per MeshIR kernel class."""
    L = ["// ---- kernels: one function per MeshIR kernel class ----"]
    for _, text in funcs:
        L += [text, ""]
    return L


def _exchanges(mp: ir.MeshProgram, plan: CslPlan) -> list[str]:
    """One ``exchange_<i>()`` per MeshIR exchange, then ``finish()`` and the completion tasks ``done<k>``."""
    L = ["// ---- exchanges: start this core's sends and receives; each completion runs one done task ----"]
    scopes = {}
    for st in plan.steps:
        if st.kind == "exchange":
            scopes[st.exchange_index] = st
    counts: dict[int, dict[str, int]] = {}
    for op, scope in mp.walk():
        if isinstance(op, ir.Exchange):
            counts[len(counts)] = dict(scope)
    for xi, st in sorted(scopes.items()):
        L += _exchange(mp, plan, xi, st, counts[xi])
    L += ["// one asynchronous operation finished; the last one of an exchange lets the step task run",
          "fn finish() void {",
          "  pending -= 1;",
          "  if (pending == 0) { @unblock(step_id); }",
          "}"]
    for k in range(plan.n_slots):
        L.append(f"task done{k}() void {{ finish(); }}")
    L.append("")
    return L


def _exchange(mp: ir.MeshProgram, plan: CslPlan, xi: int, st, counts: dict[str, int]) -> list[str]:
    """``exchange_<xi>()``: starts this core's receives and sends of exchange ``xi``, family by family."""
    op = st.op
    slots = dict(st.slots)
    L = [f"// MeshIR exchange {op.name}: {', '.join(c.name for c in op.ops)}"]
    dbl = plan.double.exchanges.get(xi)
    if dbl is not None:
        k = _rel(dbl)
        L.append(f"// double-buffered: iteration lv[{dbl[0]}] receives into slot pmod({_rel(dbl, 1)}, 2) and sends a "
                 f"double buffer from slot pmod({k}, 2)")
    L.append(f"fn exchange_{xi}() void {{")
    fams = families(plan, xi)
    if any(len(f) > 1 or len({c.colour for c in f}) > 1 for f in fams.values()):
        L.append("  var col: u16 = 255;  // the colour of the current iteration's route table (255: none)")
    for (pattern, part), chans in fams.items():
        comm = next(c for c in op.ops if c.name == pattern)
        _, senders, receivers, _, hops = parts_of(comm)[part]
        src, dst = chans[0].src, chans[0].dst
        fam = _Family(xi, pattern, part, src, dst, senders, receivers, sorted({c.colour for c in chans}), slots, dbl,
                      "mov16" if mp.tensor(src).dtype == "f16" else "mov32", plan.rounds > 1 and src == dst)
        L.append(f"  // {pattern}, part {part} (MeshIR colour {chans[0].meshir_colour}): {src} -> {dst}, "
                 f"<= {hops} hops;")
        L.append(f"  //   channel(s) {_id_ranges([c.id for c in chans])} on "
                 f"{', '.join(f'color_{k}' for k in fam.colours)}")
        L += _family(mp, plan, fam, chans, counts)
    L += ["}", ""]
    return L


def _family(mp: ir.MeshProgram, plan: CslPlan, fam: _Family, chans, counts: dict[str, int]) -> list[str]:
    """The body of one family in its exchange function: the colour of this iteration's route table (when the
    family has several), then the family's receives and sends under their guards."""
    L: list[str] = []
    add = L.append
    ind = "  "
    conds = {k: use_condition([u for c in chans if c.colour == k for u in c.uses], counts, fam.slots)
             for k in fam.colours}
    if fam.single and conds[fam.colours[0]]:
        add(f"  if ({conds[fam.colours[0]]}) {{")
        ind = "    "
    elif not fam.single:
        add("  col = 255;")
        for k in fam.colours:
            add(f"  if ({conds[k] or 'true'}) {{ col = {k}; }}")
        add("  if (col != 255) {")
        ind = "    "
    if plan.rounds > 1 and not fam.chunked:
        add(f"{ind}if (lround == 0) {{  // moves once, in the first round")
        ind += "  "
    for role in ("recv", "send"):
        L += _moves(mp, plan, fam, role, ind)
    while ind != "  ":
        ind = ind[:-2]
        add(f"{ind}}}")
    return L


def _moves(mp: ir.MeshProgram, plan: CslPlan, fam: _Family, role: str, ind: str) -> list[str]:
    """This core's receive (``role`` "recv") or send ("send") of a family: one asynchronous ``@mov16`` /
    ``@mov32`` on the family's colour (the colour of this iteration when it has several)."""
    L: list[str] = []
    add = L.append
    rect = fam.receivers if role == "recv" else fam.senders
    buf = fam.dst if role == "recv" else fam.src
    slot = plan.slots[(fam.xi, fam.pattern, fam.part, role)]
    n = _len_expr(mp.tensor(buf), fam.slots)
    add(f"{ind}if ({rect_test(rect, fam.slots)}) {{")
    if fam.chunked:
        kk = plan.landing_chunk[buf]
        add(f"{ind}  const n: u16 = @as(u16, imax(0, imin({kk}, {n} - lround * {kk})));"
            f"  // chunk lround of {kk}")
    else:
        add(f"{ind}  const n: u16 = @as(u16, {n});")
    add(f"{ind}  if (n > 0) {{")
    add(f"{ind}    pending += 1;")
    memsrc = _mem_source(mp, plan, fam, role, buf)
    if role == "recv" and buf in plan.landing:
        buf = plan.landing[buf]
        memsrc = f"mem_{buf}"
        add(f"{ind}    n_{buf} = n;  // {fam.dst} is being sent: land beside it")
    for i, k in enumerate(fam.colours):
        q = plan.in_queue[k] if role == "recv" else plan.out_queue[k]
        mem = f"@set_dsd_length({memsrc}, n)"
        fab = f"@set_dsd_length({'fin' if role == 'recv' else 'fout'}_c{k}, n)"
        a, b = (mem, fab) if role == "recv" else (fab, mem)
        opts = f".async = true, .activate = done{slot}_id"
        if plan.arch == "wse3":
            opts += f", .ut_id = @get_ut_id({q})"
        call = f"@{fam.mov}({a}, {b}, .{{ {opts} }});"
        if fam.single:
            add(f"{ind}    {call}")
        else:
            add(f"{ind}    {'if' if i == 0 else '} else if'} (col == {k}) {{")
            add(f"{ind}      {call}")
    if not fam.single:
        add(f"{ind}    }}")
    add(f"{ind}  }}")
    add(f"{ind}}}")
    return L


def _mem_source(mp: ir.MeshProgram, plan: CslPlan, fam: _Family, role: str, buf: str) -> str:
    """The memory DSD a move of ``buf`` starts from: the whole buffer, this round's chunk of an exchange into
    itself (sends), or this iteration's slot of a double buffer."""
    memsrc = f"mem_{buf}"
    if fam.chunked and role == "send":
        ty = storage_type(mp.tensor(buf).dtype)
        memsrc = f"@increment_dsd_offset(mem_{buf}, @as(i16, lround * {plan.landing_chunk[buf]}), {ty})"
    if fam.dbl is not None and plan.double.buffers.get(buf) == fam.xi:
        ty = storage_type(mp.tensor(buf).dtype)
        e = next(x.elems for x in plan.buffers if x.name == buf)
        rel = _rel(fam.dbl, 1 if role == "recv" else 0)
        memsrc = f"@increment_dsd_offset(mem_{buf}, @as(i16, pmod({rel}, 2) * {e}), {ty})"
    return memsrc


def _machine(mp: ir.MeshProgram, plan: CslPlan) -> list[str]:
    """``run()``: the MeshIR body as a state machine over ``pc``, one branch per step; at the end it lets the
    host's memcpy commands run."""
    n_steps = len(plan.steps)
    L = [f"// ---- the MeshIR body: {n_steps} steps ----",
         "fn run() void {",
         f"  while (pc < {n_steps}) {{"]
    for i, st in enumerate(plan.steps):
        head = "if" if i == 0 else "} else if"
        L += [f"    {head} (pc == {st.pc}) {{", f"      // {st.text}"]
        L += _step(mp, plan, st)
    if plan.steps:
        L.append("    }")
    L += ["  }",
          "  // the program is done: let the host's memcpy commands (the results' d2h) run",
          "  sys_mod.unblock_cmd_stream();",
          "}",
          ""]
    return L


def _step(mp: ir.MeshProgram, plan: CslPlan, st) -> list[str]:
    """The branch of ``run()`` for step ``st``: its work, then the next ``pc`` (an exchange step returns and
    resumes when its last operation completes)."""
    if st.kind == "compute":
        return _compute_step(mp, plan, st)
    if st.kind == "loop" and getattr(st.op, "down", False):
        return [f"      lv[{st.depth}] = {st.count - 1};  // counting down",
                f"      pc = {st.pc + 1 if st.count > 0 else st.target};"]
    if st.kind == "loop":
        return [f"      lv[{st.depth}] = 0;",
                f"      pc = {st.pc + 1 if st.count > 0 else st.target};"]
    if st.kind == "next" and getattr(st.op, "down", False):
        d = st.depth
        return [f"      lv[{d}] -= 1;  // counting down",
                f"      if (lv[{d}] >= 0) {{",
                f"        pc = {st.target};",
                "      } else {",
                f"        lv[{d}] = 0;",
                f"        pc = {st.pc + 1};",
                "      }"]
    if st.kind == "next":
        d = st.depth
        return [f"      lv[{d}] += 1;",
                f"      if (lv[{d}] < {st.count}) {{",
                f"        pc = {st.target};",
                "      } else {",
                f"        lv[{d}] = 0;",
                f"        pc = {st.pc + 1};",
                "      }"]
    if st.kind == "land":
        return _land_step(mp, plan, st)
    if st.kind == "prefetch":
        return _prefetch_step(plan, st)
    return _exchange_step(plan, st)


def _compute_step(mp: ir.MeshProgram, plan: CslPlan, st) -> list[str]:
    """A compute step: this core's kernel class of the op's kernel, when the core is in the op's rectangle."""
    k = mp.kernel(st.op.kernel)
    L = [f"      if ({rect_test(st.op.rect, dict(st.slots))}) {{"]
    for i_cls, (cname, _) in enumerate(plan.kernel_classes[k.name]):
        kw = "if" if i_cls == 0 else "} else if"
        L += [f"        {kw} (kc_{k.name} == {i_cls}) {{", f"          {cname}();"]
    L += ["        }", "      }", f"      pc = {st.pc + 1};"]
    return L


def _land_step(mp: ir.MeshProgram, plan: CslPlan, st) -> list[str]:
    """A land step: copy what an exchange into itself landed beside each buffer into place; with several
    rounds, go back to the exchange for the next round."""
    L: list[str] = []
    add = L.append
    for c in sorted({c.dst for c in st.op.ops if c.src == c.dst}):
        land = plan.landing[c]
        ty = storage_type(mp.tensor(c).dtype)
        mov = "mov16" if ty == "f16" else "mov32"
        dstm = f"mem_{c}"
        if plan.rounds > 1:
            dstm = f"@increment_dsd_offset(mem_{c}, @as(i16, lround * {plan.landing_chunk[c]}), {ty})"
        add(f"      if (n_{land} > 0) {{")
        add(f"        @{mov}(@set_dsd_length({dstm}, n_{land}), @set_dsd_length(mem_{land}, n_{land}));")
        add(f"        n_{land} = 0;")
        add("      }")
    if plan.rounds > 1:
        add("      lround += 1;")
        add(f"      if (lround < {plan.rounds}) {{")
        add(f"        pc = {st.pc - 1};  // the next round of the exchange")
        add("      } else {")
        add("        lround = 0;")
        add(f"        pc = {st.pc + 1};")
        add("      }")
    else:
        add(f"      pc = {st.pc + 1};")
    return L


def _prefetch_step(plan: CslPlan, st) -> list[str]:
    """A prefetch step of a double-buffered exchange: point computes at the slots this step's data arrived in,
    then start the next iteration's exchange into the other slots."""
    L: list[str] = []
    add = L.append
    dbl = plan.double.exchanges[st.exchange_index]
    d, count, first = dbl
    ind = "      "
    if first:
        add(f"      if (lv[{d}] >= {first}) {{  // the exchange runs from iteration {first} on")
        ind = "        "
    for b in plan.buffers:
        if plan.double.buffers.get(b.name) == st.exchange_index:
            add(f"{ind}slot_{b.name} = pmod({_rel(dbl, 1)}, 2) * {b.elems};  // this step's {b.name} arrived there")
    if first:
        add("      }")
    add(f"      if ({f'lv[{d}] + 1 >= {first} and ' if first > 1 else ''}lv[{d}] + 1 < {count}) {{")
    add(f"        lv[{d}] += 1;  // the next step's exchange, into the other slots; joined at its step")
    add(f"        exchange_{st.exchange_index}();")
    add(f"        lv[{d}] -= 1;")
    add("      }")
    add(f"      pc = {st.pc + 1};")
    return L


def _exchange_step(plan: CslPlan, st) -> list[str]:
    """An exchange step: block the step task, start the exchange (a double-buffered one only at its first
    iteration; later ones were prefetched), and return; the last completion unblocks the step task."""
    L = [f"      pc = {st.pc + 1};", "      @block(step_id);"]
    add = L.append
    if st.exchange_index in plan.double.exchanges:
        d, _, first = plan.double.exchanges[st.exchange_index]
        add("      pending += 1;  // a guard (prefetched operations may still be running)")
        if first == 0:
            add(f"      if (lv[{d}] == 0) {{")
            add(f"        exchange_{st.exchange_index}();  // the first step's panels; later ones were prefetched")
            add("      }")
        else:
            add(f"      // every iteration's panels (from {first} on) were prefetched in the iteration before")
    else:
        add("      pending = 1;  // a guard: held until every operation has started")
        add(f"      exchange_{st.exchange_index}();")
    add("      @activate(step_id);  // runs when unblocked: after the last completion")
    add("      finish();")
    add("      return;")
    return L


def _main(plan: CslPlan, exported: list[str], runtime: bool = False) -> list[str]:
    """The step task, the host-launched ``main``, and the comptime block: task bindings, the WSE-3 queue
    bindings and the exported symbols (``rparams`` when the program has ``runtime`` parameters)."""
    L = ["task step() void { run(); }",
         "",
         "// host-launched: starts the MeshIR body (run() ends with sys_mod.unblock_cmd_stream())",
         "fn main() void {",
         "  px = @as(i32, layout_mod.get_x_coord());",
         "  py = @as(i32, layout_mod.get_y_coord());",
         "  pc = 0;",
         "  @activate(step_id);",
         "}",
         "",
         "comptime {",
         "  @bind_local_task(step, step_id);"]
    add = L.append
    for k in range(plan.n_slots):
        add(f"  @bind_local_task(done{k}, done{k}_id);")
    if plan.arch == "wse3":
        add("  // WSE-3: every queue used is bound to its colour (memcpy keeps queues 0 and 1)")
        for col, q in sorted(plan.in_queue.items()):
            add(f"  if ((rx_mask & {1 << col}) != 0) {{ @initialize_queue(@get_input_queue({q}), .{{ .color = color_{col} }}); }}")
        for col, q in sorted(plan.out_queue.items()):
            add(f"  if ((tx_mask & {1 << col}) != 0) {{ @initialize_queue(@get_output_queue({q}), .{{ .color = color_{col} }}); }}")
    for name in exported:
        add(f'  @export_symbol(buf_{name}_ptr, "{name}");')
    add('  @export_symbol(scalars_ptr, "scalars");')
    if runtime:
        add('  @export_symbol(rparams_ptr, "rparams");')
    add('  @export_symbol(main);')
    add("}")
    return L
