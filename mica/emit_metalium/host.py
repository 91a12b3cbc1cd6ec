"""``host.cpp``: the host program that stages the inputs, runs the program on the device and checks it.

A unit mesh device (``MeshDevice::create_unit_mesh``), its command queue and a program; one ``CoreRangeSet``
for the work region (circular buffers and semaphores) and one per core class (kernels and their runtime
args); DRAM ``MeshBuffer`` objects holding every host load/store as per-core tile blocks (the host does the
staging: box of core (x, y) -> zero-padded 32x32 tiles of four 16x16 faces); ``EnqueueWriteMeshBuffer``,
the program run as a ``MeshWorkload`` (``EnqueueMeshWorkload``, ``Finish``), ``EnqueueReadMeshBuffer``;
then the program's sequential reference (the C :func:`mica.codeprint.program_c` prints, which the
emulator's differential tests compile too) on the same random inputs, and a comparison. The device is
closed at the end.

Public API: :func:`render_host`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from types import MappingProxyType

from ..affine.expr import INT_DTYPES
from ..errors import EmitError
from ..meshir.ir import HostLoad, HostStore, MeshProgram
from ..codeprint import program_c
from .api import CHECK_TOLERANCE, tile_bytes
from .classify import MAX_RANK, tile_grid
from .kernels import LAYOUT, header
from .plan import MetalPlan, dram_stream_arg, float_scalars, ident, scalar_arg

COORD = {None: 0, "x": 1, "y": 2, "kb": 3, "t": 0}


@dataclass(frozen=True)
class HostType:
    """How the host program holds one dtype: ``ref`` the C type of the reference's arrays (the storage type of
    :mod:`mica.codeprint.half`), ``staged`` the element type of the DRAM images (tt-metal's host ``bfloat16``
    for Float16_b tiles, as its programming examples stage bf16 buffers), ``zero`` and ``nan`` values of
    ``ref``, ``staged_zero`` the zero of ``staged``, and C conversions (``{}`` the operand): ``to_float`` / ``from_float`` between ``ref`` and f32,
    ``to_staged`` / ``from_staged`` between ``ref`` and ``staged`` (exact: a bf16 value is an f32 value)."""

    ref: str
    staged: str
    zero: str
    nan: str
    staged_zero: str
    to_float: str = "{}"
    from_float: str = "{}"
    to_staged: str = "{}"
    from_staged: str = "{}"


HOST_TYPES = MappingProxyType({
    "f32": HostType("float", "float", "0.0f", "NAN", "0.0f"),
    "bf16": HostType("uint16_t", "bfloat16", "(uint16_t)0", "(uint16_t)0x7fc0u", "bfloat16(0.0f)",  # 0x7fc0: a NaN
                     "reference::mica_bf16_to_f32({})", "reference::mica_f32_to_bf16({})",
                     "bfloat16(reference::mica_bf16_to_f32({}))", "reference::mica_f32_to_bf16((float)({}))"),
    # Int32 tiles hold the values themselves; an output starts at INT32_MIN (the marker of "never stored")
    # f16: the reference's arrays are _Float16 (as the emulator's); Float16 tiles are staged as their bits
    "f16": HostType("_Float16", "uint16_t", "(_Float16)0.0f", "(_Float16)NAN", "(uint16_t)0",
                    "(float)({})", "(_Float16)({})", "mica_f16_bits({})", "mica_f16_value({})"),
    "i32": HostType("int32_t", "int32_t", "0", "INT32_MIN", "0", "(float)({})"),
    # the narrower integers: the host's arrays in their own type, staged widened in Int32 tiles
    **{d: HostType(c, "int32_t", "0", lo, "0", "(float)({})", "{}", "(int32_t)({})", f"({c})({{}})")
       for d, c, lo in (("i16", "int16_t", "INT16_MIN"), ("i8", "int8_t", "INT8_MIN"), ("u8", "uint8_t", "UINT8_MAX"))},
})


def host_type(dtype: str) -> HostType:
    try:
        return HOST_TYPES[dtype]
    except KeyError:
        raise EmitError(f"the Metalium host program stages {', '.join(HOST_TYPES)} arrays, not {dtype}") from None

STAGING = """\
// One dimension of a per-core box: [tile * c, min(tile * c + tile, extent)) with c the core's x, y, its
// skewed block kb at step 0, or 0; a padded dimension always holds tile elements (zeros past extent).
// A window (span > 0) holds span elements from tile * c + offset (ghost zones); those outside
// [0, extent) are never read and stay zero.
// coord: 0 none, 1 x, 2 y, 3 kb; origin: the core holding block 0 along x / y (a box placed away from core 0)
struct BoxDim { int coord; int tile; int extent; bool padded; int offset; int span; int origin; };
static constexpr int MICA_BOX_RANK = 8;  // the highest rank staged (classify.MAX_RANK)
struct Box { int rank; BoxDim d[MICA_BOX_RANK]; int tile_rows; int tile_cols; int pages; };

