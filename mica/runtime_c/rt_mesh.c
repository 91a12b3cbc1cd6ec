/* MICA mesh emulator, the mesh: host state, arenas, route planes, statistics.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * Layout of the host state
 *   - Per-core bookkeeping arrays (arena size/offset, traffic statistics). These are the only costs of a
 *     core that reserves nothing.
 *   - Route tables ((rx, tx) bytes) and the receive index of the running exchange, stored as one plane of
 *     n_cores entries per colour, allocated when an exchange first uses the colour.
 *   - One pooled, zeroed allocation holding every reserved arena (64-byte aligned, so that neighbouring
 *     arenas never share a cache line), made by mica_mesh_commit.
 */

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
 * its pending exchange (x_mark = that exchange's serial, 0 when none is pending; see x_commit); x_rdur /
 * x_sdur the cycles its router-to-core ramp needs for every byte it takes in / sends in that exchange and
 * x_rhead the earliest cycle a stream it takes in could start draining (finish_timing, sender_done). */
typedef struct {
    double clock, comp, comm, idle;
    double x_end, x_comm;
    double x_rdur, x_sdur, x_rhead;
    uint64_t x_mark;
    double pre;       /* clock at the start of the core's last COMPUTE, run in loop run `pre_tag` */
    uint64_t pre_tag;
    double dram_free; /* when the core's DRAM reader finishes its last read (rt_dram.c) */
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
    int32_t spill_fd;      /* a file to back the pool with (mica_mesh_set_spill), -1: host memory */
    bool spilled;          /* the pool is a shared mapping of that file */
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
    struct trace *trace;   /* per-core timelines (rt_trace.c), NULL while tracing is off */
    struct wave *wave;     /* wavelet-level fabric mode (rt_wavelet.c), NULL while it is off */
    /* DRAM level (rt_dram.c): bandwidths, latency (dram_bw 0: no DRAM), and the bound arrays */
    double dram_bw, dram_core_bw, dram_latency;
    int64_t dram_capacity;
    const uint8_t *dram[MICA_MAX_DRAM];
    int64_t dram_size[MICA_MAX_DRAM];
};

static void trace_free(mica_mesh *m);   /* rt_trace.c */
static void trace_clear(mica_mesh *m);
static int64_t trace_bytes(const mica_mesh *m);
static void wave_free(mica_mesh *m);    /* rt_wavelet.c */
static void wave_reset(mica_mesh *m);
static int64_t wave_bytes(const mica_mesh *m);


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
    m->spill_fd = -1;
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
    trace_free(m);
    wave_free(m);
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
static size_t huge_pages_for(size_t bytes) {
    return (bytes + (size_t)HUGE_PAGE - 1) / (size_t)HUGE_PAGE * (size_t)HUGE_PAGE;
}

static bool pool_alloc(mica_mesh *m, size_t bytes) {
    if (m->spill_fd >= 0) {
        /* Backed by the caller's file: the kernel pages arenas out to it under memory pressure and back in
         * when touched. The file starts empty, so its new blocks read as zeroes, like calloc. They are
         * allocated now (posix_fallocate), so a full disk fails here rather than as SIGBUS on a later write. */
        size_t len = huge_pages_for(bytes);
        int rc = posix_fallocate(m->spill_fd, 0, (off_t)len);
        if (rc != 0) {
            errno = rc;
            return false;
        }
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->spill_fd, 0);
        if (p == MAP_FAILED) return false;
        m->pool_raw = p;
        m->pool_mapped = len;
        m->spilled = true;
        return true;
    }
    if ((int64_t)bytes >= POOL_MMAP_MIN) {
        size_t len = huge_pages_for(bytes);
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

/* An arena's bytes in the pool: its size rounded up to ARENA_ALIGN. */
static int64_t aligned_arena(int64_t bytes) { return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

int64_t mica_mesh_pool_bytes(const mica_mesh *m) {
    if (!m) return 0;
    int64_t total = 0;
    for (int64_t c = 0; c < m->n_cores; ++c)
        if (m->arena_size[c] > 0) total += aligned_arena(m->arena_size[c]);
    return total > 0 ? total + ARENA_ALIGN : 0;
}

int32_t mica_mesh_set_spill(mica_mesh *m, int32_t fd, char *err, int32_t errlen) {
    if (!m || m->committed) {
        set_err(err, errlen, "set_spill: %s", m ? "the mesh is already committed" : "no mesh");
        return 1;
    }
    m->spill_fd = fd;
    return 0;
}

int32_t mica_mesh_spilled(const mica_mesh *m) { return m && m->spilled; }

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
        total += aligned_arena(s);
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
    if (m->spill_fd >= 0)
        set_err(err, errlen, "commit: cannot map %lld bytes of arenas onto the spill file (%s)",
                (long long)mica_mesh_pool_bytes(m), strerror(errno));
    else
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

int64_t mica_mesh_host_bytes(const mica_mesh *m) { return m ? m->host_bytes + trace_bytes(m) + wave_bytes(m) : 0; }

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
    trace_clear(m);
    wave_reset(m);
}
