/* MICA mesh emulator: public interface.
 *
 * The emulator runs a lowered MeshIR program (an "op code", a flat array of int64 words) on a W x H mesh
 * of cores. Core (x, y): x = column (0 = west), y = row (0 = north). Every core has an SRAM arena of the
 * size the program allocates (never more than the target's per-core SRAM) and a router holding one route
 * (rx direction set, tx direction set) per colour. Data moves only as messages injected at a core's
 * router on a colour, following the route tables hop by hop over links between neighbours, and delivered
 * where a route's tx set contains RAMP.
 *
 * Execution is bulk-synchronous: ops run in order; an EXCHANGE op configures its routes, injects all of its
 * sends, routes every message to completion, checks that every declared receive got exactly one message
 * of the right length, then clears its routes. A COMPUTE op calls a generated kernel on every core of its
 * rectangles. Results are bit-identical for any thread count.
 *
 * Nothing here crashes the process on bad input: every fault returns a nonzero status and fills the
 * error buffer with a message naming the op, core, colour and direction.
 */
#ifndef MICA_RT_H
#define MICA_RT_H

#include <stdint.h>

/* cdef-begin: the text from here to cdef-end, comments removed, is also the cffi declaration of this API
 * (mica/native_sim/runtime.py reads it from this file): it holds declarations and integer #defines only. */

/* Directions, as bits of a route's rx/tx masks. RAMP is the link between router and core. */
#define MICA_RAMP  1
#define MICA_NORTH 2
#define MICA_EAST  4
#define MICA_SOUTH 8
#define MICA_WEST  16

/* Out-link index of a core, for the per-link statistics arrays (index = core * 4 + link). */
#define MICA_LINK_N 0
#define MICA_LINK_E 1
#define MICA_LINK_S 2
#define MICA_LINK_W 3

/* Opcodes (first word of each op). */
#define MICA_OP_LOOP     1
#define MICA_OP_EXCHANGE 2
#define MICA_OP_COMPUTE  3
#define MICA_OP_PREFETCH 4  /* an EXCHANGE timed as double-buffered (same words; see the timing model) */
#define MICA_OP_DRAM     5  /* every core of a rectangle reads its box of a DRAM array (see DRAM level) */
#define MICA_OP_DRAM_PREFETCH 6  /* a DRAM op timed as double-buffered (same words; see DRAM level) */
#define MICA_OP_LOOP_DOWN 7  /* a LOOP whose variable counts down, count-1 .. 0 (same words) */
#define MICA_MAX_DRAM   16  /* DRAM arrays one mesh can hold (slots of mica_dram_bind) */

#define MICA_MAX_VARS 4
#define MICA_MAX_RANK 6
#define MICA_MAX_TERMS 4  /* affine terms per rectangle bound */

