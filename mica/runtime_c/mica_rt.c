/* MICA mesh emulator: implementation of mica_rt.h.
 *
 * Layout of the host state
 *   - Per-core bookkeeping arrays (arena size/offset, traffic statistics). These are the only costs of a
 *     core that reserves nothing.
 *   - Route tables ((rx, tx) bytes) and the receive index of the running exchange, stored as one plane of
 *     n_cores entries per colour, allocated when an exchange first uses the colour.
 *   - One pooled, zeroed allocation holding every reserved arena (64-byte aligned, so that neighbouring
 *     arenas never share a cache line), made by mica_mesh_commit.
 *
 * Execution
 *   mica_run validates the whole op code first (a malformed program never runs partially), then
 *   interprets it on the calling thread. Each op is executed in phases; the work of a phase is split into
 *   chunks (CHUNKS_PER_THREAD per thread): bands of the op's bounding box in row-major order, so every
 *   core belongs to exactly one chunk within a phase. Each chunk has its own context (counters, traffic
 *   log, fault); threads claim chunks dynamically and the calling thread waits for the phase's chunks
 *   to be done, not for every thread to show up (a thread the OS delays holds up at most one chunk). The
 *   chunking depends only on the thread count given, and which thread runs a chunk changes nothing.
 *   Small ops run on the calling thread alone; exchanges with ordered copies use fewer, taller bands.
 *
 *   EXCHANGE   A  setup:  set routes, evaluate and bounds-check every send/receive box, mark expected
 *                         receives (owner thread of the receiving core)
 *              B  route:  every sender injects its message and walks the multicast tree hop by hop,
 *                         checking the route tables; deliveries are counted per receive and the sender
 *                         recorded; traffic is logged per thread (not yet added to the statistics)
 *              C  check:  only when the delivery count disagrees with the expected count: find the
 *                         receive that got no message or more than one
 *              D  finish: on success copy payloads (owner thread of the receiving core) and replay the
 *                         traffic logs into the statistics (each chunk the counters of its own cores;
 *                         entries of other bands' cores after the phase, serially); always clear the
 *                         op's routes.
 *              Sends whose source bytes may be overwritten by a receive of the same op on the same core
 *              are copied once, in an order where every reader takes them before they are overwritten
 *              (a cycle, or a reader in another band, keeps the payload aside first: "Payload copies"),
 *              so every message carries the bytes its box held at the start of the exchange.
 *   COMPUTE    arena coverage is checked in O(1) per rectangle with a prefix sum, then kernels run;
 *              before each call the kernel module's prefetch hint (if any) learns the next arena.
 *   Host copies of 4 MB or more are split by rows over the host threads (mica_set_host_threads).
 *
 * Timing model (mica_rt.h)
 *   Each core has a mica_core_t (clock, compute / communication / idle cycles, and the pending result of
 *   its last exchange, applied by x_commit when its clock is next read). A COMPUTE adds the kernel's work
 *   function to the clock. In an EXCHANGE, phase A opens the scratch of every sender and receiver; phase
 *   B times each message while routing it (departure = sender's clock; a link is reserved by the first
 *   message of the op that crosses it, from the link's busy-until; arrival recorded per receive); if a
 *   link got a second message of the op, retime_shared re-times every message on a shared link serially,
 *   in a fixed order (discrete events by head arrival, ties by sender core and send entry), so results
 *   do not depend on the thread count; phase D completes the receivers. A failed op undoes its link
 *   reservations and drops its scratch: the clocks are as before it.
 *
 * Determinism
 *   Every fault has a key (phase, core index, entry index) and the reported fault is the one with the
 *   smallest key; a thread skips only work whose key is larger than the best fault seen so far, so the
 *   smallest one is always found, whatever the thread count and timing. A failing op changes neither
 *   arena contents nor statistics (its routes are cleared), so results, statistics and messages are
 *   bit-identical for any thread count, also after a fault.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE, MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include "mica_rt.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------------
 * Word layout and limits
 * ------------------------------------------------------------------------------------------------- */

#define W_AFFINE (1 + MICA_MAX_VARS)
#define W_BOUND (MICA_MAX_TERMS * W_AFFINE)
#define W_RECT (4 * W_BOUND + 2 + 2 * W_AFFINE) /* four bounds, x stride, x phase, y stride, y phase */
#define W_BOX (3 + 4 * MICA_MAX_RANK)
#define W_ROUTE (3 + W_RECT)
#define W_SEND (2 + W_RECT + W_BOX)
#define W_RECV (1 + W_RECT + W_BOX)
#define W_CENTRY (1 + W_RECT)
#define W_LOOP_HEAD 4
#define W_EXCH_HEAD 5
#define W_COMP_HEAD 3

#define N_AXES (3 + MICA_MAX_VARS)        /* whole, x, y, v0..v3 */
#define ARENA_ALIGN 64                    /* arenas start on their own cache line */
#define SMALL_OP_CELLS 1024               /* ops touching fewer cells run on one thread */
#define MAX_OP_ENTRIES (INT64_C(1) << 22) /* per entry kind of one op; keeps fault keys in 24 bits */
#define BOX_LIMIT (INT64_C(1) << 48)      /* box offsets and sizes beyond this are malformed */
#define HOST_LIMIT (INT64_C(1) << 62)     /* host array size limit for mica_host_copy */
#define MAX_COLOURS 4096
#define MAX_THREADS 256
#define MSG_LEN 256
#define PREFIX_LEN 128

#define NOT_EXPECTED UINT32_MAX           /* receive-state value of a cell whose box is empty */
#define NO_CELL (-1)                      /* end of a reader list */
#define NO_FAULT UINT64_MAX

enum { PH_SETUP = 1, PH_ROUTE = 2, PH_CHECK = 3, PH_FINISH = 4, PH_COMPUTE = 5 };

/* Phase-D state of a receive cell (run_t.recv_state): see "Payload copies". */
enum { COPY_PENDING = 0, COPY_BUSY = 1, COPY_DONE = 2 };
/* Frame of copy_ordered: receive cell, its entry and core (x, y), the position in the list of sends
 * that receive may overwrite (run_t.clobbers) being checked at that core, and the cursor in that
 * payload's reader list (READERS_UNREAD before the list is read). */
enum { F_CELL, F_RECV, F_X, F_Y, F_CLOBBER, F_READER, F_WORDS };
#define READERS_UNREAD (-2)

/* Traffic-log entry kinds (low 3 bits; the value is in the upper bits). 0..3 are MICA_LINK_*. */
enum { LOG_RECV = 4, LOG_SENT = 5, LOG_BYTES = 6 };

/* ---------------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void set_err(char *err, int32_t errlen, const char *fmt,
                                                          ...) {
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errlen, fmt, ap);
    va_end(ap);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t clamp64(int64_t a, int64_t lo, int64_t hi) { return a < lo ? lo : (a > hi ? hi : a); }

static int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
    return r;
}

/* Grows *p (an array of elsz-byte elements with capacity *cap) to hold at least `need` elements. */
static bool grow(void **p, size_t *cap, size_t need, size_t elsz) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elsz);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static const char *dir_name(int d) {
    switch (d) {
    case MICA_RAMP: return "RAMP";
    case MICA_NORTH: return "NORTH";
    case MICA_EAST: return "EAST";
    case MICA_SOUTH: return "SOUTH";
    default: return "WEST";
    }
}

static int opposite(int d) {
    switch (d) {
    case MICA_NORTH: return MICA_SOUTH;
    case MICA_EAST: return MICA_WEST;
    case MICA_SOUTH: return MICA_NORTH;
    default: return MICA_EAST;
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Mesh
 * ------------------------------------------------------------------------------------------------- */

/* Timing state of one link. `use` = (serial of the last exchange that used it << USE_BITS) | the number
 * of its messages in that exchange (capped at 2) | RETIMED. `busy` is the modelled cycle the link is free
 * again; `prev` its value before that exchange (for re-timing shared links and undoing a failed op). */
#define USE_BITS 24
#define USE_COUNT ((UINT64_C(1) << 22) - 1)
#define USE_RETIMED (UINT64_C(1) << 22)
typedef struct {
    uint64_t use;
    double busy, prev;
} mica_link_t;

/* Timing state of one core: its clock and its breakdown; the latest completion and longest transfer of
 * its pending exchange (x_mark = that exchange's serial, 0 when none is pending; see x_commit). */
typedef struct {
    double clock, comp, comm, idle;
    double x_end, x_comm;
    uint64_t x_mark;
    double pre;       /* clock at the start of the core's last COMPUTE, run in loop run `pre_tag` */
    uint64_t pre_tag;
} mica_core_t;

struct mica_mesh {
    int32_t width, height, n_colours;
    int64_t sram_bytes;
    int64_t n_cores;
    bool committed;
    int64_t *arena_size;   /* [core] reserved bytes, 0 = no arena */
    int64_t *arena_off;    /* [core] offset of the arena in pool (after commit) */
    void *pool_raw;        /* the allocation; pool is its 64-byte aligned start */
    size_t pool_mapped;    /* bytes mapped with mmap (large pools), 0 when pool_raw is from calloc */
    uint8_t *pool;
    uint32_t *arena_psum;  /* [(H+1)*(W+1)] prefix counts of cores with an arena */
    int64_t arena_max;
    uint8_t **routes;      /* [colour] -> [core][rx, tx], a plane per colour, allocated on first use */
    int32_t **recv_slot;   /* [colour] -> [core] 1 + receive index in the running exchange, else 0 */
    uint64_t *link_bytes;  /* [core*4 + link] */
    uint64_t *link_msgs;
    uint64_t *core_sent;   /* [core] */
    uint64_t *core_recv;
    mica_totals totals;
    /* timing model (see mica_rt.h) */
    double hop_latency, link_bw;
    mica_work_fn *work;
    int32_t n_work;
    mica_prefetch_fn prefetch; /* the kernel module's prefetch hint, or NULL */
    mica_core_t *cores;  /* [core] clocks and the running exchange's scratch */
    mica_link_t *links;  /* [link * n_cores + core] reservations of the timing model (by direction, so
                            that a message along a row or column walks consecutive entries) */
    uint64_t serial;     /* exchanges started */
    uint64_t tags;       /* loop runs started (tags of mica_core_t.pre) */
    uint64_t contended, timed;
    int64_t progress_done, progress_total; /* ops of the running mica_run executed / to execute */
    int64_t host_bytes;    /* bytes of host memory the mesh holds (mica_mesh_host_bytes) */
    int32_t host_threads;  /* threads of large host copies (mica_set_host_threads) */
};


static bool timing_alloc(mica_mesh *m, size_t n) {
    m->hop_latency = 1.0;
    m->link_bw = 4.0;
    m->cores = calloc(n, sizeof *m->cores);
    m->links = calloc(n * 4, sizeof *m->links);
    return m->cores && m->links;
}

static void timing_free(mica_mesh *m) {
    free(m->cores);
    free(m->links);
}

mica_mesh *mica_mesh_new(int32_t width, int32_t height, int32_t n_colours, int64_t sram_bytes,
                         char *err, int32_t errlen) {
    if (width < 1 || height < 1 || (int64_t)width * height > INT32_MAX) {
        set_err(err, errlen, "bad mesh shape %dx%d (need 1 <= width*height <= %d)", (int)width,
                (int)height, INT32_MAX);
        return NULL;
    }
    if (n_colours < 1 || n_colours > MAX_COLOURS) {
        set_err(err, errlen, "bad colour count %d (need 1..%d)", (int)n_colours, MAX_COLOURS);
        return NULL;
    }
    if (sram_bytes < 0 || sram_bytes > BOX_LIMIT) {
        set_err(err, errlen, "bad per-core SRAM size %lld bytes", (long long)sram_bytes);
        return NULL;
    }
    mica_mesh *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    size_t n = (size_t)width * (size_t)height, c = (size_t)n_colours;
    m->width = width;
    m->height = height;
    m->n_colours = n_colours;
    m->sram_bytes = sram_bytes;
    m->n_cores = (int64_t)n;
    m->host_threads = 1;
    m->arena_size = calloc(n, sizeof *m->arena_size);
    m->routes = calloc(c, sizeof *m->routes);
    m->recv_slot = calloc(c, sizeof *m->recv_slot);
    m->link_bytes = calloc(n * 4, sizeof *m->link_bytes);
    m->link_msgs = calloc(n * 4, sizeof *m->link_msgs);
    m->core_sent = calloc(n, sizeof *m->core_sent);
    m->core_recv = calloc(n, sizeof *m->core_recv);
    if (!m->arena_size || !m->routes || !m->recv_slot || !m->link_bytes || !m->link_msgs ||
        !m->core_sent || !m->core_recv || !timing_alloc(m, n))
        goto oom;
    m->host_bytes = (int64_t)(sizeof *m + n * (sizeof *m->arena_size + 8 * sizeof *m->link_bytes +
                                               sizeof *m->core_sent + sizeof *m->core_recv) +
                              c * (sizeof *m->routes + sizeof *m->recv_slot));
    return m;
oom:
    mica_mesh_free(m);
    set_err(err, errlen, "out of host memory creating a %dx%d mesh", (int)width, (int)height);
    return NULL;
}

void mica_mesh_free(mica_mesh *m) {
    if (!m) return;
    free(m->arena_size);
    free(m->arena_off);
    if (m->pool_mapped) munmap(m->pool_raw, m->pool_mapped);
    else free(m->pool_raw);
    free(m->arena_psum);
    for (int32_t c = 0; m->routes && m->recv_slot && c < m->n_colours; ++c) {
        free(m->routes[c]);
        free(m->recv_slot[c]);
    }
    free(m->routes);
    free(m->recv_slot);
    free(m->link_bytes);
    free(m->link_msgs);
    free(m->core_sent);
    free(m->core_recv);
    timing_free(m);
    free(m);
}

int32_t mica_mesh_reserve(mica_mesh *m, int32_t x0, int32_t x1, int32_t y0, int32_t y1, int64_t bytes,
                          char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "reserve: no mesh");
        return 1;
    }
    if (m->committed) {
        set_err(err, errlen, "reserve: the mesh is already committed");
        return 1;
    }
    if (bytes < 0 || bytes > m->sram_bytes) {
        set_err(err, errlen,
                "reserve: arena of %lld bytes for cores [%d,%d) x [%d,%d) exceeds the per-core SRAM "
                "of %lld bytes",
                (long long)bytes, (int)x0, (int)x1, (int)y0, (int)y1, (long long)m->sram_bytes);
        return 1;
    }
    int64_t xa = clamp64(x0, 0, m->width), xb = clamp64(x1, 0, m->width);
    int64_t ya = clamp64(y0, 0, m->height), yb = clamp64(y1, 0, m->height);
    for (int64_t y = ya; y < yb; ++y)
        for (int64_t x = xa; x < xb; ++x) m->arena_size[y * m->width + x] = bytes;
    return 0;
}

/* Large pools are mapped directly (zero pages on first touch) in multiples of 2 MB and marked for
 * transparent huge pages: kernels sweep whole arenas core after core, so fewer page faults and TLB
 * misses; the kernel zeroes each page once, so host memory still follows what the program touches. */
#define POOL_MMAP_MIN (INT64_C(4) << 20)
#define HUGE_PAGE (INT64_C(2) << 20)
static bool pool_alloc(mica_mesh *m, size_t bytes) {
    if ((int64_t)bytes >= POOL_MMAP_MIN) {
        size_t len = (bytes + (size_t)HUGE_PAGE - 1) / (size_t)HUGE_PAGE * (size_t)HUGE_PAGE;
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
            madvise(p, len, MADV_HUGEPAGE); /* advice only: a kernel without THP ignores it */
#endif
            m->pool_raw = p;
            m->pool_mapped = len;
            return true;
        }
    }
    m->pool_raw = calloc(bytes, 1);
    m->pool_mapped = 0;
    return m->pool_raw != NULL;
}

