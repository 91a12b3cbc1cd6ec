"""Tests of the native mesh emulator (mica/runtime_c), its cffi binding and the build cache.

Programs are built by hand with mica.native_sim.opcode; kernels come from a tiny C module compiled
through compile_shared. Every fault test checks that SimError names the op, core and colour.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mica.emit_c.build import compile_shared
from mica.errors import EmitError, SimError
from mica.native_sim import opcode as oc
from mica.native_sim.opcode import (
    AXIS_V0,
    AXIS_WHOLE,
    AXIS_X,
    AXIS_Y,
    EAST,
    LINK_E,
    LINK_N,
    LINK_S,
    LINK_W,
    NORTH,
    RAMP,
    SOUTH,
    WEST,
    Affine,
    Box,
    BoxDim,
    Compute,
    Exchange,
    Loop,
    Recv,
    Rect,
    Route,
    Send,
    as_affine,
    encode,
)
from mica.native_sim.runtime import RUNTIME_DIR, NativeMesh, include_flags, load_kernels

KERNELS_C = r"""
#include <stdint.h>
#include <string.h>
#include "mica_rt.h"

/* 0: int64 at offset 0 = x * 1000 + y */
static void k_coord(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
    (void)v; (void)s;
    int64_t val = x * 1000 + y;
    memcpy(a, &val, sizeof val);
}

/* 1: int32[4] at offset 32 += int32[4] at offset 16 */
static void k_accumulate(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
    (void)x; (void)y; (void)v; (void)s;
    int32_t acc[4], in[4];
    memcpy(acc, a + 32, sizeof acc);
    memcpy(in, a + 16, sizeof in);
    for (int i = 0; i < 4; ++i) acc[i] += in[i];
    memcpy(a + 32, acc, sizeof acc);
}

/* 2: double at offset 0 = scalars[0] * x + scalars[1] * y + v[0] */
static void k_scaled(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
    double val = s[0] * (double)x + s[1] * (double)y + (double)v[0];
    memcpy(a, &val, sizeof val);
}

static const mica_kernel_fn table[] = {k_coord, k_accumulate, k_scaled};
int32_t mica_kernel_count(void) { return 3; }
mica_kernel_fn mica_kernel_get(int32_t i) { return i >= 0 && i < 3 ? table[i] : 0; }
"""

K_COORD, K_ACCUMULATE, K_SCALED = 0, 1, 2


@pytest.fixture(scope="module")
def kernels():
    return load_kernels(compile_shared(KERNELS_C, name="test_kernels", flags=include_flags()))


# ---------------------------------------------------------------------------------------------------
# Program builders
# ---------------------------------------------------------------------------------------------------


def i32x4(offset: int) -> Box:
    """Four int32 held whole by every core."""
    return Box(offset, 4, (BoxDim.whole(4),))


def per_core(offset: int, elem: int, n: int, width: int, height: int) -> Box:
    """n elements per core, tensor shaped (H, W, n): core (x, y) holds [y, x, :]."""
    return Box(offset, elem, (BoxDim(AXIS_Y, 1, height), BoxDim(AXIS_X, 1, width), BoxDim.whole(n)))


def line_routes(n: int, root, colour: int, fwd: int, back: int, rect) -> list[Route]:
    """Multicast from position `root` (int or Affine) along a line of n cores, built as the compiler
    does: every bound a max/min, so the routes are exact for any root, edges included.
    rect(lo, hi) makes the rectangle of positions [lo, hi) on the line."""
    r = as_affine(root)
    if n == 1:
        return [Route(colour, RAMP, RAMP, rect(r, r + 1))]
    return [
        Route(colour, back, fwd | RAMP, rect((r + 1, 0), n - 1)),         # forward part
        Route(colour, back, RAMP, rect((r + 1, n - 1), n)),               # forward end
        Route(colour, fwd, back | RAMP, rect(1, (r, n))),                 # backward part
        Route(colour, fwd, RAMP, rect(0, (r, 1))),                        # backward end
        Route(colour, RAMP, RAMP | fwd | back, rect((r, 1), (r + 1, n - 1))),  # root inside
        Route(colour, RAMP, RAMP | fwd, rect((r, 0), (r + 1, 1))),        # root at the start
        Route(colour, RAMP, RAMP | back, rect((r, n - 1), (r + 1, n))),   # root at the end
    ]


def row_routes(width: int, y0: int, y1: int, root, colour: int) -> list[Route]:
    """Row multicast from column `root` to every core of rows [y0, y1)."""
    return line_routes(width, root, colour, EAST, WEST, lambda a, b: Rect(a, b, y0, y1))


def col_routes(height: int, x0: int, x1: int, root, colour: int) -> list[Route]:
    """Column multicast from row `root` to every core of columns [x0, x1)."""
    return line_routes(height, root, colour, SOUTH, NORTH, lambda a, b: Rect(x0, x1, a, b))


def row_multicast(width, height, root, send: Box, recv: Box, op_id=1, colour=0, max_hops=None):
    """Every row: the core in column `root` sends `send` to every core of its row."""
    r = as_affine(root)
    return Exchange(
        op_id,
        row_routes(width, 0, height, r, colour),
        (Send(colour, width if max_hops is None else max_hops, Rect(r, r + 1, 0, height), send),),
        (Recv(colour, Rect.const(0, width, 0, height), recv),),
    )


def col_multicast(width, height, root, send: Box, recv: Box, op_id=1, colour=0):
    """Every column: the core in row `root` sends `send` to every core of its column."""
    r = as_affine(root)
    return Exchange(
        op_id,
        col_routes(height, 0, width, r, colour),
        (Send(colour, height, Rect(0, width, r, r + 1), send),),
        (Recv(colour, Rect.const(0, width, 0, height), recv),),
    )


def shift_west(width, height, send: Box, recv: Box, op_id=1) -> Exchange:
    """Every core x >= 1 sends `send` one hop west into `recv` of core x-1; colours alternate by
    column (checkerboard) so that a core's own message and its neighbour's never share a route."""
    routes, sends, recvs = [], [], []
    for x in range(width):
        own, other = x % 2, (x + 1) % 2
        column = Rect.const(x, x + 1, 0, height)
        if x >= 1:
            routes.append(Route(own, RAMP, WEST, column))
            sends.append(Send(own, 1, column, send))
        if x <= width - 2:
            routes.append(Route(other, EAST, RAMP, column))
            recvs.append(Recv(other, column, recv))
    return Exchange(op_id, routes, sends, recvs)


def new_mesh(width, height, arena=64, colours=4, sram=1024) -> NativeMesh:
    mesh = NativeMesh(width, height, colours, sram)
    mesh.reserve((0, width, 0, height), arena)
    mesh.commit()
    return mesh


def dump(mesh: NativeMesh, arena: int) -> np.ndarray:
    """Every core's whole arena as uint8, shaped (H, W, arena)."""
    box = per_core(0, 1, arena, mesh.width, mesh.height)
    return mesh.host_store(box, (0, mesh.width, 0, mesh.height), box.shape, np.uint8)


