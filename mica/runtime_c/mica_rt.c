/* MICA mesh emulator: implementation of mica_rt.h.
 *
 * Layout of the host state: see rt_mesh.c.
 *
 * Execution
 *   mica_run validates the whole op code first (a malformed program never runs partially), then
 *   interprets it on the calling thread. Each op is executed in phases; the work of a phase is split into
 *   chunks (CHUNKS_PER_THREAD per thread): bands of the op's bounding box in row-major order, so every
 *   core belongs to exactly one chunk within a phase. Each chunk has its own context (counters, traffic
 *   log, fault); threads claim chunks dynamically and the calling thread waits for the phase's chunks
 *   to be done, not for every thread to show up (a thread the OS delays holds up at most one chunk). The
 *   chunking depends only on the thread count given, and which thread runs a chunk changes nothing.
 *   Small ops run on the calling thread alone; exchanges with ordered copies use fewer, taller bands.
 *
 *   EXCHANGE   A  setup:  set routes, evaluate and bounds-check every send/receive box, mark expected
 *                         receives (owner thread of the receiving core)
 *              B  route:  every sender injects its message and walks the multicast tree hop by hop,
 *                         checking the route tables; deliveries are counted per receive and the sender
 *                         recorded; traffic is logged per thread (not yet added to the statistics)
 *              C  check:  only when the delivery count disagrees with the expected count: find the
 *                         receive that got no message or more than one
 *              D  finish: on success copy payloads (owner thread of the receiving core) and replay the
 *                         traffic logs into the statistics (each chunk the counters of its own cores;
 *                         entries of other bands' cores after the phase, serially); always clear the
 *                         op's routes.
 *              Sends whose source bytes may be overwritten by a receive of the same op on the same core
 *              are copied once, in an order where every reader takes them before they are overwritten
 *              (a cycle, or a reader in another band, keeps the payload aside first: "Payload copies"),
 *              so every message carries the bytes its box held at the start of the exchange.
 *   COMPUTE    arena coverage is checked in O(1) per rectangle with a prefix sum, then kernels run;
 *              before each call the kernel module's prefetch hint (if any) learns the next arena.
 *   Host copies of 4 MB or more are split by rows over the host threads (mica_set_host_threads).
 *
 * Timing model (mica_rt.h)
 *   Each core has a mica_core_t (clock, compute / communication / idle cycles, and the pending result of
 *   its last exchange, applied by x_commit when its clock is next read). A COMPUTE adds the kernel's work
 *   function to the clock. In an EXCHANGE, phase A opens the scratch of every sender and receiver; phase
 *   B times each message while routing it (departure = sender's clock; a link is reserved by the first
 *   message of the op that crosses it, from the link's busy-until; arrival recorded per receive); if a
 *   link got a second message of the op, retime_shared re-times every message on a shared link serially,
 *   in a fixed order (discrete events by head arrival, ties by sender core and send entry), so results
 *   do not depend on the thread count; phase D completes the receivers (each also no earlier than the
 *   sum of its streams' bytes through its ramp, finish_timing; senders likewise in sender_done). A failed
 *   op undoes its link reservations and drops its scratch: the clocks are as before it.
 *
 * Determinism
 *   Every fault has a key (phase, core index, entry index) and the reported fault is the one with the
 *   smallest key; a thread skips only work whose key is larger than the best fault seen so far, so the
 *   smallest one is always found, whatever the thread count and timing. A failing op changes neither
 *   arena contents nor statistics (its routes are cleared), so results, statistics and messages are
 *   bit-identical for any thread count, also after a fault.
 *
 * Parts (a unity build: this file includes them in this order; each is compiled only from here, so
 * their static functions stay static and the compiler sees the whole emulator at once)
 *   rt_defs.c         word layout of the op code, limits, small helpers
 *   rt_mesh.c         host state, mesh creation, arenas, route planes, statistics
 *   rt_trace.c        per-core timelines of the timing model (opt-in: mica_trace_start)
 *   rt_geometry.c     affine values, rectangles, boxes
 *   rt_run_state.c    state of a running op: entries, chunk contexts, faults, bands
 *   rt_pool.c         thread pool: chunks, dispatch, fault collection
 *   rt_timing.c       timing model: core clocks, link reservations, re-timing of shared links
 *   rt_wavelet.c      wavelet-level fabric mode: per-link, per-colour queues stepped cycle by cycle
 *   rt_exchange.c     EXCHANGE phases A (setup), B (routing), C (check)
 *   rt_copies.c       EXCHANGE phase D: payload copies, statistics, route clearing
 *   rt_exchange_op.c  one EXCHANGE op: decoding, staging plan, its phases in order
 *   rt_compute.c      COMPUTE ops: kernel calls, work, prefetch hint
 *   rt_dram.c         DRAM ops: the device-DRAM level, its bound arrays, per-core reader queues
 *   rt_interp.c       op-code validation, the interpreter, mica_run, progress
 *   rt_host.c         host copies (mica_host_copy, mica_host_gather)
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE, MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include "mica_rt.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#include "rt_defs.c"
#include "rt_mesh.c"
#include "rt_trace.c"
#include "rt_geometry.c"
#include "rt_run_state.c"
#include "rt_pool.c"
#include "rt_timing.c"
#include "rt_wavelet.c"
#include "rt_exchange.c"
#include "rt_copies.c"
#include "rt_exchange_op.c"
#include "rt_compute.c"
#include "rt_dram.c"
#include "rt_interp.c"
#include "rt_host.c"
