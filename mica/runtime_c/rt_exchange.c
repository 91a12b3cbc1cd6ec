/* MICA mesh emulator, EXCHANGE phases A (setup), B (routing) and C (check); see "Execution" in mica_rt.c.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

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
            double start = m->wave ? h.h /* timed by wave_exchange */
                                   : link_take(m, k * m->n_cores + c, h.h, dur, &t->shared, one_thread(t->run));
            if (h.hops == 0 && start + dur > *inject_end) *inject_end = start + dur;
            if (!stack_push(t, &sp, ny * W + nx, h.hops + 1, opposite(dirs[k]), start + m->hop_latency))
                goto oom;
        }
    }
    return;
oom:
    fault(t, key, "out of host memory routing a message from core (%lld,%lld)", g.sx, g.sy);
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
        /* the wavelet-level mode times senders in wave_exchange */
        if (!m->wave) sender_done(c, end, t0, (double)bytes / m->link_bw);
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