// Element (r, c) of a box -> float index in its tile block (row-major tiles of four 16x16 faces).
static size_t tile_index(const Box& b, int r, int c) {
    const size_t tile = (size_t)(r / 32) * b.tile_cols + (c / 32);
    const int i = r % 32, j = c % 32;
    return tile * 1024 + (size_t)((i / 16) * 2 + (j / 16)) * 256 + (i % 16) * 16 + (j % 16);
}

static int box_lo(const BoxDim& d, int x, int y) {
    const int c = d.coord == 1 ? x - d.origin : d.coord == 2 ? y - d.origin : d.coord == 3 ? mica_kb(x, y) : 0;
    return d.coord == 0 ? 0 : d.tile * c + d.offset;
}

static int box_size(const BoxDim& d, int x, int y) {
    if (d.padded) return d.tile;
    if (d.span) return d.span;
    const int n = d.extent - box_lo(d, x, y);
    return n < 0 ? 0 : (n < d.tile ? n : d.tile);
}

// Elements allocated along a dimension on every core: a window's span, else the tile.
static int box_alloc(const BoxDim& d) { return d.span ? d.span : d.tile; }

// Copies core (x, y)'s box of the row-major array `a` (shape = the extents) into `tiles` (or back). The box is
// a matrix of rows x columns: a rank-1 box a column, a higher rank its leading dimensions flattened row-major
// (allocated sizes) by its last.
static void stage(std::vector<float>& a, const Box& b, int x, int y, float* tiles, bool to_tiles) {
    int count[MICA_BOX_RANK], lo[MICA_BOX_RANK], size[MICA_BOX_RANK], idx[MICA_BOX_RANK];
    size_t total = 1;
    for (int k = 0; k < b.rank; ++k) {
        count[k] = box_alloc(b.d[k]);
        lo[k] = box_lo(b.d[k], x, y);
        size[k] = box_size(b.d[k], x, y);
        total *= (size_t)count[k];
    }
    for (size_t e = 0; e < total; ++e) {
        size_t rest = e;
        for (int k = b.rank - 1; k >= 0; --k) {
            idx[k] = (int)(rest % (size_t)count[k]);
            rest /= (size_t)count[k];
        }
        bool inside = true, owned = true;
        size_t at = 0;
        int row = 0, col = 0;
        for (int k = 0; k < b.rank; ++k) {
            const BoxDim& d = b.d[k];
            const int g = lo[k] + idx[k];
            inside = inside && idx[k] < size[k] && 0 <= g && g < d.extent;
            at = at * (size_t)d.extent + (size_t)(g < 0 ? 0 : g);
            // a store takes the block the core owns, not its ghost zones (its neighbours' elements)
            owned = owned && (!d.span || (idx[k] >= -d.offset && idx[k] < -d.offset + d.tile));
            if (b.rank == 1 || k < b.rank - 1) row = row * count[k] + idx[k];
            else col = idx[k];
        }
        if (to_tiles) {
            tiles[tile_index(b, row, col)] = inside ? a[at] : 0.0f;
        } else if (inside && owned) {
            a[at] = tiles[tile_index(b, row, col)];
        }
    }
}
"""


assert f"MICA_BOX_RANK = {MAX_RANK};" in STAGING


#: The host's helper giving a float scalar argument's bits for a runtime arg.
#: The host's helpers staging f16 values as the bits of Float16 tiles.
F16_HOST = """\
// An f16 value's bits (a Float16 tile element) and back.
static uint16_t mica_f16_bits(_Float16 h) {
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
}
static _Float16 mica_f16_value(uint16_t u) {
    _Float16 h;
    std::memcpy(&h, &u, 2);
    return h;
}
"""

SCALAR_BITS = """\
// A float's bits, for a runtime arg (the kernel reads them back with mica_bits_f32).
static uint32_t mica_f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
"""


def stage_fn(plan: MetalPlan, dtype: str) -> str:
    """The staging function of arrays of ``dtype``: ``stage`` for the program's float dtype, ``stage_i32`` for
    its integer arrays (:func:`staging_c`)."""
    return "stage" if dtype == plan.dtype else f"stage_{dtype}"


def staging_c(dtype: str, name: str = "stage") -> str:
    """:data:`STAGING` for ``dtype``'s host types (the f32 text unchanged); under another ``name`` (a second
    dtype of the program) only its staging function, the helpers it shares being defined once already."""
    h = host_type(dtype)
    if h == HOST_TYPES["f32"]:
        return STAGING
    out = STAGING
    if name != "stage":
        out = out[out.index("// Copies core (x, y)'s box"):].replace("static void stage(", f"static void {name}(")
    for old, new in (("std::vector<float>& a", f"std::vector<{h.ref}>& a"), ("float* tiles", f"{h.staged}* tiles"),
                     ("inside ? a[at] : 0.0f", f"inside ? {h.to_staged.format('a[at]')} : {h.staged_zero}"),
                     ("a[at] = tiles[tile_index(b, row, col)]",
                      f"a[at] = {h.from_staged.format('tiles[tile_index(b, row, col)]')}"),
                     ("-> float index", "-> element index")):
        if old == "-> float index" and name != "stage":
            continue                    # (in the shared helpers)
        assert old in out, old
        out = out.replace(old, new)
    return out


def _skew_c(mp: MeshProgram) -> str:
    s = mp.skew
    if s is None:
        return "static int mica_kb(int, int) { return 0; }  // no skewed step in this program\n"
    if s.kind == "cannon":
        return f"static int mica_kb(int x, int y) {{ return (x + y) % {s.n}; }}  // Cannon skew at step 0\n"
    return (f"// Interleaved-ring skew at step 0: the block core (x, y) starts with.\n"
            f"static int mica_pos(int c) {{ return c % 2 == 0 ? c / 2 : {s.n - 1} - c / 2; }}\n"
            f"static int mica_kb(int x, int y) {{ return (mica_pos(x) + mica_pos(y)) % {s.n}; }}\n")


def _box_c(t) -> str:
    """The staging ``Box`` of region tensor ``t``'s per-core box (its dimensions, at most
    :data:`.classify.MAX_RANK`, and its tile grid)."""
    dims = list(t.box)
    ds = ", ".join(f"{{{COORD[d.coord]}, {d.tile}, {d.extent}, {'true' if d.padded else 'false'}, {d.offset}, {d.span}"
                   + (f", {d.origin}" if d.origin else "") + "}" for d in dims)   # origin 0 when left out
    if not dims:
        ds = "{0, 1, 1, false, 0, 0}"
    r, c = tile_grid(t)
    return f"Box{{{len(dims)}, {{{ds}}}, {r}, {c}, {r * c}}}"


def _range_c(r) -> str:
    return f"CoreRange(CoreCoord({r.x0}, {r.y0}), CoreCoord({r.x1 - 1}, {r.y1 - 1}))"


def render_host(plan: MetalPlan, mp: MeshProgram, compiled) -> str:
    program = compiled.program
    loads = [op for op, _ in mp.walk() if isinstance(op, HostLoad)]
    stores = [op for op, _ in mp.walk() if isinstance(op, HostStore)]
    L = _host_head(plan, mp, program)
    L += _cbs_and_semaphores(plan)
    L += _dram_buffers(plan, mp, loads + stores)
    L += _dram_streams(plan, mp, program)
    L += _kernels(plan)
    L += _scalar_values(mp, program)
    L += _runtime_args(plan)
    sources = compiled.pieces.sources() if compiled.pieces is not None else {}
    L += _staged_loads(plan, mp, program, loads, sources)
    L += _staged_streams(plan, mp, program)
    L += _run_and_stores(plan, mp, program, stores, sources)
    L += _check(program, mp.runtime, plan.dtype)
    return "\n".join(L)


def _host_head(plan: MetalPlan, mp: MeshProgram, program) -> list[str]:
    """The file's head (includes, the sequential reference, the skew and staging helpers) and the start of
    ``main``: the unit mesh device, its command queue, the program, the grid check, and the core ranges of
    the work region and classes."""
    ref = "\n".join(line for line in program_c(program).splitlines() if not line.startswith("#include"))
    dtypes = {a.dtype for a in program.arrays}
    L = [header("host.cpp: opens the device, builds the program (CBs, semaphores, kernels per core class, "
                "runtime args), stages the inputs, runs, and checks the outputs against the sequential "
                "reference.", plan),
         LAYOUT,
         "// Build against that tt-metal, e.g. as a tt_metal/programming_examples target; kernels/ must be",
         "// reachable from the working directory (CreateKernel takes paths relative to it).",
         "#include <cmath>", "#include <cstdint>", "#include <cstdio>", "#include <memory>", "#include <random>",
         "#include <utility>", "#include <vector>", "#include <tt-metalium/host_api.hpp>",
         "#include <tt-metalium/core_coord.hpp>", "#include <tt-metalium/distributed.hpp>",
         "#include <tt-metalium/mesh_buffer.hpp>", "#include <tt-metalium/mesh_command_queue.hpp>",
         "#include <tt-metalium/mesh_coord.hpp>", "#include <tt-metalium/mesh_device.hpp>",
         "#include <tt-metalium/mesh_workload.hpp>",
         *(["#include <cstdlib>", "#include <cstring>"] if mp.runtime or float_scalars(mp) or "f16" in dtypes
           else []),
         *(["#include <tt-metalium/bfloat16.hpp>"] if "bf16" in dtypes else []),
         *(["#include <tt-metalium/global_semaphore.hpp>"] if any(s.kind == "global" for s in plan.sems) else []),
         "", "using namespace tt;", "using namespace tt::tt_metal;", "",
         "namespace reference {", "// The program in its original order, on full row-major arrays.", ref,
         "}  // namespace reference", "", _skew_c(mp), *([F16_HOST] if "f16" in dtypes else []),
         staging_c(plan.dtype),
         *(staging_c(d, stage_fn(plan, d)) for d in sorted({a.dtype for a in program.arrays} - {plan.dtype})),
         *([SCALAR_BITS] if float_scalars(mp) else []),
         *(_runtime_values(mp) if mp.runtime else ["int main() {"]),
         "    // Device 0 as a 1x1 mesh: programs run as mesh workloads and buffers are mesh buffers.",
         "    std::shared_ptr<distributed::MeshDevice> mesh_device = distributed::MeshDevice::create_unit_mesh(0);",
         "    distributed::MeshCommandQueue& cq = mesh_device->mesh_command_queue();",
         "    Program program = CreateProgram();",
         "    const CoreCoord grid = mesh_device->compute_with_storage_grid_size();",
         f"    if (grid.x < {plan.work.x1} || grid.y < {plan.work.y1}) {{",
         f"        std::fprintf(stderr, \"this device's worker grid is too small for the {plan.work.x1}x{plan.work.y1} "
         f"program\\n\");",
         "        mesh_device->close();", "        return 2;", "    }", "",
         "    // Work region: every MeshIR tensor lives on all of it (CBs and semaphores).",
         f"    const CoreRangeSet work(std::vector<CoreRange>{{{_range_c(plan.work)}}});"]
    for cc in plan.classes:
        L.append(f"    // core class {cc.name}: kernel classes {', '.join(cc.kernel_classes) or '-'}; host loads "
                 f"{', '.join(cc.loads) or '-'}; host stores {', '.join(cc.stores) or '-'}")
        L.append(f"    const CoreRangeSet class_{cc.name}(std::vector<CoreRange>{{"
                 f"{', '.join(_range_c(r) for r in cc.ranges)}}});")
    return L


def _runtime_values(mp: MeshProgram) -> list[str]:
    """The start of ``main`` for a program with runtime parameters: each one's value from an argument
    ``<name>=<value>`` (default: the low end of its range), checked against its declared range; the values
    become the last runtime args of every reader and compute kernel (``rp_<name>``) and the reference's
    scalars."""
    names = ", ".join(f"{n}=<{lo}..{hi - 1}>" for n, lo, hi in mp.runtime)
    L = ["// Runtime parameter `name` from argument `arg` (\"name=value\"): 1 when arg sets it (value in *out),",
         "// 0 when arg names another, -1 (with a message) when the value is not an integer in [lo, hi).",
         "static int mica_runtime_arg(const char* arg, const char* name, long lo, long hi, int32_t* out) {",
         "    const size_t n = std::strlen(name);",
         "    if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return 0;",
         "    char* end = nullptr;",
         "    const long v = std::strtol(arg + n + 1, &end, 10);",
         "    if (end == arg + n + 1 || *end != '\\0' || v < lo || v >= hi) {",
         "        std::fprintf(stderr, \"runtime parameter %s: '%s' is not an integer in its declared range %ld <= %s < %ld\\n\",",
         "                     name, arg + n + 1, lo, name, hi);",
         "        return -1;",
         "    }",
         "    *out = (int32_t)v;",
         "    return 1;",
         "}",
         "",
         f"// Usage: host {' '.join(f'[{n}=<value>]' for n, _, _ in mp.runtime)} (runtime parameters {names};",
         "// the program was compiled for every value in those ranges).",
         "int main(int argc, char** argv) {"]
    for n, lo, hi in mp.runtime:
        L.append(f"    int32_t rp_{n} = {lo};  // runtime parameter {n}, {lo} <= {n} < {hi}")
    L += ["    for (int i = 1; i < argc; ++i) {",
          "        int found = 0;"]
    for n, lo, hi in mp.runtime:
        L.append(f"        if (found == 0) found = mica_runtime_arg(argv[i], \"{n}\", {lo}L, {hi}L, &rp_{n});")
    L += ["        if (found < 0) return 2;",
          "        if (found == 0) {",
          f"            std::fprintf(stderr, \"unknown argument '%s' (runtime parameters: {names})\\n\", argv[i]);",
          "            return 2;",
          "        }",
          "    }"]
    return L


def _cbs_and_semaphores(plan: MetalPlan) -> list[str]:
    """The circular buffers and semaphores, created on the whole work region."""
    L = ["", f"    // Circular buffers: {plan.cb_bytes} B per core."]
    for c in plan.cbs:
        what = {"tensor": f"tensor {c.tensor}", "landing": f"landing buffer of {c.tensor}", "token": "turn token",
                "scratch": "stencil scratch (a gathered view or a result)"}[c.kind]
        L.append(f"    // {c.name}: {what}, {c.pages} page(s) of {c.page_bytes} B")
        L.append(f"    CreateCircularBuffer(program, work, CircularBufferConfig({c.total_bytes}, "
                 f"{{{{tt::CBIndex::c_{c.index}, {c.data_format}}}}}).set_page_size(tt::CBIndex::c_{c.index}, "
                 f"{c.page_bytes}));")
    L += ["", "    // Semaphores: a ready counter and a valid flag per communication pattern (one for both where no core",
          "    // both sends and receives; ops of the same geometry share)."]
    for s in plan.sems:
        if s.kind == "global":      # past the eight a core has: a word of L1 at one address on every core
            L.append(f"    const GlobalSemaphore {s.name} = CreateGlobalSemaphore(mesh_device.get(), work, 0, "
                     f"BufferType::L1);  // {s.role} of {s.op}")
        else:
            L.append(f"    const uint32_t {s.name} = CreateSemaphore(program, work, 0);  // id {s.index}: {s.role} of "
                     f"{s.op}")
    return L


def _dram_buffers(plan: MetalPlan, mp: MeshProgram, ops: list) -> list[str]:
    """One interleaved DRAM mesh buffer per tensor the host loads or stores (``ops``), on one region."""
    tb = tile_bytes(plan.dtype)
    L = ["", "    // DRAM buffers: every host load / store as the tile blocks of its cores in row-major core order",
         "    // (a tensor loaded and stored uses one buffer), one tile per page, interleaved over the DRAM banks;",
         "    // on a unit mesh a replicated mesh buffer is one device buffer.",
         f"    const distributed::DeviceLocalBufferConfig dram_config{{.page_size = {tb}, "
         f".buffer_type = BufferType::DRAM}};"]
    for size in sorted({plan.tensor_cb(op.buffer).page_bytes for op in ops} - {tb}):   # another tile size
        L.append(f"    const distributed::DeviceLocalBufferConfig dram_config_{size}{{.page_size = {size}, "
                 f".buffer_type = BufferType::DRAM}};")
    seen: dict[str, object] = {}
    for op in ops:
        if op.buffer in seen:
            if seen[op.buffer] != op.region:
                raise EmitError(f"{mp.name}: {op.buffer} is loaded on {seen[op.buffer]} and stored from "
                                f"{op.region}; one DRAM staging buffer serves both only on one region")
            continue
        seen[op.buffer] = op.region
        t = mp.tensor(op.buffer)
        r = op.region
        pages = plan.tensor_cb(op.buffer).slot_pages * r.cores
        b = ident(op.buffer)
        size = plan.tensor_cb(op.buffer).page_bytes
        config = "dram_config" if size == tb else f"dram_config_{size}"
        L.append(f"    std::shared_ptr<distributed::MeshBuffer> dram_{b} = distributed::MeshBuffer::create("
                 f"distributed::ReplicatedBufferConfig{{.size = {pages * size}}}, {config}, mesh_device.get());  "
                 f"// {op.array} <-> {t.name} on {r}")
    return L


def _image_box(program, name: str) -> tuple[str, int]:
    """(the staging ``Box`` of the whole 2D array ``name``: one block of row-major 32x32 tiles, its pages)."""
    n0, n1 = program.array(name).shape
    r, c = -(-n0 // 32), -(-n1 // 32)
    return f"Box{{2, {{{{0, {n0}, {n0}, false, 0, 0}}, {{0, {n1}, {n1}, false, 0, 0}}}}, {r}, {c}, {r * c}}}", r * c


def _dram_streams(plan: MetalPlan, mp: MeshProgram, program) -> list[str]:
    """One interleaved DRAM mesh buffer per array streamed from device DRAM (``mp.dram``): the whole array as
    its row-major image of 32x32 tiles, one tile a page, which the readers read panel by panel every step."""
    if not mp.dram:
        return []
    tb = tile_bytes(plan.dtype)
    L = ["", "    // Arrays streamed from DRAM: the whole array as row-major 32x32 tiles (page = tile row * tile columns",
         "    // + tile column); every core's reader reads its panel's pages at each step."]
    for size in sorted({tile_bytes(program.array(a).dtype) for a in mp.dram} - {tb}):    # another tile size
        L.append(f"    const distributed::DeviceLocalBufferConfig dram_stream_config_{size}{{.page_size = {size}, "
                 f".buffer_type = BufferType::DRAM}};")
    for a in mp.dram:
        _, pages = _image_box(program, a)
        size = tile_bytes(program.array(a).dtype)
        config = "dram_config" if size == tb else f"dram_stream_config_{size}"
        L.append(f"    std::shared_ptr<distributed::MeshBuffer> {dram_stream_arg(a)} = distributed::MeshBuffer::create("
                 f"distributed::ReplicatedBufferConfig{{.size = {pages * size}}}, {config}, mesh_device.get());  "
                 f"// {a}, {pages} tiles")
    return L


def _staged_streams(plan: MetalPlan, mp: MeshProgram, program) -> list[str]:
    """Each array streamed from DRAM written to its buffer as its tile image (zero padding past its edges)."""
    L = []
    for a in mp.dram:
        box, pages = _image_box(program, a)
        dt = program.array(a).dtype
        h = host_type(dt)
        L += [f"    {{  // {a} lives in device DRAM: its tile image, read by the readers step by step",
              f"        const Box box = {box};",
              f"        std::vector<{h.staged}> staged({pages} * 1024, {h.staged_zero});",
              f"        {stage_fn(plan, dt)}(arr_{ident(a)}, box, 0, 0, staged.data(), true);",
              f"        distributed::EnqueueWriteMeshBuffer(cq, {dram_stream_arg(a)}, staged, true);",
              "    }"]
    return L


def _kernels(plan: MetalPlan) -> list[str]:
    """The reader, compute and writer kernels of every core class, with their compile-time args."""
    L = ["", "    // Kernels: reader / compute / writer per core class."]
    for cc in plan.classes:
        n = cc.name
        ct = plan.args(f"kernels/reader_{n}.cpp").compile
        L.append(f"    std::vector<uint32_t> reader_{n}_ct = {{{', '.join(ct)}}};")
        L.append(f"    KernelHandle reader_{n} = CreateKernel(program, \"kernels/reader_{n}.cpp\", class_{n}, "
                 f"DataMovementConfig{{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default, "
                 f".compile_args = reader_{n}_ct}});")
        L.append(f"    std::vector<uint32_t> compute_{n}_ct = {{{', '.join(plan.args(f'kernels/compute_{n}.cpp').compile)}}};")
        L.append(f"    KernelHandle compute_{n} = CreateKernel(program, \"kernels/compute_{n}.cpp\", class_{n}, "
                 f"ComputeConfig{{.math_fidelity = tt::tt_metal::MathFidelity::HiFi4, .fp32_dest_acc_en = true, "
                 f".math_approx_mode = false, .compile_args = compute_{n}_ct}});")
        L.append(f"    std::vector<uint32_t> writer_{n}_ct = {{{', '.join(plan.args(f'kernels/writer_{n}.cpp').compile)}}};")
        L.append(f"    KernelHandle writer_{n} = CreateKernel(program, \"kernels/writer_{n}.cpp\", class_{n}, "
                 f"DataMovementConfig{{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default, "
                 f".compile_args = writer_{n}_ct}});")
    return L


def _arg_value(name: str) -> str:
    """The host expression of runtime arg ``name`` for the core ``core``."""
    if name == "my_x":
        return "(uint32_t)core.x"
    if name == "my_y":
        return "(uint32_t)core.y"
    if name.startswith("noc_x") or name.startswith("noc_y"):
        return f"{name[:5]}[{name[5:]}]"
    if name.startswith("rp_"):
        return f"(uint32_t){name}"       # a runtime parameter's value (int32_t; the kernel casts it back)
    if name.startswith("sc_"):
        return f"mica_f32_bits({name})"  # a scalar argument's f32 bits (the kernel reads them back)
    if name.startswith("sem_"):
        return f"(uint32_t){name}.address()"  # a global semaphore's L1 address
    return f"(uint32_t){name}->address()"


def _scalar_values(mp: MeshProgram, program) -> list[str]:
    """The float scalar arguments' values (``sc_<name>``): drawn in [0.5, 1.5) from a generator of their own (so
    the inputs' draws do not change; a bf16 scalar rounded to bf16, the value the reference reads), passed to
    the readers as f32 bits and to the reference."""
    names = float_scalars(mp)
    if not names:
        return []
    dtypes = dict(program.scalars)
    L = ["", "    // Scalar arguments (random, fixed seed; the readers get their bits as runtime args).",
         "    std::mt19937 scalar_rng(1);", "    std::uniform_real_distribution<float> scalar_dist(0.5f, 1.5f);"]
    for n in names:
        draw = ("reference::mica_bf16_to_f32(reference::mica_f32_to_bf16(scalar_dist(scalar_rng)))"
                if dtypes.get(n) == "bf16" else "(float)(_Float16)scalar_dist(scalar_rng)" if dtypes.get(n) == "f16"
                else "scalar_dist(scalar_rng)")
        L.append(f"    const float {scalar_arg(n)} = {draw};  // {n} ({dtypes.get(n, 'f32')})")
    return L


def _runtime_args(plan: MetalPlan) -> list[str]:
    """The NoC coordinates of every logical column and row, then every kernel's runtime args, per core."""
    w, h = plan.mesh
    L = ["", "    // NoC coordinates of every logical column and row (multicast rectangles need them).",
         f"    std::vector<uint32_t> noc_x({w}), noc_y({h});",
         f"    for (uint32_t i = 0; i < {w}; ++i) "
         "noc_x[i] = mesh_device->worker_core_from_logical_core(CoreCoord(i, 0)).x;",
         f"    for (uint32_t j = 0; j < {h}; ++j) "
         "noc_y[j] = mesh_device->worker_core_from_logical_core(CoreCoord(0, j)).y;",
         "", "    // Runtime args, per core of each class."]
    for cc in plan.classes:
        n = cc.name
        L.append(f"    for (const CoreCoord& core : corerange_to_cores(class_{n})) {{")
        for kind in ("reader", "compute", "writer"):
            args = plan.args(f"kernels/{kind}_{n}.cpp").runtime
            L.append(f"        // {kind}_{n}: {len(args)} runtime args ({', '.join(args)})")
            values = ", ".join(_arg_value(a) for a in args)
            L.append(f"        SetRuntimeArgs(program, {kind}_{n}, core, {{{values}}});")
        L.append("    }")
    return L


