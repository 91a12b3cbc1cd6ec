"""The sample C programs the tests (and bench/) compile, each written once.

Most programs come in several sizes and element types; a function renders the exact text of a variant
(``ctype`` is ``"double"`` or ``"float"``; float programs write their literals with an ``f``). Every
function returns the text the tests used to inline, byte for byte, so moving a test here does not change
what it compiles. Import it as ``import samples`` / ``from samples import ...`` from any test directory
(``tests/conftest.py`` and ``bench/conftest.py`` put ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path

KERNELS = Path(__file__).resolve().parent / "frontend" / "kernels"


def _lit(value: str, ctype: str) -> str:
    """A floating literal of the element type: ``2.0f`` for float, ``2.0`` for double."""
    return value + ("f" if ctype == "float" else "")


# -- matrix products -----------------------------------------------------------------------------------------

def mm2(n: int, ctype: str = "double", *, param: bool = True) -> str:
    """2mm, ``T = A B; D = T C`` on n x n matrices. With ``param`` the loops run to an ``int n`` parameter
    (pass ``params={"n": n}``), else to the literal size."""
    b = "n" if param else str(n)
    head = "int n, " if param else ""
    arrays = ", ".join(f"{ctype} {a}[{n}][{n}]" for a in "ABCTD")
    return f"""
