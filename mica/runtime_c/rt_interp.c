/* MICA mesh emulator, the op-code interpreter and mica_run.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * mica_run validates the whole op code (structure only) before running any of it, then interprets
 * it on the calling thread: LOOP ops directly, EXCHANGE and COMPUTE ops phase by phase through the
 * pool (run_phase names the phase function a chunk runs).
 */

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
    /* Every AFFINE of the rectangle (4 bounds of MICA_MAX_TERMS, the two phases) divides by d >= 1. */
    for (int k = 0; k < 4 * MICA_MAX_TERMS + 2; ++k) {
        const int64_t *a = k < 4 * MICA_MAX_TERMS ? c->code + pos + k * W_AFFINE
                                                   : (k == 4 * MICA_MAX_TERMS ? st + 1 : st + 2 + W_AFFINE);
        if (a[1 + MICA_MAX_VARS] < 1)
            return vfail(c, pos, "an affine value's divisor must be >= 1 (got %lld)",
                         (long long)a[1 + MICA_MAX_VARS]);
    }
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

static int validate_dram(vctx *c, int64_t pos, int64_t end) {
    const int64_t *w = c->code + pos;
    if (end - pos < W_DRAM) return vfail(c, pos, "truncated DRAM op");
    if (w[2] < 0 || w[2] >= MICA_MAX_DRAM)
        return vfail(c, pos, "DRAM slot %lld not in 0..%d", (long long)w[2], MICA_MAX_DRAM - 1);
    if (check_rect_at(c, pos + 3)) return 1;
    return check_box_at(c, pos + 3 + W_RECT);
}

/* Validates the ops in [pos, end); `slots` is the set of loop slots in scope. */
static int validate_block(vctx *c, int64_t pos, int64_t end, unsigned slots) {
    while (pos < end) {
        const int64_t *w = c->code + pos;
        switch (w[0]) {
        case MICA_OP_LOOP:
        case MICA_OP_LOOP_DOWN: {
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
        case MICA_OP_DRAM:
        case MICA_OP_DRAM_PREFETCH:
            if (validate_dram(c, pos, end)) return 1;
            pos += W_DRAM;
            break;
        default:
            return vfail(c, pos, "unknown opcode %lld", (long long)w[0]);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Interpreter
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

/* Number of EXCHANGE and COMPUTE ops that running [pos, end) executes (loops multiplied out,
 * saturating); the denominator of mica_progress. The code is validated. */
static int64_t count_ops(const int64_t *code, int64_t pos, int64_t end) {
    int64_t n = 0;
    while (pos < end) {
        const int64_t *w = code + pos;
        if (w[0] == MICA_OP_LOOP || w[0] == MICA_OP_LOOP_DOWN) {
            if (w[3] > 0) n = sat_add(n, sat_mul(w[2], count_ops(code, pos + W_LOOP_HEAD, pos + W_LOOP_HEAD + w[3])));
            pos += W_LOOP_HEAD + w[3];
        } else {
            n = sat_add(n, 1);
            pos += w[0] == MICA_OP_EXCHANGE || w[0] == MICA_OP_PREFETCH ? W_EXCH_HEAD + w[2] * W_ROUTE + w[3] * W_SEND + w[4] * W_RECV
                   : w[0] == MICA_OP_DRAM                            ? W_DRAM
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
        case MICA_OP_LOOP:
        case MICA_OP_LOOP_DOWN: {
            int slot = (int)w[1];
            int64_t count = w[2], body = w[3];
            int down = w[0] == MICA_OP_LOOP_DOWN;
            r->active[r->depth++] = slot;
            uint64_t outer = r->tag;
            r->tag = ++r->m->tags;
            for (int64_t i = 0; i < (body > 0 ? count : 0); ++i) { /* an empty body does nothing */
                r->v[slot] = down ? count - 1 - i : i;
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
        case MICA_OP_DRAM:
        case MICA_OP_DRAM_PREFETCH:
            if (exec_dram(r, pos)) return 1;
            progress_step(r->m);
            pos += W_DRAM;
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