int32_t mica_mesh_commit(mica_mesh *m, char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "commit: no mesh");
        return 1;
    }
    if (m->committed) {
        set_err(err, errlen, "commit: the mesh is already committed");
        return 1;
    }
    int64_t W = m->width, H = m->height, n = m->n_cores;
    m->arena_off = calloc((size_t)n, sizeof *m->arena_off);
    m->arena_psum = calloc((size_t)((W + 1) * (H + 1)), sizeof *m->arena_psum);
    if (!m->arena_off || !m->arena_psum) goto oom;

    int64_t total = 0, reserved = 0, biggest = 0;
    for (int64_t c = 0; c < n; ++c) {
        int64_t s = m->arena_size[c];
        if (s <= 0) continue;
        m->arena_off[c] = total;
        total += (s + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
        reserved += s;
        biggest = max64(biggest, s);
    }
    if (total > 0) {
        if (!pool_alloc(m, (size_t)total + ARENA_ALIGN)) goto oom;
        uintptr_t p = (uintptr_t)m->pool_raw;
        m->pool = (uint8_t *)m->pool_raw + ((ARENA_ALIGN - p % ARENA_ALIGN) % ARENA_ALIGN);
    }
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
            m->arena_psum[(y + 1) * (W + 1) + x + 1] =
                (m->arena_size[y * W + x] > 0) + m->arena_psum[y * (W + 1) + x + 1] +
                m->arena_psum[(y + 1) * (W + 1) + x] - m->arena_psum[y * (W + 1) + x];
    m->arena_max = biggest;
    m->host_bytes += (int64_t)((size_t)n * sizeof *m->arena_off + (size_t)((W + 1) * (H + 1)) * sizeof *m->arena_psum) +
                     (total > 0 ? total + ARENA_ALIGN : 0);
    m->totals.arena_bytes = (uint64_t)reserved;
    m->totals.arena_max = (uint64_t)biggest;
    m->committed = true;
    return 0;
oom:
    free(m->arena_off);
    free(m->arena_psum);
    m->arena_off = NULL;
    m->arena_psum = NULL;
    set_err(err, errlen, "commit: out of host memory allocating the arenas");
    return 1;
}

static uint8_t *arena_of(const mica_mesh *m, int64_t core) { return m->pool + m->arena_off[core]; }

/* Route tables and receive slots are stored by colour: one plane of n_cores entries per colour the
 * program uses (a pass over a rectangle of routers on one colour reads contiguous bytes, and colours no
 * exchange mentions cost nothing). Planes are allocated, zeroed, before the first exchange using them. */
static uint8_t *route_at(const mica_mesh *m, int64_t core, int32_t colour) {
    return m->routes[colour] + core * 2;
}

static int32_t *slot_at(const mica_mesh *m, int64_t core, int32_t colour) {
    return m->recv_slot[colour] + core;
}

/* Allocates the planes of `colour` if needed; false if out of host memory. */
static bool use_colour(mica_mesh *m, int32_t colour) {
    if (!m->routes[colour] && (m->routes[colour] = calloc((size_t)m->n_cores * 2, 1)))
        m->host_bytes += m->n_cores * 2;
    if (!m->recv_slot[colour] &&
        (m->recv_slot[colour] = calloc((size_t)m->n_cores, sizeof **m->recv_slot)))
        m->host_bytes += m->n_cores * (int64_t)sizeof **m->recv_slot;
    return m->routes[colour] && m->recv_slot[colour];
}

int64_t mica_mesh_host_bytes(const mica_mesh *m) { return m ? m->host_bytes : 0; }

/* ---------------------------------------------------------------------------------------------------
 * Affine values, rectangles, boxes
 * ------------------------------------------------------------------------------------------------- */

typedef struct {
    int64_t x0, x1, y0, y1; /* half-open bounding box, clamped to the mesh; x1 >= x0, y1 >= y0 */
    int64_t xs, xp, ys, yp; /* members: x = xp (mod xs), y = yp (mod ys); 0 <= xp < xs, 0 <= yp < ys */
    int64_t fx, fy, nx;     /* first member column and row, members per row (set by eval_rect) */
    int xsh, ysh;           /* log2 of xs, ys when they are powers of two, else -1 */
} irect;

/* The first a' >= a with a' = p (mod s). */
static int64_t align_up(int64_t a, int64_t s, int64_t p) {
    int64_t r = (p - a) % s;
    return a + (r < 0 ? r + s : r);
}

static int64_t count_members(int64_t a, int64_t b, int64_t s, int64_t p) {
    int64_t f = align_up(a, s, p);
    return f < b ? (b - 1 - f) / s + 1 : 0;
}

/* Number of member cores of rc (its bounding box for unit strides). */
static int64_t rect_count(const irect *r) {
    return count_members(r->x0, r->x1, r->xs, r->xp) * count_members(r->y0, r->y1, r->ys, r->yp);
}

#define FOR_RECT_CELLS(rc, x, y)                                                                  \
    for (int64_t y = align_up((rc)->y0, (rc)->ys, (rc)->yp); y < (rc)->y1; y += (rc)->ys)        \
        for (int64_t x = align_up((rc)->x0, (rc)->xs, (rc)->xp); x < (rc)->x1; x += (rc)->xs)

static int64_t eval_affine(const int64_t *w, const int64_t *v) {
    int64_t r = w[0];
    for (int i = 0; i < MICA_MAX_VARS; ++i) r = sat_add(r, sat_mul(w[1 + i], v[i]));
    return r;
}

/* A BOUND: the max (lower bounds) or min (upper bounds) of its terms. */
static int64_t eval_bound(const int64_t *w, const int64_t *v, bool lower) {
    int64_t r = eval_affine(w, v);
    for (int i = 1; i < MICA_MAX_TERMS; ++i) {
        int64_t t = eval_affine(w + i * W_AFFINE, v);
        r = lower ? max64(r, t) : min64(r, t);
    }
    return r;
}

static irect eval_rect(const int64_t *w, const int64_t *v, int64_t W, int64_t H) {
    irect r;
    r.x0 = clamp64(eval_bound(w, v, true), 0, W);
    r.x1 = clamp64(eval_bound(w + W_BOUND, v, false), r.x0, W);
    r.y0 = clamp64(eval_bound(w + 2 * W_BOUND, v, true), 0, H);
    r.y1 = clamp64(eval_bound(w + 3 * W_BOUND, v, false), r.y0, H);
    const int64_t *st = w + 4 * W_BOUND; /* xs, xp (an AFFINE), ys, yp (an AFFINE); strides >= 1 */
    const int64_t *ys = st + 1 + W_AFFINE;
    r.xs = st[0] >= 1 ? st[0] : 1;
    r.ys = ys[0] >= 1 ? ys[0] : 1;
    r.xp = ((eval_affine(st + 1, v) % r.xs) + r.xs) % r.xs;
    r.yp = ((eval_affine(ys + 1, v) % r.ys) + r.ys) % r.ys;
    if (rect_count(&r) == 0) r.x1 = r.x0, r.y1 = r.y0;
    r.fx = align_up(r.x0, r.xs, r.xp);
    r.fy = align_up(r.y0, r.ys, r.yp);
    r.nx = count_members(r.x0, r.x1, r.xs, r.xp);
    r.xsh = (r.xs & (r.xs - 1)) == 0 ? __builtin_ctzll((unsigned long long)r.xs) : -1;
    r.ysh = (r.ys & (r.ys - 1)) == 0 ? __builtin_ctzll((unsigned long long)r.ys) : -1;
    return r;
}

static int64_t rect_area(const irect *r) { return (r->x1 - r->x0) * (r->y1 - r->y0); }

/* Row-major index of member core (x, y) among the members of rc (from eval_rect): per-entry state
 * arrays (receive counts and senders, staged payloads) hold one slot per member, so a strided rectangle
 * (every 4th core of a ring's colour) costs its members, not its bounding box. */
