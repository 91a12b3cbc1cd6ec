"""The TT-Metalium back end (Tenstorrent Wormhole and Blackhole): MeshIR -> host C++ and kernels.

``prog.emit("metalium", out_dir)`` writes::

    host.cpp                     unit mesh device, program, CBs, semaphores, kernels per core class, runtime
                                 args, DRAM mesh buffers, EnqueueWriteMeshBuffer / EnqueueMeshWorkload /
                                 Finish / EnqueueReadMeshBuffer, check against the sequential reference
    kernels/reader_<class>.cpp   host loads, every exchange (semaphore handshake), compute turns
    kernels/compute_<class>.cpp  matmul_tiles / eltwise binary / fill tile routines of the MeshIR kernels
    kernels/writer_<class>.cpp   host stores
    kernels/mica_mesh.h, kernels/mica_dataflow.h   shared helpers
    plan.json                    the back end's own record of what it emitted (see :mod:`.plan`)

It renders the compiled program's MeshIR (never re-deriving the plan) against the tt-metal API named by
:data:`.api.TT_METAL_VERSION` and runs :func:`.validate.validate` on the files before writing them.

Modules: :mod:`.api` (pinned version, limits), :mod:`.plan` (core classes, CBs, semaphores, transfers,
kernel arguments), :mod:`.classify` (tile routines, whole-box check), :mod:`.stencil` (copies as data movement,
shifted-view stencils as reader gathers + tile passes + scatters), :mod:`.generic` (the reader's loop nests:
bit copies, gathers, scatters, and scalar loops for what is left, each named in ``plan.json`` ``generic`` with
its reason), :mod:`.cexpr` (rectangles as C++ and their Python evaluation), :mod:`.kernels`,
:mod:`.host`, :mod:`.validate`, ``include/`` (declarations of the API subset, each read from a tt-metal
header at a named commit, for ``g++ -fsyntax-only`` and the API-name test).

Data formats: f32 arrays become Float32 tiles, bf16 arrays Float16_b tiles (2048 B): the host stages them
through tt-metal's host ``bfloat16`` (the reference keeps bf16 bit patterns, :mod:`mica.codeprint.half`), the
generic path's scalar loops read each element as an f32 and round what they store, and the check allows
:data:`.api.CHECK_TOLERANCE` (the device rounds each step's partial tiles when packing, the reference every
update). f16 arrays become Float16 tiles, staged as their bits, the generic path converting them in integer
arithmetic (:data:`mica.codeprint.half.F16_BITS_C`: the RISC-V has no ``_Float16``). Integer arrays become
Int32 tiles (``i16``/``i8``/``u8`` held widened, each store wrapped as C converts), computed by the generic
path only, and checked exactly. The tile routines compute on one float format per program (f32 when it has f32
arrays, :func:`.classify.float_dtype_of`); tensors of another dtype live in circular buffers and DRAM pages of
their own tile size and are computed by the generic path. Semaphores past a core's eight are global semaphores (:class:`.plan.Sem`).

Runtime parameters (``runtime=``): ``host.cpp`` takes each value as an argument ``<name>=<value>``,
checks it against the declared range and passes it as the last runtime arg of every reader and compute
kernel, which read it as ``rp_<name>`` (:func:`.plan.runtime_arg`).

Multicasts from the core owning a sweep step's element (:func:`mica.lower.reads.step_owner_plan`: trisolv, LU,
Cholesky, gramschmidt) have a root ``floor(t / tile)`` (MeshIR ``Lin.div``): the reader computes it per step with
``mica_floord`` (:func:`.cexpr.lin_c`), so the sender and the receivers of each step follow the owner.

Execution model of the emitted program: per core, the reader, compute and writer kernels pass one turn
token per MeshIR op, so the core runs the MeshIR body in order, bulk-synchronously like the emulator;
exchanges use a ready/valid semaphore pair per communication op in three phases (receivers signal ready,
senders wait and write, receivers wait for valid), which never blocks a core before it has signalled
what others wait for.

Public API: :func:`emit`, :func:`render`.
"""

from __future__ import annotations

from pathlib import Path

from ..meshir.ir import distinct_exchange_names
from .host import render_host
from .kernels import render_kernels
from .plan import build_plan
from .validate import validate

INCLUDE_DIR = Path(__file__).parent / "include"


def render(compiled) -> dict[str, str]:
    """Every file of the Metalium output as {relative path: text} (validated). A phase loop (a loop around
    whole operators, :attr:`mica.meshir.ir.Loop.phase`) is a loop in every kernel around its operators'
    turns, as any MeshIR loop is."""
    mp = distinct_exchange_names(compiled.mesh_program)      # transfers and semaphores go by exchange name
    plan = build_plan(mp)
    files = render_kernels(plan, mp)
    files["host.cpp"] = render_host(plan, mp, compiled)
    files["plan.json"] = plan.to_json(mp) + "\n"
    validate(files, l1_bytes=plan.l1_bytes)
    return files


def emit(compiled, out: Path) -> list[Path]:
    """Writes the files of :func:`render` under ``out``; returns their paths."""
    files = render(compiled)
    paths = []
    for rel, text in sorted(files.items()):
        path = Path(out) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths.append(path)
    return paths
