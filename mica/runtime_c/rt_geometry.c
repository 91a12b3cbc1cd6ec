/* MICA mesh emulator, affine values, rectangles and boxes as the op code words describe them (mica_rt.h).
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

typedef struct {
    int64_t x0, x1, y0, y1; /* half-open bounding box, clamped to the mesh; x1 >= x0, y1 >= y0 */
    int64_t xs, xp, ys, yp; /* members: x = xp (mod xs), y = yp (mod ys); 0 <= xp < xs, 0 <= yp < ys */
    int64_t fx, fy, nx;     /* first member column and row, members per row (set by eval_rect) */
    int xsh, ysh;           /* log2 of xs, ys when they are powers of two, else -1 */
} irect;

/* The first a' >= a with a' = p (mod s). */
static int64_t align_up(int64_t a, int64_t s, int64_t p) {
    int64_t r = (p - a) % s;
    return a + (r < 0 ? r + s : r);
}

static int64_t count_members(int64_t a, int64_t b, int64_t s, int64_t p) {
    int64_t f = align_up(a, s, p);
    return f < b ? (b - 1 - f) / s + 1 : 0;
}

/* Number of member cores of rc (its bounding box for unit strides). */
static int64_t rect_count(const irect *r) {
    return count_members(r->x0, r->x1, r->xs, r->xp) * count_members(r->y0, r->y1, r->ys, r->yp);
}

#define FOR_RECT_CELLS(rc, x, y)                                                                  \
    for (int64_t y = align_up((rc)->y0, (rc)->ys, (rc)->yp); y < (rc)->y1; y += (rc)->ys)        \
        for (int64_t x = align_up((rc)->x0, (rc)->xs, (rc)->xp); x < (rc)->x1; x += (rc)->xs)

/* floor(a / d) for d >= 1. */
static int64_t floor_div64(int64_t a, int64_t d) {
    int64_t q = a / d;
    return (a % d != 0 && a < 0) ? q - 1 : q;
}

static int64_t eval_affine(const int64_t *w, const int64_t *v) {
    int64_t r = w[0];
    for (int i = 0; i < MICA_MAX_VARS; ++i) r = sat_add(r, sat_mul(w[1 + i], v[i]));
    int64_t d = w[1 + MICA_MAX_VARS];
    return d > 1 ? floor_div64(r, d) : r;
}

/* A BOUND: the max (lower bounds) or min (upper bounds) of its terms. */
static int64_t eval_bound(const int64_t *w, const int64_t *v, bool lower) {
    int64_t r = eval_affine(w, v);
    for (int i = 1; i < MICA_MAX_TERMS; ++i) {
        int64_t t = eval_affine(w + i * W_AFFINE, v);
        r = lower ? max64(r, t) : min64(r, t);
    }
    return r;
}

static irect eval_rect(const int64_t *w, const int64_t *v, int64_t W, int64_t H) {
    irect r;
    r.x0 = clamp64(eval_bound(w, v, true), 0, W);
    r.x1 = clamp64(eval_bound(w + W_BOUND, v, false), r.x0, W);
    r.y0 = clamp64(eval_bound(w + 2 * W_BOUND, v, true), 0, H);
    r.y1 = clamp64(eval_bound(w + 3 * W_BOUND, v, false), r.y0, H);
    const int64_t *st = w + 4 * W_BOUND; /* xs, xp (an AFFINE), ys, yp (an AFFINE); strides >= 1 */
    const int64_t *ys = st + 1 + W_AFFINE;
    r.xs = st[0] >= 1 ? st[0] : 1;
    r.ys = ys[0] >= 1 ? ys[0] : 1;
    r.xp = ((eval_affine(st + 1, v) % r.xs) + r.xs) % r.xs;
    r.yp = ((eval_affine(ys + 1, v) % r.ys) + r.ys) % r.ys;
    if (rect_count(&r) == 0) r.x1 = r.x0, r.y1 = r.y0;
    r.fx = align_up(r.x0, r.xs, r.xp);
    r.fy = align_up(r.y0, r.ys, r.yp);
    r.nx = count_members(r.x0, r.x1, r.xs, r.xp);
    r.xsh = (r.xs & (r.xs - 1)) == 0 ? __builtin_ctzll((unsigned long long)r.xs) : -1;
    r.ysh = (r.ys & (r.ys - 1)) == 0 ? __builtin_ctzll((unsigned long long)r.ys) : -1;
    return r;
}

static int64_t rect_area(const irect *r) { return (r->x1 - r->x0) * (r->y1 - r->y0); }

/* Row-major index of member core (x, y) among the members of rc (from eval_rect): per-entry state
 * arrays (receive counts and senders, staged payloads) hold one slot per member, so a strided rectangle
 * (every 4th core of a ring's colour) costs its members, not its bounding box. */