static int64_t cell_of(const irect *rc, int64_t x, int64_t y) {
    int64_t cx = rc->xsh >= 0 ? (x - rc->fx) >> rc->xsh : (x - rc->fx) / rc->xs;
    int64_t cy = rc->ysh >= 0 ? (y - rc->fy) >> rc->ysh : (y - rc->fy) / rc->ys;
    return cy * rc->nx + cx;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Whether x = pa (mod sa) and x = pb (mod sb) have a common solution. */
static bool phases_meet(int64_t sa, int64_t pa, int64_t sb, int64_t pb) {
    return (pa - pb) % gcd64(sa, sb) == 0;
}

/* False when no core belongs to both rectangles; true when some may (their bounding boxes meet and
 * their strides and phases are compatible: rings on strided colours rarely share a core). */
static bool rects_meet(const irect *a, const irect *b) {
    return max64(a->x0, b->x0) < min64(a->x1, b->x1) && max64(a->y0, b->y0) < min64(a->y1, b->y1) &&
           phases_meet(a->xs, a->xp, b->xs, b->xp) && phases_meet(a->ys, a->yp, b->ys, b->yp);
}

typedef struct {
    int64_t offset, elem, max_bytes;
    int64_t fixed; /* its size in bytes at every core of the running op (box_fix), or -1 */
    int rank;
    int axis[MICA_MAX_RANK];
    int64_t tile[MICA_MAX_RANK], extent[MICA_MAX_RANK], origin[MICA_MAX_RANK];
} box_t;

/* Checks the 19 words of a BOX; returns NULL or a description of the first problem. */
static const char *check_box(const int64_t *w) {
    int64_t off = w[0], elem = w[1], rank = w[2];
    if (off < 0 || off > BOX_LIMIT) return "box offset out of range";
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return "box element size not 1, 2, 4 or 8";
    if (rank < 0 || rank > MICA_MAX_RANK) return "box rank not in 0..4";
    int64_t bytes = elem;
    for (int64_t d = 0; d < rank; ++d) {
        int64_t axis = w[3 + 4 * d], tile = w[4 + 4 * d], extent = w[5 + 4 * d], origin = w[6 + 4 * d];
        if (axis < 0 || axis >= N_AXES) return "box axis not in 0..6";
        if (origin < 0 || origin > BOX_LIMIT || (origin && axis != 1 && axis != 2))
            return "box origin negative, too large, or on an axis other than x and y";
        if (tile < 0 || extent < 0 || tile > BOX_LIMIT || extent > BOX_LIMIT)
            return "box tile or extent negative or too large";
        if (axis == 0 && tile > extent) return "box dim without a coordinate has tile > extent";
        bytes = sat_mul(bytes, min64(tile, extent));
    }
    if (bytes > BOX_LIMIT) return "box larger than 2^48 bytes";
    return NULL;
}

static void load_box(const int64_t *w, box_t *b) {
    b->offset = w[0];
    b->elem = w[1];
    b->rank = (int)w[2];
    b->fixed = -1;
    b->max_bytes = b->elem;
    for (int d = 0; d < b->rank; ++d) {
        b->axis[d] = (int)w[3 + 4 * d];
        b->tile[d] = w[4 + 4 * d];
        b->extent[d] = w[5 + 4 * d];
        b->origin[d] = w[6 + 4 * d];
        b->max_bytes *= min64(b->tile[d], b->extent[d]);
    }
}

/* Evaluates a box at core (x, y): fills lo/ext per dim (if non-NULL) and returns its size in bytes,
 * 0 when the box is empty there. */
static int64_t box_at(const box_t *b, int64_t x, int64_t y, const int64_t *v, int64_t *lo,
                      int64_t *ext) {
    int64_t bytes = b->elem;
    for (int d = 0; d < b->rank; ++d) {
        int a = b->axis[d];
        int64_t coord = a == 0 ? 0 : a == 1 ? x - b->origin[d] : a == 2 ? y - b->origin[d] : v[a - 3];
        int64_t l, e;
        if (__builtin_mul_overflow(b->tile[d], coord, &l) || l < 0 || l >= b->extent[d]) return 0;
        e = min64(b->extent[d] - l, b->tile[d]);
        if (e <= 0) return 0;
        if (lo) lo[d] = l;
        if (ext) ext[d] = e;
        bytes *= e;
    }
    return bytes;
}

/* Records the box's size when it is the same at every core for loop values v (no x or y axis): the
 * exchange phases ask for it per message. */
static void box_fix(box_t *b, const int64_t *v) {
    for (int d = 0; d < b->rank; ++d)
        if (b->axis[d] == 1 || b->axis[d] == 2) return;
    b->fixed = box_at(b, 0, 0, v, NULL, NULL);
}

/* box_at's size alone, from box_fix's record when there is one. */
static int64_t box_bytes(const box_t *b, int64_t x, int64_t y, const int64_t *v) {
    return b->fixed >= 0 ? b->fixed : box_at(b, x, y, v, NULL, NULL);
}

/* ---------------------------------------------------------------------------------------------------
 * Op-code validation (structure only; values depending on loop variables are checked while running)
 * ------------------------------------------------------------------------------------------------- */

typedef struct {
    const int64_t *code;
    const mica_mesh *m;
    mica_kernel_fn *kernels;
    int32_t n_kernels;
    char *err;
    int32_t errlen;
} vctx;

__attribute__((format(printf, 3, 4))) static int vfail(vctx *c, int64_t pos, const char *fmt, ...) {
    char msg[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_err(c->err, c->errlen, "malformed op code at word %lld: %s", (long long)pos, msg);
    return 1;
}

static int check_colour(vctx *c, int64_t pos, int64_t colour) {
    if (colour < 0 || colour >= c->m->n_colours)
        return vfail(c, pos, "colour %lld out of range (the mesh has %d colours)", (long long)colour,
                     (int)c->m->n_colours);
    return 0;
}

static int check_box_at(vctx *c, int64_t pos) {
    const char *why = check_box(c->code + pos);
    return why ? vfail(c, pos, "%s", why) : 0;
}

#define MAX_STRIDE (1 << 20)

/* Checks the stride words of the RECT at pos. */
static int check_rect_at(vctx *c, int64_t pos) {
    const int64_t *st = c->code + pos + 4 * W_BOUND;
    const int64_t ys = st[1 + W_AFFINE];
    if (st[0] < 1 || st[0] > MAX_STRIDE || ys < 1 || ys > MAX_STRIDE)
        return vfail(c, pos, "rectangle strides must be in 1..%d (x %lld, y %lld)", MAX_STRIDE,
                     (long long)st[0], (long long)ys);
    return 0;
}

static int validate_exchange(vctx *c, int64_t pos, int64_t end) {
    const int64_t *w = c->code + pos;
    if (end - pos < W_EXCH_HEAD) return vfail(c, pos, "truncated EXCHANGE header");
    int64_t nr = w[2], ns = w[3], nv = w[4];
    if (nr < 0 || ns < 0 || nv < 0 || nr > MAX_OP_ENTRIES || ns > MAX_OP_ENTRIES || nv > MAX_OP_ENTRIES)
        return vfail(c, pos, "bad EXCHANGE entry counts (%lld routes, %lld sends, %lld receives)",
                     (long long)nr, (long long)ns, (long long)nv);
    int64_t words = W_EXCH_HEAD + nr * W_ROUTE + ns * W_SEND + nv * W_RECV;
    if (words > end - pos)
        return vfail(c, pos, "EXCHANGE op %lld needs %lld words but only %lld remain", (long long)w[1],
                     (long long)words, (long long)(end - pos));
    int64_t p = pos + W_EXCH_HEAD;
    for (int64_t i = 0; i < nr; ++i, p += W_ROUTE) {
        const int64_t *e = c->code + p;
        if (check_colour(c, p, e[0])) return 1;
        if (e[1] < 0 || e[1] > 31 || e[2] < 0 || e[2] > 31)
            return vfail(c, p, "route direction set not in 0..31 (rx %lld, tx %lld)", (long long)e[1],
                         (long long)e[2]);
        if (check_rect_at(c, p + 3)) return 1;
    }
    for (int64_t i = 0; i < ns; ++i, p += W_SEND) {
        if (check_colour(c, p, c->code[p])) return 1;
        if (c->code[p + 1] < 0) return vfail(c, p + 1, "negative max_hops");
        if (check_rect_at(c, p + 2)) return 1;
        if (check_box_at(c, p + 2 + W_RECT)) return 1;
    }
    for (int64_t i = 0; i < nv; ++i, p += W_RECV) {
        if (check_colour(c, p, c->code[p])) return 1;
        if (check_rect_at(c, p + 1)) return 1;
        if (check_box_at(c, p + 1 + W_RECT)) return 1;
    }
    return 0;
}

static int validate_compute(vctx *c, int64_t pos, int64_t end) {
    const int64_t *w = c->code + pos;
    if (end - pos < W_COMP_HEAD) return vfail(c, pos, "truncated COMPUTE header");
    int64_t n = w[2];
    if (n < 0 || n > MAX_OP_ENTRIES) return vfail(c, pos, "bad COMPUTE entry count %lld", (long long)n);
    if (W_COMP_HEAD + n * W_CENTRY > end - pos)
        return vfail(c, pos, "COMPUTE op %lld needs %lld words but only %lld remain", (long long)w[1],
                     (long long)(W_COMP_HEAD + n * W_CENTRY), (long long)(end - pos));
    for (int64_t i = 0, p = pos + W_COMP_HEAD; i < n; ++i, p += W_CENTRY) {
        int64_t k = c->code[p];
        if (k < 0 || k >= c->n_kernels)
            return vfail(c, p, "kernel index %lld out of range (%d kernels)", (long long)k,
                         (int)c->n_kernels);
        if (!c->kernels || !c->kernels[k]) return vfail(c, p, "kernel %lld is NULL", (long long)k);
        if (check_rect_at(c, p + 1)) return 1;
    }
    return 0;
}

/* Validates the ops in [pos, end); `slots` is the set of loop slots in scope. */
static int validate_block(vctx *c, int64_t pos, int64_t end, unsigned slots) {
    while (pos < end) {
        const int64_t *w = c->code + pos;
        switch (w[0]) {
        case MICA_OP_LOOP: {
            if (end - pos < W_LOOP_HEAD) return vfail(c, pos, "truncated LOOP header");
            int64_t slot = w[1], count = w[2], body = w[3];
            if (slot < 0 || slot >= MICA_MAX_VARS)
                return vfail(c, pos, "loop slot %lld not in 0..3", (long long)slot);
            if (slots & (1u << slot))
                return vfail(c, pos, "loop slot %lld already in use", (long long)slot);
            if (count < 0) return vfail(c, pos, "negative loop count %lld", (long long)count);
            if (body < 0 || body > end - pos - W_LOOP_HEAD)
                return vfail(c, pos, "loop body of %lld words runs past the end of its block",
                             (long long)body);
            if (validate_block(c, pos + W_LOOP_HEAD, pos + W_LOOP_HEAD + body, slots | (1u << slot)))
                return 1;
            pos += W_LOOP_HEAD + body;
            break;
        }
        case MICA_OP_EXCHANGE:
        case MICA_OP_PREFETCH:
            if (validate_exchange(c, pos, end)) return 1;
            pos += W_EXCH_HEAD + w[2] * W_ROUTE + w[3] * W_SEND + w[4] * W_RECV;
            break;
        case MICA_OP_COMPUTE:
            if (validate_compute(c, pos, end)) return 1;
            pos += W_COMP_HEAD + w[2] * W_CENTRY;
            break;
        default:
            return vfail(c, pos, "unknown opcode %lld", (long long)w[0]);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Run state
 * ------------------------------------------------------------------------------------------------- */

typedef struct {
    int32_t colour;
    uint8_t rx, tx;
    irect rc;
} route_e;

typedef struct {
    int32_t colour;
    int64_t max_hops;
    irect rc;
    box_t box;
    bool staged;                    /* a receive of the op may overwrite its payload (plan_staging) */
    bool ordered;                   /* staged and large: copied once, in order (see "Payload copies") */
    int64_t stage_base, stage_slot; /* staging area of this entry and bytes per cell */
    double *end;                    /* [cell of rc] modelled cycle the message has left its router */
    /* For staged entries only (see "Payload copies" below): */
    int64_t *readers;               /* [cell of rc] first receive cell reading its payload, or NO_CELL */
    uint8_t *kept;                  /* [cell of rc] payload copied to its staging slot */
} send_e;

typedef struct {
    int32_t colour;
    irect rc;
    box_t box;
    uint32_t *count; /* [cell of rc] messages delivered, or NOT_EXPECTED */
    uint64_t *src;   /* [cell of rc] (sender core << 24) | send index of the first delivery */
    double *arrive;  /* [cell of rc] modelled cycle the message's tail arrives */
    int64_t base;    /* index of cell 0 among the receive cells of the op (run_t.recv_next/state) */
    bool ordered;    /* it may overwrite an ordered send's payload: its copies wait for their readers */
} recv_e;

typedef struct {
    int64_t kernel;
    irect rc;
} comp_e;

typedef struct {
    uint32_t core, hops;
    uint8_t in;
    double h; /* modelled cycle the message's head reaches this router */
} hop_t;

/* A message routed by a thread in phase B: where its traffic log starts, for the timing phases. */
typedef struct {
    uint32_t core, send;
    size_t log0;
    bool contended; /* it shares a link with another message of the exchange */
} tmsg_t;

typedef struct {
    int64_t bx0, by0, bw; /* bounding box origin and width */
    int64_t c0, c1;       /* this thread's cells, row-major indices into the bounding box */
} band_t;

struct run;

typedef struct {
    struct run *run;
    int tid;
    pthread_t thread;
    /* routing scratch */
    uint32_t *visited; /* [core] stamp of the last message that visited it */
    uint32_t stamp;
    hop_t *stack;
    size_t stack_cap;
    uint64_t *log; /* traffic of this op, replayed into the statistics on success */
    size_t log_len, log_cap;
    tmsg_t *msgs;  /* messages routed in this op, in log order */
    size_t n_msgs, msgs_cap;
    bool shared;   /* some link carried a second message of this op */
    band_t band;   /* the cells of the phase being run */
    int64_t *reader_head; /* phase B: reader list deliver() adds to (a staged payload), or NULL */
    bool cross;    /* phase B: the message being routed reached a receiver outside the band */
    size_t linked; /* phase B: readers listed by this chunk */
    int64_t *dfs;  /* phase D: the ordered-copy stack (copy_ordered) */
    size_t dfs_cap;
    uint64_t *foreign; /* phase D: (log entry, bytes) pairs for other bands' cores (replay_log) */
    size_t n_foreign, foreign_cap;
    /* counters of the current op */
    uint64_t messages, deliveries, link_bytes, link_messages, max_hops, computes;
    uint64_t expected, matched;
    bool dup;
    /* best fault of the current phase */
    uint64_t err_key;
    char err[MSG_LEN];
} tctx;

/* A pool thread and its routing scratch, lent to the chunk it runs. */
typedef struct worker {
    struct run *run;
    int id;
    pthread_t thread;
    uint32_t *visited;
    uint32_t stamp;
    hop_t *stack;
    size_t stack_cap;
} worker_t;

typedef struct run {
    mica_mesh *m;
    const int64_t *code;
    mica_kernel_fn *kernels;
    const double *scalars;
    int64_t v[MICA_MAX_VARS];
    int active[MICA_MAX_VARS]; /* loop slots in scope, outermost first */
    int depth;
    uint64_t tag;  /* the running loop run (a fresh tag each time a LOOP op starts) */
    bool prefetch; /* the running exchange is a PREFETCH op */
    int64_t op_id;
    /* the op being executed */
    route_e *routes;
    send_e *sends;
    recv_e *recvs;
    comp_e *comps;
    size_t routes_cap, sends_cap, recvs_cap, comps_cap;
    int64_t n_routes, n_sends, n_recvs, n_comps;
    irect bbox;
    uint32_t *recv_count;
    uint64_t *recv_src;
    size_t recv_count_cap, recv_src_cap;
    uint8_t *stage;
    size_t stage_cap;
    double *send_end, *recv_arrive;
    size_t send_end_cap, recv_arrive_cap;
    int64_t *recv_next, *send_readers; /* reader lists of staged payloads (see "Payload copies") */
    int64_t *clobbers, *clobber0;      /* sends receive j may overwrite: clobbers[clobber0[j]..[j+1]) */
    size_t clobbers_cap, clobber0_cap;
    uint32_t *recv_entry;              /* [receive cell] its receive entry */
    size_t recv_entry_cap;
    uint8_t *recv_state, *send_kept;
    size_t recv_next_cap, send_readers_cap, recv_state_cap, send_kept_cap;
    bool do_copy;
    /* threads: nt workers (the caller is worker 0) run the nt_op chunks of a phase, claiming them in
     * order from next_chunk; chunk i has its own context t[i] (counters, traffic log, fault) */
    int nt, nt_op, phase, n_chunks;
    uint64_t ticket;  /* (generation << 32) | (nt_op << 16) | next chunk: claimed with compare-and-swap */
    int done;         /* chunks of the current generation finished (atomic) */
    uint32_t gen;     /* generation of the last published phase (under mu) */
    bool quit;        /* under mu */
    tctx *t;
    struct worker *w;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    uint64_t best_key; /* smallest fault key of the current phase (atomic) */
    /* outcome */
    bool failed;
    char err[MSG_LEN + PREFIX_LEN + 2];
} run_t;

/* True when the chunks of the running phase run one after the other on the calling thread. */
static bool one_thread(const run_t *r) { return r->nt == 1 || r->nt_op == 1; }

static uint64_t fault_key(int phase, int64_t core, int64_t entry) {
    return ((uint64_t)phase << 58) | ((uint64_t)core << 24) | (uint64_t)entry;
}

/* Records a fault seen by thread t; keeps the one with the smallest key. */
__attribute__((format(printf, 3, 4))) static void fault(tctx *t, uint64_t key, const char *fmt, ...) {
    if (key >= t->err_key) return;
    t->err_key = key;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    uint64_t cur = __atomic_load_n(&t->run->best_key, __ATOMIC_RELAXED);
    while (key < cur && !__atomic_compare_exchange_n(&t->run->best_key, &cur, key, true,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* True when work with this key cannot change the reported fault any more. */
static bool moot(const tctx *t, uint64_t key) {
    return key > __atomic_load_n(&t->run->best_key, __ATOMIC_RELAXED);
}

static band_t band_of(const run_t *r, int tid) {
    band_t b;
    b.bx0 = r->bbox.x0;
    b.by0 = r->bbox.y0;
    b.bw = r->bbox.x1 - r->bbox.x0;
    int64_t area = rect_area(&r->bbox);
    b.c0 = area * tid / r->nt_op;
    b.c1 = area * (tid + 1) / r->nt_op;
    return b;
}

/* Rows [*ya, *yb) of rect rc that hold cells of band b. */
static void band_rows(const band_t *b, const irect *rc, int64_t *ya, int64_t *yb) {
    if (b->c0 >= b->c1 || b->bw == 0) {
        *ya = *yb = 0;
        return;
    }
    *ya = max64(rc->y0, b->by0 + b->c0 / b->bw);
    *yb = min64(rc->y1, b->by0 + (b->c1 - 1) / b->bw + 1);
}

/* Columns [*xa, *xb) of row y of rect rc that belong to band b; false when there are none. */
static bool band_span(const band_t *b, const irect *rc, int64_t y, int64_t *xa, int64_t *xb) {
    int64_t base = (y - b->by0) * b->bw;
    *xa = max64(rc->x0, b->bx0 + max64(0, b->c0 - base));
    *xb = min64(rc->x1, b->bx0 + min64(b->bw, b->c1 - base));
    return *xa < *xb;
}

/* True when core (x, y), a cell of the op's bounding box, belongs to band b. */
static bool in_band(const band_t *b, int64_t x, int64_t y) {
    int64_t c = (y - b->by0) * b->bw + (x - b->bx0);
    return x >= b->bx0 && x < b->bx0 + b->bw && c >= b->c0 && c < b->c1;
}

/* in_band for a core index of a mesh W wide (no division when the bounding box spans whole rows). */
static bool core_in_band(const band_t *b, int64_t core, int64_t W) {
    if (b->bx0 == 0 && b->bw == W) {
        int64_t c = core - b->by0 * W;
        return c >= b->c0 && c < b->c1;
    }
    return in_band(b, core % W, core / W);
}

#define FOR_BAND_CELLS(b, rc, x, y)                                                              \
    for (int64_t y##_a_, y##_b_,                                                                 \
         y = (band_rows((b), (rc), &y##_a_, &y##_b_), align_up(y##_a_, (rc)->ys, (rc)->yp));    \
         y < y##_b_; y += (rc)->ys)                                                              \
        for (int64_t x##_a_, x##_b_,                                                             \
             x = (band_span((b), (rc), y, &x##_a_, &x##_b_), align_up(x##_a_, (rc)->xs, (rc)->xp)); \
             x < x##_b_; x += (rc)->xs)

/* ---------------------------------------------------------------------------------------------------
 * EXCHANGE phase A: routes, boxes, expected receives
 * ------------------------------------------------------------------------------------------------- */

/* Checks that `bytes` at box offset fit the arena of `core`; records a fault otherwise. */
static bool box_fits(tctx *t, uint64_t key, const char *what, int32_t colour, int64_t core,
                     const box_t *box, int64_t bytes) {
    const mica_mesh *m = t->run->m;
    int64_t size = m->arena_size[core];
    if (box->offset + bytes <= size) return true;
    int64_t x = core % m->width, y = core / m->width;
    if (size == 0)
        fault(t, key, "%s box on colour %d at core (%lld,%lld) needs %lld bytes but the core has no arena",
              what, (int)colour, (long long)x, (long long)y, (long long)bytes);
    else
        fault(t, key,
              "%s box on colour %d at core (%lld,%lld) spans bytes [%lld,%lld) outside the core's "
              "%lld-byte arena",
              what, (int)colour, (long long)x, (long long)y, (long long)box->offset,
              (long long)(box->offset + bytes), (long long)size);
    return false;
}

/* Applies a core's pending exchange timing (its clock moves to the latest completion; the longest
 * transfer is communication, the rest of the wait idle). Exchanges leave their results pending and the
 * next reader of the core's clock applies them, so finishing an exchange needs no extra pass. */
static void x_commit(mica_mesh *m, int64_t core) {
    mica_core_t *c = &m->cores[core];
    if (c->x_mark == 0) return;
    c->x_mark = 0;
    double elapsed = c->x_end - c->clock; /* <= 0 when a prefetched exchange hid behind compute */
    if (elapsed <= 0) return;
    double comm = c->x_comm < elapsed ? c->x_comm : elapsed;
    c->clock = c->x_end;
    c->comm += comm;
    c->idle += elapsed - comm;
}

/* The clock a core sends and takes in messages of the running exchange from: the start of its last
 * compute in this loop run for a PREFETCH op (issued when that compute started), else its clock. */
static double x_start(const run_t *r, const mica_core_t *c) {
    return r->prefetch && c->pre_tag == r->tag ? c->pre : c->clock;
}

/* Starts the exchange's timing scratch of a core that sends or receives in it (owner thread only). */
static void x_touch(mica_mesh *m, int64_t core) {
    mica_core_t *c = &m->cores[core];
    if (c->x_mark == m->serial) return;
    x_commit(m, core);
    c->x_mark = m->serial;
    c->x_end = c->clock;
    c->x_comm = 0.0;
}

static void setup_routes(tctx *t, const band_t *b) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    for (int64_t i = 0; i < r->n_routes; ++i) {
        const route_e *e = &r->routes[i];
        FOR_BAND_CELLS(b, &e->rc, x, y) {
            uint8_t *rt = route_at(m, y * m->width + x, e->colour);
            rt[0] = e->rx;
            rt[1] = e->tx;
        }
    }
}

static void setup_recv(tctx *t, const band_t *b, int64_t j) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    recv_e *e = &r->recvs[j];
    int64_t entry = r->n_routes + r->n_sends + j;
    FOR_BAND_CELLS(b, &e->rc, x, y) {
        int64_t core = y * m->width + x;
        uint64_t key = fault_key(PH_SETUP, core, entry);
        if (moot(t, key)) return;
        int64_t idx = cell_of(&e->rc, x, y);
        uint32_t *st = &e->count[idx];
        int64_t bytes = box_bytes(&e->box, x, y, r->v);
        r->recv_state[e->base + idx] = COPY_PENDING;
        r->recv_entry[e->base + idx] = (uint32_t)j;
        *st = NOT_EXPECTED;
        if (bytes == 0 || !box_fits(t, key, "receive", e->colour, core, &e->box, bytes)) continue;
        *st = 0;
        t->expected++;
        x_touch(m, core);
        int32_t *slot = slot_at(m, core, e->colour);
        if (*slot == 0) *slot = (int32_t)(j + 1);
    }
}

static void setup_send(tctx *t, const band_t *b, int64_t s) {
    run_t *r = t->run;
    const send_e *e = &r->sends[s];
    FOR_BAND_CELLS(b, &e->rc, x, y) {
        int64_t core = y * r->m->width + x;
        uint64_t key = fault_key(PH_SETUP, core, r->n_routes + s);
        if (moot(t, key)) return;
        int64_t bytes = box_bytes(&e->box, x, y, r->v);
        if (bytes && box_fits(t, key, "send", e->colour, core, &e->box, bytes)) x_touch(r->m, core);
    }
}

static void phase_setup(tctx *t, const band_t *b) {
    run_t *r = t->run;
    t->expected = 0;
    setup_routes(t, b);
    for (int64_t j = 0; j < r->n_recvs; ++j) setup_recv(t, b, j);
    for (int64_t s = 0; s < r->n_sends; ++s) setup_send(t, b, s);
}

/* ---------------------------------------------------------------------------------------------------
 * EXCHANGE phase B: routing
 * ------------------------------------------------------------------------------------------------- */

static bool log_push(tctx *t, uint64_t value, int kind) {
    if (!grow((void **)&t->log, &t->log_cap, t->log_len + 1, sizeof *t->log)) return false;
    t->log[t->log_len++] = (value << 3) | (uint64_t)kind;
    return true;
}

static bool stack_push(tctx *t, size_t *sp, int64_t core, int64_t hops, int in, double h) {
    if (!grow((void **)&t->stack, &t->stack_cap, *sp + 1, sizeof *t->stack)) return false;
    t->stack[(*sp)++] = (hop_t){(uint32_t)core, (uint32_t)hops, (uint8_t)in, h};
    return true;
}

/* A message's head reaches link L at cycle h: returns the cycle it starts to cross (the link may still
 * be busy with a message of an earlier exchange) and reserves the link for `dur` cycles. Only the first
 * message of an exchange on a link reserves it here; a later one marks the link shared (*shared), and
 * retime_shared times every message on it again from the link's state before the exchange. */
static double link_take(mica_mesh *m, int64_t L, double h, double dur, bool *shared, bool alone) {
    mica_link_t *k = &m->links[L];
    if (alone) { /* the only thread routing this op: no atomics needed */
        if ((k->use >> USE_BITS) == m->serial) {
            *shared = true;
            if ((k->use & USE_COUNT) < 2) k->use++;
            return h;
        }
        double start = h > k->busy ? h : k->busy;
        k->use = m->serial << USE_BITS | 1;
        k->prev = k->busy;
        k->busy = start + dur;
        return start;
    }
    uint64_t cur = __atomic_load_n(&k->use, __ATOMIC_RELAXED);
    for (;;) {
        if ((cur >> USE_BITS) == m->serial) { /* a second message of this exchange */
            *shared = true;
            if ((cur & USE_COUNT) >= 2) return h;
            if (__atomic_compare_exchange_n(&k->use, &cur, cur + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return h;
            continue;
        }
        double base;
        __atomic_load(&k->busy, &base, __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&k->use, &cur, m->serial << USE_BITS | 1, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            double start = h > base ? h : base, end = start + dur;
            __atomic_store(&k->prev, &base, __ATOMIC_RELAXED);
            __atomic_store(&k->busy, &end, __ATOMIC_RELAXED);
            return start;
        }
    }
}

/* True when link L carries more than one message of the running exchange (after phase B). */
static bool link_shared(const mica_mesh *m, int64_t L) {
    uint64_t v = m->links[L].use;
    return (v >> USE_BITS) == m->serial && (v & USE_COUNT) >= 2;
}

/* Undoes the reservations a failed exchange made (serial; the logs list every link it used). */
static void links_undo(run_t *r) {
    mica_mesh *m = r->m;
    for (int i = 0; i < r->nt_op; ++i)
        for (size_t p = 0; p < r->t[i].log_len; ++p) {
            int kind = (int)(r->t[i].log[p] & 7);
            if (kind >= 4) continue;
            mica_link_t *k = &m->links[kind * m->n_cores + (int64_t)(r->t[i].log[p] >> 3)];
            if ((k->use >> USE_BITS) == m->serial) k->busy = k->prev;
        }
}

/* Fresh visit stamp for a new message (lazily allocating the visited array). */
static bool new_stamp(tctx *t) {
    const mica_mesh *m = t->run->m;
    if (!t->visited) {
        t->visited = calloc((size_t)m->n_cores, sizeof *t->visited);
        if (!t->visited) return false;
    }
    if (++t->stamp == 0) {
        memset(t->visited, 0, (size_t)m->n_cores * sizeof *t->visited);
        t->stamp = 1;
    }
    return true;
}

/* Delivers the message of send s from src_core to `core` through its RAMP. */
static bool deliver(tctx *t, uint64_t key, int64_t s, int64_t src_core, int64_t core, int64_t bytes,
                    double arrive) {
    run_t *r = t->run;
    const mica_mesh *m = r->m;
    const send_e *se = &r->sends[s];
    int64_t W = m->width, x = core % W, y = core / W;
    int32_t j1 = *slot_at(m, core, se->colour);
    if (j1 == 0) {
        fault(t, key,
              "message on colour %d from core (%lld,%lld) reached core (%lld,%lld) with no matching "
              "receive",
              (int)se->colour, (long long)(src_core % W), (long long)(src_core / W), (long long)x,
              (long long)y);
        return false;
    }
    recv_e *e = &r->recvs[j1 - 1];
    int64_t want = box_bytes(&e->box, x, y, r->v);
    if (want != bytes) {
        fault(t, key,
              "message on colour %d from core (%lld,%lld) has %lld bytes but the receive at core "
              "(%lld,%lld) expects %lld bytes (length mismatch)",
              (int)se->colour, (long long)(src_core % W), (long long)(src_core / W), (long long)bytes,
              (long long)x, (long long)y, (long long)want);
        return false;
    }
    int64_t idx = cell_of(&e->rc, x, y);
    uint32_t before = one_thread(r) ? e->count[idx]++
                                    : __atomic_fetch_add(&e->count[idx], 1, __ATOMIC_RELAXED);
    if (before == 0) {
        e->src[idx] = ((uint64_t)src_core << 24) | (uint64_t)s;
        if (t->reader_head) { /* a staged payload: list its readers for the ordered copies of phase D */
            r->recv_next[e->base + idx] = *t->reader_head;
            *t->reader_head = e->base + idx;
            t->cross |= !in_band(&t->band, x, y);
            t->linked++;
        }
        /* The receiver takes the stream in once it reaches the exchange itself. */
        double ready = x_start(r, &m->cores[core]) + (double)bytes / m->link_bw;
        e->arrive[idx] = arrive > ready ? arrive : ready;
    } else
        t->dup = true;
    t->matched++;
    t->deliveries++;
    if (log_push(t, (uint64_t)core, LOG_RECV)) return true;
    fault(t, key, "out of host memory logging traffic");
    return false;
}

/* A message being routed: its send entry, source core, size and fault key. */
typedef struct {
    int64_t send, src, bytes;
    uint64_t key;
    int colour;
    long long sx, sy;
} msg_t;

/* The message enters the router of core c from direction `in`: checks rx, the visit set and tx.
 * Returns the tx set, or 0 after recording a fault. */
static uint8_t enter_router(tctx *t, const msg_t *g, int64_t c, int in) {
    const mica_mesh *m = t->run->m;
    const uint8_t *rt = route_at(m, c, g->colour);
    const long long W = m->width; /* the core's (x, y) = (c % W, c / W), computed for messages only */
    if (!(rt[0] & in)) {
        if (in == MICA_RAMP)
            fault(t, g->key, "no route for colour %d at core (%lld,%lld): RAMP not in rx, so the core "
                  "cannot send on it", g->colour, c % W, c / W);
        else
            fault(t, g->key, "no route for colour %d arriving from %s at core (%lld,%lld) (message "
                  "from core (%lld,%lld))", g->colour, dir_name(in), c % W, c / W, g->sx, g->sy);
        return 0;
    }
    if (t->visited[c] == t->stamp) {
        fault(t, g->key, "message on colour %d from core (%lld,%lld) reaches core (%lld,%lld) twice "
              "(route cycle)", g->colour, g->sx, g->sy, c % W, c / W);
        return 0;
    }
    t->visited[c] = t->stamp;
    if (rt[1] == 0)
        fault(t, g->key, "message on colour %d from core (%lld,%lld) is dropped at core (%lld,%lld): "
              "empty tx set", g->colour, g->sx, g->sy, c % W, c / W);
    return rt[1];
}

/* Checks that the message may leave core (x, y) towards (nx, ny) as hop number `hop`. */
static bool may_leave(tctx *t, const msg_t *g, int64_t x, int64_t y, int dir, int64_t nx, int64_t ny,
                      int64_t hop) {
    const mica_mesh *m = t->run->m;
    if (nx < 0 || nx >= m->width || ny < 0 || ny >= m->height) {
        fault(t, g->key, "route for colour %d at core (%lld,%lld) sends %s off the %dx%d mesh (message "
              "from core (%lld,%lld))", g->colour, (long long)x, (long long)y, dir_name(dir),
              (int)m->width, (int)m->height, g->sx, g->sy);
        return false;
    }
    if (hop > t->run->sends[g->send].max_hops) {
        fault(t, g->key, "message on colour %d from core (%lld,%lld) exceeds max_hops=%lld on its way "
              "to core (%lld,%lld)", g->colour, g->sx, g->sy,
              (long long)t->run->sends[g->send].max_hops, (long long)nx, (long long)ny);
        return false;
    }
    return true;
}

/* Routes one message hop by hop through the route tables, depth first over its multicast tree. */
/* Routes one message hop by hop through the route tables, depth first over its multicast tree.
 * Timing (provisional, final unless a link turns out to be shared): the head leaves at `depart`, waits
 * at a link until the link is free of earlier exchanges' messages and crosses it in hop_latency;
 * *inject_end is when the message has left its source router. */
static void route_message(tctx *t, uint64_t key, int64_t s, int64_t src_core, int64_t bytes,
                          double depart, double *inject_end) {
    static const int dirs[4] = {MICA_NORTH, MICA_EAST, MICA_SOUTH, MICA_WEST}; /* = MICA_LINK_* order */
    static const int dx[4] = {0, 1, 0, -1}, dy[4] = {-1, 0, 1, 0};
    mica_mesh *m = t->run->m;
    const int64_t W = m->width;
    const msg_t g = {s, src_core, bytes, key, t->run->sends[s].colour, src_core % W, src_core / W};
    const double dur = (double)bytes / m->link_bw;
    size_t sp = 0;

    *inject_end = depart;
    if (!new_stamp(t) || !stack_push(t, &sp, src_core, 0, MICA_RAMP, depart)) goto oom;
    while (sp > 0) {
        hop_t h = t->stack[--sp];
        int64_t c = h.core, x = c % W, y = c / W;
        uint8_t tx = enter_router(t, &g, c, h.in);
        if (tx == 0) return;
        if (h.hops > t->max_hops) t->max_hops = h.hops;
        if ((tx & MICA_RAMP) && !deliver(t, key, s, src_core, c, bytes, h.h + dur)) return;
        if ((tx & MICA_RAMP) && h.hops == 0 && h.h + dur > *inject_end) *inject_end = h.h + dur;
        for (int k = 0; k < 4; ++k) {
            if (!(tx & dirs[k])) continue;
            int64_t nx = x + dx[k], ny = y + dy[k];
            if (!may_leave(t, &g, x, y, dirs[k], nx, ny, (int64_t)h.hops + 1)) return;
            t->link_bytes += (uint64_t)bytes;
            t->link_messages++;
            if (!log_push(t, (uint64_t)c, k)) goto oom; /* logged before reserving: see links_undo */
            double start = link_take(m, k * m->n_cores + c, h.h, dur, &t->shared, one_thread(t->run));
            if (h.hops == 0 && start + dur > *inject_end) *inject_end = start + dur;
            if (!stack_push(t, &sp, ny * W + nx, h.hops + 1, opposite(dirs[k]), start + m->hop_latency))
                goto oom;
        }
    }
    return;
oom:
    fault(t, key, "out of host memory routing a message from core (%lld,%lld)", g.sx, g.sy);
}

/* A sender is busy until its message has left its router (a longer transfer if a link delayed it);
 * `t0` is when it started sending (x_start). */
static void sender_done(mica_core_t *c, double end, double t0) {
    if (end > c->x_end) c->x_end = end;
    if (end - t0 > c->x_comm) c->x_comm = end - t0;
}

/* Copies the payload of cell idx of staged send e (at `core`) to its staging slot: readers take it
 * from there, and receives into its box at that core may then run in any order. */
static void keep_payload(run_t *r, const send_e *e, int64_t idx, int64_t core) {
    int64_t x = core % r->m->width, y = core / r->m->width;
    int64_t bytes = box_bytes(&e->box, x, y, r->v);
    memcpy(r->stage + e->stage_base + idx * e->stage_slot, arena_of(r->m, core) + e->box.offset,
           (size_t)bytes);
    e->kept[idx] = 1;
}

static void route_send(tctx *t, const band_t *b, int64_t s) {
    run_t *r = t->run;
    const mica_mesh *m = r->m;
    const send_e *e = &r->sends[s];
    FOR_BAND_CELLS(b, &e->rc, x, y) {
        int64_t core = y * m->width + x;
        uint64_t key = fault_key(PH_ROUTE, core, r->n_routes + s);
        if (moot(t, key)) return;
        int64_t bytes = box_bytes(&e->box, x, y, r->v), idx = cell_of(&e->rc, x, y);
        if (e->staged) {
            e->readers[idx] = NO_CELL;
            e->kept[idx] = 0;
        }
        if (bytes == 0) {
            e->end[idx] = -1.0;
            continue;
        }
        if (e->staged && !e->ordered) keep_payload(r, e, idx, core);
        t->messages++;
        size_t log0 = t->log_len;
        if (!log_push(t, (uint64_t)bytes, LOG_BYTES) || !log_push(t, (uint64_t)core, LOG_SENT) ||
            !grow((void **)&t->msgs, &t->msgs_cap, t->n_msgs + 1, sizeof *t->msgs)) {
            fault(t, key, "out of host memory logging traffic");
            return;
        }
        t->msgs[t->n_msgs++] = (tmsg_t){(uint32_t)core, (uint32_t)s, log0, false};
        mica_core_t *c = &m->cores[core]; /* owned by this thread: touched in phase A */
        double end, t0 = x_start(r, c);
        t->reader_head = e->ordered ? &e->readers[idx] : NULL;
        t->cross = false;
        route_message(t, key, s, core, bytes, t0, &end);
        t->reader_head = NULL;
        /* Phase D orders the copies within a band; a payload read in another band is kept aside now
         * (no arena changes before phase D, so it still holds the bytes of the exchange's start). */
        if (t->cross) keep_payload(r, e, idx, core);
        e->end[idx] = end;
        sender_done(c, end, t0);
    }
}

/* Phase D cannot fail (a failing op must change nothing), so phase B reserves the stack of
 * copy_ordered: its frames are one receive cell of the band and readers of payloads in place, all
 * listed by this chunk (a payload with a reader in another band is kept aside). */
static void reserve_copy_stack(tctx *t, const band_t *b) {
    if (!grow((void **)&t->dfs, &t->dfs_cap, (t->linked + 1) * F_WORDS, sizeof *t->dfs))
        fault(t, fault_key(PH_ROUTE, b->by0 * t->run->m->width + b->bx0, 0),
              "out of host memory ordering payload copies");
}

static void phase_route(tctx *t, const band_t *b) {
    run_t *r = t->run;
    t->messages = t->deliveries = t->link_bytes = t->link_messages = t->max_hops = 0;
    t->matched = 0;
    t->dup = false;
    t->log_len = 0;
    t->n_msgs = 0;
    t->shared = false;
    t->linked = 0;
    for (int64_t s = 0; s < r->n_sends; ++s) route_send(t, b, s);
    reserve_copy_stack(t, b);
}

/* ---------------------------------------------------------------------------------------------------
 * EXCHANGE phase C: receives without exactly one message
 * ------------------------------------------------------------------------------------------------- */

static void check_recv(tctx *t, const band_t *b, int64_t j) {
    run_t *r = t->run;
    const recv_e *e = &r->recvs[j];
    FOR_BAND_CELLS(b, &e->rc, x, y) {
        uint64_t key = fault_key(PH_CHECK, y * r->m->width + x, r->n_routes + r->n_sends + j);
        if (moot(t, key)) return;
        uint32_t n = e->count[cell_of(&e->rc, x, y)];
        if (n == 0)
            fault(t, key, "receive on colour %d at core (%lld,%lld) got no message (receive with no "
                  "matching send)", (int)e->colour, (long long)x, (long long)y);
        else if (n != 1 && n != NOT_EXPECTED)
            fault(t, key, "receive on colour %d at core (%lld,%lld) got %u messages (a second message "
                  "to the same receive)", (int)e->colour, (long long)x, (long long)y, (unsigned)n);
    }
}

static void phase_check(tctx *t, const band_t *b) {
    for (int64_t j = 0; j < t->run->n_recvs; ++j) check_recv(t, b, j);
}

/* ---------------------------------------------------------------------------------------------------
 * EXCHANGE phase D: payload copies, statistics, route clearing
 * ------------------------------------------------------------------------------------------------- */

/* Payload copies
 *
 * Every receive gets the bytes its sender's box held at the start of the exchange. A send box that a
 * receive of the same op may overwrite on the same core (a ring shift moves a tile in place: a "staged"
 * send, see plan_staging) must be read by all of its receivers before that receive writes it. Rather
 * than copying every such payload aside and back (two copies per message), phase D orders the copies:
 * before receive cell R at core d is written, every reader of a staged payload still in place at d is
 * completed first (depth first); a reader that is itself waiting for R -- a ring, a swap -- closes a
 * cycle, and only then is the payload at d kept aside (keep_payload), once per cycle. The bands of a
 * phase run in parallel, so a payload with a reader in another band is kept aside in phase B already;
 * within a band the order is deterministic, and the bytes each receive gets do not depend on it.
 * Ordering costs more than copying a small payload twice: staged payloads under ORDERED_COPY_MIN
 * bytes are all kept aside in phase B (the receives that may overwrite only those copy in any order). */

/* Smallest staged payload (box bytes) whose copies are ordered rather than kept aside: measured on the
 * interleaved ring of matmul 512^3 on 128x128 (64-byte tiles), ordering cost 20% more than copying. */
#define ORDERED_COPY_MIN 1024

/* The bytes that the send recorded in `src` injected (its box as at the start of the exchange). */
static const uint8_t *payload_of(const run_t *r, uint64_t src) {
    int64_t s = (int64_t)(src & 0xFFFFFF), core = (int64_t)(src >> 24);
    const send_e *e = &r->sends[s];
    if (!e->staged) return arena_of(r->m, core) + e->box.offset;
    int64_t x = core % r->m->width, y = core / r->m->width;
    int64_t idx = cell_of(&e->rc, x, y);
    if (!e->kept[idx]) return arena_of(r->m, core) + e->box.offset;
    return r->stage + e->stage_base + idx * e->stage_slot;
}

/* The receive entry holding receive cell g (an index among the op's receive cells) and its core. */
static int64_t recv_cell(const run_t *r, int64_t g, int64_t *x, int64_t *y) {
    int64_t j = r->recv_entry[g];
    const irect *rc = &r->recvs[j].rc;
    int64_t idx = g - r->recvs[j].base;
    *x = rc->fx + idx % rc->nx * rc->xs;
    *y = rc->fy + idx / rc->nx * rc->ys;
    return j;
}

/* Whether a coordinate lies on a rectangle's stride (a mask for powers of two, as cell_of shifts). */
static bool on_stride(int64_t c, int64_t first, int64_t stride, int shift) {
    return shift >= 0 ? ((c - first) & (stride - 1)) == 0 : (c - first) % stride == 0;
}

/* Cell of send e at core (x, y) when e is a member there, else -1. */
static int64_t send_cell_at(const send_e *e, int64_t x, int64_t y) {
    const irect *rc = &e->rc;
    if (x < rc->fx || x >= rc->x1 || y < rc->fy || y >= rc->y1) return -1;
    if (!on_stride(x, rc->fx, rc->xs, rc->xsh) || !on_stride(y, rc->fy, rc->ys, rc->ysh)) return -1;
    return cell_of(rc, x, y);
}

/* Copies into cell idx of receive e, at core (x, y), the payload it got. */
static void copy_payload(run_t *r, const recv_e *e, int64_t idx, int64_t x, int64_t y) {
    int64_t bytes = box_bytes(&e->box, x, y, r->v);
    memcpy(arena_of(r->m, y * r->m->width + x) + e->box.offset, payload_of(r, e->src[idx]), (size_t)bytes);
    r->recv_state[e->base + idx] = COPY_DONE;
}

/* The next reader that must complete before the receive of frame f may write its core: a pending
 * receive cell, or NO_CELL when none is left (payloads closing a cycle have been kept aside). */
static int64_t next_reader(run_t *r, int64_t *f) {
    const int64_t end = r->clobber0[f[F_RECV] + 1];
    for (; f[F_CLOBBER] < end; f[F_CLOBBER]++, f[F_READER] = READERS_UNREAD) {
        const send_e *e = &r->sends[r->clobbers[f[F_CLOBBER]]];
        int64_t idx = send_cell_at(e, f[F_X], f[F_Y]);
        if (idx < 0 || e->kept[idx]) continue;
        if (f[F_READER] == READERS_UNREAD) f[F_READER] = e->readers[idx];
        for (; f[F_READER] != NO_CELL; f[F_READER] = r->recv_next[f[F_READER]]) {
            uint8_t st = r->recv_state[f[F_READER]];
            if (st == COPY_PENDING) return f[F_READER];
            if (st == COPY_BUSY) { /* that reader waits for this receive: a cycle */
                keep_payload(r, e, idx, f[F_Y] * r->m->width + f[F_X]);
                break;
            }
        }
    }
    return NO_CELL;
}

/* Pushes a frame; phase B reserved room for every frame (see reserve_copy_stack). */
static void dfs_push(tctx *t, size_t *sp, int64_t g) {
    int64_t *f = &t->dfs[*sp * F_WORDS];
    f[F_CELL] = g;
    f[F_RECV] = recv_cell(t->run, g, &f[F_X], &f[F_Y]);
    f[F_CLOBBER] = t->run->clobber0[f[F_RECV]];
    f[F_READER] = READERS_UNREAD;
    t->run->recv_state[g] = COPY_BUSY;
    ++*sp;
}

/* Copies the payload of receive cell g, after the readers of what it overwrites (depth first, with
 * an explicit stack: a ring of a whole mesh row is one chain). */
static void copy_ordered(tctx *t, int64_t g) {
    run_t *r = t->run;
    size_t sp = 0;
    if (r->recv_state[g] != COPY_PENDING) return;
    dfs_push(t, &sp, g);
    while (sp > 0) {
        int64_t *f = &t->dfs[(sp - 1) * F_WORDS];
        int64_t next = next_reader(r, f);
        if (next != NO_CELL) {
            dfs_push(t, &sp, next);
            continue;
        }
        const recv_e *e = &r->recvs[f[F_RECV]];
        copy_payload(r, e, f[F_CELL] - e->base, f[F_X], f[F_Y]);
        --sp;
    }
}

/* Copies the payloads of receive j's cells in band b (an ordered copy may have done some already). */
static void copy_recv(tctx *t, const band_t *b, int64_t j) {
    run_t *r = t->run;
    const recv_e *e = &r->recvs[j];
    FOR_BAND_CELLS(b, &e->rc, x, y) {
        int64_t idx = cell_of(&e->rc, x, y);
        if (e->count[idx] != 1) continue;
        if (e->ordered) copy_ordered(t, e->base + idx);
        else if (r->recv_state[e->base + idx] == COPY_PENDING) copy_payload(r, e, idx, x, y);
    }
}

/* Adds one traffic-log entry (a link, receive or send of `bytes`) to the statistics; `alone`: no other
 * thread adds to the same counters meanwhile. */
static void count_entry(mica_mesh *m, uint64_t entry, uint64_t bytes, bool alone) {
    uint64_t v = entry >> 3;
    int kind = (int)(entry & 7);
    uint64_t *a = kind < 4 ? &m->link_bytes[v * 4 + (uint64_t)kind] : kind == LOG_RECV ? &m->core_recv[v]
                                                                                  : &m->core_sent[v];
    if (alone) {
        *a += bytes;
        if (kind < 4) m->link_msgs[v * 4 + (uint64_t)kind]++;
        return;
    }
    __atomic_fetch_add(a, bytes, __ATOMIC_RELAXED);
    if (kind < 4) __atomic_fetch_add(&m->link_msgs[v * 4 + (uint64_t)kind], 1, __ATOMIC_RELAXED);
}

/* Replays the chunk's traffic log into the statistics. Several threads: the counters of the chunk's own
 * cores are only this chunk's to add to (plain adds); entries for other cores (a message crossing into
 * another band) are deferred to replay_foreign, which runs once every chunk is done. */
static void replay_log(tctx *t) {
    mica_mesh *m = t->run->m;
    const bool alone = one_thread(t->run);
    const int64_t W = m->width;
    uint64_t bytes = 0;
    t->n_foreign = 0;
    for (size_t i = 0; i < t->log_len; ++i) {
        uint64_t e = t->log[i];
        if ((e & 7) == LOG_BYTES) {
            bytes = e >> 3;
            continue;
        }
        if (alone || core_in_band(&t->band, (int64_t)(e >> 3), W)) {
            count_entry(m, e, bytes, true);
        } else if (grow((void **)&t->foreign, &t->foreign_cap, t->n_foreign + 2, sizeof *t->foreign)) {
            t->foreign[t->n_foreign++] = e;
            t->foreign[t->n_foreign++] = bytes;
        } else {
            count_entry(m, e, bytes, false); /* no room to defer: an atomic add is as exact */
        }
    }
}

/* The entries replay_log deferred (serial: after the phase). */
static void replay_foreign(run_t *r) {
    for (int i = 0; i < r->nt_op; ++i)
        for (size_t k = 0; k < r->t[i].n_foreign; k += 2)
            count_entry(r->m, r->t[i].foreign[k], r->t[i].foreign[k + 1], true);
}

/* Completes the timing of every core that received in the exchange (cells of band b): its latest
 * completion and its longest transfer (senders did theirs in phase B, or retime_shared), applied by
 * x_commit when the core's clock is next read. */
static void finish_timing(tctx *t, const band_t *b) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    for (int64_t j = 0; j < r->n_recvs; ++j) {
        const recv_e *e = &r->recvs[j];
        double dur = -1.0;
        bool varies = false; /* box sizes vary between cores only along x or y axes */
        for (int d = 0; d < e->box.rank; ++d) varies |= e->box.axis[d] == 1 || e->box.axis[d] == 2;
        FOR_BAND_CELLS(b, &e->rc, x, y) {
            int64_t idx = cell_of(&e->rc, x, y);
            if (e->count[idx] != 1) continue;
            int64_t core = y * m->width + x;
            if (dur < 0 || varies) dur = (double)box_bytes(&e->box, x, y, r->v) / m->link_bw;
            double end = e->arrive[idx];
            mica_core_t *c = &m->cores[core];
            if (end > c->x_end) c->x_end = end;
            if (dur > c->x_comm) c->x_comm = dur;
        }
    }
}

static void clear_routes(tctx *t, const band_t *b) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    for (int64_t i = 0; i < r->n_routes; ++i) {
        const route_e *e = &r->routes[i];
        FOR_BAND_CELLS(b, &e->rc, x, y) {
            uint8_t *rt = route_at(m, y * m->width + x, e->colour);
            rt[0] = rt[1] = 0;
        }
    }
    for (int64_t j = 0; j < r->n_recvs; ++j) {
        const recv_e *e = &r->recvs[j];
        FOR_BAND_CELLS(b, &e->rc, x, y) *slot_at(m, y * m->width + x, e->colour) = 0;
    }
}

static void phase_finish(tctx *t, const band_t *b) {
    run_t *r = t->run;
    if (r->do_copy) {
        for (int64_t j = 0; j < r->n_recvs; ++j) copy_recv(t, b, j);
        replay_log(t);
        finish_timing(t, b);
    } else {
        /* A failed exchange leaves the clocks alone: drop the scratch of the cores it touched. */
        for (int64_t k = 0; k < r->n_sends + r->n_recvs; ++k) {
            const irect *rc = k < r->n_sends ? &r->sends[k].rc : &r->recvs[k - r->n_sends].rc;
            FOR_BAND_CELLS(b, rc, x, y) {
                int64_t core = y * r->m->width + x;
                if (r->m->cores[core].x_mark == r->m->serial) r->m->cores[core].x_mark = 0;
            }
        }
    }
    clear_routes(t, b);
}

/* ---------------------------------------------------------------------------------------------------
 * COMPUTE
 * ------------------------------------------------------------------------------------------------- */

/* Calls the kernel of compute entry e at `core`, then advances the core's clock by its work; `next` is
 * the core this chunk runs next (-1: none), passed to the kernel module's prefetch hint. */
static void compute_cell(tctx *t, const comp_e *e, int64_t core, int64_t next) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    int64_t x = core % m->width, y = core / m->width;
    if (m->prefetch)
        m->prefetch(next >= 0 ? arena_of(m, next) : NULL, next >= 0 ? m->arena_size[next] : 0);
    r->kernels[e->kernel](arena_of(m, core), x, y, r->v, r->scalars);
    t->computes++;
    mica_work_fn work = e->kernel < m->n_work ? m->work[e->kernel] : NULL;
    if (!work) return;
    x_commit(m, core);
    double cycles = work(x, y, r->v);
    m->cores[core].pre = m->cores[core].clock; /* a later PREFETCH is issued from here */
    m->cores[core].pre_tag = r->tag;
    m->cores[core].clock += cycles;
    m->cores[core].comp += cycles;
}

/* Runs the kernels of band b, each cell once its successor is known (for the prefetch hint). */
static void phase_compute(tctx *t, const band_t *b) {
    run_t *r = t->run;
    const int64_t W = r->m->width;
    t->computes = 0;
    const comp_e *pe = NULL; /* the cell waiting for its successor: entry and core */
    int64_t pcore = -1;
    for (int64_t i = 0; i < r->n_comps; ++i) { /* entries in order: a core's calls keep theirs */
        const comp_e *e = &r->comps[i];
        FOR_BAND_CELLS(b, &e->rc, x, y) {
            if (pe) compute_cell(t, pe, pcore, y * W + x);
            pe = e;
            pcore = y * W + x;
        }
    }
    if (pe) compute_cell(t, pe, pcore, -1);
}

/* ---------------------------------------------------------------------------------------------------
 * Thread pool
 * ------------------------------------------------------------------------------------------------- */

static void run_phase(run_t *r, tctx *t) {
    band_t b = band_of(r, t->tid);  /* chunk t->tid of nt_op */
    t->band = b;
    switch (r->phase) {
    case PH_SETUP: phase_setup(t, &b); break;
    case PH_ROUTE: phase_route(t, &b); break;
    case PH_CHECK: phase_check(t, &b); break;
    case PH_FINISH: phase_finish(t, &b); break;
    default: phase_compute(t, &b); break;
    }
}

/* Runs chunk t of the current phase on worker w, lending it w's routing scratch. */
static void run_chunk(run_t *r, worker_t *w, tctx *t) {
    t->visited = w->visited;
    t->stamp = w->stamp;
    t->stack = w->stack;
    t->stack_cap = w->stack_cap;
    run_phase(r, t);
    w->visited = t->visited;
    w->stamp = t->stamp;
    w->stack = t->stack;
    w->stack_cap = t->stack_cap;
    t->visited = NULL;
    t->stack = NULL;
    t->stack_cap = 0;
}

/* Claims and runs chunks of the published phase until none is left. Chunks are claimed dynamically
 * from the ticket, which carries the generation and chunk count with the next index, so a claim never
 * reads run state that the caller may be rewriting for a later phase; a successful claim (acquire)
 * sees everything the caller published with the ticket (release). A thread the OS delays holds up at
 * most the chunk it runs -- the phase ends when every chunk is done, whether or not every thread took
 * part -- and which thread runs a chunk never changes its result (every chunk has its own context). */
static void run_chunks(run_t *r, worker_t *w) {
    uint64_t tk = __atomic_load_n(&r->ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t idx = tk & 0xFFFF, n = (tk >> 16) & 0xFFFF;
        if (idx >= n) return;
        if (!__atomic_compare_exchange_n(&r->ticket, &tk, tk + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue; /* tk now holds the current ticket */
        run_chunk(r, w, &r->t[idx]);
        if (__atomic_add_fetch(&r->done, 1, __ATOMIC_ACQ_REL) == (int)n) {
            pthread_mutex_lock(&r->mu);
            pthread_cond_broadcast(&r->done_cv);
            pthread_mutex_unlock(&r->mu);
        }
        tk = __atomic_load_n(&r->ticket, __ATOMIC_ACQUIRE);
    }
}

/* Waiting for the end of a phase. Waking a thread asleep on a condition variable costs tens of
 * microseconds on a virtual machine (its core halts), and an exchange runs three phases in a row, each
 * ending with the calling thread waiting for the last chunk another thread runs: the calling thread polls
 * for up to SPIN_NS before it sleeps. Measured on 2 free cores, matmul 512^3 on 128x128 (512 phases):
 * 2 threads 0.285 -> 0.264 s (median of 12 interleaved rounds). Workers do not poll for the next phase:
 * that was as fast on free cores but made runs 2-3 times slower whenever another process competed for
 * the cores (a polling thread loses the scheduler's credit for sleeping, then gets preempted while it
 * holds a chunk). */
#define SPIN_NS 40000

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* True once a phase after generation `seen` is published or the pool is told to quit. */
static bool news(const run_t *r, uint32_t seen) {
    return __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != seen || __atomic_load_n(&r->quit, __ATOMIC_ACQUIRE);
}

/* True once every chunk of the running phase is done. */
static bool phase_done(const run_t *r) { return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) >= r->nt_op; }

/* Polls for up to SPIN_NS until the running phase is done; true when it is. */
static bool spin_until_done(const run_t *r) {
    int64_t until = now_ns() + SPIN_NS;
    for (int i = 1;; ++i) {
        if (phase_done(r)) return true;
        cpu_relax();
        if (i % 64 == 0 && now_ns() > until) return false;
    }
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    run_t *r = w->run;
    uint32_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!news(r, seen)) pthread_cond_wait(&r->work_cv, &r->mu);
        bool quit = __atomic_load_n(&r->quit, __ATOMIC_ACQUIRE);
        seen = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&r->mu);
        if (quit) break;
        run_chunks(r, w);
    }
    return NULL;
}

/* Chunks per thread: the unit of dynamic load balancing of a phase (n_chunks < 2^16: see run_chunks). */
#define CHUNKS_PER_THREAD 8

/* Starts up to n-1 workers; the calling thread is worker 0. Fewer threads are fine (results do not
 * depend on the count). */
static bool pool_start(run_t *r, int n) {
    r->n_chunks = n == 1 ? 1 : n * CHUNKS_PER_THREAD;
    r->t = calloc((size_t)r->n_chunks, sizeof *r->t);
    r->w = calloc((size_t)n, sizeof *r->w);
    if (!r->t || !r->w) {
        free(r->t);
        free(r->w);
        r->t = NULL;
        r->w = NULL;
        return false;
    }
    for (int i = 0; i < r->n_chunks; ++i) {
        r->t[i].run = r;
        r->t[i].tid = i;
        r->t[i].err_key = NO_FAULT;
    }
    for (int i = 0; i < n; ++i) {
        r->w[i].run = r;
        r->w[i].id = i;
    }
    r->nt = 1;
    if (n == 1) return true;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work_cv, NULL);
    pthread_cond_init(&r->done_cv, NULL);
    while (r->nt < n && pthread_create(&r->w[r->nt].thread, NULL, worker_main, &r->w[r->nt]) == 0) r->nt++;
    return true;
}

static void pool_stop(run_t *r, int n) {
    if (!r->t) return;
    if (n > 1) {
        pthread_mutex_lock(&r->mu);
        __atomic_store_n(&r->quit, true, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&r->work_cv);
        pthread_mutex_unlock(&r->mu);
        for (int i = 1; i < r->nt; ++i) pthread_join(r->w[i].thread, NULL);
        pthread_cond_destroy(&r->done_cv);
        pthread_cond_destroy(&r->work_cv);
        pthread_mutex_destroy(&r->mu);
    }
    for (int i = 0; i < r->n_chunks; ++i) {
        free(r->t[i].visited);
        free(r->t[i].stack);
        free(r->t[i].log);
        free(r->t[i].msgs);
        free(r->t[i].dfs);
        free(r->t[i].foreign);
    }
    for (int i = 0; i < n; ++i) {
        free(r->w[i].visited);
        free(r->w[i].stack);
    }
    free(r->t);
    free(r->w);
}

/* Runs one phase of the current op, split into nt_op chunks, and waits for it. */
static void dispatch(run_t *r, int phase) {
    r->phase = phase;
    r->best_key = NO_FAULT;
    for (int i = 0; i < r->nt_op; ++i) r->t[i].err_key = NO_FAULT;
    if (r->nt_op == 1 || r->nt == 1) {
        for (int i = 0; i < r->nt_op; ++i) run_chunk(r, &r->w[0], &r->t[i]);
        return;
    }
    /* Publish: the phase's state above, then the ticket (release), then wake the workers. */
    __atomic_store_n(&r->done, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&r->mu);
    uint32_t gen = r->gen + 1;
    __atomic_store_n(&r->ticket, ((uint64_t)gen << 32) | ((uint64_t)r->nt_op << 16), __ATOMIC_RELEASE);
    __atomic_store_n(&r->gen, gen, __ATOMIC_RELEASE); /* read outside the lock by news() */
    pthread_cond_broadcast(&r->work_cv);
    pthread_mutex_unlock(&r->mu);
    run_chunks(r, &r->w[0]);
    if (!spin_until_done(r)) {
        pthread_mutex_lock(&r->mu);
        while (!phase_done(r)) pthread_cond_wait(&r->done_cv, &r->mu);
        pthread_mutex_unlock(&r->mu);
    }
}

/* Chunks per thread of an exchange with ordered copies: a payload read in another band costs a second
 * copy (see "Payload copies"), and taller bands have fewer edges (rows of a band are whole rows of the
 * op's bounding box, so a column shift crosses one edge per band). */
#define ORDERED_CHUNKS_PER_THREAD 2

/* Chunk count for an op touching `cells` cells: 1 for small ops, else every chunk of the pool (fewer for
 * an exchange with ordered copies). */
static void plan_threads(run_t *r, int64_t cells, bool ordered) {
    r->nt_op = cells < SMALL_OP_CELLS ? 1 : r->n_chunks;
    if (ordered && r->nt_op > ORDERED_CHUNKS_PER_THREAD * r->nt) r->nt_op = ORDERED_CHUNKS_PER_THREAD * r->nt;
}

/* Prefix naming the op and its loop iteration, e.g. "op 7 [v0=3, v1=0]". */
static void op_prefix(const run_t *r, char *buf, size_t len) {
    int n = snprintf(buf, len, "op %lld", (long long)r->op_id);
    for (int i = 0; i < r->depth && n > 0 && (size_t)n < len; ++i)
        n += snprintf(buf + n, len - (size_t)n, "%sv%d=%lld", i ? ", " : " [", r->active[i],
                      (long long)r->v[r->active[i]]);
    if (r->depth && n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, "]");
}

__attribute__((format(printf, 2, 3))) static void run_fail(run_t *r, const char *fmt, ...) {
    char prefix[PREFIX_LEN], msg[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    op_prefix(r, prefix, sizeof prefix);
    snprintf(r->err, sizeof r->err, "%s: %s", prefix, msg);
    r->failed = true;
}

/* After a phase: adopts the smallest fault any thread saw. Returns true if there was one. */
static bool collect_fault(run_t *r) {
    int best = -1;
    for (int i = 0; i < r->nt_op; ++i)
        if (r->t[i].err_key != NO_FAULT && (best < 0 || r->t[i].err_key < r->t[best].err_key)) best = i;
    if (best >= 0) run_fail(r, "%s", r->t[best].err);
    return best >= 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Interpreter
 * ------------------------------------------------------------------------------------------------- */

static void bbox_add(irect *bb, const irect *rc, bool *any) {
    if (rect_area(rc) == 0) return;
    if (!*any) {
        *bb = *rc;
        bb->xs = bb->ys = 1; /* the bounding box of every entry: all its cores */
        bb->xp = bb->yp = 0;
        *any = true;
        return;
    }
    bb->x0 = min64(bb->x0, rc->x0);
    bb->x1 = max64(bb->x1, rc->x1);
    bb->y0 = min64(bb->y0, rc->y0);
    bb->y1 = max64(bb->y1, rc->y1);
}

/* Decodes the entries of an EXCHANGE at the current loop values; false if out of host memory. */
static bool load_exchange(run_t *r, const int64_t *w, int64_t *cells) {
    const int64_t W = r->m->width, H = r->m->height;
    r->op_id = w[1];
    r->n_routes = w[2];
    r->n_sends = w[3];
    r->n_recvs = w[4];
    if (!grow((void **)&r->routes, &r->routes_cap, (size_t)r->n_routes, sizeof *r->routes) ||
        !grow((void **)&r->sends, &r->sends_cap, (size_t)r->n_sends, sizeof *r->sends) ||
        !grow((void **)&r->recvs, &r->recvs_cap, (size_t)r->n_recvs, sizeof *r->recvs))
        return false;
    bool any = false;
    int64_t work = 0, recv_cells = 0;
    const int64_t *p = w + W_EXCH_HEAD;
    for (int64_t i = 0; i < r->n_routes; ++i, p += W_ROUTE) {
        route_e *e = &r->routes[i];
        e->colour = (int32_t)p[0];
        if (!use_colour(r->m, e->colour)) return false;
        e->rx = (uint8_t)p[1];
        e->tx = (uint8_t)p[2];
        e->rc = eval_rect(p + 3, r->v, W, H);
        bbox_add(&r->bbox, &e->rc, &any);
        work += rect_area(&e->rc);
    }
    for (int64_t i = 0; i < r->n_sends; ++i, p += W_SEND) {
        send_e *e = &r->sends[i];
        e->colour = (int32_t)p[0];
        if (!use_colour(r->m, e->colour)) return false;
        e->max_hops = p[1];
        e->rc = eval_rect(p + 2, r->v, W, H);
        load_box(p + 2 + W_RECT, &e->box);
        box_fix(&e->box, r->v);
        e->staged = e->ordered = false;
        bbox_add(&r->bbox, &e->rc, &any);
        work += rect_area(&e->rc);
    }
    for (int64_t i = 0; i < r->n_recvs; ++i, p += W_RECV) {
        recv_e *e = &r->recvs[i];
        e->colour = (int32_t)p[0];
        if (!use_colour(r->m, e->colour)) return false;
        e->rc = eval_rect(p + 1, r->v, W, H);
        load_box(p + 1 + W_RECT, &e->box);
        box_fix(&e->box, r->v);
        bbox_add(&r->bbox, &e->rc, &any);
        work += rect_area(&e->rc);
        recv_cells += rect_count(&e->rc);
    }
    if (!any) r->bbox = (irect){0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0};
    *cells = work;
    /* Per-receive state arrays, carved out of two shared scratch buffers. */
    int64_t send_cells = 0;
    for (int64_t i = 0; i < r->n_sends; ++i) send_cells += rect_count(&r->sends[i].rc);
    if (!grow((void **)&r->recv_count, &r->recv_count_cap, (size_t)recv_cells, sizeof *r->recv_count) ||
        !grow((void **)&r->recv_src, &r->recv_src_cap, (size_t)recv_cells, sizeof *r->recv_src) ||
        !grow((void **)&r->recv_arrive, &r->recv_arrive_cap, (size_t)recv_cells, sizeof *r->recv_arrive) ||
        !grow((void **)&r->send_end, &r->send_end_cap, (size_t)send_cells, sizeof *r->send_end) ||
        !grow((void **)&r->recv_next, &r->recv_next_cap, (size_t)recv_cells, sizeof *r->recv_next) ||
        !grow((void **)&r->recv_state, &r->recv_state_cap, (size_t)recv_cells, sizeof *r->recv_state) ||
        !grow((void **)&r->recv_entry, &r->recv_entry_cap, (size_t)recv_cells, sizeof *r->recv_entry) ||
        !grow((void **)&r->send_readers, &r->send_readers_cap, (size_t)send_cells, sizeof *r->send_readers) ||
        !grow((void **)&r->send_kept, &r->send_kept_cap, (size_t)send_cells, sizeof *r->send_kept))
        return false;
    int64_t off = 0;
    for (int64_t i = 0; i < r->n_recvs; ++i) {
        r->recvs[i].count = r->recv_count + off;
        r->recvs[i].src = r->recv_src + off;
        r->recvs[i].arrive = r->recv_arrive + off;
        r->recvs[i].base = off;
        off += rect_count(&r->recvs[i].rc);
    }
    off = 0;
    for (int64_t i = 0; i < r->n_sends; ++i) {
        r->sends[i].end = r->send_end + off;
        r->sends[i].readers = r->send_readers + off;
        r->sends[i].kept = r->send_kept + off;
        off += rect_count(&r->sends[i].rc);
    }
    return true;
}

/* Whether receive v may overwrite, on some core, bytes that send e sends from there. */
static bool may_overwrite(const recv_e *v, const send_e *e) {
    int64_t a0 = e->box.offset, a1 = a0 + e->box.max_bytes;
    int64_t b0 = v->box.offset, b1 = b0 + v->box.max_bytes;
    return a0 < b1 && b0 < a1 && rects_meet(&e->rc, &v->rc);
}

/* Lists, per receive, the ordered sends it may overwrite (run_t.clobbers); marks every send it may
 * overwrite staged. */
static bool plan_clobbers(run_t *r) {
    size_t n = 0;
    if (!grow((void **)&r->clobber0, &r->clobber0_cap, (size_t)r->n_recvs + 1, sizeof *r->clobber0))
        return false;
    for (int64_t j = 0; j < r->n_recvs; ++j) {
        recv_e *v = &r->recvs[j];
        r->clobber0[j] = (int64_t)n;
        v->ordered = false;
        for (int64_t s = 0; s < r->n_sends; ++s) {
            send_e *e = &r->sends[s];
            if (!may_overwrite(v, e)) continue;
            e->staged = true;
            e->ordered = e->box.max_bytes >= ORDERED_COPY_MIN;
            if (!e->ordered) continue;
            if (!grow((void **)&r->clobbers, &r->clobbers_cap, n + 1, sizeof *r->clobbers)) return false;
            r->clobbers[n++] = s;
            v->ordered = true;
        }
    }
    r->clobber0[r->n_recvs] = (int64_t)n;
    return true;
}

/* Whether some payload of the op is copied in order (plan_staging has run). */
static bool has_ordered(const run_t *r) {
    for (int64_t s = 0; s < r->n_sends; ++s)
        if (r->sends[s].ordered) return true;
    return false;
}

/* Marks the sends whose source bytes a receive of the same op may overwrite on the same core, and
 * sizes the staging buffer for them. False if out of host memory. */
static bool plan_staging(run_t *r) {
    int64_t total = 0;
    if (!plan_clobbers(r)) return false;
    for (int64_t s = 0; s < r->n_sends; ++s) {
        send_e *e = &r->sends[s];
        if (!e->staged) continue;
        e->stage_slot = min64(e->box.max_bytes, r->m->arena_max);
        e->stage_base = total;
        total = sat_add(total, sat_mul(rect_count(&e->rc), e->stage_slot));
    }
    return total < HOST_LIMIT && grow((void **)&r->stage, &r->stage_cap, (size_t)total, 1);
}

static void merge_exchange_stats(run_t *r) {
    mica_totals *T = &r->m->totals;
    for (int i = 0; i < r->nt_op; ++i) {
        const tctx *t = &r->t[i];
        T->messages += t->messages;
        T->deliveries += t->deliveries;
        T->link_bytes += t->link_bytes;
        T->link_messages += t->link_messages;
        if (t->max_hops > T->max_hops) T->max_hops = t->max_hops;
        r->m->timed += t->messages;
    }
    if (rect_area(&r->bbox) > 0) T->exchanges++; /* all rectangles empty: guarded out, not executed */
}

/* ---------------------------------------------------------------------------------------------------
 * EXCHANGE timing of messages that share links (serial, between phases C and D)
 *
 * Messages whose links carried no other message of the exchange were timed in phase B. The others are
 * re-timed here by a discrete-event walk over their multicast trees: events are "head of message q
 * reaches router c at cycle h", handled in (h, q, sequence) order, so a link serves messages in the
 * order their heads reach it; q is the message's rank by (sender core, send entry), which makes the
 * result independent of the thread count.
 * ------------------------------------------------------------------------------------------------- */

typedef struct {
    double h;
    uint64_t q, seq;
    uint32_t core, hops;
} tev_t;

static bool tev_less(const tev_t *a, const tev_t *b) {
    if (a->h != b->h) return a->h < b->h;
    if (a->q != b->q) return a->q < b->q;
    return a->seq < b->seq;
}

static bool heap_push(tev_t **hp, size_t *n, size_t *cap, tev_t ev) {
    if (!grow((void **)hp, cap, *n + 1, sizeof **hp)) return false;
    tev_t *h = *hp;
    size_t i = (*n)++;
    while (i > 0 && tev_less(&ev, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = ev;
    return true;
}

static tev_t heap_pop(tev_t *h, size_t *n) {
    tev_t top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && tev_less(&h[c + 1], &h[c])) c++;
        if (!tev_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

typedef struct {
    uint64_t key; /* (sender core << 24) | send entry: the canonical order */
    int64_t bytes;
    double inject_end;
} tq_t;

static int tq_cmp(const void *a, const void *b) {
    uint64_t x = ((const tq_t *)a)->key, y = ((const tq_t *)b)->key;
    return x < y ? -1 : x > y;
}

/* Marks the messages that use a shared link and re-times them; false if out of host memory. */
static bool retime_shared(run_t *r) {
    static const int dirs[4] = {MICA_NORTH, MICA_EAST, MICA_SOUTH, MICA_WEST};
    static const int dx[4] = {0, 1, 0, -1}, dy[4] = {-1, 0, 1, 0};
    mica_mesh *m = r->m;
    const int64_t W = m->width;
    tq_t *q = NULL;
    size_t nq = 0, qcap = 0;
    for (int i = 0; i < r->nt_op; ++i) {
        tctx *t = &r->t[i];
        for (size_t k = 0; k < t->n_msgs; ++k) {
            tmsg_t *g = &t->msgs[k];
            size_t end = k + 1 < t->n_msgs ? t->msgs[k + 1].log0 : t->log_len;
            for (size_t p = g->log0; p < end && !g->contended; ++p) {
                int kind = (int)(t->log[p] & 7);
                if (kind < 4 && link_shared(m, kind * m->n_cores + (int64_t)(t->log[p] >> 3))) g->contended = true;
            }
            if (!g->contended) continue;
            if (!grow((void **)&q, &qcap, nq + 1, sizeof *q)) goto oom;
            q[nq++] = (tq_t){((uint64_t)g->core << 24) | g->send, (int64_t)(t->log[g->log0] >> 3), 0.0};
        }
    }
    qsort(q, nq, sizeof *q, tq_cmp);
    tev_t *heap = NULL;
    size_t nh = 0, hcap = 0;
    uint64_t seq = 0;
    for (size_t k = 0; k < nq; ++k) {
        uint32_t core = (uint32_t)(q[k].key >> 24);
        double t0 = x_start(r, &m->cores[core]);
        q[k].inject_end = t0;
        if (!heap_push(&heap, &nh, &hcap, (tev_t){t0, k, seq++, core, 0})) goto oom_heap;
    }
    while (nh > 0) {
        tev_t ev = heap_pop(heap, &nh);
        tq_t *g = &q[ev.q];
        const send_e *se = &r->sends[g->key & 0xFFFFFF];
        double dur = (double)g->bytes / m->link_bw;
        int64_t c = ev.core;
        uint8_t tx = route_at(m, c, se->colour)[1];
        if (tx & MICA_RAMP) {
            int32_t j1 = *slot_at(m, c, se->colour);
            recv_e *e = &r->recvs[j1 - 1]; /* phase B checked that the receive exists */
            int64_t x = c % W, y = c / W;
            double ready = x_start(r, &m->cores[c]) + dur;
            e->arrive[cell_of(&e->rc, x, y)] = ev.h + dur > ready ? ev.h + dur : ready;
            if (ev.hops == 0 && ev.h + dur > g->inject_end) g->inject_end = ev.h + dur;
        }
        for (int k = 0; k < 4; ++k) {
            if (!(tx & dirs[k])) continue;
            mica_link_t *lk = &m->links[k * m->n_cores + c];
            if (!(lk->use & USE_RETIMED)) { /* first visit here: start from the state before the op */
                lk->use |= USE_RETIMED;
                lk->busy = lk->prev;
            }
            double start = ev.h > lk->busy ? ev.h : lk->busy;
            lk->busy = start + dur;
            if (ev.hops == 0 && start + dur > g->inject_end) g->inject_end = start + dur;
            int64_t n = (c / W + dy[k]) * W + (c % W + dx[k]);
            if (!heap_push(&heap, &nh, &hcap,
                           (tev_t){start + m->hop_latency, ev.q, seq++, (uint32_t)n, ev.hops + 1}))
                goto oom_heap;
        }
    }
    for (size_t k = 0; k < nq; ++k) {
        send_e *e = &r->sends[q[k].key & 0xFFFFFF];
        int64_t core = (int64_t)(q[k].key >> 24), x = core % W, y = core / W;
        e->end[cell_of(&e->rc, x, y)] = q[k].inject_end;
        sender_done(&m->cores[core], q[k].inject_end, x_start(r, &m->cores[core])); /* contention only delays */
    }
    m->contended += nq;
    free(heap);
    free(q);
    return true;
oom_heap:
    free(heap);
oom:
    free(q);
    return false;
}

/* Phases B and C of an exchange, and the re-timing of messages that share links. */
static void route_and_check(run_t *r) {
    dispatch(r, PH_ROUTE);
    if (collect_fault(r)) return;
    uint64_t expected = 0, matched = 0;
    bool dup = false, shared = false;
    for (int i = 0; i < r->nt_op; ++i) {
        expected += r->t[i].expected;
        matched += r->t[i].matched;
        dup |= r->t[i].dup;
        shared |= r->t[i].shared;
    }
    if (dup || matched != expected) {
        dispatch(r, PH_CHECK);
        if (collect_fault(r)) return;
    }
    if (shared && !retime_shared(r)) run_fail(r, "out of host memory timing messages that share links");
}

static int exec_exchange(run_t *r, int64_t pos) {
    int64_t cells;
    if (!load_exchange(r, r->code + pos, &cells)) {
        run_fail(r, "out of host memory decoding the exchange");
        return 1;
    }
    if (!plan_staging(r)) { /* before anything changed: nothing to undo */
        run_fail(r, "out of host memory for the staging buffer");
        return 1;
    }
    plan_threads(r, cells, has_ordered(r));
    r->prefetch = r->code[pos] == MICA_OP_PREFETCH;
    r->m->serial++;
    dispatch(r, PH_SETUP);
    if (!collect_fault(r)) route_and_check(r);
    r->do_copy = !r->failed;
    dispatch(r, PH_FINISH);
    if (r->failed) {
        links_undo(r);
        return 1;
    }
    replay_foreign(r);
    merge_exchange_stats(r);
    return 0;
}

/* First core of rc (row-major) without an arena, or -1. */
static int64_t first_bare_core(const mica_mesh *m, const irect *rc) {
    FOR_RECT_CELLS(rc, x, y)
    if (m->arena_size[y * m->width + x] == 0) return y * m->width + x;
    return -1;
}

/* Number of member cores of rc that have an arena. */
static int64_t arena_count(const mica_mesh *m, const irect *rc) {
    if (rc->xs != 1 || rc->ys != 1) {
        int64_t n = 0;
        FOR_RECT_CELLS(rc, x, y) n += m->arena_size[y * m->width + x] != 0;
        return n;
    }
    const uint32_t *P = m->arena_psum;
    int64_t S = m->width + 1;
    return (int64_t)P[rc->y1 * S + rc->x1] - P[rc->y0 * S + rc->x1] - P[rc->y1 * S + rc->x0] +
           P[rc->y0 * S + rc->x0];
}

static int exec_compute(run_t *r, int64_t pos) {
    const int64_t *w = r->code + pos;
    r->op_id = w[1];
    r->n_comps = w[2];
    if (!grow((void **)&r->comps, &r->comps_cap, (size_t)r->n_comps, sizeof *r->comps)) {
        run_fail(r, "out of host memory decoding the compute");
        return 1;
    }
    bool any = false;
    int64_t cells = 0, bad_core = -1, bad_kernel = 0;
    const int64_t *p = w + W_COMP_HEAD;
    for (int64_t i = 0; i < r->n_comps; ++i, p += W_CENTRY) {
        comp_e *e = &r->comps[i];
        e->kernel = p[0];
        e->rc = eval_rect(p + 1, r->v, r->m->width, r->m->height);
        bbox_add(&r->bbox, &e->rc, &any);
        cells += rect_area(&e->rc);
        if (arena_count(r->m, &e->rc) != rect_count(&e->rc)) {
            int64_t c = first_bare_core(r->m, &e->rc);
            if (bad_core < 0 || c < bad_core) {
                bad_core = c;
                bad_kernel = e->kernel;
            }
        }
    }
    if (bad_core >= 0) {
        run_fail(r, "compute kernel %lld at core (%lld,%lld), which has no arena", (long long)bad_kernel,
                 (long long)(bad_core % r->m->width), (long long)(bad_core / r->m->width));
        return 1;
    }
    if (!any) return 0;
    /* Kernel calls carry real work: split them over the threads whenever each gets a core or two. */
    r->nt_op = cells >= 2 * (int64_t)r->n_chunks ? r->n_chunks : (cells >= 2 * (int64_t)r->nt ? r->nt : 1);
    dispatch(r, PH_COMPUTE);
    for (int i = 0; i < r->nt_op; ++i) r->m->totals.computes += r->t[i].computes;
    return 0;
}

/* Number of EXCHANGE and COMPUTE ops that running [pos, end) executes (loops multiplied out,
 * saturating); the denominator of mica_progress. The code is validated. */
static int64_t count_ops(const int64_t *code, int64_t pos, int64_t end) {
    int64_t n = 0;
    while (pos < end) {
        const int64_t *w = code + pos;
        if (w[0] == MICA_OP_LOOP) {
            if (w[3] > 0) n = sat_add(n, sat_mul(w[2], count_ops(code, pos + W_LOOP_HEAD, pos + W_LOOP_HEAD + w[3])));
            pos += W_LOOP_HEAD + w[3];
        } else {
            n = sat_add(n, 1);
            pos += w[0] == MICA_OP_EXCHANGE || w[0] == MICA_OP_PREFETCH ? W_EXCH_HEAD + w[2] * W_ROUTE + w[3] * W_SEND + w[4] * W_RECV
                                            : W_COMP_HEAD + w[2] * W_CENTRY;
        }
    }
    return n;
}

/* One more op done (read by mica_progress from another thread). */
static void progress_step(mica_mesh *m) {
    __atomic_store_n(&m->progress_done, m->progress_done + 1, __ATOMIC_RELAXED);
}

void mica_progress(const mica_mesh *m, int64_t *done, int64_t *total) {
    if (done) *done = m ? __atomic_load_n(&m->progress_done, __ATOMIC_RELAXED) : 0;
    if (total) *total = m ? __atomic_load_n(&m->progress_total, __ATOMIC_RELAXED) : 0;
}

static int exec_block(run_t *r, int64_t pos, int64_t end) {
    while (pos < end) {
        const int64_t *w = r->code + pos;
        switch (w[0]) {
        case MICA_OP_LOOP: {
            int slot = (int)w[1];
            int64_t count = w[2], body = w[3];
            r->active[r->depth++] = slot;
            uint64_t outer = r->tag;
            r->tag = ++r->m->tags;
            for (int64_t i = 0; i < (body > 0 ? count : 0); ++i) { /* an empty body does nothing */
                r->v[slot] = i;
                if (exec_block(r, pos + W_LOOP_HEAD, pos + W_LOOP_HEAD + body)) return 1;
            }
            r->tag = outer;
            r->v[slot] = 0;
            r->depth--;
            pos += W_LOOP_HEAD + body;
            break;
        }
        case MICA_OP_EXCHANGE:
        case MICA_OP_PREFETCH:
            if (exec_exchange(r, pos)) return 1;
            progress_step(r->m);
            pos += W_EXCH_HEAD + w[2] * W_ROUTE + w[3] * W_SEND + w[4] * W_RECV;
            break;
        default:
            if (exec_compute(r, pos)) return 1;
            progress_step(r->m);
            pos += W_COMP_HEAD + w[2] * W_CENTRY;
            break;
        }
    }
    return 0;
}

int32_t mica_run(mica_mesh *m, const int64_t *code, int64_t n_words, mica_kernel_fn *kernels,
                 int32_t n_kernels, const double *scalars, int32_t n_threads, char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "run: no mesh");
        return 1;
    }
    if (n_words < 0 || (n_words > 0 && !code)) {
        set_err(err, errlen, "run: bad op code (%lld words)", (long long)n_words);
        return 1;
    }
    if (n_threads < 1 || n_threads > MAX_THREADS) {
        set_err(err, errlen, "run: thread count %d not in 1..%d", (int)n_threads, MAX_THREADS);
        return 1;
    }
    if (n_kernels < 0) n_kernels = 0;
    if (n_words == 0) return 0;
    if (!m->committed) {
        set_err(err, errlen, "run: the mesh is not committed");
        return 1;
    }
    vctx vc = {code, m, kernels, n_kernels, err, errlen};
    if (validate_block(&vc, 0, n_words, 0)) return 1;
    __atomic_store_n(&m->progress_done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&m->progress_total, count_ops(code, 0, n_words), __ATOMIC_RELAXED);

    run_t *r = calloc(1, sizeof *r);
    if (!r || !pool_start(r, n_threads)) {
        free(r);
        set_err(err, errlen, "run: out of host memory");
        return 1;
    }
    r->m = m;
    r->code = code;
    r->kernels = kernels;
    r->scalars = scalars;
    r->tag = ++m->tags;
    int status = exec_block(r, 0, n_words);
    if (status) set_err(err, errlen, "%s", r->err);
    for (int64_t c = 0; c < m->n_cores; ++c) x_commit(m, c); /* clocks complete for the statistics */
    pool_stop(r, n_threads);
    free(r->routes);
    free(r->sends);
    free(r->recvs);
    free(r->comps);
    free(r->recv_count);
    free(r->recv_src);
    free(r->stage);
    free(r->send_end);
    free(r->recv_arrive);
    free(r->recv_next);
    free(r->recv_state);
    free(r->send_readers);
    free(r->send_kept);
    free(r->clobbers);
    free(r->clobber0);
    free(r->recv_entry);
    free(r);
    return status ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Host copies
 * ------------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------------
 * Host copies on several threads: the rows of the rectangle are split into contiguous parts, one per
 * thread (each copies different cores and different bytes of the host array, so the result is the
 * same); the pages of a fresh pool are then faulted in, and zeroed by the OS, in parallel too.
 * ------------------------------------------------------------------------------------------------- */

/* Below this many bytes a host copy stays on the calling thread (a thread costs tens of microseconds). */
#define HOST_PARALLEL_MIN (INT64_C(4) << 20)

typedef struct host_job {
    mica_mesh *m;
    const irect *rc;
    int32_t dir;                  /* mica_host_copy's direction */
    void *host;
    const box_t *box;             /* mica_host_copy */
    const int64_t *hstride;
    const int64_t *shape, *counts, *origins; /* mica_host_gather */
    int rank;
} host_job_t;

typedef struct {
    const host_job_t *job;
    void (*rows)(const host_job_t *, int64_t, int64_t);
    int64_t y0, y1;
    pthread_t thread;
} host_part_t;

static void *host_part_main(void *arg) {
    host_part_t *p = arg;
    p->rows(p->job, p->y0, p->y1);
    return NULL;
}

/* Runs rows(job, ya, yb) over the member rows of job->rc, split over the mesh's host threads when the
 * copy moves at least HOST_PARALLEL_MIN bytes (a thread that cannot start leaves its part to the
 * caller). */
static void host_parallel(const mica_mesh *m, const host_job_t *job,
                          void (*rows)(const host_job_t *, int64_t, int64_t), int64_t bytes) {
    const irect *rc = job->rc;
    int n = bytes >= HOST_PARALLEL_MIN ? m->host_threads : 1;
    host_part_t parts[MAX_THREADS];
    int64_t y = rc->y0, h = rc->y1 - rc->y0;
    for (int i = 0; i < n; ++i) {
        parts[i] = (host_part_t){job, rows, y, rc->y0 + h * (i + 1) / n, 0};
        y = parts[i].y1;
    }
    bool started[MAX_THREADS] = {false};
    for (int i = 1; i < n; ++i)
        started[i] = pthread_create(&parts[i].thread, NULL, host_part_main, &parts[i]) == 0;
    rows(job, parts[0].y0, parts[0].y1);
    for (int i = 1; i < n; ++i) {
        if (started[i]) pthread_join(parts[i].thread, NULL);
        else rows(job, parts[i].y0, parts[i].y1);
    }
}

/* Member rows [ya, yb) of job->rc: the first member row at or after ya. */
#define FOR_JOB_ROWS(rc, ya, yb, y) for (int64_t y = align_up((ya), (rc)->ys, (rc)->yp); y < (yb); y += (rc)->ys)

/* Copies one core's packed box to/from its place in the row-major host array. */
static void copy_block(int dir, uint8_t *host, const int64_t *hstride, uint8_t *core, const box_t *b,
                       const int64_t *lo, const int64_t *ext) {
    int rank = b->rank;
    if (rank == 0) {
        if (dir == 0) memcpy(core, host, (size_t)b->elem);
        else memcpy(host, core, (size_t)b->elem);
        return;
    }
    size_t run = (size_t)(ext[rank - 1] * b->elem);
    int64_t idx[MICA_MAX_RANK] = {0};
    for (;;) {
        int64_t h = 0;
        for (int d = 0; d < rank; ++d) h += (lo[d] + idx[d]) * hstride[d];
        if (dir == 0) memcpy(core, host + h, run);
        else memcpy(host + h, core, run);
        core += run;
        int d = rank - 2;
        while (d >= 0 && ++idx[d] == ext[d]) idx[d--] = 0;
        if (d < 0) return;
    }
}

/* Loads one core's buffer (counts[] elements per dim, row-major, at dst) from the row-major host array of
 * `shape` (hstride[]: bytes per step of each dim) starting at global index origin[]; elements outside
 * the array are zero. Rows (the last dim) are copied as one run between their zero margins. */
static void gather_block(uint8_t *dst, const uint8_t *host, int64_t elem, int rank, const int64_t *shape,
                         const int64_t *hstride, const int64_t *counts, const int64_t *origin) {
    const int last = rank - 1;
    const int64_t n = counts[last], lo = origin[last];
    const int64_t a = clamp64(-lo, 0, n), b = clamp64(shape[last] - lo, a, n); /* valid [a, b) of a row */
    int64_t idx[MICA_MAX_RANK] = {0};
    for (;;) {
        bool inside = true;
        int64_t h = 0;
        for (int d = 0; d < last; ++d) {
            int64_t g = origin[d] + idx[d];
            inside &= g >= 0 && g < shape[d];
            h += g * hstride[d];
        }
        if (inside && b > a) {
            memset(dst, 0, (size_t)(a * elem));
            memcpy(dst + a * elem, host + h + (lo + a) * elem, (size_t)((b - a) * elem));
            memset(dst + b * elem, 0, (size_t)((n - b) * elem));
        } else {
            memset(dst, 0, (size_t)(n * elem));
        }
        dst += n * elem;
        int d = last - 1;
        while (d >= 0 && ++idx[d] == counts[d]) idx[d--] = 0;
        if (d < 0) return;
    }
}

/* mica_host_gather's loads of the member rows [ya, yb) (origins row-major over the members). */
static void gather_rows(const host_job_t *j, int64_t ya, int64_t yb) {
    const irect *rc = j->rc;
    FOR_JOB_ROWS(rc, ya, yb, y) {
        const int64_t *org = j->origins + ((y - rc->fy) / rc->ys) * rc->nx * j->rank;
        for (int64_t x = rc->fx; x < rc->x1; x += rc->xs, org += j->rank)
            gather_block(arena_of(j->m, y * j->m->width + x) + j->box->offset, j->host, j->box->elem, j->rank,
                         j->shape, j->hstride, j->counts, org);
    }
}

/* Checks the arguments of mica_host_gather; returns NULL or the problem. */
static const char *check_gather(int64_t elem, int32_t rank, const int64_t *shape, const int64_t *counts,
                                int64_t offset, int64_t *buffer_bytes) {
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return "element size not 1, 2, 4 or 8";
    if (rank < 1 || rank > MICA_MAX_RANK) return "rank not in 1..4";
    if (offset < 0 || offset > BOX_LIMIT) return "buffer offset out of range";
    int64_t bytes = elem, host = elem;
    for (int d = 0; d < rank; ++d) {
        if (counts[d] < 0 || shape[d] < 0) return "negative buffer count or array extent";
        bytes = sat_mul(bytes, counts[d]);
        host = sat_mul(host, shape[d]);
    }
    if (bytes > BOX_LIMIT) return "buffer larger than 2^48 bytes";
    if (host > HOST_LIMIT) return "host array too large";
    *buffer_bytes = bytes;
    return NULL;
}

int32_t mica_host_gather(mica_mesh *m, const void *host, int64_t elem, int32_t rank, const int64_t *shape,
                         const int64_t *counts, int64_t offset, const int64_t *rect, const int64_t *origins,
                         int64_t n_cells, char *err, int32_t errlen) {
    if (!m || !shape || !counts || !rect) {
        set_err(err, errlen, "host gather: missing mesh, shape, counts or rect");
        return 1;
    }
    if (!m->committed) {
        set_err(err, errlen, "host gather: the mesh is not committed");
        return 1;
    }
    int64_t bytes = 0;
    const char *why = check_gather(elem, rank, shape, counts, offset, &bytes);
    if (why) {
        set_err(err, errlen, "host gather: %s", why);
        return 1;
    }
    static const int64_t zero[MICA_MAX_VARS] = {0};
    irect rc = eval_rect(rect, zero, m->width, m->height);
    if (n_cells != rect_count(&rc) || (n_cells > 0 && !origins) || (n_cells > 0 && bytes > 0 && !host)) {
        set_err(err, errlen, "host gather: %lld origins for %lld cores, or no host buffer", (long long)n_cells,
                (long long)rect_count(&rc));
        return 1;
    }
    FOR_RECT_CELLS(&rc, x, y) { /* check every core before copying anything */
        int64_t core = y * m->width + x;
        if (bytes == 0 || offset + bytes <= m->arena_size[core]) continue;
        set_err(err, errlen, "host gather: buffer at core (%lld,%lld) spans bytes [%lld,%lld) outside the "
                "core's %lld-byte arena", (long long)x, (long long)y, (long long)offset,
                (long long)(offset + bytes), (long long)m->arena_size[core]);
        return 1;
    }
    if (bytes == 0) return 0;
    int64_t hstride[MICA_MAX_RANK], step = elem;
    for (int d = rank - 1; d >= 0; --d) {
        hstride[d] = step;
        step *= shape[d];
    }
    box_t buf = {0};
    buf.offset = offset;
    buf.elem = elem;
    host_job_t job = {m, &rc, 0, (void *)host, &buf, hstride, shape, counts, origins, rank};
    host_parallel(m, &job, gather_rows, sat_mul(n_cells, bytes));
    return 0;
}

static void copy_block(int dir, uint8_t *host, const int64_t *hstride, uint8_t *core, const box_t *b,
                       const int64_t *lo, const int64_t *ext);

/* mica_host_copy's copies of the member rows [ya, yb). */
static void copy_rows(const host_job_t *j, int64_t ya, int64_t yb) {
    static const int64_t zero[MICA_MAX_VARS] = {0};
    int64_t lo[MICA_MAX_RANK], ext[MICA_MAX_RANK];
    FOR_JOB_ROWS(j->rc, ya, yb, y)
        for (int64_t x = j->rc->fx; x < j->rc->x1; x += j->rc->xs)
            if (box_at(j->box, x, y, zero, lo, ext))
                copy_block(j->dir, j->host, j->hstride, arena_of(j->m, y * j->m->width + x) + j->box->offset,
                           j->box, lo, ext);
}

int32_t mica_host_copy(mica_mesh *m, int32_t dir, void *host, const int64_t *box, const int64_t *rect,
                       char *err, int32_t errlen) {
    if (!m || !box || !rect) {
        set_err(err, errlen, "host copy: missing mesh, box or rect");
        return 1;
    }
    if (!m->committed) {
        set_err(err, errlen, "host copy: the mesh is not committed");
        return 1;
    }
    if (dir != 0 && dir != 1) {
        set_err(err, errlen, "host copy: direction %d is not 0 (load) or 1 (store)", (int)dir);
        return 1;
    }
    const char *why = check_box(box);
    if (why) {
        set_err(err, errlen, "host copy: malformed box: %s", why);
        return 1;
    }
    box_t b;
    load_box(box, &b);
    int64_t hstride[MICA_MAX_RANK], size = b.elem;
    for (int d = b.rank - 1; d >= 0; --d) {
        hstride[d] = size;
        size = sat_mul(size, b.extent[d]);
    }
    if (size > HOST_LIMIT) {
        set_err(err, errlen, "host copy: host array too large");
        return 1;
    }
    static const int64_t zero[MICA_MAX_VARS] = {0};
    irect rc = eval_rect(rect, zero, m->width, m->height);
    int64_t lo[MICA_MAX_RANK], ext[MICA_MAX_RANK];
    /* Check every core before copying anything. */
    FOR_RECT_CELLS(&rc, x, y) {
            int64_t bytes = box_at(&b, x, y, zero, lo, ext), core = y * m->width + x;
            if (bytes == 0 || b.offset + bytes <= m->arena_size[core]) continue;
            set_err(err, errlen,
                    "host copy: box at core (%lld,%lld) spans bytes [%lld,%lld) outside the core's "
                    "%lld-byte arena",
                    (long long)x, (long long)y, (long long)b.offset, (long long)(b.offset + bytes),
                    (long long)m->arena_size[core]);
            return 1;
        }
    if (!host && rect_area(&rc) > 0) {
        set_err(err, errlen, "host copy: no host buffer");
        return 1;
    }
    host_job_t job = {m, &rc, dir, host, &b, hstride, NULL, NULL, NULL, 0};
    host_parallel(m, &job, copy_rows, sat_mul(rect_count(&rc), b.max_bytes));
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------------------------------- */

void mica_stats(const mica_mesh *m, mica_totals *out) {
    if (m && out) *out = m->totals;
}

const uint64_t *mica_link_bytes(const mica_mesh *m) { return m ? m->link_bytes : NULL; }
const uint64_t *mica_link_messages(const mica_mesh *m) { return m ? m->link_msgs : NULL; }
const uint64_t *mica_core_bytes_sent(const mica_mesh *m) { return m ? m->core_sent : NULL; }
const uint64_t *mica_core_bytes_recv(const mica_mesh *m) { return m ? m->core_recv : NULL; }
const int64_t *mica_core_arena_bytes(const mica_mesh *m) { return m ? m->arena_size : NULL; }

int32_t mica_set_timing(mica_mesh *m, double hop_latency, double link_bytes_per_cycle, char *err,
                        int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "set timing: no mesh");
        return 1;
    }
    if (!(hop_latency >= 0 && hop_latency < 1e12) || !(link_bytes_per_cycle > 0 && link_bytes_per_cycle < 1e12)) {
        set_err(err, errlen, "set timing: need hop latency >= 0 and link bandwidth > 0 (got %g, %g)",
                hop_latency, link_bytes_per_cycle);
        return 1;
    }
    m->hop_latency = hop_latency;
    m->link_bw = link_bytes_per_cycle;
    return 0;
}

void mica_set_host_threads(mica_mesh *m, int32_t n) {
    if (m) m->host_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

void mica_set_prefetch(mica_mesh *m, mica_prefetch_fn hint) {
    if (m) m->prefetch = hint;
}

void mica_set_work(mica_mesh *m, mica_work_fn *work, int32_t n_work) {
    if (!m) return;
    m->work = work && n_work > 0 ? work : NULL;
    m->n_work = work && n_work > 0 ? n_work : 0;
}

void mica_timing(const mica_mesh *m, mica_timing_totals *out) {
    if (!m || !out) return;
    double latest = 0.0;
    for (int64_t c = 0; c < m->n_cores; ++c)
        if (m->cores[c].clock > latest) latest = m->cores[c].clock;
    out->cycles = latest;
    out->contended_messages = m->contended;
    out->timed_messages = m->timed;
}

void mica_core_timing(const mica_mesh *m, int32_t which, double *out) {
    if (!m || !out) return;
    for (int64_t c = 0; c < m->n_cores; ++c) {
        const mica_core_t *k = &m->cores[c];
        out[c] = which == MICA_T_CLOCK ? k->clock : which == MICA_T_COMPUTE ? k->comp
                 : which == MICA_T_COMM ? k->comm : k->idle;
    }
}

void mica_stats_reset(mica_mesh *m) {
    if (!m) return;
    size_t n = (size_t)m->n_cores;
    /* A fresh timeline: clocks and link reservations restart at cycle 0. */
    memset(m->cores, 0, n * sizeof *m->cores);
    memset(m->links, 0, n * 4 * sizeof *m->links);
    m->contended = m->timed = 0;
    memset(m->link_bytes, 0, n * 4 * sizeof *m->link_bytes);
    memset(m->link_msgs, 0, n * 4 * sizeof *m->link_msgs);
    memset(m->core_sent, 0, n * sizeof *m->core_sent);
    memset(m->core_recv, 0, n * sizeof *m->core_recv);
    uint64_t bytes = m->totals.arena_bytes, biggest = m->totals.arena_max;
    memset(&m->totals, 0, sizeof m->totals);
    m->totals.arena_bytes = bytes;
    m->totals.arena_max = biggest;
}