def load_coords(mesh: NativeMesh) -> np.ndarray:
    """Writes int64 x*1000+y at offset 0 of every core; returns the (H, W) array written."""
    w, h = mesh.width, mesh.height
    data = (np.arange(w)[None, :] * 1000 + np.arange(h)[:, None]).astype(np.int64)
    mesh.host_load(data.reshape(h, w, 1), per_core(0, 8, 1, w, h), (0, w, 0, h))
    return data


def expect_fault(mesh: NativeMesh, ops, *words: str, kernels=None, threads=1) -> str:
    """Runs `ops` (a list of ops or raw words), expects SimError whose message holds every word."""
    code = ops if isinstance(ops, np.ndarray) else encode(ops)
    with pytest.raises(SimError) as info:
        mesh.run(code, kernels, threads=threads)
    message = str(info.value)
    for w in words:
        assert w in message, f"{w!r} not in {message!r}"
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------------------------------------
# Communication patterns
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("root", [0, 3, 7])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_multicast_delivers_root_box_with_exact_link_bytes(root, threads):
    width, height, row = 8, 3, 1
    with new_mesh(width, height) as mesh:
        payload = np.array([7, 8, 9, 10], dtype=np.int32)
        mesh.host_load(payload, i32x4(0), Rect.cell(root, row))
        recv = Box(16, 4, (BoxDim(AXIS_X, 1, width), BoxDim.whole(4)))
        ex = Exchange(1, row_routes(width, row, row + 1, root, 0),
                      (Send(0, width, Rect.cell(root, row), i32x4(0)),),
                      (Recv(0, Rect.const(0, width, row, row + 1), recv),))
        mesh.run(encode([ex]), threads=threads)

        got = mesh.host_store(recv, (0, width, row, row + 1), (width, 4), np.int32)
        assert (got == payload).all()
        assert dump(mesh, 64)[[0, 2]].sum() == 0  # other rows untouched

        s = mesh.stats()
        expected = np.zeros((height, width, 4), dtype=np.uint64)
        expected[row, root:width - 1, LINK_E] = 16
        expected[row, 1:root + 1, LINK_W] = 16
        assert (s.link_bytes == expected).all()
        assert (s.link_messages == expected // 16).all()
        assert (s.messages, s.deliveries, s.exchanges) == (1, width, 1)
        assert s.link_bytes_total == 16 * (width - 1) and s.link_messages_total == width - 1
        assert s.max_hops == max(root, width - 1 - root)
        assert s.core_bytes_sent[row, root] == 16 and s.core_bytes_sent.sum() == 16
        assert (s.core_bytes_recv[row] == 16).all() and s.core_bytes_recv.sum() == 16 * width


def test_checkerboard_shift_west(kernels):
    width, height = 6, 4
    with new_mesh(width, height) as mesh:
        send, recv = Box(0, 8, ()), Box(8, 8, ())
        mesh.run(encode([Compute(1, ((K_COORD, Rect.const(0, width, 0, height)),)),
                         shift_west(width, height, send, recv, op_id=2)]), kernels)
        got = mesh.host_store(per_core(8, 8, 1, width, height), (0, width, 0, height),
                              (height, width, 1), np.int64)[..., 0]
        xs, ys = np.meshgrid(np.arange(width), np.arange(height))
        assert (got[:, :-1] == ((xs + 1) * 1000 + ys)[:, :-1]).all()
        assert (got[:, -1] == 0).all()  # the last column receives nothing

        s = mesh.stats()
        assert (s.link_bytes[:, 1:, LINK_W] == 8).all() and s.link_bytes.sum() == 8 * (width - 1) * height
        assert (s.messages, s.deliveries, s.max_hops) == ((width - 1) * height,) * 2 + (1,)
        assert s.computes == width * height and s.exchanges == 1


def test_in_place_shift_sends_the_boxes_as_they_were_at_the_start():
    width, height = 9, 3
    with new_mesh(width, height) as mesh:
        coords = load_coords(mesh)
        box = Box(0, 8, ())
        mesh.run(encode([shift_west(width, height, box, box)]), threads=2)
        got = mesh.host_store(per_core(0, 8, 1, width, height), (0, width, 0, height),
                              (height, width, 1), np.int64)[..., 0]
        assert (got[:, :-1] == coords[:, 1:]).all()  # one hop only, not a cascade
        assert (got[:, -1] == coords[:, -1]).all()


def test_pairwise_swap_in_place():
    with new_mesh(2, 1) as mesh:
        load_coords(mesh)
        box = Box(0, 8, ())
        ex = Exchange(1, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST, RAMP, Rect.cell(1, 0)),
                          Route(1, RAMP, WEST, Rect.cell(1, 0)), Route(1, EAST, RAMP, Rect.cell(0, 0))),
                      (Send(0, 1, Rect.cell(0, 0), box), Send(1, 1, Rect.cell(1, 0), box)),
                      (Recv(0, Rect.cell(1, 0), box), Recv(1, Rect.cell(0, 0), box)))
        mesh.run(encode([ex]))
        assert dump(mesh, 64)[0, :, :8].copy().view(np.int64).ravel().tolist() == [1000, 0]


