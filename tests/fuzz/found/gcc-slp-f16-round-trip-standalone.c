/* GCC 12.2.0 (Debian 12.2.0-14), x86-64 with F16C and AVX-512F:
     gcc -O3 -fno-tree-loop-vectorize -fno-tree-loop-distribution -ffp-contract=off -std=c11 \
         -fno-strict-aliasing -fno-tree-ch -march=native t.c && ./a.out
   prints 'bad 28' (-O0, or the same flags without -march=native, or with -fno-tree-slp-vectorize: 'bad 0'):
   SLP vectorization of eight independent f16 updates y = (float)(_Float16)(y - a * b) drops the
   round trips through _Float16 (the assembly keeps 3 conversions). MICA's row-interleaved f16
   matrix-vector kernel (mica.emit_c.kernels.matvec_support_c) turns SLP off for f16; found by
   tests/native/test_matvec_kernel.py comparing it with the plain loop nest. */

#include <stdio.h>
#include <stdint.h>
#include <string.h>
static void __attribute__((unused)) mica_matvec_f16_sub(int64_t M, int64_t K, _Float16 *restrict C, int64_t csi,
    const _Float16 *restrict A, int64_t asi, int64_t ask, const _Float16 *restrict B, int64_t bsk) {
  int64_t i = 0;
  for (; i + 8 <= M; i += 8) {
    const _Float16 *a = A + i * asi;
    float c0 = ((float)C[(i + 0) * csi]), c1 = ((float)C[(i + 1) * csi]), c2 = ((float)C[(i + 2) * csi]), c3 = ((float)C[(i + 3) * csi]), c4 = ((float)C[(i + 4) * csi]), c5 = ((float)C[(i + 5) * csi]), c6 = ((float)C[(i + 6) * csi]), c7 = ((float)C[(i + 7) * csi]);
    for (int64_t k = 0; k < K; ++k) {
      const float b = ((float)B[k * bsk]);
      const _Float16 *ak = a + k * ask;
      c0 = ((float)(_Float16)(c0 - ((float)ak[0 * asi]) * b));
      c1 = ((float)(_Float16)(c1 - ((float)ak[1 * asi]) * b));
      c2 = ((float)(_Float16)(c2 - ((float)ak[2 * asi]) * b));
      c3 = ((float)(_Float16)(c3 - ((float)ak[3 * asi]) * b));
      c4 = ((float)(_Float16)(c4 - ((float)ak[4 * asi]) * b));
      c5 = ((float)(_Float16)(c5 - ((float)ak[5 * asi]) * b));
      c6 = ((float)(_Float16)(c6 - ((float)ak[6 * asi]) * b));
      c7 = ((float)(_Float16)(c7 - ((float)ak[7 * asi]) * b));
    }
    C[(i + 0) * csi] = ((_Float16)(c0));
    C[(i + 1) * csi] = ((_Float16)(c1));
    C[(i + 2) * csi] = ((_Float16)(c2));
    C[(i + 3) * csi] = ((_Float16)(c3));
    C[(i + 4) * csi] = ((_Float16)(c4));
    C[(i + 5) * csi] = ((_Float16)(c5));
    C[(i + 6) * csi] = ((_Float16)(c6));
    C[(i + 7) * csi] = ((_Float16)(c7));
  }
  for (; i < M; ++i) {
    float c = ((float)C[i * csi]);
    for (int64_t k = 0; k < K; ++k)
      c = ((float)(_Float16)(c - ((float)A[i * asi + k * ask]) * ((float)B[k * bsk])));
    C[i * csi] = ((_Float16)(c));
  }
}

int main(void) {
  enum { M = 45, K = 29 };
  static _Float16 A[K * M], x[K], y1[M], y2[M];
  uint32_t s = 12345;
  for (int i = 0; i < K * M; i++) { s = s * 1103515245u + 12345u; A[i] = (_Float16)(((int)(s >> 16) % 2000 - 1000) / 1000.0f); }
  for (int i = 0; i < K; i++) { s = s * 1103515245u + 12345u; x[i] = (_Float16)(((int)(s >> 16) % 2000 - 1000) / 1000.0f); }
  for (int i = 0; i < M; i++) { s = s * 1103515245u + 12345u; y1[i] = y2[i] = (_Float16)(((int)(s >> 16) % 2000 - 1000) / 1000.0f); }
  mica_matvec_f16_sub(M, K, y1, 1, A, 1, M, x, 1);
  for (int k = 0; k < K; k++) for (int i = 0; i < M; i++) y2[i] = (_Float16)((float)y2[i] - (float)A[k * M + i] * (float)x[k]);
  int bad = 0;
  for (int i = 0; i < M; i++) if (memcmp(&y1[i], &y2[i], 2)) { if (bad < 5) printf("i=%d %g %g\n", i, (double)y1[i], (double)y2[i]); bad++; }
  printf("bad %d\n", bad);
  return 0;
}