void mm2({head}{arrays}) {{
  for (int i = 0; i < {b}; i++) for (int j = 0; j < {b}; j++) {{
    T[i][j] = 0; for (int k = 0; k < {b}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {b}; i++) for (int j = 0; j < {b}; j++) {{
    D[i][j] = 0; for (int k = 0; k < {b}; k++) D[i][j] += T[i][k] * C[k][j]; }}
}}"""


def matmul_chain(m: int, n: int, ctype: str = "float") -> str:
    """``T = A B; D = T C`` with A m x n: a matmul feeding a matmul, row by row (streamable along T's rows)."""
    return f"""
void chain({ctype} A[{m}][{n}], {ctype} B[{n}][{n}], {ctype} C[{n}][{n}], {ctype} T[{m}][{n}], {ctype} D[{m}][{n}]) {{
  for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) {{
    T[i][j] = 0; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {m}; i++) for (int j = 0; j < {n}; j++) {{
    D[i][j] = 0; for (int k = 0; k < {n}; k++) D[i][j] += T[i][k] * C[k][j]; }}
}}"""


def mm3(n: int) -> str:
    """3mm, ``E = A B; F = C D; G = E F`` (double): the first two products are independent."""
    arrays = ", ".join(f"double {a}[{n}][{n}]" for a in "ABCDEFG")
    body = "".join(f"""
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    {o}[i][j] = 0; for (int k = 0; k < {n}; k++) {o}[i][j] += {l}[i][k] * {r}[k][j]; }}"""
                   for o, l, r in ("EAB", "FCD", "GEF"))
    return f"void mm3({arrays}) {{{body}\n}}"


def transposed_chain(n: int, ctype: str = "double") -> str:
    """T = A B; D = T^T + C; C = D T: the second operator reads T transposed, the third wants it back."""
    return f'''
void chain({ctype} A[{n}][{n}], {ctype} B[{n}][{n}], {ctype} C[{n}][{n}], {ctype} T[{n}][{n}], {ctype} D[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    T[i][j] = 0; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) D[i][j] = T[j][i] + C[i][j];
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    C[i][j] = 0; for (int k = 0; k < {n}; k++) C[i][j] += D[i][k] * T[k][j]; }}
}}'''


def symmetrised_product(name: str = "gram") -> str:
    """``T = A B``, then ``D = T + T^T + T^T C`` (float, sizes written ``N``: replace ``"N"`` by the size): the
    second operator reads the intermediate both ways (a mirror of T)."""
    return f'''
void {name}(float A[N][N], float B[N][N], float C[N][N], float T[N][N], float D[N][N]) {{
  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) {{
    T[i][j] = 0; for (int k = 0; k < N; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) {{
    D[i][j] = T[i][j] + T[j][i]; for (int k = 0; k < N; k++) D[i][j] += T[k][i] * C[k][j]; }}
}}'''


def gram(n: int) -> str:
    """``T = A B``, then ``D = T + T^T + T^T T`` (double, n x n)."""
    return f'''
void gram(double A[{n}][{n}], double B[{n}][{n}], double T[{n}][{n}], double D[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    T[i][j] = 0; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    D[i][j] = T[i][j] + T[j][i]; for (int k = 0; k < {n}; k++) D[i][j] += T[k][i] * T[k][j]; }}
}}'''


def symmetric_rank_k(n: int = 24, k: int = 20, dtype: str = "double") -> str:
    """``C = Aᵀ A`` computed on the upper triangle, each element copied to its mirror (``C[j][i] = C[i][j]``,
    covariance's last nest): the copy writes into the mirror core's block and is routed there."""
    return f'''
void symk({dtype} A[{k}][{n}], {dtype} C[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++)
    for (int j = i; j < {n}; j++) {{
      C[i][j] = 0;
      for (int k = 0; k < {k}; k++)
        C[i][j] += A[k][i] * A[k][j];
      C[j][i] = C[i][j];
    }}
}}'''


def symmetrise(n: int = 12) -> str:
    """``T = A B``, then ``D = T + T^T`` (float, loops to the literal size): T is transposed on the fabric."""
    return f'''
void symmetrise(float A[{n}][{n}], float B[{n}][{n}], float T[{n}][{n}], float D[{n}][{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) {{
    T[i][j] = 0.0f; for (int k = 0; k < {n}; k++) T[i][j] += A[i][k] * B[k][j]; }}
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) D[i][j] = T[i][j] + T[j][i];
}}'''


# -- matrix-vector products --------------------------------------------------------------------------------------

def chain3(n: int, ctype: str = "double") -> str:
    """gemv -> element-wise -> gemv: ``y = A x; z = 2 y + 1; w = B z`` (loops to an ``int n`` parameter)."""
    two, one = _lit("2.0", ctype), _lit("1.0", ctype)
    return f'''
void chain3(int n, {ctype} A[{n}][{n}], {ctype} x[{n}], {ctype} y[{n}], {ctype} z[{n}], {ctype} B[{n}][{n}], {ctype} w[{n}]) {{
  for (int i = 0; i < n; i++) {{ y[i] = 0; for (int j = 0; j < n; j++) y[i] += A[i][j] * x[j]; }}
  for (int i = 0; i < n; i++) z[i] = {two} * y[i] + {one};
  for (int i = 0; i < n; i++) {{ w[i] = 0; for (int j = 0; j < n; j++) w[i] += B[i][j] * z[j]; }}
}}'''


def mvt(n: int, ctype: str = "double") -> str:
    """mvt, ``x1 += A y1; x2 += A^T y2``: two gemvs that share no written array."""
    return f"""
void mvt({ctype} A[{n}][{n}], {ctype} x1[{n}], {ctype} x2[{n}], {ctype} y1[{n}], {ctype} y2[{n}]) {{
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) x1[i] = x1[i] + A[i][j] * y1[j];
  for (int i = 0; i < {n}; i++) for (int j = 0; j < {n}; j++) x2[i] = x2[i] + A[j][i] * y2[j];
}}"""


def atax(m: int | None = None, n: int | None = None) -> str:
    """PolyBench atax (tests/frontend/kernels/atax.c, double); with ``m`` and ``n`` its array extents
    ``19 + 0`` and ``23 + 0`` become those sizes."""
    text = (KERNELS / "atax.c").read_text()
    if m is not None:
        text = text.replace("19 + 0", str(m))
    if n is not None:
        text = text.replace("23 + 0", str(n))
    return text


# -- stencils ------------------------------------------------------------------------------------------------------

def jacobi_2d(n: int, ctype: str = "double", *, name: str = "jacobi", compact: bool = False) -> str:
    """Jacobi-2D, two five-point sweeps per time step (``int tsteps, int n`` parameters, n x n arrays);
    ``compact`` writes both loops of a sweep on one line."""
    c = _lit("0.2", ctype)
    if compact:
        loops = "    for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++)\n"
    else:
        loops = "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
    pad = "      " if compact else "        "
    return (f"\nvoid {name}(int tsteps, int n, {ctype} A[{n}][{n}], {ctype} B[{n}][{n}]) {{\n"
            "  for (int t = 0; t < tsteps; t++) {\n"
            f"{loops}{pad}B[i][j] = {c} * (A[i][j] + A[i][j - 1] + A[i][1 + j] + A[1 + i][j] + A[i - 1][j]);\n"
            f"{loops}{pad}A[i][j] = {c} * (B[i][j] + B[i][j - 1] + B[i][1 + j] + B[1 + i][j] + B[i - 1][j]);\n"
            "  }\n}")


def jacobi_1d(n: int, *, name: str = "jacobi") -> str:
    """Jacobi-1D, two three-point sweeps per time step (double, ``int tsteps, int n`` parameters)."""
    return f'''
void {name}(int tsteps, int n, double A[{n}], double B[{n}]) {{
  for (int t = 0; t < tsteps; t++) {{
    for (int i = 1; i < n - 1; i++) B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < n - 1; i++) A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
  }}
}}'''


# -- small programs of two gemvs and friends -----------------------------------------------------------------------

GEMV2 = '''
void gemv2(int n, double A[48][48], double x[48], double w[48], double y[48], double z[48]) {
  for (int i = 0; i < n; i++) { y[i] = 0; for (int j = 0; j < n; j++) y[i] += A[i][j] * x[j]; }
  for (int i = 0; i < n; i++) { z[i] = 0; for (int j = 0; j < n; j++) z[i] += A[i][j] * w[j]; }
}'''


#: Runtime parameters (``runtime={"pos": (0, 16)}``): a row the run selects is read — gathered from its owner
#: (rank-3 arrays).
RUNTIME_ROPE = """
#define T 16
#define H 4
#define E 8
void rope(int pos, float cs[T][E], float sn[T][E], float q[H][2][E], float qr[H][2][E]) {
  for (int h = 0; h < H; h++)
    for (int e = 0; e < E; e++) {
      qr[h][0][e] = q[h][0][e] * cs[pos][e] - q[h][1][e] * sn[pos][e];
      qr[h][1][e] = q[h][1][e] * cs[pos][e] + q[h][0][e] * sn[pos][e];
    }
}
"""

#: Runtime parameters: a row the run selects is written (a KV-cache append, a may-write), and a reduction
#: bounded by ``l <= pos``.
RUNTIME_APPEND = """
#define L 16
#define D 16
void append(int pos, float W[D][D], float x[D], float K[L][D], float w[L], float out[D]) {
  for (int i = 0; i < D; i++) {
    K[pos][i] = 0.0f;
    for (int j = 0; j < D; j++) K[pos][i] += W[i][j] * x[j];
  }
  for (int d = 0; d < D; d++) {
    out[d] = 0.0f;
    for (int l = 0; l <= pos; l++) out[d] += w[l] * K[l][d];
  }
}
"""


#: Sizes of the step-owner sweeps the back-end tests compile where the manifest's is too small for any sweep to
#: pay even at the peak rate (Cholesky at n = 24: the chain through each step's owner costs more than a step's
#: work); kernel -> (the manifest's size text, this size).
STEP_OWNER_SIZES = {"cholesky": ("24 + 0", 40)}

#: A back substitution: sequential in its row loop as written; aligned by its columns it is a sweep counting down
#: from the last column (mica.affine.align, StepMap.down), its row sums accumulated in the other order.
BACK_SUBSTITUTION = """
void back(int n, double A[n][n], double y[n], double x[n]) {
  double w;
  for (int i = n - 1; i >= 0; i--) {
    w = y[i];
    for (int j = i + 1; j < n; j++)
      w -= A[i][j] * x[j];
    x[i] = w / A[i][i];
  }
}
"""


def back_substitution(n: int, target, mesh: tuple[int, int]):
    """:data:`BACK_SUBSTITUTION` at size ``n`` in f32, compiled for ``target`` with the sweep counting down that
    the search finds on WSE-2 when compute is charged at the peak rate (:func:`step_owner_compile`)."""
    from mica.affine.from_c import from_c
    from mica.affine.retype import with_float_dtype
    prog = with_float_dtype(from_c(BACK_SUBSTITUTION, "back", params={"n": n}), "f32")
    return step_owner_compile(prog, mesh, target)


def step_owner_kernel(name: str) -> tuple[str, str, dict]:
    """Source, function and parameters of the PolyBench sweep ``name`` at the size the back-end tests use
    (:data:`STEP_OWNER_SIZES`, else the manifest's)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent / "frontend"))
    from frontend_util import MANIFEST, kernel_function, kernel_source
    src, params = kernel_source(name), dict(MANIFEST[name]["params"])
    if name in STEP_OWNER_SIZES:
        text, n = STEP_OWNER_SIZES[name]
        src, params = src.replace(text, str(n)), {**params, "n": n}
    return src, kernel_function(name), params


def step_owner_compile(prog, mesh: tuple[int, int], target, searched_for="wse2"):
    """``prog`` compiled for ``target`` with the plan the search finds on ``searched_for`` when compute is
    charged at the peak rate alone (``Target.without_compute_overheads``): at the test kernels' sizes that
    plan multicasts from each step's owner (trisolv's ``x[j]``, LU's pivot column), where the full compute
    model finds one core cheaper. The back-end tests check how such plans are emitted, not which plan wins."""
    import mica
    from mica.targets import get_target

    arith = get_target(searched_for).without_compute_overheads()
    searched = mica.compile_affine(prog, mesh=mesh, target=arith)
    return mica.compile_affine(searched.program, mesh=mesh, target=target, schedule=searched.schedule)


def key_step(rows: int, dim: int, name: str = "key_step") -> str:
    """A resident decode step: the token's key ``W x`` appended at row ``pos`` of a cache ``K[rows][dim]``
    (kept on the mesh), then its scores ``s[l] = K[l] . x`` against rows 0..pos. The only array the search
    could cut it along (to stream pieces) is the kept cache."""
    return f"""
void {name}(int pos, float W[{dim}][{dim}], float K[{rows}][{dim}], float x[{dim}], float s[{rows}]) {{
  for (int i = 0; i < {dim}; i++) {{
    K[pos][i] = 0.0f;
    for (int j = 0; j < {dim}; j++) K[pos][i] += W[i][j] * x[j];
  }}
  for (int l = 0; l <= pos; l++) {{
    s[l] = 0.0f;
    for (int d = 0; d < {dim}; d++) s[l] += K[l][d] * x[d];
  }}
}}
"""

def sweeps(n: int, steps: int, dtype: str = "double", fresh_v: bool = False) -> str:
    """Alternating-direction sweeps (ADI's shape): a recurrence down every column of ``v`` reading ``u`` by
    columns, then one along every row of ``u`` reading ``v`` by rows, ``steps`` times. With ``fresh_v``, each
    column sweep first sets the row of ``v`` its recurrence starts from, so no iteration reads ``v`` from the
    one before."""
    start = f"    for (int i = 1; i < {n - 1}; i++) v[0][i] = 0.5;\n" if fresh_v else ""
    return f"""
void sweeps({dtype} u[{n}][{n}], {dtype} v[{n}][{n}], {dtype} s)
{{
  for (int t = 0; t < {steps}; t++) {{
{start}    for (int i = 1; i < {n - 1}; i++)
      for (int j = 1; j < {n}; j++)
        v[j][i] = s * v[j - 1][i] + 0.25 * (u[j][i - 1] + u[j][i + 1]);
    for (int i = 1; i < {n - 1}; i++)
      for (int j = 1; j < {n - 1}; j++)
        u[i][j] = s * u[i][j - 1] + 0.25 * (v[i - 1][j] + v[i + 1][j]);
  }}
}}
"""


def phase_sweeps(target, mesh: tuple[int, int], n: int = 34, steps: int = 3):
    """:func:`sweeps` in f32 with its constant ``s`` = 0.5 written in (so the programs need no scalar argument),
    compiled with its time loop as a phase loop (``phase_loop_plan``: each sweep over its own
    dimension, the layout changes between them inside the loop)."""
    import mica
    from mica.pipeline import LOWERING
    from mica.targets import get_target
    from mica.tiling.operators import phase_loop_plan
    src = sweeps(n, steps, "float").replace(", float s", "").replace("s * ", "0.5f * ")
    prog = mica.affine.from_c(src)
    plan = phase_loop_plan(prog, mesh, get_target(target), LOWERING)
    return mica.compile_affine(prog, mesh=mesh, target=target, schedule=plan)
