"""The CSL back end (Cerebras WSE-2 / WSE-3): MeshIR -> ``layout.csl``, ``pe_program.csl``, ``run.py``,
``commands.sh``, ``plan.json`` and a README.

Every file is rendered from one :class:`~mica.emit_csl.plan.CslPlan`, itself derived from the compiled
program's MeshIR (the plan the emulator runs); ``plan.json`` records that plan (channels with colours and
routes, senders, receivers, bytes, buffers, queues, classes) so tests and users can check it against the
emulator. The emitted set is checked before it is written: :func:`mica.emit_csl.validate.validate`
(structure) and :func:`mica.emit_csl.syntax.check` (the CSL grammar of the subset MICA emits).

Modules: ``plan`` (channels, colours, queues, classes), ``kernels`` (kernel classes as CSL; ``vector``: statements along a loop as DSD operations), ``pe`` (PE
program), ``layout`` (layout file), ``host`` (run.py, commands.sh), ``record`` (plan.json), ``relay``
(moving-root multicasts -- SUMMA's, and those from the core owning a sweep step's block -- relayed hop
by hop when their colours do not fit), ``validate``,
``syntax`` (+ ``csl.lark``), ``boxes`` / ``csltext`` (printing helpers; expressions and isl ASTs print
through :mod:`mica.codeprint`).

Runtime parameters (``runtime=``): ``run.py`` takes each value as ``--<name>``, checks it against the
declared range and writes the values to the exported ``i32`` array ``rparams`` on every PE of the region
(``memcpy_h2d``) before the launch; kernels read ``rp_<name>`` from it.

Public API: :func:`emit`, :func:`render` (the files as text without writing them), :func:`planned_program`
(the MeshIR and plan the files are written from).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import EmitError
from .host import piece_sources, render_commands, render_run_py
from .layout import render_layout
from .pe import render_pe
from .plan import build_plan
from .record import plan_record
from .relay import relay_multicasts, relayable
from .syntax import check
from .validate import validate

FILES = ("layout.csl", "pe_program.csl", "run.py", "commands.sh", "plan.json", "README.md")


def render(compiled, *, landing_elems: int | None = None) -> dict[str, str]:
    """The emitted files of ``compiled`` (name -> text), validated. ``landing_elems`` caps the landing
    buffers of exchanges that send a buffer into itself (they then run in rounds; see ``plan``). A phase
    loop (around whole operators, :attr:`mica.meshir.ir.Loop.phase`) is a loop of the PE's state machine like
    any other, its variable in the last free slot (:func:`.plan.build_plan`)."""
    mp, plan, relayed = planned_program(compiled.mesh_program, compiled.target, landing_elems=landing_elems)
    exported = sorted({ld.buffer for ld in plan.loads} | {st.buffer for st in plan.stores})
    files = {
        "layout.csl": render_layout(mp, plan, exported),
        "pe_program.csl": render_pe(mp, plan, exported),
        "run.py": render_run_py(compiled, mp, plan),
        "commands.sh": render_commands(plan),
        "plan.json": _compact_json({**plan_record(mp, plan, exported, piece_sources(compiled.pieces)),
                                    **({"relayed_multicasts": relayed} if relayed else {})}),
    }
    files["README.md"] = _readme(plan)
    for name in ("layout.csl", "pe_program.csl"):
        check(files[name], name)
    validate(files)
    return files


def planned_program(mp, target, *, landing_elems: int | None = None) -> tuple:
    """The MeshIR the CSL files are written from, its plan, and the multicasts relayed in it: ``mp`` itself
    when its plan fits the colour and queue budgets, else ``mp`` with its moving-root multicasts relayed hop
    by hop (:mod:`.relay`), which fits any mesh size. An :class:`EmitError` when neither fits names both
    reasons."""
    try:
        return mp, build_plan(mp, target, landing_elems=landing_elems), []
    except EmitError as exc:
        names = relayable(mp)
        if not names:
            raise
        try:
            out = relay_multicasts(mp)
            return out, build_plan(out, target, landing_elems=landing_elems), names
        except EmitError as again:
            raise EmitError(f"{exc}; relaying the moving-root multicasts {', '.join(names)} hop by hop does not "
                            f"fit either: {again}") from None


def emit(compiled, out: Path) -> list[Path]:
    """Writes the CSL file set of ``compiled`` into ``out``; returns the paths written."""
    files = render(compiled)
    paths = []
    for name in FILES:
        p = Path(out) / name
        try:
            p.write_text(files[name], encoding="utf-8")
            if name.endswith(".sh"):
                p.chmod(0o755)
        except OSError as exc:
            raise EmitError(f"cannot write {p}: {exc.strerror}") from None
        paths.append(p)
    return paths


def _compact_json(obj: dict) -> str:
    """JSON with one line per top-level key, and one line per record of a top-level list of records (a
    channel, a buffer, a class), so the record stays readable and diffs stay local."""
    lines = ["{"]
    items = list(obj.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines.append(f" {json.dumps(k)}: [")
            lines += [f"  {json.dumps(x)}{',' if j < len(v) - 1 else ''}" for j, x in enumerate(v)]
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _readme(plan) -> str:
    w, h = plan.mesh
    return "\n".join([
        f"# {plan.name}: CSL for {plan.arch}, {w}x{h} PEs (generated by MICA)",
        "",
        "- `layout.csl`: rectangle, tile code per region class, colours and routes, memcpy per column, exports.",
        "- `pe_program.csl`: buffers, kernel classes, fabric DSDs and the MeshIR body as a task state machine.",
        "- `run.py`: SdkRuntime host script (h2d of inputs, launch, d2h of outputs, check against a reference).",
        "- `commands.sh`: the `cslc` and `cs_python` command lines.",
        "- `plan.json`: what was emitted (channels, colours, routes, messages, buffers, queues, classes).",
        "",
        f"{len(plan.channels)} channel(s) on {len(plan.colours_used)} colour(s) (budget {plan.colour_budget}), "
        f"{len(plan.classes)} region class(es), {sum(b.alloc_bytes for b in plan.buffers)} B of buffers per PE "
        f"(SRAM {plan.sram_bytes} B).",
        "",
        "Not compiled here: the Cerebras SDK (cslc, cs_python) is not installable in MICA's environment; MICA "
        "checks these files with its own CSL grammar, a structural validator and a cross-check against the "
        "emulator's route tables.",
        ""])
