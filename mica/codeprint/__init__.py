"""Code printing: every language MICA generates, through one set of visitors.

* :mod:`.languages` -- one :class:`~.languages.Language` table per language (the MeshIR text form, the
  emulator's C kernels, a Program's reference C, CSL, the host script's Python, Metalium C++);
* :mod:`.expr` -- the expression-tree printer; :mod:`.aff` -- the affine index printer (and the block of
  a skewed step); :mod:`.isl_ast` -- the isl AST walker (loop nests isl builds);
* :mod:`.reference` -- a Program's sequential reference in C and in Python.

Layering: this package sits above :mod:`mica.affine` and below every back end; it imports only
``mica.affine``, ``mica.errors``, ``mica.targets`` and islpy (never MeshIR or a back end), so a back end's
records are passed in as plain text callbacks (``read(ref)``, ``env``).
"""

from .aff import print_aff, skew_block
from .expr import expr_text, float_dtype, int_store_float_dtype, iterator_casts_dropped, print_expr
from .isl_ast import ast_expr, walk
from .languages import C_KERNEL, C_TYPES, CSL, METALIUM, PYTHON, REFERENCE_C, TEXT, Language
from .reference import program_c, program_py

__all__ = ["Language", "TEXT", "C_KERNEL", "REFERENCE_C", "CSL", "PYTHON", "METALIUM", "print_expr",
           "expr_text", "float_dtype", "int_store_float_dtype", "iterator_casts_dropped", "C_TYPES", "print_aff", "skew_block", "ast_expr", "walk", "program_c", "program_py"]