/* Word layouts (all words int64):
 *
 * AFFINE (6 words): c0 c1 c2 c3 c4 d        value = floor((c0 + c1*v0 + c2*v1 + c3*v2 + c4*v3) / d)
 *                                           where v0..v3 are the loop variables (slots) in scope and
 *                                           d >= 1 (a step's block: the core holding block t / d).
 * BOUND (MICA_MAX_TERMS AFFINEs = 24 words) a lower bound (x0, y0) is the max of its terms, an upper
 *                                           bound (x1, y1) the min; a bound with fewer terms repeats one.
 * RECT (110 words): x0 x1 y0 y1 as BOUNDs, then xs, xp (an AFFINE), ys, yp (an AFFINE)
 *                                           cores in the half-open [x0,x1) x [y0,y1), clamped to the mesh,
 *                                           with x = xp (mod xs) and y = yp (mod ys); strides xs, ys >= 1
 *                                           (1 and 0 for a plain rectangle); the phases may move with the
 *                                           loop variables.
 * BOX (3 + 4*MICA_MAX_RANK = 27 words):
 *      offset elem rank  (axis tile extent origin) * MICA_MAX_RANK
 *   A buffer in every core's arena at byte `offset`, holding a row-major packed box of a tensor whose
 *   element size is `elem` bytes. For dim d: coord = 0 (axis 0), x (axis 1), y (axis 2), v0..v3 (axis 3..6);
 *   lo = tile * (coord - origin), ext = clamp(extent - lo, 0, tile) (origin: the x or y of the core that
 *   holds block 0, for an operator placed away from core (0, 0); 0 on other axes). For axis 0 (no coordinate) tile <= extent: the
 *   box holds the leading `tile` elements of that dim (all of it when tile == extent).
 *   The box holds prod(ext) elements; it is empty when any ext is 0. Unused dims (d >= rank) are ignored.
 *
 * LOOP:     1 slot count body_words  <body: body_words words>
 *           Runs body `count` times with v[slot] = 0 .. count-1.
 * EXCHANGE: 2 op_id n_routes n_sends n_recvs
 *           then n_routes ROUTEs:  colour rx tx RECT                       (95 words)
 *           then n_sends  SENDs:   colour max_hops RECT BOX                (113 words)
 *           then n_recvs  RECVs:   colour RECT BOX                         (112 words)
 *   ROUTE sets router (x,y).colour = (rx, tx) for every core in RECT (later routes of the same op overwrite
 *   earlier ones). Every core in a SEND's RECT whose BOX is non-empty injects one message: the whole box,
 *   on `colour`, at its own router (entering from RAMP). Every core in a RECV's RECT whose BOX is non-empty
 *   expects exactly one message on `colour`, delivered into that box; the message length must equal the
 *   box size in bytes. A message that travels more than `max_hops` links is an error, and so is one that
 *   reaches a router whose rx lacks its incoming direction, leaves the mesh, reaches a router with an empty
 *   tx set (it would be dropped), or visits a core twice (a route cycle or two merging branches).
 *   At the end of the op every route it set is cleared (rx = tx = 0).
 * COMPUTE:  3 op_id n_entries then n_entries × (kernel_index RECT)           (93 words each)
 *           Calls kernels[kernel_index](arena, x, y, v, scalars) for every core in RECT.
 * DRAM:     5 op_id slot RECT BOX                                             (122 words)
 *           Every core in RECT whose BOX is non-empty copies its box of DRAM array `slot` (the row-major
 *           array of the box's extents, bound with mica_dram_bind) into its arena at the box's offset.
 *           Op code 6 (DRAM_PREFETCH): the same words, timed as issued when each core started its last
 *           COMPUTE of the running loop (double buffering; see DRAM level).
 */

typedef void (*mica_kernel_fn)(uint8_t *arena, int64_t x, int64_t y, const int64_t *v,
                               const double *scalars);

typedef struct mica_mesh mica_mesh;

/* Creates a mesh. `sram_bytes` is the per-core limit, `n_colours` the router's colour count.
 * Returns NULL and fills err on failure. */
mica_mesh *mica_mesh_new(int32_t width, int32_t height, int32_t n_colours, int64_t sram_bytes,
                         char *err, int32_t errlen);
void mica_mesh_free(mica_mesh *m);

/* Declares that every core in [x0,x1) x [y0,y1) needs an arena of `bytes` (a later call for the same
 * core overrides). Fails if bytes exceeds the SRAM limit. Host memory is allocated lazily by
 * mica_mesh_commit: cores with no arena cost nothing. */
int32_t mica_mesh_reserve(mica_mesh *m, int32_t x0, int32_t x1, int32_t y0, int32_t y1, int64_t bytes,
                          char *err, int32_t errlen);
/* Allocates (zeroed) every reserved arena. */
int32_t mica_mesh_commit(mica_mesh *m, char *err, int32_t errlen);
/* Bytes mica_mesh_commit will allocate for the arenas reserved so far (0 if none). */
int64_t mica_mesh_pool_bytes(const mica_mesh *m);
/* Before commit: back the arenas with the file open as `fd` (read-write, empty; the caller keeps it and
 * may close it once committed) instead of host memory: a shared mapping the kernel pages out to the file
 * under memory pressure, for meshes whose arenas together exceed the host's memory. -1: host memory. */
int32_t mica_mesh_set_spill(mica_mesh *m, int32_t fd, char *err, int32_t errlen);
/* Whether the committed arenas are backed by a spill file. */
int32_t mica_mesh_spilled(const mica_mesh *m);
/* Bytes of host memory the mesh holds: per-core bookkeeping, the arenas (as reserved, not the SRAM
 * size), the route planes of the colours used so far and the recorded trace, if any (scratch of a running
 * mica_run not included). */
