/* MICA mesh emulator, the timing model (see "Timing model" in mica_rt.h, and in mica_rt.c for an exchange).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * Per core: x_commit / x_start / x_touch / sender_done / finish_timing keep a core's clock and the
 * pending result of its last exchange. Per link: link_take reserves a link as phase B routes a
 * message, links_undo rolls a failed exchange back, and retime_shared re-times, serially and in a
 * fixed order, the messages of an exchange that shared a link. Then the timing part of the API.
 */

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
    if (m->trace) trace_exchange(m, core, c->clock, c->x_end, comm);
    c->clock = c->x_end;
    c->comm += comm;
    c->idle += elapsed - comm;
}

/* The clock a core sends and takes in messages of the running exchange from: the start of its last
 * compute in this loop run for a PREFETCH op (issued when that compute started; not before the core's
 * last DRAM read is done, whose data it may send), else its clock. */
static double x_start(const run_t *r, const mica_core_t *c) {
    if (r->prefetch && c->pre_tag == r->tag) return c->pre > c->dram_free ? c->pre : c->dram_free;
    return c->clock;
}

/* Starts the exchange's timing scratch of a core that sends or receives in it (owner thread only). */
static void x_touch(mica_mesh *m, int64_t core) {
    mica_core_t *c = &m->cores[core];
    if (c->x_mark == m->serial) return;
    x_commit(m, core);
    c->x_mark = m->serial;
    c->x_end = c->clock;
    c->x_comm = 0.0;
    c->x_rdur = c->x_sdur = 0.0;
    c->x_rhead = 1e300; /* no stream taken in yet */
    if (m->trace) trace_pending(m, core);
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

/* A sender is busy until its message has left its router (a longer transfer if a link delayed it);
 * `t0` is when it started sending (x_start), `dur` the message's bytes / link bandwidth. Its ramp into the
 * router carries one link's worth of bytes per cycle for all its messages of the exchange together, so it
 * is also busy until t0 + the sum of their durations (ramp serialisation, as the wavelet-level mode's
 * injection of one flit per cycle per core). */
static void sender_done(mica_core_t *c, double end, double t0, double dur) {
    c->x_sdur += dur;
    if (t0 + c->x_sdur > end) end = t0 + c->x_sdur;
    if (end > c->x_end) c->x_end = end;
    if (end - t0 > c->x_comm) c->x_comm = end - t0;
}

/* Completes the timing of every core that received in the exchange (cells of band b): its latest
 * completion and its longest transfer (senders did theirs in phase B, or retime_shared), applied by
 * x_commit when the core's clock is next read. The router-to-core ramp carries one link's worth of bytes
 * per cycle for all the streams a core takes in during the exchange, so (event level) the core also waits
 * until the earliest of their heads could drain (arrival - duration) plus the sum of their durations: the
 * streams serialise at its ramp, as in the wavelet-level mode (which times receives itself). This is the
 * serial ramp's completion when the heads arrive before the ramp is free again (streams of one exchange
 * start together), and a lower bound of it otherwise. */
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
            if (!m->wave) {
                if (end - dur < c->x_rhead) c->x_rhead = end - dur;
                c->x_rdur += dur;
                if (c->x_rhead + c->x_rdur > end) end = c->x_rhead + c->x_rdur;
                if (c->x_rdur > c->x_comm) c->x_comm = c->x_rdur;
            }
            if (end > c->x_end) c->x_end = end;
            if (dur > c->x_comm) c->x_comm = dur;
        }
    }
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
        /* contention only delays; phase B counted the message's ramp time already */
        sender_done(&m->cores[core], q[k].inject_end, x_start(r, &m->cores[core]), 0.0);
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

/* ---------------------------------------------------------------------------------------------------
 * Timing model API (mica_rt.h)
 * ------------------------------------------------------------------------------------------------- */

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
