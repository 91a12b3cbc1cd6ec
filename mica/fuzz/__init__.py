"""Differential fuzzing of MICA: random affine C programs on random meshes against the C itself.

Two fuzzers live here, each usable from tests (small, derandomized) and from the command line (long runs):

* **Programs.** :func:`generate` builds a random C function in the affine subset
  :func:`mica.affine.from_c.from_c` accepts -- 1-4 statements in 1-4 loops, nested and sequential,
  rectangular, offset (``i = 1``, ``i < n - 1``), triangular (``j <= i``, ``j = i + 1``) and min-bounded
  loops, up and down, several arrays of rank 1-3 with in-bounds affine subscripts (in bounds *by
  construction*: every subscript's range over the loop ranges is computed and the array extents are made
  to cover it), ``=``/``+=`` updates (reductions whenever a statement's subscripts drop a loop), ``int``
  size parameters and floating scalar parameters; one element type per program (``double``/``float``/
  ``int``) -- plus a random mesh (1x1 .. 6x5, most of which do not divide the sizes) and a thread count.
  Mixed in (:mod:`~mica.fuzz.shapes`, issue 17): max/min updates in every spelling (``fmax``/``fmin``,
  ternaries, ``-INFINITY``/``INFINITY`` identities), arg-min/arg-max (value, index) pairs, loop iterators as
  values (``(double)(i - j)``), temporaries (C locals, scalar and array, rewritten in every iteration of an
  outer loop), writes to disjoint parts of one array in one nest (symmetric fill ``C[j][i] = C[i][j]``,
  transposed copies, ``X[2*i]``/``X[2*i + 1]``) and uniform dependences (wavefronts, Gauss-Seidel,
  recurrences, Floyd-Warshall, triangular solve). Programs with arg pairs, int programs and 15% of the
  others run on small-integer data (0..3: ties happen, every computed value is exact).
  :func:`check_case` compiles it (``from_c`` -> ``compile_affine(target="wormhole")`` -> ``run``) and
  compares every written array with :func:`mica.testing.run_c` (the C compiled natively).

  Outcomes (:class:`Outcome`): ``ok``; ``refused`` -- ``compile_affine`` raised a
  :class:`~mica.errors.ScheduleError` (including :class:`~mica.errors.SramError`) or a
  :class:`~mica.errors.CommError` with a clear message, an accepted answer that is counted by reason;
  everything else is a failure: ``mismatch`` (wrong numbers), ``crash`` (any other exception, from the
  front end, the compiler or the emulator; an unclear refusal), ``timeout`` and ``died`` (the process
  running the program was killed by a signal, e.g. a segfault in native code) in the long run.

  Programs are drawn through a :class:`Chooser`: a seeded :class:`RandomChooser` for the long run,
  :func:`cases` (a hypothesis strategy whose draws shrink) for tests. A random program is identified by
  its list of choices, which :func:`shrink` reduces to a minimal failing program.

* **Malformed C.** :func:`malformed_texts` yields truncated, byte-flipped, token-mutated, spliced and
  random texts; :func:`check_malformed` feeds one to ``from_c``, whose only acceptable answers are a
  :class:`~mica.affine.program.Program` or a :class:`~mica.errors.MicaError`, within a time bound.

Command line::

    python -m mica.fuzz --seconds 3600 --seed 1 [--jobs 2] [--out DIR] [--keep-going]
    python -m mica.fuzz --malformed --count 5000 --seed 1
    python -m mica.fuzz --replay mica-fuzz-failure-1-17.c

The long run evaluates every program in a worker process (a crash or hang of native code cannot take the
fuzzer down), prints the counts (programs, compiled, refused by reason, mismatches, crashes, elapsed) and on
the first failure shrinks it, writes the minimal reproducer (C source, mesh, target, params, seed, the
failure) to ``DIR/mica-fuzz-failure-<seed>-<n>.c`` and exits with status 1.

The package's modules, one concern each: :mod:`~mica.fuzz.choices` (the random decisions),
:mod:`~mica.fuzz.generate` (the program generator), :mod:`~mica.fuzz.items` (its program tree),
:mod:`~mica.fuzz.shapes` (the shapes mixed in), :mod:`~mica.fuzz.oracle` (running one program against
the natively compiled C), :mod:`~mica.fuzz.workers` (worker processes), :mod:`~mica.fuzz.shrink`,
:mod:`~mica.fuzz.soak` (the long run and its reproducers), :mod:`~mica.fuzz.malformed` (malformed C) and
:mod:`~mica.fuzz.cli` (the command line).
"""

from __future__ import annotations

from .choices import Chooser, RandomChooser, ReplayChooser
from .cli import main
from .generate import (ARRAY_NAMES, LOOP_VARS, MAX_EXTENT, MESH_H, MESH_W, SCALARS, TARGET, FuzzCase,
                       case_from_choices, case_from_seed, cases, generate)
from .malformed import _VOCAB as _VOCAB  # the token vocabulary of the mutations (tests use it)
from .malformed import MalformedOutcome, check_malformed, malformed_run, malformed_texts
from .oracle import F32_TOL, F64_TOL, Outcome, check_case, make_inputs
from .shrink import shrink
from .soak import read_reproducer, soak, write_reproducer

__all__ = ["Chooser", "RandomChooser", "ReplayChooser", "FuzzCase", "Outcome", "generate", "cases",
           "case_from_seed", "case_from_choices",
           "check_case", "make_inputs", "shrink", "malformed_texts", "check_malformed", "main",
           # also public: the generator's limits, the tolerances, the runs and the reproducer files
           "ARRAY_NAMES", "LOOP_VARS", "MAX_EXTENT", "MESH_H", "MESH_W", "SCALARS", "TARGET", "F32_TOL", "F64_TOL",
           "MalformedOutcome", "malformed_run", "soak", "read_reproducer", "write_reproducer"]
