/* MICA mesh emulator, the trace: per-core timelines of the timing model (see "Trace" in mica_rt.h).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * While tracing is off the mesh holds a NULL pointer and the timing model pays one test of it per clock
 * advance. While on, each core of the traced rectangle has a trace_core_t: its event buffer (grown by
 * doubling up to the cap) and the exchange whose result is pending on it (set by x_touch, recorded by
 * x_commit). A core's record is only touched by the thread that owns the core in the running phase (the
 * same rule as its clock), so recording needs no lock; the byte count is updated atomically.
 */

typedef struct {
    mica_event *ev;
    uint32_t len, cap;
    uint64_t dropped;
    int32_t op, kind; /* the exchange pending on the core: its op_id and MICA_EV_EXCHANGE / _PREFETCH */
} trace_core_t;

struct trace {
    int64_t x0, x1, y0, y1;
    bool all;               /* the rectangle is the whole mesh */
    uint32_t max;           /* events per core */
    int32_t cur_op, cur_kind; /* the exchange being set up (serial: set before its phase A) */
    int64_t bytes;          /* host bytes held (atomic) */
    trace_core_t *core;     /* [(y - y0) * (x1 - x0) + x - x0] */
};

/* The record of `core`, or NULL when it is not traced. */
static trace_core_t *trace_at(const mica_mesh *m, int64_t core) {
    struct trace *T = m->trace;
    if (!T) return NULL;
    if (T->all) return &T->core[core]; /* the whole mesh: no division */
    int64_t x = core % m->width, y = core / m->width;
    if (x < T->x0 || x >= T->x1 || y < T->y0 || y >= T->y1) return NULL;
    return &T->core[(y - T->y0) * (T->x1 - T->x0) + (x - T->x0)];
}

/* Records [start, end) on the core (dropped when its buffer is full or cannot grow). */
static void trace_push(mica_mesh *m, trace_core_t *tc, double start, double end, double comm, int32_t op,
                       int32_t kernel) {
    struct trace *T = m->trace;
    if (tc->len == tc->cap) {
        uint32_t cap = tc->cap ? (tc->cap > T->max / 2 ? T->max : tc->cap * 2) : (T->max < 8 ? T->max : 8);
        mica_event *ev = cap > tc->cap ? realloc(tc->ev, (size_t)cap * sizeof *ev) : NULL;
        if (!ev) {
            tc->dropped++;
            return;
        }
        __atomic_fetch_add(&T->bytes, (int64_t)(cap - tc->cap) * (int64_t)sizeof *ev, __ATOMIC_RELAXED);
        tc->ev = ev;
        tc->cap = cap;
    }
    tc->ev[tc->len++] = (mica_event){start, end, comm, op, kernel};
}

/* Called by x_touch: the exchange being set up is now pending on `core`. */
static void trace_pending(mica_mesh *m, int64_t core) {
    trace_core_t *tc = trace_at(m, core);
    if (!tc) return;
    tc->op = m->trace->cur_op;
    tc->kind = m->trace->cur_kind;
}

/* Called by x_commit: the pending exchange moved the core's clock from `start` to `end`. */
static void trace_exchange(mica_mesh *m, int64_t core, double start, double end, double comm) {
    trace_core_t *tc = trace_at(m, core);
    if (tc) trace_push(m, tc, start, end, comm, tc->op, tc->kind);
}

/* Called by compute_cell: kernel `kernel` of op `op` moved the core's clock from `start` to `end`. */
static void trace_compute(mica_mesh *m, int64_t core, double start, double end, int32_t op, int32_t kernel) {
    trace_core_t *tc = trace_at(m, core);
    if (tc) trace_push(m, tc, start, end, 0.0, op, kernel);
}

static void trace_free(mica_mesh *m) {
    struct trace *T = m->trace;
    if (!T) return;
    int64_t n = (T->x1 - T->x0) * (T->y1 - T->y0);
    for (int64_t i = 0; i < n; ++i) free(T->core[i].ev);
    free(T->core);
    free(T);
    m->trace = NULL;
}

