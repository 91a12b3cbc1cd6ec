"""16-bit floating point (``f16``, ``bf16``) in the C MICA prints: storage types, loads, stores, rounding.

**Semantics** (the emulator's kernels and the sequential reference, :func:`mica.codeprint.program_c`, print
the same text, so they agree bit for bit): an array of dtype ``f16`` (IEEE binary16) or ``bf16`` (bfloat16:
the upper 16 bits of an f32) stores 16-bit values. One statement instance

1. reads each 16-bit operand as an f32 (exact: every f16 and bf16 value is an f32 value),
2. evaluates its right-hand side in f32 (f32 literals, the float math functions ``tanhf``, ``erff``, ...),
3. rounds the result once to the written array's type, to nearest with ties to even, when it stores it.

So ``C[i][j] += A[i][k] * B[k][j]`` on f16 arrays rounds C to 16 bits after every update: for k ascending,
``C = f16(f32(C) + f32(A) * f32(B))`` -- the product of two 16-bit values is exact in f32, the sum is
rounded to f32 and that to f16. A numpy reference computes the same with
``C = (C.astype(np.float32) + A[:, k:k+1].astype(np.float32) * B[k].astype(np.float32)).astype(np.float16)``
per k (for bf16 ``ml_dtypes.bfloat16`` instead of ``np.float16``), and then agrees exactly. A cast to a
16-bit type inside an expression (a :class:`~mica.affine.expr.Conv`) rounds there and goes on in f32; a
scalar argument of a 16-bit dtype is rounded to it (via f32) when the program receives it.

This is what GCC's C makes of ``_Float16`` on x86-64 without AVX512-FP16 (excess precision: the arithmetic
in float, rounded on assignment), which is how :func:`mica.testing.run_c` compiles the user's C (no
``-march=native``), so ``mica run`` on a C file with ``_Float16`` arrays matches it exactly up to
double-precision literals and math calls of the user's C. The emitted kernels read every f16 operand through
an explicit ``(float)``, so the arithmetic stays f32 whatever the compiler's excess-precision mode or
instruction set (with AVX512-FP16 GCC would otherwise compute ``_Float16 * _Float16`` in f16).

Target behaviour this models: Cerebras' f16 DSD operations and Tenstorrent's bf16 tiles multiply 16-bit
operands and accumulate in f32 (an fp32 Dst on Tenstorrent, ``fp32_dest_acc_en``). On those machines the
partial sums of one kernel call can stay in f32 and be rounded once when packed; the emulator rounds at
the point the program stores, every statement instance, which is the same on every mesh (so results do
not depend on the mapping) and at most as accurate as the hardware.

**C representation**: f16 is ``_Float16`` (GCC 12 and later on x86-64 and AArch64); bf16 is ``uint16_t``
holding the bit pattern, converted by :data:`SUPPORT_C`'s ``mica_bf16_to_f32`` (a 16-bit shift) and
``mica_f32_to_bf16`` (round to nearest, ties to even; a NaN stays a quiet NaN of the same sign).

Public API: :data:`HALF_DTYPES`, :data:`STORAGE_CTYPES`, :func:`compute_dtype`, :func:`load_c`,
:func:`store_c`, :data:`ROUND_C`, :data:`SUPPORT_C`, :func:`support_c`, :data:`F16_BITS_C`.
"""

from __future__ import annotations

from types import MappingProxyType

#: The 16-bit floating-point dtypes (those of :data:`mica.targets.HALF_DTYPES`).
HALF_DTYPES = ("f16", "bf16")

#: The C type an array of each 16-bit dtype is stored as.
STORAGE_CTYPES = MappingProxyType({"f16": "_Float16", "bf16": "uint16_t"})

#: A :class:`~mica.affine.expr.Conv` to a 16-bit dtype in C (``{}`` the f32 operand): round to the 16-bit
#: type and go on in f32.
ROUND_C = MappingProxyType({"f16": "((float)(_Float16)({}))", "bf16": "mica_bf16_to_f32(mica_f32_to_bf16({}))"})

#: The bf16 conversions (C, after ``<stdint.h>``).
SUPPORT_C = """\
/* bf16: the upper 16 bits of an f32, stored as uint16_t. */
static inline float mica_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
/* f32 -> bf16, rounded to nearest with ties to even; a NaN stays a quiet NaN of the same sign. */
static inline uint16_t mica_f32_to_bf16(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x0040u);
  return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}
"""


#: IEEE half conversions in integer arithmetic, for a processor without ``_Float16`` (the data-movement
#: RISC-Vs of Tenstorrent, :mod:`mica.emit_metalium`): an f16 element stored as its ``uint16_t`` bits,
#: ``mica_f16_to_f32`` exact, ``mica_f32_to_f16`` rounded to nearest with ties to even (as ``(_Float16)f``):
#: overflow to infinity from 65520 on, subnormal results, a NaN a quiet NaN of the same sign.
F16_BITS_C = """\
/* f16 <-> f32 on the bits (IEEE binary16 stored as uint16_t). */
static inline float mica_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)(h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu, u;
  if (e == 0x1fu) {
    u = s | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    u = s | ((e + 112u) << 23) | (m << 13);
  } else if (m == 0) {
    u = s;
  } else {
    e = 113u;
    while (!(m & 0x400u)) { m <<= 1; --e; }
    u = s | (e << 23) | ((m & 0x3ffu) << 13);
  }
  union { uint32_t u; float f; } v;
  v.u = u;
  return v.f;
}
static inline uint16_t mica_f32_to_f16(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  uint32_t s = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
  if (a >= 0x38800000u) return (uint16_t)(s | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
  if (a < 0x33000000u) return (uint16_t)s;
  uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return (uint16_t)(s | q);
}
"""


def compute_dtype(dtype: str) -> str:
    """The dtype a statement writing ``dtype`` computes its float parts in: f32 for a 16-bit dtype, else
    ``dtype`` itself."""
    return "f32" if dtype in HALF_DTYPES else dtype


def load_c(dtype: str, text: str) -> str:
    """C of an element ``text`` (an lvalue of the storage type) of an array of ``dtype``, as the value the
    arithmetic uses: an f32 for a 16-bit dtype, the element itself otherwise."""
    if dtype == "f16":
        return f"((float){text})"
    if dtype == "bf16":
        return f"mica_bf16_to_f32({text})"
    return text


def store_c(dtype: str, text: str) -> str:
    """C of the value ``text`` converted for a store to an array of ``dtype``: rounded to nearest even for a
    16-bit dtype (``_Float16`` conversion, :data:`SUPPORT_C`'s ``mica_f32_to_bf16``), unchanged otherwise."""
    if dtype == "f16":
        return f"((_Float16)({text}))"
    if dtype == "bf16":
        return f"mica_f32_to_bf16({text})"
    return text


def support_c(dtypes) -> str:
    """The helper C a module whose arrays have ``dtypes`` needs (:data:`SUPPORT_C` when one is bf16, else
    nothing, so that the C of programs without bf16 stays as it was)."""
    return SUPPORT_C if "bf16" in set(dtypes) else ""