def _piece(sources: dict, program, name: str, host: str, load: bool, h: HostType = HOST_TYPES["f32"]
           ) -> tuple[str, list[str], list[str]]:
    """How a host transfer reaches MeshIR array ``name``: (the host vector it stages, C lines before the
    staging, C lines after). A piece of a cut array (``sources``, :meth:`mica.affine.pieces.Pieces.sources`)
    is staged through ``part``, its slice of the program's array ``<host>_<array>`` copied out before a load
    and pasted back after a store; any other array is staged directly."""
    if name not in sources:
        return f"{host}_{ident(name)}", [], []
    a, d, lo, hi = sources[name]
    shape = list(program.array(a).shape) + [1] * (2 - len(program.array(a).shape))
    part = list(shape)
    part[d] = hi - lo
    off = [lo if k == d else 0 for k in (0, 1)]
    full = f"{host}_{ident(a)}[(size_t)(i + {off[0]}) * {shape[1]} + (j + {off[1]})]"
    mine = f"part[(size_t)i * {part[1]} + j]"
    loop = f"        for (int i = 0; i < {part[0]}; ++i) for (int j = 0; j < {part[1]}; ++j) "
    head = [f"        // piece {name}: rows/columns {lo}..{hi - 1} of {a} along dimension {d}",
            f"        std::vector<{h.ref}> part({part[0] * part[1]}, {h.zero if load else h.nan});"]
    if load:
        return "part", head + [loop + f"{mine} = {full};"], []
    return "part", head, [loop + f"{full} = {mine};"]