int64_t mica_mesh_host_bytes(const mica_mesh *m);

/* Copies a row-major host array of shape box.extent[0..rank) to (dir = 0) or from (dir = 1) the BOX
 * buffer of every core in RECT (evaluated with all loop variables = 0). Cores whose box is empty are
 * skipped. `box` points at a BOX (19 words), `rect` at a RECT (92 words). */
int32_t mica_host_copy(mica_mesh *m, int32_t dir, void *host, const int64_t *box, const int64_t *rect,
                       char *err, int32_t errlen);

/* Loads into every core of RECT (all loop variables 0), row-major over its member cores, a buffer at
 * arena byte `offset` of counts[0..rank) elements of `elem` bytes (row-major), taken from the row-major
 * host array of shape[0..rank) from global index origins[cell * rank + d] on (origins may be negative
 * or past the array: the elements outside it are zero). `n_cells` must be the number of member cores.
 * For buffers that are not a plain block of the array (ring tiles of a skewed step, windows). */
int32_t mica_host_gather(mica_mesh *m, const void *host, int64_t elem, int32_t rank, const int64_t *shape,
                         const int64_t *counts, int64_t offset, const int64_t *rect, const int64_t *origins,
                         int64_t n_cells, char *err, int32_t errlen);

/* Threads of the host copies above when they move 4 MB or more (default 1; the result is the same). */
void mica_set_host_threads(mica_mesh *m, int32_t n);

/* Runs an op code with `n_threads` threads (>= 1). `kernels` holds the kernel table, `scalars` the
 * program's scalar arguments. Returns 0 on success, nonzero with a message in err on a fault. */
int32_t mica_run(mica_mesh *m, const int64_t *code, int64_t n_words, mica_kernel_fn *kernels,
                 int32_t n_kernels, const double *scalars, int32_t n_threads, char *err, int32_t errlen);

/* Progress of the mica_run in flight on `m` (safe to call from another thread while it runs): the
 * EXCHANGE and COMPUTE ops executed so far and the number it will execute (loops multiplied out). Both
 * stay at their final values after the run returns. */
void mica_progress(const mica_mesh *m, int64_t *done, int64_t *total);

/* Statistics, accumulated over every run since mica_mesh_new (or mica_stats_reset). Arrays are owned by
 * the mesh: per link, index core*4 + MICA_LINK_*, core = y*width + x; per core, index core. */
typedef struct {
    uint64_t messages;     /* messages injected */
    uint64_t deliveries;   /* messages delivered to a core (a multicast delivers several) */
    uint64_t link_bytes;   /* sum of bytes over all links (a message crossing 3 links counts 3 times) */
    uint64_t link_messages;
    uint64_t max_hops;     /* the longest path any message took, in links */
    uint64_t exchanges;    /* EXCHANGE ops executed (one whose rectangles are all empty, e.g. guarded out,
                              does not count) */
    uint64_t computes;     /* kernel calls */
    uint64_t arena_bytes;  /* total bytes allocated for arenas */
    uint64_t arena_max;    /* largest single arena */
    uint64_t dram_bytes;   /* bytes the DRAM ops read from DRAM arrays into arenas */
} mica_totals;

void mica_stats(const mica_mesh *m, mica_totals *out);
const uint64_t *mica_link_bytes(const mica_mesh *m);     /* [W*H*4] */
const uint64_t *mica_link_messages(const mica_mesh *m);  /* [W*H*4] */
const uint64_t *mica_core_bytes_sent(const mica_mesh *m);  /* [W*H] */
const uint64_t *mica_core_bytes_recv(const mica_mesh *m);  /* [W*H] */
const int64_t *mica_core_arena_bytes(const mica_mesh *m);   /* [W*H] */
void mica_stats_reset(mica_mesh *m);

