/* MICA mesh emulator, the wavelet-level fabric mode (see "Wavelet-level fabric mode" in mica_rt.h).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * When the mode is on, an EXCHANGE is timed by wave_exchange (serial, between phases C and D, in
 * place of the event-level link reservations and retime_shared): every message of the exchange is cut
 * into flits (one link's worth of bytes each: a 32-bit wavelet on the WSE) and stepped cycle by cycle
 * through per-router, per-input-port, per-colour FIFO queues of finite depth, along the route tables
 * phase B has already checked. Per cycle, in this order:
 *   1. injection: every sending core pushes at most one flit (its ramp carries one per cycle) into the
 *      RAMP queue of its router, from its start cycle on, if that queue has room; several messages of one
 *      core take turns;
 *   2. routers: every queue whose head flit is ready offers it to all the outputs of its colour's tx set
 *      at once (multicast replication); it moves only when every output is free this cycle (one flit per
 *      link per direction per cycle, and one per router-to-core ramp) and every downstream queue had room
 *      at the start of the cycle (credit back-pressure); otherwise it stalls and each blocking output
 *      counts a stall cycle. Queues are visited from an offset that rotates every cycle, so queues that
 *      contend for a link take turns. A flit that crosses a link is ready at the next router hop_latency
 *      cycles later; one that takes a router's ramp is ready in the core's receive queue ramp_latency
 *      cycles later (the injection ramp likewise);
 *   3. receivers: every receiving core takes at most one flit per cycle from each of its receive queues,
 *      from its start cycle on (a receiver that is late lets its queue fill, which stalls the stream back
 *      to its sender: path holding).
 * Cycles in which nothing can move are skipped. A message is received one cycle after its last flit is
 * taken; a sender is done one cycle after its last flit has left its router. A link used by an earlier
 * exchange is not used again before the cycle after its last flit (as the event-level model's busy
 * links). The simulation is serial, so the results do not depend on the thread count.
 *
 * Statistics (per out-link flits and stall cycles, totals) are committed only when the exchange
 * succeeds; a fault (no progress possible, out of host memory) changes nothing.
 */

enum { WP_RAMP = 4, WP_CORE = 5 }; /* queue ports: 0..3 = arrived from N, E, S, W (MICA_LINK_* order) */
#define WQ_NONE UINT32_MAX

typedef struct {
    int64_t core, t0, n, pushed, left, inject_end;
    int32_t colour, send;
    uint32_t q0; /* its RAMP queue at the source router */
} wmsg_t;

typedef struct {
    int64_t core;
    int32_t colour, port;
    uint32_t head, count, n_out;
    uint32_t out[5];       /* downstream queues */
    int64_t out_link[5];   /* core*4 + dir of the link it crosses, or -1 for the router-to-core ramp */
    uint64_t out_stall[5]; /* stall cycles charged to each output */
    int64_t pop_stamp;     /* cycle of its last pop */
    int64_t start;         /* WP_CORE: the receiving core's start cycle */
    int64_t taken;         /* WP_CORE: flits taken by the core */
    uint64_t moved;        /* flits that left it */
    bool active, wired;
} wq_t;

struct wave {
    int64_t ramp_lat, depth;
    uint64_t *link_flits, *link_stalls; /* [core*4 + dir] */
    int64_t *link_last;                 /* [core*4 + dir] last cycle a flit crossed it, -1: never */
    int64_t *link_stamp;                /* [core*4 + dir] cycle it carried a flit in the running step */
    int64_t *ramp_out;                  /* [core] cycle its router-to-core ramp carried a flit */
    mica_wave_totals totals;
    /* scratch of one exchange */
    wmsg_t *msgs;
    size_t n_msgs, msgs_cap;
    wq_t *qs;
    size_t n_qs, qs_cap;
    uint32_t *fl_msg;   /* [queue * depth + slot] message of each flit */
    int64_t *fl_ready;  /* [queue * depth + slot] cycle it may leave */
    size_t fl_cap, fl_ready_cap;
    uint64_t *hkeys;    /* hash of queues: key + 1, 0 = empty */
    uint32_t *hvals;
    size_t hcap;
    uint32_t *act, *act2, *stack;
    size_t act_cap, act2_cap, stack_cap;
};