def _staged_loads(plan: MetalPlan, mp: MeshProgram, program, loads: list, sources: dict) -> list[str]:
    """The host arrays (random inputs) and, per host load, its cores' boxes staged as tiles and written to
    DRAM (a piece of a cut array from its slice of the program's array)."""
    L = ["", "    // Host arrays (random inputs, fixed seed) and the staged DRAM images.",
         "    std::mt19937 rng(0);", "    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);"]
    for a in program.arrays:
        n = prod(a.shape) if a.shape else 1
        h = host_type(a.dtype)
        init = f"for ({h.ref}& v : arr_{{0}}) v = {h.from_float.format('dist(rng)')};" if a.name in program.inputs else ""
        if a.dtype == "u8" and a.name in program.inputs:
            init = "for (uint8_t& v : arr_{0}) v = (uint8_t)(1 + rng() % 99u);"
        elif a.dtype in INT_DTYPES and a.name in program.inputs:
            # signed and never 0 (C leaves a division by zero undefined; the array may be a divisor)
            init = (f"for ({h.ref}& v : arr_{{0}}) {{{{ const int32_t m = 1 + (int32_t)(rng() % 99u); "
                    f"v = ({h.ref})(rng() % 2u ? m : -m); }}}}")
        L.append(f"    std::vector<{h.ref}> arr_{ident(a.name)}({n}, {h.zero});  {init.format(ident(a.name))}".rstrip())
    for op in loads:
        t = mp.tensor(op.buffer)
        h = host_type(t.dtype)
        r = op.region
        pages = plan.tensor_cb(op.buffer).slot_pages
        b = ident(op.buffer)
        vec, before, _ = _piece(sources, program, op.array, "arr", True, h)
        L += [f"    {{  // host_load {op.array} -> {op.buffer} on {r}", *before,
              f"        const Box box = {_box_c(t)};",
              f"        std::vector<{h.staged}> staged({pages * r.cores} * 1024, {h.staged_zero});",
              f"        for (int y = {r.y0}; y < {r.y1}; ++y)",
              f"            for (int x = {r.x0}; x < {r.x1}; ++x)",
              f"                {stage_fn(plan, t.dtype)}({vec}, box, x, y, staged.data() + "
              f"((size_t)((y - {r.y0}) * {r.x1 - r.x0} + (x - {r.x0})) * {pages}) * 1024, true);",
              f"        distributed::EnqueueWriteMeshBuffer(cq, dram_{b}, staged, true);  // blocking: staged is local",
              "    }"]
    return L


