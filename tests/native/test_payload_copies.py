"""In-place exchanges: the order of the emulator's payload copies (mica_rt.c, "Payload copies").

A send box of 1 KB or more that a receive of the same exchange overwrites on the same core is copied
once, in an order where every reader takes it before it is overwritten; only a cycle (a ring, a swap) or
a reader in another thread's band keeps the payload aside. Smaller ones are all kept aside first. Whatever
the order and thread count, every receive must get the bytes its sender's box held at the start of the
exchange: each test runs with payloads of both kinds (N int64 per core: 24 B and 1,280 B). The meshes
here have more than 1,024 cores, so that the exchanges are split into bands (several per thread) and
cycles cross band edges.
"""

from __future__ import annotations

import numpy as np
import pytest

from mica.native_sim.opcode import (
    EAST,
    NORTH,
    RAMP,
    SOUTH,
    WEST,
    Box,
    BoxDim,
    Exchange,
    Recv,
    Rect,
    Route,
    Send,
    encode,
)
from mica.native_sim.runtime import NativeMesh

THREADS = (1, 2, 3, 7)
#: int64 per core: a payload under and one over the runtime's ORDERED_COPY_MIN (1,024 bytes)
SIZES = (3, 160)


def per_core(offset: int, n: int, width: int, height: int) -> Box:
    """n int64 per core, tensor shaped (H, W, n): core (x, y) holds [y, x, :]."""
    return Box(offset, 8, (BoxDim(2, 1, height), BoxDim(1, 1, width), BoxDim.whole(n)))


def load(mesh: NativeMesh, n: int) -> np.ndarray:
    """Writes n distinct int64 at offset 0 of every core; returns the (H, W, n) array written."""
    w, h = mesh.width, mesh.height
    data = np.arange(w * h * n, dtype=np.int64).reshape(h, w, n) + 1
    mesh.host_load(data, per_core(0, n, w, h), (0, w, 0, h))
    return data


def read(mesh: NativeMesh, n: int) -> np.ndarray:
    w, h = mesh.width, mesh.height
    return mesh.host_store(per_core(0, n, w, h), (0, w, 0, h), (h, w, n), np.int64)


def hop(colour: int, d: int, senders: Rect, receivers: Rect, send: Box, recv: Box):
    """Every core of `senders` sends `send` one hop in direction d into `recv` of the core there."""
    back = {EAST: WEST, WEST: EAST, NORTH: SOUTH, SOUTH: NORTH}[d]
    return ((Route(colour, RAMP, d, senders), Route(colour, back, RAMP, receivers)),
            (Send(colour, 1, senders, send),), (Recv(colour, receivers, recv),))


def snake(width: int, height: int, send: Box, recv: Box) -> Exchange:
    """Every pair of rows is one cycle of 2 * width cores: east along the even row, south at the east
    edge, west along the odd row, north at the west edge. Colours alternate by column parity, so no core
    needs two routes of one colour."""
    def rows(x0, x1, xp, yp, xs=2):
        return Rect(x0, x1, 0, height, xs=xs, xp=xp, ys=2, yp=yp)
    parts = []
    for c in (0, 1):   # c: the sender's column parity
        parts.append(hop(c, EAST, rows(0, width - 1, c, 0), rows(1, width, 1 - c, 0), send, recv))
        parts.append(hop(2 + c, WEST, rows(1, width, c, 1), rows(0, width - 1, 1 - c, 1), send, recv))
    parts.append(hop(4, SOUTH, rows(width - 1, width, 0, 0, 1), rows(width - 1, width, 0, 1, 1), send, recv))
    parts.append(hop(5, NORTH, rows(0, 1, 0, 1, 1), rows(0, 1, 0, 0, 1), send, recv))
    return Exchange(1, *(tuple(e for p in parts for e in p[k]) for k in range(3)))


def snake_moved(data: np.ndarray) -> np.ndarray:
    """What every core holds after one snake step: its predecessor's values."""
    out = np.empty_like(data)
    for y0 in range(0, data.shape[0], 2):
        ring = [(y0, x) for x in range(data.shape[1])] + [(y0 + 1, x) for x in reversed(range(data.shape[1]))]
        for k, (y, x) in enumerate(ring):
            out[y, x] = data[ring[k - 1]]
    return out


