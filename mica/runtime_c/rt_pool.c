/* MICA mesh emulator, the thread pool.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * Each phase of an op is split into chunks (bands of the op's bounding box); dispatch publishes a
 * phase and runs chunks on the calling thread while the pool's workers claim the others. What a
 * chunk does is run_phase's business (rt_interp.c): the pool only runs chunks and collects faults.
 */

/* Runs chunk t of the current phase (rt_interp.c). */
static void run_phase(run_t *r, tctx *t);

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
