/* MICA mesh emulator, EXCHANGE phase D: payload copies, statistics, route clearing.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

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
