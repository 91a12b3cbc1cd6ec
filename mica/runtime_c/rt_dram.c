/* MICA mesh emulator, the DRAM level: mica_set_dram, mica_dram_bind and the DRAM op (mica_rt.h).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 *
 * (The op's validation, validate_dram, is in rt_interp.c with the other ops'.)
 *
 * A DRAM op runs on the calling thread: it checks every core's box against the core's arena and the
 * bound array before copying anything, then copies and times core by core in row-major order (the
 * result and the clocks do not depend on the thread count).
 */

#define W_DRAM (3 + W_RECT + W_BOX)

static void copy_block(int dir, uint8_t *host, const int64_t *hstride, uint8_t *core, const box_t *b,
                       const int64_t *lo, const int64_t *ext); /* rt_host.c */

int32_t mica_set_dram(mica_mesh *m, int64_t capacity, double bytes_per_cycle, double core_bytes_per_cycle,
                      double latency, char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "set dram: no mesh");
        return 1;
    }
    if (capacity <= 0 || !(bytes_per_cycle > 0) || !(core_bytes_per_cycle > 0) || !(latency >= 0)) {
        set_err(err, errlen, "set dram: capacity and bandwidths must be > 0 and latency >= 0 (got %lld B, "
                "%g, %g, %g)", (long long)capacity, bytes_per_cycle, core_bytes_per_cycle, latency);
        return 1;
    }
    m->dram_capacity = capacity;
    m->dram_bw = bytes_per_cycle;
    m->dram_core_bw = core_bytes_per_cycle;
    m->dram_latency = latency;
    return 0;
}

int32_t mica_dram_bind(mica_mesh *m, int32_t slot, const void *data, int64_t bytes, char *err, int32_t errlen) {
    if (!m) {
        set_err(err, errlen, "dram bind: no mesh");
        return 1;
    }
    if (slot < 0 || slot >= MICA_MAX_DRAM || bytes < 0 || (bytes > 0 && !data)) {
        set_err(err, errlen, "dram bind: slot %d not in 0..%d, or no data for %lld bytes", (int)slot,
                MICA_MAX_DRAM - 1, (long long)bytes);
        return 1;
    }
    if (!(m->dram_bw > 0) && bytes > 0) {
        set_err(err, errlen, "dram bind: this mesh has no DRAM level (mica_set_dram)");
        return 1;
    }
    int64_t held = bytes;
    for (int i = 0; i < MICA_MAX_DRAM; ++i) held = i == slot ? held : sat_add(held, m->dram_size[i]);
    if (held > m->dram_capacity) {
        set_err(err, errlen, "dram bind: slot %d's %lld bytes would make %lld bytes of DRAM arrays, more than "
                "the %lld-byte DRAM level", (int)slot, (long long)bytes, (long long)held,
                (long long)m->dram_capacity);
        return 1;
    }
    m->dram[slot] = bytes > 0 ? data : NULL;
    m->dram_size[slot] = bytes;
    return 0;
}

static int exec_dram(run_t *r, int64_t pos) {
    mica_mesh *m = r->m;
    const int64_t *w = r->code + pos;
    int64_t op = w[1], slot = w[2];
    bool prefetch = w[0] == MICA_OP_DRAM_PREFETCH;
    if (!(m->dram_bw > 0)) {
        run_fail(r, "DRAM op %lld: this mesh has no DRAM level (mica_set_dram)", (long long)op);
        return 1;
    }
    box_t b;
    load_box(w + 3 + W_RECT, &b);
    irect rc = eval_rect(w + 3, r->v, m->width, m->height);
    int64_t hstride[MICA_MAX_RANK], size = b.elem;
    for (int d = b.rank - 1; d >= 0; --d) {
        hstride[d] = size;
        size = sat_mul(size, b.extent[d]);
    }
    if (size != m->dram_size[slot]) {
        run_fail(r, "DRAM op %lld: slot %lld holds %lld bytes, its box describes an array of %lld",
                 (long long)op, (long long)slot, (long long)m->dram_size[slot], (long long)size);
        return 1;
    }
    int64_t lo[MICA_MAX_RANK], ext[MICA_MAX_RANK], readers = 0;
    FOR_RECT_CELLS(&rc, x, y) {
            int64_t core = y * m->width + x, bytes = box_at(&b, x, y, r->v, lo, ext);
            if (bytes == 0) continue;
            if (b.offset + bytes > m->arena_size[core]) {
                run_fail(r, "DRAM op %lld: box of slot %lld at core (%lld,%lld) spans bytes [%lld,%lld) outside "
                         "the core's %lld-byte arena", (long long)op, (long long)slot, (long long)x, (long long)y,
                         (long long)b.offset, (long long)(b.offset + bytes), (long long)m->arena_size[core]);
                return 1;
            }
            readers++;
        }
    if (readers == 0) return 0;
    if (prefetch) m->serial++; /* a fresh pending result per core (x_touch), as an exchange starts one */
    double rate = m->dram_bw / (double)readers;
    if (rate > m->dram_core_bw) rate = m->dram_core_bw;
    FOR_RECT_CELLS(&rc, x, y) {
            int64_t core = y * m->width + x, bytes = box_at(&b, x, y, r->v, lo, ext);
            if (bytes == 0) continue;
            copy_block(0, (uint8_t *)m->dram[slot], hstride, arena_of(m, core) + b.offset, &b, lo, ext);
            mica_core_t *c = &m->cores[core];
            double cycles = m->dram_latency + (double)bytes / rate;
            if (prefetch) {
                /* Issued when the core started its last compute of this loop run; the core waits for the
                 * data when it next reads its clock (x_commit), as after a prefetched exchange. */
                x_touch(m, core);
                double issue = c->pre_tag == r->tag ? c->pre : c->clock;
                double start = issue > c->dram_free ? issue : c->dram_free;
                c->dram_free = start + cycles;
                if (c->dram_free > c->x_end) c->x_end = c->dram_free;
                c->x_comm += cycles;
            } else {
                x_commit(m, core);
                double start = c->clock > c->dram_free ? c->clock : c->dram_free;
                c->idle += start - c->clock;
                c->dram_free = start + cycles;
                c->clock = c->dram_free;
                c->comm += cycles;
            }
            m->totals.dram_bytes += (uint64_t)bytes;
        }
    return 0;
}
