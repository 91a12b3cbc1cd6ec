/* MICA mesh emulator, COMPUTE: kernel calls, their modelled work and the prefetch hint (mica_rt.h).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

/* Calls the kernel of compute entry e at `core`, then advances the core's clock by its work; `next` is
 * the core this chunk runs next (-1: none), passed to the kernel module's prefetch hint. */
static void compute_cell(tctx *t, const comp_e *e, int64_t core, int64_t next) {
    run_t *r = t->run;
    mica_mesh *m = r->m;
    int64_t x = core % m->width, y = core / m->width;
    if (m->prefetch)
        m->prefetch(next >= 0 ? arena_of(m, next) : NULL, next >= 0 ? m->arena_size[next] : 0);
    r->kernels[e->kernel](arena_of(m, core), x, y, r->v, r->scalars);
    t->computes++;
    mica_work_fn work = e->kernel < m->n_work ? m->work[e->kernel] : NULL;
    if (!work) return;
    x_commit(m, core);
    double cycles = work(x, y, r->v, r->scalars);
    m->cores[core].pre = m->cores[core].clock; /* a later PREFETCH is issued from here */
    m->cores[core].pre_tag = r->tag;
    m->cores[core].clock += cycles;
    m->cores[core].comp += cycles;
    if (m->trace && cycles > 0)
        trace_compute(m, core, m->cores[core].pre, m->cores[core].clock, (int32_t)r->op_id, (int32_t)e->kernel);
}

/* Runs the kernels of band b, each cell once its successor is known (for the prefetch hint). */
static void phase_compute(tctx *t, const band_t *b) {
    run_t *r = t->run;
    const int64_t W = r->m->width;
    t->computes = 0;
    const comp_e *pe = NULL; /* the cell waiting for its successor: entry and core */
    int64_t pcore = -1;
    for (int64_t i = 0; i < r->n_comps; ++i) { /* entries in order: a core's calls keep theirs */
        const comp_e *e = &r->comps[i];
        FOR_BAND_CELLS(b, &e->rc, x, y) {
            if (pe) compute_cell(t, pe, pcore, y * W + x);
            pe = e;
            pcore = y * W + x;
        }
    }
    if (pe) compute_cell(t, pe, pcore, -1);
}

/* First core of rc (row-major) without an arena, or -1. */
static int64_t first_bare_core(const mica_mesh *m, const irect *rc) {
    FOR_RECT_CELLS(rc, x, y)
    if (m->arena_size[y * m->width + x] == 0) return y * m->width + x;
    return -1;
}

/* Number of member cores of rc that have an arena. */
static int64_t arena_count(const mica_mesh *m, const irect *rc) {
    if (rc->xs != 1 || rc->ys != 1) {
        int64_t n = 0;
        FOR_RECT_CELLS(rc, x, y) n += m->arena_size[y * m->width + x] != 0;
        return n;
    }
    const uint32_t *P = m->arena_psum;
    int64_t S = m->width + 1;
    return (int64_t)P[rc->y1 * S + rc->x1] - P[rc->y0 * S + rc->x1] - P[rc->y1 * S + rc->x0] +
           P[rc->y0 * S + rc->x0];
}

static int exec_compute(run_t *r, int64_t pos) {
    const int64_t *w = r->code + pos;
    r->op_id = w[1];
    r->n_comps = w[2];
    if (!grow((void **)&r->comps, &r->comps_cap, (size_t)r->n_comps, sizeof *r->comps)) {
        run_fail(r, "out of host memory decoding the compute");
        return 1;
    }
    bool any = false;
    int64_t cells = 0, bad_core = -1, bad_kernel = 0;
    const int64_t *p = w + W_COMP_HEAD;
    for (int64_t i = 0; i < r->n_comps; ++i, p += W_CENTRY) {
        comp_e *e = &r->comps[i];
        e->kernel = p[0];
        e->rc = eval_rect(p + 1, r->v, r->m->width, r->m->height);
        bbox_add(&r->bbox, &e->rc, &any);
        cells += rect_area(&e->rc);
        if (arena_count(r->m, &e->rc) != rect_count(&e->rc)) {
            int64_t c = first_bare_core(r->m, &e->rc);
            if (bad_core < 0 || c < bad_core) {
                bad_core = c;
                bad_kernel = e->kernel;
            }
        }
    }
    if (bad_core >= 0) {
        run_fail(r, "compute kernel %lld at core (%lld,%lld), which has no arena", (long long)bad_kernel,
                 (long long)(bad_core % r->m->width), (long long)(bad_core / r->m->width));
        return 1;
    }
    if (!any) return 0;
    /* Kernel calls carry real work: split them over the threads whenever each gets a core or two. */
    r->nt_op = cells >= 2 * (int64_t)r->n_chunks ? r->n_chunks : (cells >= 2 * (int64_t)r->nt ? r->nt : 1);
    dispatch(r, PH_COMPUTE);
    for (int i = 0; i < r->nt_op; ++i) r->m->totals.computes += r->t[i].computes;
    return 0;
}

void mica_set_prefetch(mica_mesh *m, mica_prefetch_fn hint) {
    if (m) m->prefetch = hint;
}
