"""Box geometry is defined once, on BoxDim: ``alloc`` (elements allocated), ``fixed`` (the size when the
same on every core), ``size`` (on one core) and ``size_on`` (on a class of cores). Every back end reads
these; they must agree with each other and with the ownership the box describes."""

import itertools

import pytest

from mica.errors import MeshIRError
from mica.meshir.ir import BoxDim


def _dims():
    for tile, extent in itertools.product((1, 3, 4, 7), (1, 5, 8, 12)):
        if tile <= extent:
            yield BoxDim(None, tile, extent)
        for coord in ("x", "y", "t"):
            yield BoxDim(coord, tile, extent)
            yield BoxDim(coord, tile, extent, padded=True)
        yield BoxDim("kb", tile, extent, padded=True)
        yield BoxDim("x", tile, extent, origin=2)
        for lo, hi in ((1, 1), (0, 2), (2, 0)):
            yield BoxDim("y", tile, extent, offset=-lo, span=tile + lo + hi)


@pytest.mark.parametrize("d", list(_dims()), ids=str)
def test_alloc_is_the_largest_size_and_fixed_is_the_size_everywhere(d):
    sizes = [d.size(c) for c in range(0, 16)]
    assert d.alloc >= max(sizes)
    if d.tile <= d.extent or d.padded or d.span:      # (a tile larger than the array still allocates a tile)
        assert d.alloc == max(sizes)
    if d.fixed is not None:
        assert set(sizes) == {d.fixed}
    elif d.coord in ("x", "y"):
        assert len(set(sizes[d.origin:])) > 1      # it really varies (a partial or empty tile exists)
    if not d.padded and not d.span and d.coord:
        # the box holds the elements the core owns: [tile*c, min(tile*c + tile, extent)), a prefix
        for c in range(d.origin, d.origin + 4):
            lo = d.tile * (c - d.origin)
            assert d.lo(c) == lo and d.size(c) == len(range(lo, min(lo + d.tile, d.extent)))


@pytest.mark.parametrize("d", list(_dims()), ids=str)
def test_size_on_a_class_is_the_size_of_each_of_its_cores(d):
    for lo in range(d.origin, d.origin + 5):
        for hi in range(lo + 1, lo + 5):
            n = d.size_on(lo, hi)
            if d.coord in ("x", "y"):
                sizes = {d.size(c) for c in range(lo, hi)}
                assert (n is not None) == (len(sizes) == 1) and (n is None or sizes == {n})
            elif n is not None:                     # a loop coordinate: the same at every step
                assert {d.size(c) for c in range(-(-d.extent // d.tile))} == {n}


def test_a_whole_dimension_never_holds_more_than_its_extent():
    # The back ends used to allocate min(tile, extent) for a whole dimension; that is its tile by
    # construction, so alloc (span or tile) is the one definition.
    with pytest.raises(MeshIRError, match="tile <= extent"):
        BoxDim(None, 5, 3)
    assert BoxDim(None, 3, 3).alloc == 3 and str(BoxDim(None, 3, 7)) == ":3"


def test_a_skewed_block_dimension_is_padded():
    # Every back end treats a kb dimension as always full; the IR now says so.
    with pytest.raises(MeshIRError, match="kb box dimension .* is padded"):
        BoxDim("kb", 4, 10)
    d = BoxDim("kb", 4, 10, padded=True)
    assert d.fixed == 4 and d.size(2) == 4 and d.size_on(0, 3) == 4
