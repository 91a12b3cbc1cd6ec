"""MICA: a polyhedral compiler for mesh-based AI accelerators.

Usage::

    import mica
    prog = mica.compile_affine(mica.ops.matmul(512, 512, 512), mesh=(750, 994), target="wse2")
    print(prog.meshir); print(prog.cost)
    res = prog.run({"A": A, "B": B}, mesh=(16, 16))
    prog.save("mm.mica"); prog = mica.load("mm.mica")      # pickle inside: load only files you trust
"""

from . import ops, testing
from .errors import (AffineError, ArgumentError, CommError, DramError, EmitError, InputError, LoadError, MeshError, MeshIRError,
                     MicaError, NotAffineError, ScheduleError, SimError, SramError, TargetError)
from .pipeline import CompiledProgram, compile_affine, load
from .targets import TARGETS, Target, get_target
from .tiling import plans
from .tiling.schedule import Schedule

__version__ = "0.1.0"

__all__ = [
    "ops", "plans", "testing", "compile_affine", "load", "CompiledProgram", "Schedule", "Target", "TARGETS",
    "get_target", "MicaError", "MeshError", "TargetError", "AffineError", "NotAffineError", "ScheduleError",
    "SramError", "DramError", "CommError", "MeshIRError", "EmitError", "InputError", "LoadError", "SimError", "ArgumentError",
]