static void wave_free(mica_mesh *m) {
    struct wave *w = m->wave;
    if (!w) return;
    free(w->link_flits);
    free(w->link_stalls);
    free(w->link_last);
    free(w->link_stamp);
    free(w->ramp_out);
    free(w->msgs);
    free(w->qs);
    free(w->fl_msg);
    free(w->fl_ready);
    free(w->hkeys);
    free(w->hvals);
    free(w->act);
    free(w->act2);
    free(w->stack);
    free(w);
    m->wave = NULL;
}

static int64_t wave_bytes(const mica_mesh *m) {
    return m->wave ? (int64_t)(m->n_cores * (4 * 4 * 8 + 8) + sizeof *m->wave) : 0;
}

static void wave_reset(mica_mesh *m) {
    struct wave *w = m->wave;
    if (!w) return;
    size_t n = (size_t)m->n_cores;
    memset(w->link_flits, 0, n * 4 * sizeof *w->link_flits);
    memset(w->link_stalls, 0, n * 4 * sizeof *w->link_stalls);
    for (size_t i = 0; i < n * 4; ++i) w->link_last[i] = -1;
    memset(&w->totals, 0, sizeof w->totals);
}

/* The smallest whole cycle >= v (v >= 0; clocks are far below 2^53). */
static int64_t wave_ceil(double v) {
    int64_t i = (int64_t)v;
    return (double)i < v ? i + 1 : i;
}