/* ---------------------------------------------------------------------------------------------------
 * Timing model
 *
 * Every core keeps a clock in modelled cycles (double). A COMPUTE call advances the core's clock by the
 * cycles its kernel's work function reports for that call (the instances the kernel runs at (x, y, v),
 * weighted by the target's cycles per instance); without a work table compute costs nothing.
 * In an EXCHANGE every message departs at its sender's clock. Its head crosses each link in
 * `hop_latency` cycles and the whole message occupies each link for bytes / link_bytes_per_cycle cycles;
 * a link still busy with an earlier message (of this or an earlier exchange) delays the head until it is
 * free, links serving messages in the order their heads arrive (ties: sender core, then send entry). A
 * receive completes at max(tail arrival, receiver's clock + bytes / bandwidth); a sender is busy until its
 * message has left its router. A core's ramp (the port between it and its router) carries bytes at link
 * bandwidth for all its streams of the exchange together: a receiver is busy until the earliest head of
 * the streams it takes in could drain (tail arrival - bytes / bandwidth) plus the sum of their bytes /
 * bandwidth, a sender until its start plus the sum of its messages' bytes / bandwidth (ramp
 * serialisation, as the wavelet-level mode shows flit by flit). A core's clock after the exchange is the
 * latest of these; the part of the
 * wait not covered by its longest transfer is idle time. Routers forward in hardware: no op-code route
 * passes a message through a core's processor, so no software relay cost arises.
 * A PREFETCH op is an exchange of a double-buffered program (payloads copied exactly as by EXCHANGE): a
 * core that has already computed in the same run of the innermost enclosing loop (or, outside loops, of
 * the program) sends and takes in its messages from the clock at the start of that compute (the exchange for step t+1 is issued when step t's
 * compute starts, into a second buffer), and the wait moves to its next COMPUTE: a compute starts at the
 * latest of its clock and its pending completions; of that wait, up to the longest transfer is
 * communication and the rest idle. Elsewhere (a loop's first compute not yet run) it is timed as EXCHANGE.
 * The timing results are bit-identical for any thread count.
 * ------------------------------------------------------------------------------------------------- */

/* Cycles the kernel of the same table index spends at core (x, y) with loop values v and the run's scalar
 * arguments (the values of runtime parameters bound its instances). */
typedef double (*mica_work_fn)(int64_t x, int64_t y, const int64_t *v, const double *scalars);

/* Sets the link model: hop_latency >= 0 cycles per hop, link_bytes_per_cycle > 0. Defaults: 1 and 4. */
int32_t mica_set_timing(mica_mesh *m, double hop_latency, double link_bytes_per_cycle, char *err,
                        int32_t errlen);
/* ---------------------------------------------------------------------------------------------------
 * DRAM level (rt_dram.c): device memory behind the grid (Tenstorrent), off unless mica_set_dram is called
 *
 * A DRAM array is a host buffer of the caller's (it stays valid while mica_run uses it) bound to a slot;
 * the mesh holds only the pointer, so host memory stays what the program allocates. A DRAM op reads each
 * of its cores' boxes from it; every reading core's clock advances by
 *     latency + bytes / min(core_bytes_per_cycle, bytes_per_cycle / n)
 * with n the cores reading in that op (the chip's DRAM bandwidth shared by them), counted as
 * communication; the bytes are counted in mica_totals.dram_bytes. A core's reads run one after another
 * (one reader per core): a read starts when the core issues it and its previous read is done. A DRAM op is
 * issued at the core's clock (the core waits for it); a DRAM_PREFETCH op at the start of the core's last
 * COMPUTE in the running loop (when there was one: double buffering), and the core waits for its data
 * only when it next reads its clock (its next COMPUTE or exchange), as for a prefetched exchange. A box that reaches past the core's arena
 * or past the bound array is an error naming the op, core and slot.
 * ------------------------------------------------------------------------------------------------- */

/* capacity > 0 bytes of DRAM, bytes_per_cycle > 0 (the chip's), core_bytes_per_cycle > 0 (one core's
 * reader), latency >= 0 cycles. */
int32_t mica_set_dram(mica_mesh *m, int64_t capacity, double bytes_per_cycle, double core_bytes_per_cycle,
                      double latency, char *err, int32_t errlen);
/* Binds the `bytes` bytes at data to DRAM slot 0..MICA_MAX_DRAM-1 (NULL, 0 unbinds it); the arrays bound
 * at once must fit the capacity (an error names the slot and the bytes). */
int32_t mica_dram_bind(mica_mesh *m, int32_t slot, const void *data, int64_t bytes, char *err, int32_t errlen);

/* Work functions for kernel table entries 0..n_work-1 (NULL entries cost nothing). The table must stay
 * valid while mica_run uses it; pass NULL, 0 to clear. */