static int64_t cell_of(const irect *rc, int64_t x, int64_t y) {
    int64_t cx = rc->xsh >= 0 ? (x - rc->fx) >> rc->xsh : (x - rc->fx) / rc->xs;
    int64_t cy = rc->ysh >= 0 ? (y - rc->fy) >> rc->ysh : (y - rc->fy) / rc->ys;
    return cy * rc->nx + cx;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Whether x = pa (mod sa) and x = pb (mod sb) have a common solution. */
static bool phases_meet(int64_t sa, int64_t pa, int64_t sb, int64_t pb) {
    return (pa - pb) % gcd64(sa, sb) == 0;
}

/* False when no core belongs to both rectangles; true when some may (their bounding boxes meet and
 * their strides and phases are compatible: rings on strided colours rarely share a core). */
static bool rects_meet(const irect *a, const irect *b) {
    return max64(a->x0, b->x0) < min64(a->x1, b->x1) && max64(a->y0, b->y0) < min64(a->y1, b->y1) &&
           phases_meet(a->xs, a->xp, b->xs, b->xp) && phases_meet(a->ys, a->yp, b->ys, b->yp);
}

typedef struct {
    int64_t offset, elem, max_bytes;
    int64_t fixed; /* its size in bytes at every core of the running op (box_fix), or -1 */
    int rank;
    int axis[MICA_MAX_RANK];
    int64_t tile[MICA_MAX_RANK], extent[MICA_MAX_RANK], origin[MICA_MAX_RANK];
} box_t;

/* Checks the 19 words of a BOX; returns NULL or a description of the first problem. */
static const char *check_box(const int64_t *w) {
    int64_t off = w[0], elem = w[1], rank = w[2];
    if (off < 0 || off > BOX_LIMIT) return "box offset out of range";
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return "box element size not 1, 2, 4 or 8";
    if (rank < 0 || rank > MICA_MAX_RANK) return "box rank not in 0..6";
    int64_t bytes = elem;
    for (int64_t d = 0; d < rank; ++d) {
        int64_t axis = w[3 + 4 * d], tile = w[4 + 4 * d], extent = w[5 + 4 * d], origin = w[6 + 4 * d];
        if (axis < 0 || axis >= N_AXES) return "box axis not in 0..6";
        if (origin < -BOX_LIMIT || origin > BOX_LIMIT || (origin && axis != 1 && axis != 2))
            return "box origin too large, or on an axis other than x and y";
        if (tile < 0 || extent < 0 || tile > BOX_LIMIT || extent > BOX_LIMIT)
            return "box tile or extent negative or too large";
        if (axis == 0 && tile > extent) return "box dim without a coordinate has tile > extent";
        bytes = sat_mul(bytes, min64(tile, extent));
    }
    if (bytes > BOX_LIMIT) return "box larger than 2^48 bytes";
    return NULL;
}

static void load_box(const int64_t *w, box_t *b) {
    b->offset = w[0];
    b->elem = w[1];
    b->rank = (int)w[2];
    b->fixed = -1;
    b->max_bytes = b->elem;
    for (int d = 0; d < b->rank; ++d) {
        b->axis[d] = (int)w[3 + 4 * d];
        b->tile[d] = w[4 + 4 * d];
        b->extent[d] = w[5 + 4 * d];
        b->origin[d] = w[6 + 4 * d];
        b->max_bytes *= min64(b->tile[d], b->extent[d]);
    }
}

/* Evaluates a box at core (x, y): fills lo/ext per dim (if non-NULL) and returns its size in bytes,
 * 0 when the box is empty there. */
static int64_t box_at(const box_t *b, int64_t x, int64_t y, const int64_t *v, int64_t *lo,
                      int64_t *ext) {
    int64_t bytes = b->elem;
    for (int d = 0; d < b->rank; ++d) {
        int a = b->axis[d];
        int64_t coord = a == 0 ? 0 : a == 1 ? x - b->origin[d] : a == 2 ? y - b->origin[d] : v[a - 3];
        int64_t l, e;
        if (__builtin_mul_overflow(b->tile[d], coord, &l) || l < 0 || l >= b->extent[d]) return 0;
        e = min64(b->extent[d] - l, b->tile[d]);
        if (e <= 0) return 0;
        if (lo) lo[d] = l;
        if (ext) ext[d] = e;
        bytes *= e;
    }
    return bytes;
}

/* Records the box's size when it is the same at every core for loop values v (no x or y axis): the
 * exchange phases ask for it per message. */
static void box_fix(box_t *b, const int64_t *v) {
    for (int d = 0; d < b->rank; ++d)
        if (b->axis[d] == 1 || b->axis[d] == 2) return;
    b->fixed = box_at(b, 0, 0, v, NULL, NULL);
}

/* box_at's size alone, from box_fix's record when there is one. */
static int64_t box_bytes(const box_t *b, int64_t x, int64_t y, const int64_t *v) {
    return b->fixed >= 0 ? b->fixed : box_at(b, x, y, v, NULL, NULL);
}

static void bbox_add(irect *bb, const irect *rc, bool *any) {
    if (rect_area(rc) == 0) return;
    if (!*any) {
        *bb = *rc;
        bb->xs = bb->ys = 1; /* the bounding box of every entry: all its cores */
        bb->xp = bb->yp = 0;
        *any = true;
        return;
    }
    bb->x0 = min64(bb->x0, rc->x0);
    bb->x1 = max64(bb->x1, rc->x1);
    bb->y0 = min64(bb->y0, rc->y0);
    bb->y1 = max64(bb->y1, rc->y1);
}