def _run_and_stores(plan: MetalPlan, mp: MeshProgram, program, stores: list, sources: dict) -> list[str]:
    """Running the program (a mesh workload of the one program on the whole unit mesh), then the device's
    arrays: outputs start as NaN, and each host store reads its DRAM buffer back and unstages its cores'
    boxes."""
    L = ["", "    // Run: the program as a workload on every device of the (1x1) mesh.",
         "    distributed::MeshWorkload workload;",
         "    workload.add_program(distributed::MeshCoordinateRange(mesh_device->shape()), std::move(program));",
         "    distributed::EnqueueMeshWorkload(cq, workload, false);", "    distributed::Finish(cq);", "",
         "    // Outputs back from DRAM."]
    L.append("    // (outputs start as NaN: an element the device never stores fails the comparison)")
    for a in program.arrays:
        h = host_type(a.dtype)
        if a.name in program.outputs:
            L.append(f"    std::vector<{h.ref}> dev_{ident(a.name)}(arr_{ident(a.name)}.size(), {h.nan});")
        else:
            L.append(f"    std::vector<{h.ref}> dev_{ident(a.name)} = arr_{ident(a.name)};")
    for op in stores:
        t = mp.tensor(op.buffer)
        h = host_type(t.dtype)
        r = op.region
        pages = plan.tensor_cb(op.buffer).slot_pages
        vec, before, after = _piece(sources, program, op.array, "dev", False, h)
        L += [f"    {{  // host_store {op.array} <- {op.buffer} from {r}", *before,
              f"        const Box box = {_box_c(t)};",
              f"        std::vector<{h.staged}> staged;",
              f"        distributed::EnqueueReadMeshBuffer(cq, staged, dram_{ident(op.buffer)}, true);",
              f"        for (int y = {r.y0}; y < {r.y1}; ++y)",
              f"            for (int x = {r.x0}; x < {r.x1}; ++x)",
              f"                {stage_fn(plan, t.dtype)}({vec}, box, x, y, staged.data() + "
              f"((size_t)((y - {r.y0}) * {r.x1 - r.x0} + (x - {r.x0})) * {pages}) * 1024, false);", *after, "    }"]
    return L


