/* MICA mesh emulator, the state of a running mica_run.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * The decoded entries of the op being executed, the context of each chunk of a phase (tctx) and
 * each pool thread (worker_t), the run (run_t), fault keys (see "Determinism" in mica_rt.c) and the
 * bands of an op's bounding box that split a phase into chunks.
 */

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