def run_all(width, height, program, n):
    """(values before, values after, stats) of `program` on every thread count of THREADS."""
    out = []
    for threads in THREADS:
        with NativeMesh(width, height, 8, 8 * n + 64) as mesh:
            mesh.reserve((0, width, 0, height), 8 * n + 64)
            mesh.commit()
            data = load(mesh, n)
            mesh.run(program, threads=threads)
            out.append((data, read(mesh, n), mesh.stats()))
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("width, height", [(48, 24), (37, 30)])
def test_ring_cycles_in_place(width, height, n):
    """Each pair of rows rotates by one core in place: a cycle of 2 * width copies that crosses bands."""
    box = Box(0, 8, (BoxDim.whole(n),))
    runs = run_all(width, height, encode([snake(width, height, box, box)]), n)
    for data, got, stats in runs:
        np.testing.assert_array_equal(got, snake_moved(data))
        assert stats == runs[0][2]
    assert runs[0][2].messages == width * height


@pytest.mark.parametrize("n", SIZES)
def test_ring_into_an_overlapping_box(n):
    """Send int64s [0, n-1) of each core, receive them into [1, n): the box a receive writes overlaps
    the one its core sends, without being the same."""
    width, height = 40, 28
    box = (BoxDim.whole(n - 1),)
    program = encode([snake(width, height, Box(0, 8, box), Box(8, 8, box))])
    for data, got, stats in run_all(width, height, program, n):
        want = data.copy()
        want[..., 1:] = snake_moved(data)[..., :-1]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_ring_next_to_a_plain_send(n):
    """The snake rotates int64s [0, n-2) in place while, in the same op, int64 n-2 of the even rows goes
    one hop south into int64 n-1 of the odd rows: a payload no receive overwrites, next to staged ones."""
    width, height = 36, 32
    ring = Box(0, 8, (BoxDim.whole(n - 2),))
    snake_ops = snake(width, height, ring, ring)
    extra = hop(6, SOUTH, Rect(1, width - 1, 0, height, ys=2, yp=0), Rect(1, width - 1, 0, height, ys=2, yp=1),
                Box(8 * (n - 2), 8, ()), Box(8 * (n - 1), 8, ()))
    program = encode([Exchange(1, snake_ops.routes + extra[0], snake_ops.sends + extra[1],
                               snake_ops.recvs + extra[2])])
    for data, got, stats in run_all(width, height, program, n):
        want = data.copy()
        want[..., :n - 2] = snake_moved(data[..., :n - 2])
        want[1::2, 1:width - 1, n - 1] = data[0::2, 1:width - 1, n - 2]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("root", [0, 17, 63])
def test_multicast_in_place_includes_the_root(root, n):
    """Every row's root sends its value to the whole row, itself included, into the box it sends
    from: all readers take the payload before the root's own receive overwrites it."""
    width, height = 64, 20
    box = Box(0, 8, (BoxDim.whole(n),))
    routes = (Route(0, EAST, WEST | RAMP, Rect(1, root + 1, 0, height)),
              Route(0, WEST, EAST | RAMP, Rect(root, width - 1, 0, height)),
              Route(0, EAST, RAMP, Rect(0, 1, 0, height)),
              Route(0, WEST, RAMP, Rect(width - 1, width, 0, height)),
              Route(0, RAMP, RAMP | (WEST if root > 0 else 0) | (EAST if root < width - 1 else 0),
                    Rect(root, root + 1, 0, height)))
    program = encode([Exchange(1, routes, (Send(0, width, Rect(root, root + 1, 0, height), box),),
                               (Recv(0, Rect(0, width, 0, height), box),))])
    runs = run_all(width, height, program, n)
    for data, got, stats in runs:
        np.testing.assert_array_equal(got, np.repeat(data[:, root:root + 1], width, axis=1))
        assert stats == runs[0][2]