void mica_set_work(mica_mesh *m, mica_work_fn *work, int32_t n_work);

/* ---------------------------------------------------------------------------------------------------
 * Wavelet-level fabric mode (opt-in; rt_wavelet.c)
 *
 * With the mode on, every EXCHANGE (and PREFETCH) is timed by a cycle-stepped simulation of the messages
 * it actually sends, independent of the link-reservation model above: each message is cut into flits of
 * link_bytes_per_cycle bytes (a 32-bit wavelet on the WSE) that move through per-router, per-input-port,
 * per-colour FIFO queues of `queue_depth` flits along the configured routes. A link (per direction) and a
 * ramp (per direction, core <-> router) carry one flit per cycle; a multicast router replicates a flit to
 * every output of its colour's tx set in the same cycle and holds it while any output is busy or its
 * downstream queue is full (back-pressure, which can hold a whole path); a flit is ready at the next
 * router ceil(hop_latency) cycles (at least 1) after it crossed a link, and `ramp_latency` cycles after it
 * crossed a ramp. A sender starts at its exchange start (as above), a receiver takes one flit per cycle
 * per receive from its own start on, so a late receiver fills its queue and stalls the stream. Arrival
 * (one cycle after the last flit was taken) and sender completion (one cycle after the last flit left
 * the source router) replace the link model's figures; core clocks, compute, PREFETCH overlap and the
 * communication / idle split are as described above. Cycles are whole: start clocks round up. The
 * routes are those of the op code, so data still moves only between neighbours over configured routes.
 * Memory: ~72 bytes per core while on, plus per exchange a record per queue and message it uses.
 * ------------------------------------------------------------------------------------------------- */

/* Switches the mode on (on != 0, with the ramp latency in whole cycles >= 0 and the queue depth in flits,
 * 1..4096) or off (freeing its state). Switching on keeps earlier statistics of the mode. */
int32_t mica_set_wavelet(mica_mesh *m, int32_t on, double ramp_latency, int32_t queue_depth, char *err,
                         int32_t errlen);

typedef struct {
    uint64_t exchanges;          /* exchanges timed at wavelet level */
    uint64_t messages;           /* messages simulated */
    uint64_t flits;              /* flits injected */
    uint64_t wavelet_hops;       /* flit crossings of links between routers (a multicast counts each) */
    uint64_t steps;              /* cycles stepped (cycles in which nothing could move are skipped) */
    uint64_t span_cycles;        /* sum over exchanges of first injection to last move, in cycles */
    uint64_t stall_contention;   /* cycles a ready flit waited for a link another flit took */
    uint64_t stall_backpressure; /* cycles a ready flit waited for room in the next router's queue */
    uint64_t stall_receiver;     /* cycles a ready flit waited for room in a receiving core's queue */
} mica_wave_totals;

/* Totals of the mode since it was switched on (or mica_stats_reset); zeros while it is off. */
void mica_wave_stats(const mica_mesh *m, mica_wave_totals *out);
/* Per out-link [W*H*4] (index core*4 + MICA_LINK_*): flits that crossed it and the cycles a ready flit
 * stalled on it (contention or back-pressure). NULL while the mode is off. */
const uint64_t *mica_wave_link_flits(const mica_mesh *m);
const uint64_t *mica_wave_link_stalls(const mica_mesh *m);

/* ---------------------------------------------------------------------------------------------------
 * Prefetch hint (performance only)
 *
 * A kernel call finds its core's arena cold in the host's caches: the emulator sweeps every arena in
 * turn. A kernel module may export `void mica_prefetch_hint(const uint8_t *next, int64_t bytes)`; the
 * emulator then calls it on the thread about to run a kernel, just before the call, with the arena (and
 * its size) of the core that thread runs next in the same phase, or NULL and 0 when there is none, so
 * that the kernel can pull that arena towards the cache while it computes. It must change nothing but
 * timing on the host.
 * ------------------------------------------------------------------------------------------------- */

typedef void (*mica_prefetch_fn)(const uint8_t *next, int64_t bytes);

/* The kernel module's prefetch hint (NULL: none); must stay valid while mica_run uses it. */
void mica_set_prefetch(mica_mesh *m, mica_prefetch_fn hint);

