/* MICA mesh emulator, host copies (mica_host_copy, mica_host_gather).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

/* ---------------------------------------------------------------------------------------------------
 * Host copies on several threads: the rows of the rectangle are split into contiguous parts, one per
 * thread (each copies different cores and different bytes of the host array, so the result is the
 * same); the pages of a fresh pool are then faulted in, and zeroed by the OS, in parallel too.
 * ------------------------------------------------------------------------------------------------- */

/* Below this many bytes a host copy stays on the calling thread (a thread costs tens of microseconds). */
#define HOST_PARALLEL_MIN (INT64_C(4) << 20)

typedef struct host_job {
    mica_mesh *m;
    const irect *rc;
    int32_t dir;                  /* mica_host_copy's direction */
    void *host;
    const box_t *box;             /* mica_host_copy */
    const int64_t *hstride;
    const int64_t *shape, *counts, *origins; /* mica_host_gather */
    int rank;
} host_job_t;

typedef struct {
    const host_job_t *job;
    void (*rows)(const host_job_t *, int64_t, int64_t);
    int64_t y0, y1;
    pthread_t thread;
} host_part_t;

static void *host_part_main(void *arg) {
    host_part_t *p = arg;
    p->rows(p->job, p->y0, p->y1);
    return NULL;
}

/* Runs rows(job, ya, yb) over the member rows of job->rc, split over the mesh's host threads when the
 * copy moves at least HOST_PARALLEL_MIN bytes (a thread that cannot start leaves its part to the
 * caller). */
static void host_parallel(const mica_mesh *m, const host_job_t *job,
                          void (*rows)(const host_job_t *, int64_t, int64_t), int64_t bytes) {
    const irect *rc = job->rc;
    int n = bytes >= HOST_PARALLEL_MIN ? m->host_threads : 1;
    host_part_t parts[MAX_THREADS];
    int64_t y = rc->y0, h = rc->y1 - rc->y0;
    for (int i = 0; i < n; ++i) {
        parts[i] = (host_part_t){job, rows, y, rc->y0 + h * (i + 1) / n, 0};
        y = parts[i].y1;
    }
    bool started[MAX_THREADS] = {false};
    for (int i = 1; i < n; ++i)
        started[i] = pthread_create(&parts[i].thread, NULL, host_part_main, &parts[i]) == 0;
    rows(job, parts[0].y0, parts[0].y1);
    for (int i = 1; i < n; ++i) {
        if (started[i]) pthread_join(parts[i].thread, NULL);
        else rows(job, parts[i].y0, parts[i].y1);
    }
}

/* Member rows [ya, yb) of job->rc: the first member row at or after ya. */
#define FOR_JOB_ROWS(rc, ya, yb, y) for (int64_t y = align_up((ya), (rc)->ys, (rc)->yp); y < (yb); y += (rc)->ys)

/* Copies one core's packed box to/from its place in the row-major host array. */
static void copy_block(int dir, uint8_t *host, const int64_t *hstride, uint8_t *core, const box_t *b,
                       const int64_t *lo, const int64_t *ext) {
    int rank = b->rank;
    if (rank == 0) {
        if (dir == 0) memcpy(core, host, (size_t)b->elem);
        else memcpy(host, core, (size_t)b->elem);
        return;
    }
    size_t run = (size_t)(ext[rank - 1] * b->elem);
    int64_t idx[MICA_MAX_RANK] = {0};
    for (;;) {
        int64_t h = 0;
        for (int d = 0; d < rank; ++d) h += (lo[d] + idx[d]) * hstride[d];
        if (dir == 0) memcpy(core, host + h, run);
        else memcpy(host + h, core, run);
        core += run;
        int d = rank - 2;
        while (d >= 0 && ++idx[d] == ext[d]) idx[d--] = 0;
        if (d < 0) return;
    }
}

/* Loads one core's buffer (counts[] elements per dim, row-major, at dst) from the row-major host array of
 * `shape` (hstride[]: bytes per step of each dim) starting at global index origin[]; elements outside
 * the array are zero. Rows (the last dim) are copied as one run between their zero margins. */