def _check(program, runtime=(), dtype: str = "f32") -> list[str]:
    """The sequential reference on the host arrays (at the run's values of the ``runtime`` parameters), the
    comparison of every output (within :data:`.api.CHECK_TOLERANCE` of ``dtype`` times the largest reference
    value), and the end of ``main``."""
    rt = {n for n, _, _ in runtime}
    if program.scalars:
        vals = ", ".join(f"(double)rp_{n}" if n in rt else f"(double){scalar_arg(n)}" for n, _ in program.scalars)
        scalars = f"    const double scalars[{len(program.scalars)}] = {{{vals}}};"
    else:
        scalars = "    const double scalars[1] = {0.0};"
    why = {"f32": "the FPU multiplies with 19-bit inputs",
           "bf16": "bf16 tiles round each step's partial sums when packed, the reference after every update",
           "f16": "f16 tiles round each step's partial sums when packed, the reference after every update"}[dtype]
    L = ["", "    // The reference: the original loop nests, in order, on the host.",
         f"    void* arrays[] = {{{', '.join(f'arr_{ident(a.name)}.data()' for a in program.arrays)}}};",
         scalars, "    reference::mica_program(arrays, scalars);", "",
         f"    // Compare ({why}: tolerance relative to the largest value).",
         "    int bad = 0;"]
    tol = "2e-2f" if dtype == "f32" else f"{CHECK_TOLERANCE[dtype]!r}f"
    for name in program.outputs:
        i = ident(name)
        h = host_type(program.array(name).dtype)
        odt = program.array(name).dtype            # an output of another float type: its own tolerance
        out_tol = tol if odt == dtype or odt not in CHECK_TOLERANCE else f"{CHECK_TOLERANCE[odt]!r}f"
        if odt in INT_DTYPES:       # integers: exactly
            L += ["    {",
                  "        size_t wrong = 0;",
                  f"        for (size_t k = 0; k < arr_{i}.size(); ++k) wrong += dev_{i}[k] != arr_{i}[k];",
                  f"        std::printf(\"{name}: %zu of %zu elements differ from the reference (exact) %s\\n\", wrong, "
                  f"arr_{i}.size(), wrong ? \"MISMATCH\" : \"ok\");",
                  "        bad += wrong ? 1 : 0;",
                  "    }"]
            continue
        ref, dev = h.to_float.format(f"arr_{i}[k]"), h.to_float.format(f"dev_{i}[k]")
        if h.ref == "float":
            scan = [f"        for (float v : arr_{i}) scale = std::fmax(scale, std::fabs(v));"]
        else:
            scan = [f"        for ({h.ref} e : arr_{i}) scale = std::fmax(scale, std::fabs({h.to_float.format('e')}));"]
        L += ["    {",
              "        float scale = 1.0f, worst = 0.0f;",
              "        size_t missing = 0;",
              *scan,
              f"        for (size_t k = 0; k < arr_{i}.size(); ++k) {{",
              f"            if (std::isnan({dev}) && !std::isnan({ref})) ++missing;",
              f"            else worst = std::fmax(worst, std::fabs({dev} - {ref}));",
              "        }",
              f"        const bool ok = missing == 0 && worst <= {out_tol} * scale;",
              f"        if (missing) std::printf(\"{name}: %zu element(s) never stored by the device\\n\", missing);",
              f"        std::printf(\"{name}: max |device - reference| = %g (scale %g) %s\\n\", worst, scale, ok ? \"ok\" : \"MISMATCH\");",
              "        bad += ok ? 0 : 1;",
              "    }"]
    L += ["", "    mesh_device->close();", "    return bad == 0 ? 0 : 1;", "}", ""]
    return L