static uint64_t wq_key(const mica_mesh *m, int64_t core, int port, int32_t colour) {
    return ((uint64_t)core * 8 + (uint64_t)port) * (uint64_t)m->n_colours + (uint64_t)colour;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

/* Inserts key -> val into the open-addressing table (capacity a power of two, never full). */
static void wh_put(struct wave *w, uint64_t key, uint32_t val) {
    size_t mask = w->hcap - 1, i = (size_t)mix64(key) & mask;
    while (w->hkeys[i]) i = (i + 1) & mask;
    w->hkeys[i] = key + 1;
    w->hvals[i] = val;
}

static uint32_t wh_get(const struct wave *w, uint64_t key) {
    if (w->hcap == 0) return WQ_NONE;
    size_t mask = w->hcap - 1, i = (size_t)mix64(key) & mask;
    while (w->hkeys[i]) {
        if (w->hkeys[i] == key + 1) return w->hvals[i];
        i = (i + 1) & mask;
    }
    return WQ_NONE;
}

/* Grows the hash to hold `need` keys at most half full (rehashing); false if out of memory. */
static bool wh_reserve(struct wave *w, size_t need) {
    if (need * 2 <= w->hcap) return true;
    size_t cap = w->hcap ? w->hcap : 1024;
    while (cap < need * 2) cap *= 2;
    uint64_t *ok = w->hkeys;
    uint32_t *ov = w->hvals;
    size_t ocap = w->hcap;
    w->hkeys = calloc(cap, sizeof *w->hkeys);
    w->hvals = malloc(cap * sizeof *w->hvals);
    if (!w->hkeys || !w->hvals) {
        free(w->hkeys);
        free(w->hvals);
        w->hkeys = ok;
        w->hvals = ov;
        return false;
    }
    w->hcap = cap;
    for (size_t i = 0; i < ocap; ++i)
        if (ok[i]) wh_put(w, ok[i] - 1, ov[i]);
    free(ok);
    free(ov);
    return true;
}

/* The queue (core, port, colour), created when new; WQ_NONE if out of memory. */
static uint32_t wq_get(mica_mesh *m, int64_t core, int port, int32_t colour) {
    struct wave *w = m->wave;
    uint64_t key = wq_key(m, core, port, colour);
    uint32_t q = wh_get(w, key);
    if (q != WQ_NONE) return q;
    if (w->n_qs >= WQ_NONE - 1 || !wh_reserve(w, w->n_qs + 1) ||
        !grow((void **)&w->qs, &w->qs_cap, w->n_qs + 1, sizeof *w->qs))
        return WQ_NONE;
    q = (uint32_t)w->n_qs++;
    wq_t *e = &w->qs[q];
    memset(e, 0, sizeof *e);
    e->core = core;
    e->port = port;
    e->colour = colour;
    e->pop_stamp = -1;
    wh_put(w, key, q);
    return q;
}

/* Wires the queues of one message's multicast tree (each queue's outputs, from its colour's route at its
 * router); a queue already wired has its subtree wired. False if out of memory. */
static bool wave_wire(mica_mesh *m, uint32_t root) {
    static const int dirs[4] = {MICA_NORTH, MICA_EAST, MICA_SOUTH, MICA_WEST};
    static const int dx[4] = {0, 1, 0, -1}, dy[4] = {-1, 0, 1, 0};
    struct wave *w = m->wave;
    const int64_t W = m->width;
    size_t sp = 0;
    if (!grow((void **)&w->stack, &w->stack_cap, 1, sizeof *w->stack)) return false;
    w->stack[sp++] = root;
    while (sp > 0) {
        uint32_t q = w->stack[--sp];
        if (w->qs[q].wired || w->qs[q].port == WP_CORE) continue;
        int64_t c = w->qs[q].core;
        int32_t colour = w->qs[q].colour;
        uint8_t tx = route_at(m, c, colour)[1];
        uint32_t outs[5];
        int64_t links[5];
        int n_out = 0;
        for (int k = 0; k < 4; ++k) {
            if (!(tx & dirs[k])) continue;
            int64_t n = (c / W + dy[k]) * W + (c % W + dx[k]);
            uint32_t d = wq_get(m, n, (k + 2) % 4, colour);
            if (d == WQ_NONE) return false;
            outs[n_out] = d;
            links[n_out++] = c * 4 + k;
        }
        if (tx & MICA_RAMP) {
            uint32_t d = wq_get(m, c, WP_CORE, colour);
            if (d == WQ_NONE) return false;
            outs[n_out] = d;
            links[n_out++] = -1;
        }
        wq_t *e = &w->qs[q]; /* wq_get may have moved the array */
        e->wired = true;
        e->n_out = (uint32_t)n_out;
        for (int j = 0; j < n_out; ++j) {
            e->out[j] = outs[j];
            e->out_link[j] = links[j];
            if (!grow((void **)&w->stack, &w->stack_cap, sp + 1, sizeof *w->stack)) return false;
            w->stack[sp++] = outs[j];
        }
    }
    return true;
}

static int wmsg_cmp(const void *a, const void *b) {
    const wmsg_t *x = a, *y = b;
    if (x->core != y->core) return x->core < y->core ? -1 : 1;
    return (x->send > y->send) - (x->send < y->send);
}

static void wq_push(struct wave *w, uint32_t q, uint32_t msg, int64_t ready, size_t *n_act) {
    wq_t *e = &w->qs[q];
    uint32_t at = e->head + e->count;
    if (at >= (uint32_t)w->depth) at -= (uint32_t)w->depth;
    size_t slot = (size_t)q * (size_t)w->depth + at;
    w->fl_msg[slot] = msg;
    w->fl_ready[slot] = ready;
    e->count++;
    if (!e->active) {
        e->active = true;
        w->act[(*n_act)++] = q;
    }
}

static void wq_pop(struct wave *w, uint32_t q, int64_t now) {
    wq_t *e = &w->qs[q];
    if (++e->head == (uint32_t)w->depth) e->head = 0;
    e->count--;
    e->pop_stamp = now;
    e->moved++;
}

/* Room in queue q at the start of cycle `now` (a pop earlier in this cycle does not free a slot yet). */
static bool wq_room(const struct wave *w, const wq_t *e, int64_t now) {
    return e->count + (e->pop_stamp == now) < (uint64_t)w->depth;
}

/* Times the messages of the running exchange at wavelet level (see the top of this file). */
static void wave_exchange(run_t *r) {
    mica_mesh *m = r->m;
    struct wave *w = m->wave;
    const int64_t W = m->width, D = w->depth, hop = m->hop_latency < 1 ? 1 : wave_ceil(m->hop_latency);
    w->n_msgs = w->n_qs = 0;
    if (w->hcap) memset(w->hkeys, 0, w->hcap * sizeof *w->hkeys);
    /* The messages (from the phase-B logs), in canonical order (sender core, send entry). */
    for (int i = 0; i < r->nt_op; ++i) {
        tctx *t = &r->t[i];
        for (size_t k = 0; k < t->n_msgs; ++k) {
            const tmsg_t *g = &t->msgs[k];
            int64_t bytes = (int64_t)(t->log[g->log0] >> 3);
            if (!grow((void **)&w->msgs, &w->msgs_cap, w->n_msgs + 1, sizeof *w->msgs)) goto oom;
            wmsg_t *e = &w->msgs[w->n_msgs++];
            memset(e, 0, sizeof *e);
            e->core = g->core;
            e->send = (int32_t)g->send;
            e->colour = r->sends[g->send].colour;
            e->n = wave_ceil((double)bytes / m->link_bw - 1e-9);
            if (e->n < 1) e->n = 1;
            e->t0 = wave_ceil(x_start(r, &m->cores[g->core]) - 1e-9);
        }
    }
    if (w->n_msgs == 0) return;
    qsort(w->msgs, w->n_msgs, sizeof *w->msgs, wmsg_cmp);
    for (size_t i = 0; i < w->n_msgs; ++i) {
        uint32_t q = wq_get(m, w->msgs[i].core, WP_RAMP, w->msgs[i].colour);
        if (q == WQ_NONE || !wave_wire(m, q)) goto oom;
        w->msgs[i].q0 = q;
    }
    size_t nq = w->n_qs;
    if (!grow((void **)&w->fl_msg, &w->fl_cap, nq * (size_t)D, sizeof *w->fl_msg) ||
        !grow((void **)&w->fl_ready, &w->fl_ready_cap, nq * (size_t)D, sizeof *w->fl_ready) ||
        !grow((void **)&w->act, &w->act_cap, nq, sizeof *w->act) ||
        !grow((void **)&w->act2, &w->act2_cap, nq, sizeof *w->act2))
        goto oom;
    for (size_t q = 0; q < nq; ++q) {
        wq_t *e = &w->qs[q];
        if (e->port == WP_CORE) e->start = wave_ceil(x_start(r, &m->cores[e->core]) - 1e-9);
        for (uint32_t j = 0; j < e->n_out; ++j)
            if (e->out_link[j] >= 0) w->link_stamp[e->out_link[j]] = -1;
        w->ramp_out[e->core] = -1;
    }

    /* Per core, its messages are contiguous (sorted); rr = the one whose turn it is. */
    int64_t now = INT64_MAX;
    for (size_t i = 0; i < w->n_msgs; ++i)
        if (w->msgs[i].t0 < now) now = w->msgs[i].t0;
    int64_t first = now;
    size_t n_act = 0, injecting = w->n_msgs, inj_lo = 0;
    uint64_t hops = 0, steps = 0, st_cont = 0, st_back = 0, st_recv = 0;
    while (injecting > 0 || n_act > 0) {
        bool moved = false;
        int64_t next = INT64_MAX;
        steps++;
        /* 1. injection */
        while (inj_lo < w->n_msgs && w->msgs[inj_lo].pushed == w->msgs[inj_lo].n) inj_lo++;
        for (size_t i = inj_lo; i < w->n_msgs;) {
            size_t j = i;
            while (j < w->n_msgs && w->msgs[j].core == w->msgs[i].core) j++;
            size_t span = j - i;
            for (size_t k = 0; k < span; ++k) {
                size_t g = i + (size_t)((uint64_t)(now + (int64_t)k) % span);
                wmsg_t *e = &w->msgs[g];
                if (e->pushed == e->n) continue;
                if (e->t0 > now) {
                    if (e->t0 < next) next = e->t0;
                    continue;
                }
                if (!wq_room(w, &w->qs[e->q0], now)) continue;
                wq_push(w, e->q0, (uint32_t)g, now + w->ramp_lat, &n_act);
                if (++e->pushed == e->n) injecting--;
                moved = true;
                break;
            }
            i = j;
        }
        /* 2. routers, then 3. receivers, from a rotating offset */
        size_t n0 = n_act, off = n0 ? (size_t)((uint64_t)now % n0) : 0;
        for (int pass = 0; pass < 2; ++pass) {
            size_t nk = pass == 0 ? n0 : n_act; /* receivers also see queues that became active just now */
            for (size_t k = 0, i = off; k < nk; ++k, ++i) {
                if (pass == 0 && i == n0) i = 0;
                uint32_t q = w->act[pass == 0 ? i : k];
                wq_t *e = &w->qs[q];
                if (e->count == 0 || (e->port == WP_CORE) != (pass == 1)) continue;
                size_t slot = (size_t)q * (size_t)D + e->head;
                int64_t ready = w->fl_ready[slot];
                if (pass == 1) { /* a receiving core takes one flit per cycle from each queue */
                    int64_t at = ready > e->start ? ready : e->start;
                    if (at > now) {
                        if (at < next) next = at;
                        continue;
                    }
                    wq_pop(w, q, now);
                    moved = true;
                    const wmsg_t *g = &w->msgs[w->fl_msg[slot]];
                    if (++e->taken == g->n) { /* the whole message is in: record its arrival */
                        e->taken = 0;
                        int32_t j1 = *slot_at(m, e->core, e->colour);
                        recv_e *v = &r->recvs[j1 - 1];
                        v->arrive[cell_of(&v->rc, e->core % W, e->core / W)] = (double)(now + 1);
                    }
                    continue;
                }
                if (ready > now) {
                    if (ready < next) next = ready;
                    continue;
                }
                bool go = true;
                for (uint32_t j = 0; j < e->n_out; ++j) {
                    int64_t L = e->out_link[j];
                    const wq_t *d = &w->qs[e->out[j]];
                    if (L >= 0 && w->link_last[L] >= now) { /* an earlier exchange's flit is still on it */
                        if (w->link_last[L] + 1 < next) next = w->link_last[L] + 1;
                        e->out_stall[j]++;
                        st_cont++;
                        go = false;
                    } else if (L >= 0 ? w->link_stamp[L] == now : w->ramp_out[e->core] == now) {
                        e->out_stall[j]++;
                        st_cont++;
                        go = false;
                    } else if (!wq_room(w, d, now)) {
                        e->out_stall[j]++;
                        if (L >= 0) st_back++;
                        else st_recv++;
                        go = false;
                    }
                }
                if (!go) continue;
                uint32_t msg = w->fl_msg[slot];
                for (uint32_t j = 0; j < e->n_out; ++j) {
                    int64_t L = e->out_link[j];
                    if (L >= 0) {
                        w->link_stamp[L] = now;
                        hops++;
                    } else
                        w->ramp_out[e->core] = now;
                    wq_push(w, e->out[j], msg, now + (L >= 0 ? hop : w->ramp_lat), &n_act);
                }
                wq_pop(w, q, now);
                moved = true;
                if (e->port == WP_RAMP) {
                    wmsg_t *g = &w->msgs[msg];
                    if (++g->left == g->n) g->inject_end = now + 1;
                }
            }
        }
        /* drop drained queues from the active list */
        size_t n2 = 0;
        for (size_t k = 0; k < n_act; ++k) {
            uint32_t q = w->act[k];
            if (w->qs[q].count) w->act2[n2++] = q;
            else w->qs[q].active = false;
        }
        uint32_t *tmp = w->act;
        w->act = w->act2;
        w->act2 = tmp;
        size_t tcap = w->act_cap;
        w->act_cap = w->act2_cap;
        w->act2_cap = tcap;
        n_act = n2;
        if (injecting == 0 && n_act == 0) break;
        if (moved) {
            now++;
            continue;
        }
        if (next == INT64_MAX || next <= now) {
            run_fail(r, "wavelet-level timing of exchange op %lld: no wavelet can move at cycle %lld (a "
                     "stream waits on a full queue that never drains)", (long long)r->op_id, (long long)now);
            return;
        }
        /* nothing moved: skip to the next cycle something can, charging the stalls of the skipped cycles */
        int64_t skip = next - now - 1;
        if (skip > 0)
            for (size_t k = 0; k < n_act; ++k) {
                wq_t *e = &w->qs[w->act[k]];
                if (e->port == WP_CORE || e->count == 0 || w->fl_ready[(size_t)w->act[k] * (size_t)D + e->head] > now)
                    continue;
                for (uint32_t j = 0; j < e->n_out; ++j) {
                    int64_t L = e->out_link[j];
                    if (!(L >= 0 && w->link_last[L] >= now) && wq_room(w, &w->qs[e->out[j]], now + 1)) continue;
                    e->out_stall[j] += (uint64_t)skip;
                    if (L >= 0 && w->link_last[L] >= now) st_cont += (uint64_t)skip;
                    else if (L >= 0) st_back += (uint64_t)skip;
                    else st_recv += (uint64_t)skip;
                }
            }
        now = next;
    }
    /* success: senders' timing, statistics, link occupancy for later exchanges */
    for (size_t i = 0; i < w->n_msgs; ++i) {
        const wmsg_t *g = &w->msgs[i];
        send_e *e = &r->sends[g->send];
        int64_t x = g->core % W, y = g->core / W;
        e->end[cell_of(&e->rc, x, y)] = (double)g->inject_end;
        /* its injection (one flit per cycle per core) is simulated: no ramp time to add */
        sender_done(&m->cores[g->core], (double)g->inject_end, x_start(r, &m->cores[g->core]), 0.0);
    }
    for (size_t q = 0; q < nq; ++q) {
        const wq_t *e = &w->qs[q];
        for (uint32_t j = 0; j < e->n_out; ++j) {
            int64_t L = e->out_link[j];
            if (L < 0) continue;
            w->link_flits[L] += e->moved;
            w->link_stalls[L] += e->out_stall[j];
            if (w->link_stamp[L] > w->link_last[L]) w->link_last[L] = w->link_stamp[L];
        }
    }
    mica_wave_totals *T = &w->totals;
    T->exchanges++;
    T->messages += w->n_msgs;
    for (size_t i = 0; i < w->n_msgs; ++i) T->flits += (uint64_t)w->msgs[i].n;
    T->wavelet_hops += hops;
    T->steps += steps;
    T->span_cycles += (uint64_t)(now + 1 - first);
    T->stall_contention += st_cont;
    T->stall_backpressure += st_back;
    T->stall_receiver += st_recv;
    return;
oom:
    run_fail(r, "out of host memory for the wavelet-level timing of exchange op %lld", (long long)r->op_id);
}

/* ---------------------------------------------------------------------------------------------------
 * Wavelet-level mode API (mica_rt.h)
 * ------------------------------------------------------------------------------------------------- */

int32_t mica_set_wavelet(mica_mesh *m, int32_t on, double ramp_latency, int32_t queue_depth, char *err,
                         int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "set wavelet mode: no mesh");
        return 1;
    }
    if (!on) {
        wave_free(m);
        return 0;
    }
    if (!(ramp_latency >= 0 && ramp_latency <= 1e6 && ramp_latency == (double)(int64_t)ramp_latency)) {
        set_err(err, errlen, "set wavelet mode: ramp latency must be a whole number of cycles in [0, 1e6] "
                "(got %g)", ramp_latency);
        return 1;
    }
    if (queue_depth < 1 || queue_depth > 4096) {
        set_err(err, errlen, "set wavelet mode: queue depth must be 1..4096 wavelets (got %d)", (int)queue_depth);
        return 1;
    }
    if (!m->wave) {
        struct wave *w = calloc(1, sizeof *w);
        size_t n = (size_t)m->n_cores;
        if (w) {
            m->wave = w;
            w->link_flits = calloc(n * 4, sizeof *w->link_flits);
            w->link_stalls = calloc(n * 4, sizeof *w->link_stalls);
            w->link_last = malloc(n * 4 * sizeof *w->link_last);
            w->link_stamp = malloc(n * 4 * sizeof *w->link_stamp);
            w->ramp_out = malloc(n * sizeof *w->ramp_out);
        }
        if (!w || !w->link_flits || !w->link_stalls || !w->link_last || !w->link_stamp || !w->ramp_out) {
            wave_free(m);
            set_err(err, errlen, "out of host memory for the wavelet-level mode of a %dx%d mesh", (int)m->width,
                    (int)m->height);
            return 1;
        }
        wave_reset(m);
    }
    m->wave->ramp_lat = (int64_t)ramp_latency;
    m->wave->depth = queue_depth;
    return 0;
}

void mica_wave_stats(const mica_mesh *m, mica_wave_totals *out) {
    if (!m || !out) return;
    if (m->wave) *out = m->wave->totals;
    else memset(out, 0, sizeof *out);
}

const uint64_t *mica_wave_link_flits(const mica_mesh *m) { return m && m->wave ? m->wave->link_flits : NULL; }
const uint64_t *mica_wave_link_stalls(const mica_mesh *m) { return m && m->wave ? m->wave->link_stalls : NULL; }