static void gather_block(uint8_t *dst, const uint8_t *host, int64_t elem, int rank, const int64_t *shape,
                         const int64_t *hstride, const int64_t *counts, const int64_t *origin) {
    const int last = rank - 1;
    const int64_t n = counts[last], lo = origin[last];
    const int64_t a = clamp64(-lo, 0, n), b = clamp64(shape[last] - lo, a, n); /* valid [a, b) of a row */
    int64_t idx[MICA_MAX_RANK] = {0};
    for (;;) {
        bool inside = true;
        int64_t h = 0;
        for (int d = 0; d < last; ++d) {
            int64_t g = origin[d] + idx[d];
            inside &= g >= 0 && g < shape[d];
            h += g * hstride[d];
        }
        if (inside && b > a) {
            memset(dst, 0, (size_t)(a * elem));
            memcpy(dst + a * elem, host + h + (lo + a) * elem, (size_t)((b - a) * elem));
            memset(dst + b * elem, 0, (size_t)((n - b) * elem));
        } else {
            memset(dst, 0, (size_t)(n * elem));
        }
        dst += n * elem;
        int d = last - 1;
        while (d >= 0 && ++idx[d] == counts[d]) idx[d--] = 0;
        if (d < 0) return;
    }
}

/* mica_host_gather's loads of the member rows [ya, yb) (origins row-major over the members). */
static void gather_rows(const host_job_t *j, int64_t ya, int64_t yb) {
    const irect *rc = j->rc;
    FOR_JOB_ROWS(rc, ya, yb, y) {
        const int64_t *org = j->origins + ((y - rc->fy) / rc->ys) * rc->nx * j->rank;
        for (int64_t x = rc->fx; x < rc->x1; x += rc->xs, org += j->rank)
            gather_block(arena_of(j->m, y * j->m->width + x) + j->box->offset, j->host, j->box->elem, j->rank,
                         j->shape, j->hstride, j->counts, org);
    }
}

/* Checks the arguments of mica_host_gather; returns NULL or the problem. */
static const char *check_gather(int64_t elem, int32_t rank, const int64_t *shape, const int64_t *counts,
                                int64_t offset, int64_t *buffer_bytes) {
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return "element size not 1, 2, 4 or 8";
    if (rank < 1 || rank > MICA_MAX_RANK) return "rank not in 1..6";
    if (offset < 0 || offset > BOX_LIMIT) return "buffer offset out of range";
    int64_t bytes = elem, host = elem;
    for (int d = 0; d < rank; ++d) {
        if (counts[d] < 0 || shape[d] < 0) return "negative buffer count or array extent";
        bytes = sat_mul(bytes, counts[d]);
        host = sat_mul(host, shape[d]);
    }
    if (bytes > BOX_LIMIT) return "buffer larger than 2^48 bytes";
    if (host > HOST_LIMIT) return "host array too large";
    *buffer_bytes = bytes;
    return NULL;
}

int32_t mica_host_gather(mica_mesh *m, const void *host, int64_t elem, int32_t rank, const int64_t *shape,
                         const int64_t *counts, int64_t offset, const int64_t *rect, const int64_t *origins,
                         int64_t n_cells, char *err, int32_t errlen) {
    if (!m || !shape || !counts || !rect) {
        set_err(err, errlen, "host gather: missing mesh, shape, counts or rect");
        return 1;
    }
    if (!m->committed) {
        set_err(err, errlen, "host gather: the mesh is not committed");
        return 1;
    }
    int64_t bytes = 0;
    const char *why = check_gather(elem, rank, shape, counts, offset, &bytes);
    if (why) {
        set_err(err, errlen, "host gather: %s", why);
        return 1;
    }
    static const int64_t zero[MICA_MAX_VARS] = {0};
    irect rc = eval_rect(rect, zero, m->width, m->height);
    if (n_cells != rect_count(&rc) || (n_cells > 0 && !origins) || (n_cells > 0 && bytes > 0 && !host)) {
        set_err(err, errlen, "host gather: %lld origins for %lld cores, or no host buffer", (long long)n_cells,
                (long long)rect_count(&rc));
        return 1;
    }
    FOR_RECT_CELLS(&rc, x, y) { /* check every core before copying anything */
        int64_t core = y * m->width + x;
        if (bytes == 0 || offset + bytes <= m->arena_size[core]) continue;
        set_err(err, errlen, "host gather: buffer at core (%lld,%lld) spans bytes [%lld,%lld) outside the "
                "core's %lld-byte arena", (long long)x, (long long)y, (long long)offset,
                (long long)(offset + bytes), (long long)m->arena_size[core]);
        return 1;
    }
    if (bytes == 0) return 0;
    int64_t hstride[MICA_MAX_RANK], step = elem;
    for (int d = rank - 1; d >= 0; --d) {
        hstride[d] = step;
        step *= shape[d];
    }
    box_t buf = {0};
    buf.offset = offset;
    buf.elem = elem;
    host_job_t job = {m, &rc, 0, (void *)host, &buf, hstride, shape, counts, origins, rank};
    host_parallel(m, &job, gather_rows, sat_mul(n_cells, bytes));
    return 0;
}