typedef struct {
    double cycles;                /* the latest core's clock */
    uint64_t contended_messages;  /* messages that shared a link with another message of their exchange */
    uint64_t timed_messages;      /* messages timed */
} mica_timing_totals;

void mica_timing(const mica_mesh *m, mica_timing_totals *out);
/* Copies one per-core figure into out[W*H] (index y*W + x): the core's clock (modelled cycles), or the
 * cycles it spent computing, sending/receiving, or waiting for data (they sum to its clock). */
enum { MICA_T_CLOCK = 0, MICA_T_COMPUTE = 1, MICA_T_COMM = 2, MICA_T_IDLE = 3 };
void mica_core_timing(const mica_mesh *m, int32_t which, double *out);

/* ---------------------------------------------------------------------------------------------------
 * Trace (opt-in): per-core timelines
 *
 * Once mica_trace_start has been called, every advance of the clock of a core of the traced rectangle
 * is recorded as one event on that core, in order: a COMPUTE call that costs cycles (from the clock
 * before the call to the clock after it), and the wait an exchange added when it was applied to the
 * core's clock (x_commit: from the clock before to the exchange's completion on that core; `comm` is
 * the part counted as communication, the rest idle). Timestamps are the clocks of the timing model,
 * so on each core the events follow each other without gaps or overlap, starting where the clock stood
 * when tracing started, and the last one ends at the core's clock; the sums of their durations are the
 * core's compute and communication + idle cycles. A compute that costs no cycles, and a prefetched
 * exchange hidden entirely behind compute, advance nothing and record nothing. A core records at most
 * `max_events` events; later ones are counted as dropped. Memory: nothing while tracing is off; when on,
 * a small record per traced core plus 32 bytes per recorded event (each core's buffer grows by
 * doubling). mica_stats_reset clears the recorded events; a failed op records nothing.
 * ------------------------------------------------------------------------------------------------- */

typedef struct {
    double start, end;  /* modelled cycles on the core's clock */
    double comm;        /* an exchange: cycles of [start, end) counted as communication; a compute: 0 */
    int32_t op;         /* op_id of the COMPUTE or EXCHANGE / PREFETCH op */
    int32_t kernel;     /* a compute: its kernel table index; else MICA_EV_EXCHANGE or MICA_EV_PREFETCH */
} mica_event;

enum { MICA_EV_EXCHANGE = -1, MICA_EV_PREFETCH = -2 };

/* Starts recording the cores of [x0,x1) x [y0,y1) (clamped to the mesh), at most max_events (>= 1)
 * each, dropping what an earlier call recorded. Fails on an empty rectangle or out of host memory. */
int32_t mica_trace_start(mica_mesh *m, int32_t x0, int32_t x1, int32_t y0, int32_t y1, int64_t max_events,
                         char *err, int32_t errlen);
/* Stops recording and frees the recorded events (idempotent). */
void mica_trace_stop(mica_mesh *m);
/* The traced rectangle (x0, x1, y0, y1 in rect[4]) and its number of cores, 0 when tracing is off; with
 * non-NULL arrays of that many entries, each traced core's recorded and dropped event counts (row-major
 * over the rectangle). */
int64_t mica_trace_counts(const mica_mesh *m, int32_t *rect, int64_t *counts, int64_t *dropped);
/* Copies every recorded event, core after core (row-major over the rectangle), into out (as many as the
 * counts add up to). */
void mica_trace_copy(const mica_mesh *m, mica_event *out);

/* ---------------------------------------------------------------------------------------------------
 * Kernel module
 *
 * The generated C that mica_run's kernel table comes from (mica/emit_c) is a shared library exporting the
 * functions below; the emulator never calls them itself: its loader (mica/native_sim/runtime.py) builds
 * the tables it passes to mica_run, mica_set_work and mica_set_prefetch from them.
 * ------------------------------------------------------------------------------------------------- */

/* The number of kernels and kernel i (NULL when i is out of range). */
int32_t mica_kernel_count(void);
mica_kernel_fn mica_kernel_get(int32_t i);
/* Optional: the work function of kernel i (timing model). */
mica_work_fn mica_work_get(int32_t i);
/* Optional: the prefetch hint (see above). */
void mica_prefetch_hint(const uint8_t *next, int64_t bytes);

/* cdef-end */

#endif
