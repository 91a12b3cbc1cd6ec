/* MICA mesh emulator, running one EXCHANGE (or PREFETCH) op.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * Decodes its entries at the current loop values, plans which payloads are staged (a receive of
 * the same op may overwrite them: see "Payload copies" in rt_copies.c), then runs phases A to D
 * through the pool, re-timing messages that shared links between C and D.
 */

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
    if (r->m->wave) wave_exchange(r); /* wavelet-level fabric mode: every message, cycle by cycle */
    else if (shared && !retime_shared(r)) run_fail(r, "out of host memory timing messages that share links");
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
    if (r->m->trace) { /* the exchange x_touch marks pending on the cores it sets up (rt_trace.c) */
        r->m->trace->cur_op = (int32_t)r->op_id;
        r->m->trace->cur_kind = r->prefetch ? MICA_EV_PREFETCH : MICA_EV_EXCHANGE;
    }
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