def test_column_multicast():
    width, height, root = 3, 7, 2
    with new_mesh(width, height) as mesh:
        coords = load_coords(mesh)
        recv = per_core(8, 8, 1, width, height)
        mesh.run(encode([col_multicast(width, height, root, Box(0, 8, ()), recv)]), threads=2)
        got = mesh.host_store(recv, (0, width, 0, height), recv.shape, np.int64)[..., 0]
        assert (got == coords[root][None, :]).all()
        s = mesh.stats()
        assert (s.link_bytes[root:height - 1, :, LINK_S] == 8).all()
        assert (s.link_bytes[1:root + 1, :, LINK_N] == 8).all()
        assert s.link_bytes_total == 8 * (height - 1) * width and s.max_hops == height - 1 - root


def test_loop_of_row_multicasts_with_affine_root(kernels):
    """LOOP v0 over every column: root = v0 multicasts its row values (max/min route bounds make the
    same op exact at the edges); every core adds what it receives into an accumulator."""
    width, height = 7, 2
    with new_mesh(width, height) as mesh:
        values = np.arange(1, 5, dtype=np.int32)[None, None, :] * (np.arange(width)[None, :, None] + 1)
        values = np.repeat(values, height, axis=0).astype(np.int32)
        mesh.host_load(np.ascontiguousarray(values), per_core(0, 4, 4, width, height), (0, width, 0, height))
        body = (row_multicast(width, height, Affine.var(0), i32x4(0), i32x4(16), op_id=3),
                Compute(4, ((K_ACCUMULATE, Rect.const(0, width, 0, height)),)))
        mesh.run(encode([Loop(0, width, body)]), kernels, threads=2)

        acc = mesh.host_store(per_core(32, 4, 4, width, height), (0, width, 0, height), (height, width, 4), np.int32)
        assert (acc == values.sum(axis=1)[:, None, :]).all()
        s = mesh.stats()
        assert (s.exchanges, s.messages, s.computes) == (width, width * height, width * width * height)
        assert s.link_bytes_total == width * height * (width - 1) * 16
        assert s.max_hops == width - 1


def test_rect_bounds_are_max_and_min_of_their_terms(kernels):
    """A COMPUTE rectangle [max(v0, 2), min(v0 + 3, 5)) in a loop: clipped differently each step."""
    with new_mesh(8, 1) as mesh:
        rect = Rect((Affine.var(0), 2), (Affine.var(0, 1, 3), 5), 0, 1)
        mesh.run(encode([Loop(0, 6, (Compute(1, ((K_COORD, rect),)),))]), kernels)
        assert mesh.stats().computes == 1 + 2 + 3 + 2 + 1 + 0
        got = dump(mesh, 64)[0, :, :8].copy().view(np.int64).ravel()
        assert got.tolist() == [0, 0, 2000, 3000, 4000, 0, 0, 0]