/* Drops every recorded event (their memory too); tracing stays on. */
static void trace_clear(mica_mesh *m) {
    struct trace *T = m->trace;
    if (!T) return;
    int64_t n = (T->x1 - T->x0) * (T->y1 - T->y0);
    for (int64_t i = 0; i < n; ++i) {
        free(T->core[i].ev);
        T->core[i] = (trace_core_t){NULL, 0, 0, 0, 0, MICA_EV_EXCHANGE};
    }
    T->bytes = (int64_t)sizeof *T + n * (int64_t)sizeof *T->core;
}

static int64_t trace_bytes(const mica_mesh *m) {
    return m->trace ? __atomic_load_n(&m->trace->bytes, __ATOMIC_RELAXED) : 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Trace API (mica_rt.h)
 * ------------------------------------------------------------------------------------------------- */

int32_t mica_trace_start(mica_mesh *m, int32_t x0, int32_t x1, int32_t y0, int32_t y1, int64_t max_events,
                         char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "trace: no mesh");
        return 1;
    }
    int64_t xa = clamp64(x0, 0, m->width), xb = clamp64(x1, 0, m->width);
    int64_t ya = clamp64(y0, 0, m->height), yb = clamp64(y1, 0, m->height);
    if (xa >= xb || ya >= yb) {
        set_err(err, errlen, "trace: no core of the %dx%d mesh in [%d,%d) x [%d,%d)", (int)m->width,
                (int)m->height, (int)x0, (int)x1, (int)y0, (int)y1);
        return 1;
    }
    if (max_events < 1 || max_events > UINT32_MAX) {
        set_err(err, errlen, "trace: events per core must be in 1..%u, got %lld", (unsigned)UINT32_MAX,
                (long long)max_events);
        return 1;
    }
    trace_free(m);
    int64_t n = (xb - xa) * (yb - ya);
    struct trace *T = calloc(1, sizeof *T);
    trace_core_t *cores = calloc((size_t)n, sizeof *cores);
    if (!T || !cores) {
        free(T);
        free(cores);
        set_err(err, errlen, "trace: out of host memory for %lld traced cores", (long long)n);
        return 1;
    }
    bool all = xa == 0 && xb == m->width && ya == 0 && yb == m->height;
    *T = (struct trace){xa, xb, ya, yb, all, (uint32_t)max_events, 0, MICA_EV_EXCHANGE, 0, cores};
    m->trace = T;
    trace_clear(m);
    return 0;
}

void mica_trace_stop(mica_mesh *m) {
    if (m) trace_free(m);
}

int64_t mica_trace_counts(const mica_mesh *m, int32_t *rect, int64_t *counts, int64_t *dropped) {
    const struct trace *T = m ? m->trace : NULL;
    if (!T) return 0;
    if (rect) {
        rect[0] = (int32_t)T->x0;
        rect[1] = (int32_t)T->x1;
        rect[2] = (int32_t)T->y0;
        rect[3] = (int32_t)T->y1;
    }
    int64_t n = (T->x1 - T->x0) * (T->y1 - T->y0);
    for (int64_t i = 0; i < n; ++i) {
        if (counts) counts[i] = T->core[i].len;
        if (dropped) dropped[i] = (int64_t)T->core[i].dropped;
    }
    return n;
}

void mica_trace_copy(const mica_mesh *m, mica_event *out) {
    const struct trace *T = m ? m->trace : NULL;
    if (!T || !out) return;
    int64_t n = (T->x1 - T->x0) * (T->y1 - T->y0);
    for (int64_t i = 0; i < n; ++i) {
        if (T->core[i].len) memcpy(out, T->core[i].ev, T->core[i].len * sizeof *out);
        out += T->core[i].len;
    }
}
