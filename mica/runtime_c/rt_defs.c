/* MICA mesh emulator, word layout, limits and small helpers.
 *
 * A part of the unity build mica_rt.c: compiled only as included there, after the parts listed
 * before it (whose types, macros and static functions it uses), never on its own.
 */

/* ---------------------------------------------------------------------------------------------------
 * Word layout and limits
 * ------------------------------------------------------------------------------------------------- */

#define W_AFFINE (2 + MICA_MAX_VARS) /* constant, coefficients, divisor */
#define W_BOUND (MICA_MAX_TERMS * W_AFFINE)
#define W_RECT (4 * W_BOUND + 2 + 2 * W_AFFINE) /* four bounds, x stride, x phase, y stride, y phase */
#define W_BOX (3 + 4 * MICA_MAX_RANK)
#define W_ROUTE (3 + W_RECT)
#define W_SEND (2 + W_RECT + W_BOX)
#define W_RECV (1 + W_RECT + W_BOX)
#define W_CENTRY (1 + W_RECT)
#define W_LOOP_HEAD 4
#define W_EXCH_HEAD 5
#define W_COMP_HEAD 3

#define N_AXES (3 + MICA_MAX_VARS)        /* whole, x, y, v0..v3 */
#define ARENA_ALIGN 64                    /* arenas start on their own cache line */
#define SMALL_OP_CELLS 1024               /* ops touching fewer cells run on one thread */
#define MAX_OP_ENTRIES (INT64_C(1) << 22) /* per entry kind of one op; keeps fault keys in 24 bits */
#define BOX_LIMIT (INT64_C(1) << 48)      /* box offsets and sizes beyond this are malformed */
#define HOST_LIMIT (INT64_C(1) << 62)     /* host array size limit for mica_host_copy */
#define MAX_COLOURS 4096
#define MAX_THREADS 256
#define MSG_LEN 256
#define PREFIX_LEN 128

#define NOT_EXPECTED UINT32_MAX           /* receive-state value of a cell whose box is empty */
#define NO_CELL (-1)                      /* end of a reader list */
#define NO_FAULT UINT64_MAX

enum { PH_SETUP = 1, PH_ROUTE = 2, PH_CHECK = 3, PH_FINISH = 4, PH_COMPUTE = 5 };

/* Phase-D state of a receive cell (run_t.recv_state): see "Payload copies". */
enum { COPY_PENDING = 0, COPY_BUSY = 1, COPY_DONE = 2 };
/* Frame of copy_ordered: receive cell, its entry and core (x, y), the position in the list of sends
 * that receive may overwrite (run_t.clobbers) being checked at that core, and the cursor in that
 * payload's reader list (READERS_UNREAD before the list is read). */
enum { F_CELL, F_RECV, F_X, F_Y, F_CLOBBER, F_READER, F_WORDS };
#define READERS_UNREAD (-2)

/* Traffic-log entry kinds (low 3 bits; the value is in the upper bits). 0..3 are MICA_LINK_*. */
enum { LOG_RECV = 4, LOG_SENT = 5, LOG_BYTES = 6 };

/* ---------------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void set_err(char *err, int32_t errlen, const char *fmt,
                                                          ...) {
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, (size_t)errlen, fmt, ap);
    va_end(ap);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t clamp64(int64_t a, int64_t lo, int64_t hi) { return a < lo ? lo : (a > hi ? hi : a); }

static int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
    return r;
}

/* Grows *p (an array of elsz-byte elements with capacity *cap) to hold at least `need` elements. */
static bool grow(void **p, size_t *cap, size_t need, size_t elsz) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elsz);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

static const char *dir_name(int d) {
    switch (d) {
    case MICA_RAMP: return "RAMP";
    case MICA_NORTH: return "NORTH";
    case MICA_EAST: return "EAST";
    case MICA_SOUTH: return "SOUTH";
    default: return "WEST";
    }
}

static int opposite(int d) {
    switch (d) {
    case MICA_NORTH: return MICA_SOUTH;
    case MICA_EAST: return MICA_WEST;
    case MICA_SOUTH: return MICA_NORTH;
    default: return MICA_EAST;
    }
}