@pytest.mark.parametrize("width,height", [(1, 1), (1, 9), (9, 1), (5, 3), (3, 5)])
def test_non_square_and_degenerate_meshes(width, height):
    with new_mesh(width, height) as mesh:
        coords = load_coords(mesh)
        row_recv, col_recv = per_core(8, 8, 1, width, height), per_core(16, 8, 1, width, height)
        mesh.run(encode([row_multicast(width, height, width // 2, Box(0, 8, ()), row_recv, op_id=1),
                         col_multicast(width, height, height // 2, Box(0, 8, ()), col_recv, op_id=2)]))
        rows = mesh.host_store(row_recv, (0, width, 0, height), row_recv.shape, np.int64)[..., 0]
        cols = mesh.host_store(col_recv, (0, width, 0, height), col_recv.shape, np.int64)[..., 0]
        assert (rows == coords[:, [width // 2]]).all()
        assert (cols == coords[[height // 2], :]).all()
        s = mesh.stats()
        assert s.link_bytes_total == 8 * ((width - 1) * height + (height - 1) * width)
        assert s.deliveries == 2 * width * height


def test_scalars_and_loop_variables_reach_kernels(kernels):
    with new_mesh(4, 3) as mesh:
        mesh.run(encode([Loop(0, 3, (Compute(1, ((K_SCALED, Rect.const(0, 4, 0, 3)),)),))]),
                 kernels, scalars=(2.5, 100.0))
        got = mesh.host_store(per_core(0, 8, 1, 4, 3), (0, 4, 0, 3), (3, 4, 1), np.float64)[..., 0]
        xs, ys = np.meshgrid(np.arange(4), np.arange(3))
        assert (got == 2.5 * xs + 100.0 * ys + 2).all()
        assert mesh.stats().computes == 36


def test_ragged_edge_tiles_and_loop_variable_box_axis():
    """Tiles whose extent is not a multiple of the tile, a dimension without a coordinate holding only
    its leading elements, and a box tiled by v0 (AXIS_V0) that shrinks and then becomes empty as the
    loop runs (an empty box sends and expects nothing)."""
    with new_mesh(3, 1) as mesh:
        data = np.arange(10, dtype=np.int16)
        tiled = Box(0, 2, (BoxDim(AXIS_X, 4, 10),))  # cores hold 4, 4 and 2 elements
        mesh.host_load(data, tiled, (0, 3, 0, 1))
        assert (mesh.host_store(tiled, (0, 3, 0, 1), (10,), np.int16) == data).all()
        assert dump(mesh, 64)[0, 2, :4].view(np.int16).tolist() == [8, 9]

        leading = Box(48, 2, (BoxDim(AXIS_WHOLE, 3, 10),))  # the first 3 of 10 elements
        mesh.host_load(data, leading, (0, 3, 0, 1))
        assert mesh.host_store(leading, (1, 2, 0, 1), (10,), np.int16).tolist() == [0, 1, 2] + [0] * 7
        assert dump(mesh, 64)[0, 1, 48:56].view(np.int16).tolist() == [0, 1, 2, 0]

        by_v0 = Box(0, 2, (BoxDim(AXIS_V0, 4, 6),))  # v0 = 0: 4 elements, 1: 2 elements, 2: none
        ex = Exchange(1, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST, RAMP, Rect.cell(1, 0))),
                      (Send(0, 1, Rect.cell(0, 0), by_v0),), (Recv(0, Rect.cell(1, 0), Box(32, 2, by_v0.dims)),))
        mesh.run(encode([Loop(0, 3, (ex,))]))
        s = mesh.stats()
        assert (s.exchanges, s.messages, s.link_bytes_total) == (3, 2, 8 + 4)
        assert dump(mesh, 64)[0, 1, 32:40].view(np.int16).tolist() == [0, 1, 2, 3]


def test_results_and_stats_identical_for_1_2_4_threads(kernels):
    width, height = 64, 48
    program = encode([
        Compute(1, ((K_COORD, Rect.const(0, width, 0, height)),)),
        shift_west(width, height, Box(0, 8, ()), Box(8, 8, ()), op_id=2),
        row_multicast(width, height, 17, Box(0, 8, ()), Box(24, 8, ()), op_id=3),
        col_multicast(width, height, 30, Box(8, 8, ()), Box(40, 8, ()), op_id=4),
        Loop(0, 3, (row_multicast(width, height, Affine.var(0, 5, 2), i32x4(0), i32x4(16), op_id=5),
                    Compute(6, ((K_ACCUMULATE, Rect.const(0, width, 0, height)),)))),
        shift_west(width, height, Box(0, 8, ()), Box(0, 8, ()), op_id=7),
    ])
    results = []
    for threads in (1, 2, 4):
        with new_mesh(width, height, arena=64) as mesh:
            mesh.run(program, kernels, threads=threads)
            results.append((dump(mesh, 64), mesh.stats()))
    (a1, s1), (a2, s2), (a4, s4) = results
    assert (a1 == a2).all() and (a1 == a4).all()
    assert s1 == s2 == s4
    assert s1.exchanges == 7 and s1.computes == 4 * width * height and a1.any()


def test_stats_reset_and_arena_accounting():
    with NativeMesh(5, 4, 2, 4096) as mesh:
        mesh.reserve((0, 5, 0, 4), 100)
        mesh.reserve((1, 3, 1, 2), 3000)  # later reservation overrides
        mesh.reserve((4, 5, 3, 4), 0)     # no arena
        mesh.commit()
        s = mesh.stats()
        assert s.arena_max == 3000 and s.arena_bytes == 17 * 100 + 2 * 3000
        assert s.core_arena_bytes[1, 1] == 3000 and s.core_arena_bytes[3, 4] == 0
        mesh.run(encode([row_multicast(3, 1, 0, Box(0, 8, ()), Box(8, 8, ()))]))
        assert mesh.stats().messages == 1
        mesh.reset_stats()
        s = mesh.stats()
        assert s.messages == 0 and s.link_bytes.sum() == 0 and s.arena_max == 3000


# ---------------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------------


def test_fault_unrouted_colour_at_the_sender():
    with new_mesh(4, 2) as mesh:
        ex = Exchange(5, (), (Send(1, 3, Rect.cell(2, 1), Box(0, 8, ())),), ())
        expect_fault(mesh, [ex], "op 5", "no route for colour 1", "core (2,1)")


def test_fault_unrouted_arrival():
    with new_mesh(4, 2) as mesh:
        ex = Exchange(6, (Route(2, RAMP, EAST, Rect.cell(1, 0)), Route(2, EAST, RAMP, Rect.cell(2, 0))),
                      (Send(2, 3, Rect.cell(1, 0), Box(0, 8, ())),), (Recv(2, Rect.cell(2, 0), Box(8, 8, ())),))
        expect_fault(mesh, [ex], "op 6", "no route for colour 2 arriving from WEST at core (2,0)")


def test_fault_route_leaving_the_mesh():
    with new_mesh(4, 2) as mesh:
        ex = Exchange(7, (Route(0, RAMP, EAST | RAMP, Rect.cell(3, 1)),),
                      (Send(0, 3, Rect.cell(3, 1), Box(0, 8, ())),), (Recv(0, Rect.cell(3, 1), Box(8, 8, ())),))
        expect_fault(mesh, [ex], "op 7", "colour 0", "core (3,1)", "EAST off the 4x2 mesh")


def test_fault_max_hops_exceeded():
    with new_mesh(6, 1) as mesh:
        ex = row_multicast(6, 1, 0, Box(0, 8, ()), Box(8, 8, ()), op_id=8, colour=3, max_hops=2)
        expect_fault(mesh, [ex], "op 8", "colour 3", "from core (0,0)", "max_hops=2", "core (3,0)")


def test_fault_route_cycle():
    with new_mesh(2, 2) as mesh:
        ex = Exchange(9, (Route(0, RAMP | SOUTH, EAST, Rect.cell(0, 0)), Route(0, WEST, SOUTH, Rect.cell(1, 0)),
                          Route(0, NORTH, WEST, Rect.cell(1, 1)), Route(0, EAST, NORTH, Rect.cell(0, 1))),
                      (Send(0, 100, Rect.cell(0, 0), Box(0, 8, ())),), ())
        expect_fault(mesh, [ex], "op 9", "colour 0", "reaches core (0,0) twice")


def test_fault_receive_with_no_matching_send():
    with new_mesh(4, 2) as mesh:
        ex = Exchange(10, (), (), (Recv(1, Rect.cell(3, 1), Box(8, 8, ())),))
        expect_fault(mesh, [ex], "op 10", "colour 1", "core (3,1)", "no matching send")


def test_fault_message_with_no_matching_receive():
    with new_mesh(4, 2) as mesh:
        ex = Exchange(11, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST, RAMP, Rect.cell(1, 0))),
                      (Send(0, 2, Rect.cell(0, 0), Box(0, 8, ())),), (Recv(0, Rect.cell(2, 0), Box(8, 8, ())),))
        expect_fault(mesh, [ex], "op 11", "colour 0", "reached core (1,0) with no matching receive")


def test_fault_second_message_to_one_receive():
    with new_mesh(2, 1) as mesh:
        ex = Exchange(12, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST | RAMP, RAMP, Rect.cell(1, 0))),
                      (Send(0, 1, Rect.const(0, 2, 0, 1), Box(0, 8, ())),), (Recv(0, Rect.cell(1, 0), Box(8, 8, ())),))
        expect_fault(mesh, [ex], "op 12", "colour 0", "core (1,0)", "2 messages")


def test_fault_length_mismatch():
    with new_mesh(4, 1) as mesh:
        ex = Exchange(13, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST, RAMP, Rect.cell(1, 0))),
                      (Send(0, 1, Rect.cell(0, 0), i32x4(0)),), (Recv(0, Rect.cell(1, 0), Box(16, 4, (BoxDim.whole(2),))),))
        expect_fault(mesh, [ex], "op 13", "colour 0", "core (1,0)", "16 bytes", "expects 8 bytes")


def test_fault_dropped_message():
    with new_mesh(3, 1) as mesh:
        ex = Exchange(14, (Route(0, RAMP, EAST, Rect.cell(0, 0)), Route(0, WEST, 0, Rect.cell(1, 0))),
                      (Send(0, 2, Rect.cell(0, 0), Box(0, 8, ())),), ())
        expect_fault(mesh, [ex], "op 14", "colour 0", "dropped at core (1,0)")


def test_fault_reservation_over_the_sram_limit():
    with NativeMesh(4, 4, 4, 1024) as mesh:
        with pytest.raises(SimError, match=r"1025 bytes .*\[1,2\) x \[0,4\).*1024"):
            mesh.reserve((1, 2, 0, 4), 1025)


def test_fault_box_outside_the_arena():
    with new_mesh(4, 1, arena=512) as mesh:
        ex = Exchange(15, (Route(0, RAMP, RAMP, Rect.cell(2, 0)),),
                      (Send(0, 0, Rect.cell(2, 0), Box(500, 4, (BoxDim.whole(4),))),), (Recv(0, Rect.cell(2, 0), i32x4(0)),))
        expect_fault(mesh, [ex], "op 15", "colour 0", "core (2,0)", "[500,516)", "512-byte arena")
        with pytest.raises(SimError, match=r"core \(0,0\).*512-byte arena"):
            mesh.host_load(np.zeros(4, np.int32), Box(510, 4, (BoxDim.whole(4),)), (0, 4, 0, 1))


def test_fault_core_without_an_arena(kernels):
    with NativeMesh(4, 2, 4, 1024) as mesh:
        mesh.reserve((0, 4, 0, 2), 64)
        mesh.reserve((2, 3, 1, 2), 0)
        mesh.commit()
        expect_fault(mesh, [Compute(16, ((K_COORD, Rect.const(0, 4, 0, 2)),))], "op 16", "core (2,1)", "no arena",
                     kernels=kernels)
        ex = Exchange(17, (Route(0, RAMP, RAMP, Rect.cell(2, 1)),), (Send(0, 0, Rect.cell(2, 1), Box(0, 8, ())),), ())
        expect_fault(mesh, [ex], "op 17", "core (2,1)", "no arena")


def test_fault_kernel_index_out_of_range(kernels):
    with new_mesh(2, 2) as mesh:
        expect_fault(mesh, [Compute(18, ((3, Rect.const(0, 2, 0, 2)),))], "kernel index 3 out of range", kernels=kernels)
        expect_fault(mesh, [Compute(18, ((0, Rect.const(0, 2, 0, 2)),))], "kernel index 0 out of range")


def test_fault_malformed_op_codes():
    with new_mesh(4, 2, colours=4) as mesh:
        ex = row_multicast(4, 2, 1, Box(0, 8, ()), Box(8, 8, ()))
        good = encode([ex])
        expect_fault(mesh, np.array([99], dtype=np.int64), "unknown opcode 99")
        expect_fault(mesh, good[:-5], "malformed op code", "needs")
        expect_fault(mesh, good[:3], "truncated EXCHANGE header")
        expect_fault(mesh, np.array([1, 0, -1, 0], dtype=np.int64), "negative loop count")
        expect_fault(mesh, np.array([1, 0, 1, 50], dtype=np.int64), "loop body")
        expect_fault(mesh, np.array([1, 5, 1, 0], dtype=np.int64), "loop slot 5")
        expect_fault(mesh, np.array([2, 0, -1, 0, 0], dtype=np.int64), "bad EXCHANGE entry counts")
        expect_fault(mesh, np.array([3, 0, 2**40], dtype=np.int64), "bad COMPUTE entry count")
        expect_fault(mesh, encode([row_multicast(4, 2, 1, Box(0, 8, ()), Box(8, 8, ()), colour=4)]), "colour 4 out of range")
        send_box = 5 + len(ex.routes) * oc.WORDS_ROUTE + 2 + oc.WORDS_RECT  # first word of the send's box
        for word, value, reason in ((2, 7, "rank"), (1, 3, "element size"), (3, 9, "axis"), (0, -8, "offset"),
                                    (4, -1, "negative")):
            bad = good.copy()
            if word >= 3:
                bad[send_box + 2] = 1  # rank 1, so dim 0 is read
            bad[send_box + word] = value
            expect_fault(mesh, bad, "malformed op code", reason)
        stats = mesh.stats()
        assert stats.exchanges == 0 and stats.messages == 0  # nothing ran


def test_fault_is_identical_for_any_thread_count():
    """Many faults in one op: the reported one is the smallest core, whatever the thread count."""
    width, height = 64, 40
    ex = shift_west(width, height, Box(0, 8, ()), Box(8, 8, ()), op_id=20)
    broken = Exchange(20, ex.routes, ex.sends, ex.recvs + (Recv(3, Rect.const(0, width, 5, height), Box(16, 8, ())),))
    messages = set()
    for threads in (1, 2, 4):
        with new_mesh(width, height) as mesh:
            messages.add(expect_fault(mesh, [broken], "colour 3", "core (0,5)", "no matching send", threads=threads))
    assert len(messages) == 1


def test_failed_exchange_changes_nothing_and_clears_its_routes():
    width, height = 40, 30
    with new_mesh(width, height) as mesh:
        load_coords(mesh)
        good = shift_west(width, height, Box(0, 8, ()), Box(8, 8, ()), op_id=1)
        mesh.run(encode([good]), threads=2)
        before_stats, before = mesh.stats(), dump(mesh, 64)
        bad = Exchange(2, good.routes, good.sends, good.recvs[:-1])  # column width-2 gets no receive
        for threads in (1, 2):
            expect_fault(mesh, [bad], "op 2", f"core ({width - 2},0)", "no matching receive", threads=threads)
            assert mesh.stats() == before_stats and (dump(mesh, 64) == before).all()
        # Routes of the failed op are gone: an unrouted send still faults at its sender.
        expect_fault(mesh, [Exchange(3, (), (Send(0, 1, Rect.cell(2, 0), Box(0, 8, ())),), ())], "no route for colour 0")
        mesh.run(encode([good]))
        assert mesh.stats().exchanges == 2


def test_host_array_checks():
    with new_mesh(2, 2) as mesh:
        box = i32x4(0)
        with pytest.raises(SimError, match="element"):
            mesh.host_load(np.zeros(4, np.int64), box, (0, 2, 0, 2))
        with pytest.raises(SimError, match="contiguous"):
            mesh.host_load(np.zeros(8, np.int32)[::2], box, (0, 2, 0, 2))
        with pytest.raises(SimError, match="elements"):
            mesh.host_load(np.zeros(5, np.int32), box, (0, 2, 0, 2))
        with pytest.raises(SimError, match="numpy"):
            mesh.host_load([1, 2, 3, 4], box, (0, 2, 0, 2))
        with pytest.raises(SimError, match="element"):
            mesh.host_store(box, (0, 2, 0, 2), (4,), np.float64)


def test_mesh_lifecycle_errors():
    mesh = NativeMesh(2, 2, 1, 64)
    with pytest.raises(SimError, match="not committed"):
        mesh.run(encode([Compute(1, ())]))
    mesh.commit()
    with pytest.raises(SimError, match="already committed"):
        mesh.reserve((0, 1, 0, 1), 8)
    with pytest.raises(SimError, match="thread count"):
        mesh.run(encode([Compute(1, ())]), threads=0)
    mesh.close()
    mesh.close()
    with pytest.raises(SimError, match="closed"):
        mesh.stats()
    with pytest.raises(SimError, match="mesh shape"):
        NativeMesh(0, 5, 1, 64)


# ---------------------------------------------------------------------------------------------------
# Op-code constructors and the header contract
# ---------------------------------------------------------------------------------------------------


def test_opcode_validation():
    with pytest.raises(SimError, match="rank"):
        Box(0, 4, (BoxDim.whole(1),) * 7)
    with pytest.raises(SimError, match="element size"):
        Box(0, 3, ())
    with pytest.raises(SimError, match="tile <= extent"):
        BoxDim(0, 5, 4)
    with pytest.raises(SimError, match="distinct terms"):
        Rect(tuple(Affine.var(0, k) for k in range(1, 6)), 1, 0, 1)
    with pytest.raises(SimError, match="at least one term"):
        Rect((), 1, 0, 1)
    with pytest.raises(SimError, match="axis"):
        BoxDim(7, 1, 1)
    with pytest.raises(SimError, match="coefficients"):
        Affine(0, (1, 2, 3, 4, 5))
    with pytest.raises(SimError, match="direction"):
        Route(0, 32, 1, Rect.cell(0, 0))
    with pytest.raises(SimError, match="already used"):
        encode([Loop(1, 2, (Loop(1, 2, ()),))])
    with pytest.raises(SimError, match="integer"):
        Rect.const(0, 1.5, 0, 1)
    assert encode([Loop(0, 3, (Compute(1, ((0, Rect.cell(0, 0)),)),))]).tolist()[:4] == [1, 0, 3, 114]
    assert (Affine.var(1, 3, 2) + 1).words() == [3, 0, 3, 0, 0, 1]          # the last word: the divisor
    assert Affine(0, (1,), 4).evaluate([9]) == 2 and Affine(0, (1,), 4).words() == [0, 1, 0, 0, 0, 4]
    assert Affine(9, (), 4) == Affine(2)                                       # a constant is divided once
    with pytest.raises(SimError, match="divisor"):
        Affine(0, (1,), 4) + 1
    bounds = Rect((Affine.var(0), 7, 2, Affine.var(0)), (Affine.var(0), 4), 0, 1)
    assert bounds.x0 == (Affine.var(0), Affine(7)) and bounds.x1 == (Affine.var(0), Affine(4))
    assert bounds.words()[:24] == [0, 1, 0, 0, 0, 1] + [7, 0, 0, 0, 0, 1] * 3  # padded by repeating a term
    assert bounds.evaluate([9]) == (9, 4, 0, 1) and len(bounds.words()) == oc.WORDS_RECT == 110
    assert bounds.words()[96:] == [1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1]              # unit strides
    with pytest.raises(SimError, match="stride"):
        Rect.const(0, 4, 0, 1).__class__(0, 4, 0, 1, xs=0)


def test_constants_match_the_header():
    header = (RUNTIME_DIR / "mica_rt.h").read_text()
    defines = dict(re.findall(r"#define MICA_(\w+)\s+(\d+)", header))
    assert len(defines) == 20      # OP_PREFETCH: double-buffered exchanges; OP_DRAM, OP_DRAM_PREFETCH, MAX_DRAM;
    #                                OP_LOOP_DOWN: a sweep counting down
    for name, value in defines.items():
        assert getattr(oc, name) == int(value), name


# ---------------------------------------------------------------------------------------------------
# Build cache
# ---------------------------------------------------------------------------------------------------

TINY_C = "int mica_tiny(int x) { return x + 1; }\n"


def test_compile_shared_caches_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("MICA_CACHE_DIR", str(tmp_path / "cache"))
    first = compile_shared(TINY_C, name="tiny")
    mtime = first.stat().st_mtime_ns
    assert first.parent == tmp_path / "cache" and first.suffix == ".so"
    assert compile_shared(TINY_C, name="tiny") == first and first.stat().st_mtime_ns == mtime
    assert compile_shared(TINY_C, name="tiny", flags=("-DX=1",)) != first
    assert compile_shared(TINY_C + "\n", name="tiny") != first
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(
        p.name for p in (tmp_path / "cache").glob("tiny-*.so"))  # no temporary files left


def test_compile_shared_reports_compiler_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("MICA_CACHE_DIR", str(tmp_path))
    source = "int f(void) { return undeclared_thing; }\n" + "".join(f"int g{i}(void) {{ return x{i}; }}\n" for i in range(60))
    with pytest.raises(EmitError, match="undeclared_thing") as info:
        compile_shared(source, name="broken")
    assert len(str(info.value).splitlines()) <= 42
    assert list(tmp_path.iterdir()) == []


def test_compile_shared_concurrent_processes(tmp_path):
    script = ("import sys; from mica.emit_c.build import compile_shared; "
              "print(compile_shared('int mica_race(void) { return 7; }', name='race'))")
    env = {"MICA_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    paths = {o[0].strip() for o in outs}
    assert len(paths) == 1 and Path(paths.pop()).exists()


# ---------------------------------------------------------------------------------------------------
# Full wafer
# ---------------------------------------------------------------------------------------------------


def test_full_wafer_750x994_one_hop_shift():
    width, height = 750, 994
    t0 = time.perf_counter()
    with NativeMesh(width, height, 24, 48 * 1024) as mesh:
        mesh.reserve((0, width, 0, height), 512)
        mesh.commit()
        coords = load_coords(mesh)
        program = encode([shift_west(width, height, Box(0, 8, ()), Box(256, 8, ()))])
        t1 = time.perf_counter()
        mesh.run(program, threads=2)
        t2 = time.perf_counter()
        got = mesh.host_store(per_core(256, 8, 1, width, height), (0, width, 0, height),
                              (height, width, 1), np.int64)[..., 0]
        assert (got[:, :-1] == coords[:, 1:]).all()
        s = mesh.stats()
        assert s.messages == (width - 1) * height and s.arena_bytes == 512 * width * height
    total = time.perf_counter() - t0
    print(f"750x994: run {t2 - t1:.3f} s, total {total:.3f} s")
    assert t2 - t1 < 30


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_rects_checkerboard_shift_in_place(threads):
    """Two colours alternate by column parity, each set of senders/receivers one strided rectangle."""
    width, height = 7, 3
    with new_mesh(width, height) as mesh:
        coords = load_coords(mesh)
        box = Box(0, 8, ())

        def r(x0, x1, phase):
            return Rect(x0, x1, 0, height, xs=2, xp=phase)
        routes = tuple(Route(c, RAMP, WEST, r(1, width, c)) for c in (0, 1)) + \
            tuple(Route(c, EAST, RAMP, r(0, width - 1, 1 - c)) for c in (0, 1))
        sends = tuple(Send(c, 1, r(1, width, c), box) for c in (0, 1))
        recvs = tuple(Recv(c, r(0, width - 1, 1 - c), box) for c in (0, 1))
        mesh.run(encode([Exchange(1, routes, sends, recvs)]), threads=threads)
        got = mesh.host_store(per_core(0, 8, 1, width, height), (0, width, 0, height),
                              (height, width, 1), np.int64)[..., 0]
        assert (got[:, :-1] == coords[:, 1:]).all()
        s = mesh.stats()
        assert s.messages == (width - 1) * height and s.max_hops == 1
        assert (s.link_bytes[:, 1:, LINK_W] == 8).all() and s.link_bytes.sum() == 8 * (width - 1) * height


def test_stride_phase_moves_with_the_loop_variable():
    """A LOOP whose exchange's senders are every third column, starting at column 2 - v0."""
    width, height = 9, 2
    with new_mesh(width, height) as mesh:
        coords = load_coords(mesh)
        box = Box(0, 8, ())
        senders = Rect(0, width, 0, height, xs=3, xp=Affine(2, (-1,)))
        receivers = Rect(0, width, 0, height, xs=3, xp=Affine(1, (-1,)))
        ex = Exchange(1, (Route(0, RAMP, WEST, senders), Route(0, EAST, RAMP, receivers)),
                      (Send(0, 1, senders, box),), (Recv(0, receivers, box),))
        mesh.run(encode([Loop(0, 2, (ex,))]), threads=2)
        got = mesh.host_store(per_core(0, 8, 1, width, height), (0, width, 0, height),
                              (height, width, 1), np.int64)[..., 0]
        # Stage 0 moves column 2 -> 1, 5 -> 4, 8 -> 7; stage 1 moves 1 -> 0, 4 -> 3, 7 -> 6.
        want = coords.copy()
        for g in range(3):
            want[:, 3 * g + 1] = coords[:, 3 * g + 2]
            want[:, 3 * g] = coords[:, 3 * g + 2]
        assert (got == want).all()
        assert mesh.stats().messages == 2 * 3 * height