static void copy_block(int dir, uint8_t *host, const int64_t *hstride, uint8_t *core, const box_t *b,
                       const int64_t *lo, const int64_t *ext);

/* mica_host_copy's copies of the member rows [ya, yb). */
static void copy_rows(const host_job_t *j, int64_t ya, int64_t yb) {
    static const int64_t zero[MICA_MAX_VARS] = {0};
    int64_t lo[MICA_MAX_RANK], ext[MICA_MAX_RANK];
    FOR_JOB_ROWS(j->rc, ya, yb, y)
        for (int64_t x = j->rc->fx; x < j->rc->x1; x += j->rc->xs)
            if (box_at(j->box, x, y, zero, lo, ext))
                copy_block(j->dir, j->host, j->hstride, arena_of(j->m, y * j->m->width + x) + j->box->offset,
                           j->box, lo, ext);
}

int32_t mica_host_copy(mica_mesh *m, int32_t dir, void *host, const int64_t *box, const int64_t *rect,
                       char *err, int32_t errlen) {
    if (!m || !box || !rect) {
        set_err(err, errlen, "host copy: missing mesh, box or rect");
        return 1;
    }
    if (!m->committed) {
        set_err(err, errlen, "host copy: the mesh is not committed");
        return 1;
    }
    if (dir != 0 && dir != 1) {
        set_err(err, errlen, "host copy: direction %d is not 0 (load) or 1 (store)", (int)dir);
        return 1;
    }
    const char *why = check_box(box);
    if (why) {
        set_err(err, errlen, "host copy: malformed box: %s", why);
        return 1;
    }
    box_t b;
    load_box(box, &b);
    int64_t hstride[MICA_MAX_RANK], size = b.elem;
    for (int d = b.rank - 1; d >= 0; --d) {
        hstride[d] = size;
        size = sat_mul(size, b.extent[d]);
    }
    if (size > HOST_LIMIT) {
        set_err(err, errlen, "host copy: host array too large");
        return 1;
    }
    static const int64_t zero[MICA_MAX_VARS] = {0};
    irect rc = eval_rect(rect, zero, m->width, m->height);
    int64_t lo[MICA_MAX_RANK], ext[MICA_MAX_RANK];
    /* Check every core before copying anything. */
    FOR_RECT_CELLS(&rc, x, y) {
            int64_t bytes = box_at(&b, x, y, zero, lo, ext), core = y * m->width + x;
            if (bytes == 0 || b.offset + bytes <= m->arena_size[core]) continue;
            set_err(err, errlen,
                    "host copy: box at core (%lld,%lld) spans bytes [%lld,%lld) outside the core's "
                    "%lld-byte arena",
                    (long long)x, (long long)y, (long long)b.offset, (long long)(b.offset + bytes),
                    (long long)m->arena_size[core]);
            return 1;
        }
    if (!host && rect_area(&rc) > 0) {
        set_err(err, errlen, "host copy: no host buffer");
        return 1;
    }
    host_job_t job = {m, &rc, dir, host, &b, hstride, NULL, NULL, NULL, 0};
    host_parallel(m, &job, copy_rows, sat_mul(rect_count(&rc), b.max_bytes));
    return 0;
}

void mica_set_host_threads(mica_mesh *m, int32_t n) {
    if (m) m->host_threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}
