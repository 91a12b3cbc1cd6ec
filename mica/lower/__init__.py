"""Lowering: a :class:`~mica.tiling.schedule.Schedule` and the communication sets of :mod:`mica.comm` become a
:class:`~mica.meshir.ir.MeshProgram`.

* :mod:`.build` — one operator: the driver over the steps below, statement kernels, the step loop, the arena;
  :mod:`.builder` holds the pass's mutable state (regions, region-aware tensors, kernels);
  :mod:`.reads` plans each read (local, multicasts, mirrors), :mod:`.rings` the ring shifts of a skewed step,
  :mod:`.halo` ghost zones and strip exchanges, :mod:`.reduce` reductions across cores;
* :mod:`.phases` — several operators one after another (or side by side), merged with a shared arena;
* :mod:`.place` — an operator moved to its own rectangle, blocks carried between rectangles;
* :mod:`.relayout` — a produced 2D array transposed on the mesh by a conveyor of one-hop shifts.

Layering: this package imports ``affine``, ``tiling``, ``comm`` and ``meshir``; nothing below the pipeline's
lowering step (the back ends, the emulator, the pipeline) and nothing in ``tiling`` imports it — the
schedule search builds its candidates through the :class:`~mica.tiling.search.Lowering` the pipeline hands it.
"""
