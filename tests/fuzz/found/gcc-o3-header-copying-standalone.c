/* GCC 12.2 miscompiles this plain C (fuzz bug 15, tests/fuzz/FOUND.md; found by the seed-2033 soak,
   program 15088, as a one-core MICA plan whose kernel and sequential reference disagreed with the C).
   It is MICA's sequential reference (mica.testing.program_c) for
       for (i = 0; i < 7; i++) for (j = 1; j < 9; j++) { A[j+2][i] = A[j][i+1]; A[i][j+2] = beta + A[i][j]; }
   With  gcc -O3 -fno-tree-loop-vectorize -fno-strict-aliasing  (a subset of MICA's DEFAULT_FLAGS) it
   prints 1.000000 for A[10][0], read after the later write of A[8][1]; -O0, -O2, -O3 alone,
   -O3 -fno-tree-loop-vectorize, and the MICA flags plus -fno-tree-ch (or -fno-tree-loop-optimize) print
   0.000000, as C's order requires. Every MICA build now has -fno-tree-ch.
   Build: gcc -O3 -fno-tree-loop-vectorize -fno-strict-aliasing this.c && ./a.out */
#include <stdio.h>
#include <stdint.h>
void mica_program(void **arrays, const double *scalars) {
  float *a0 = (float *)arrays[0];
  for (int64_t c1 = 0LL; (c1 <= 6LL); c1 += 1LL) {
    for (int64_t c3 = 1LL; (c3 <= 8LL); c3 += 1LL) {
      { const int64_t v_i = c1; const int64_t v_j = c3;
        a0[((v_j + 2LL)) * 11LL + (v_i)] = a0[((v_j)) * 11LL + (v_i + 1LL)]; }
      { const int64_t v_i = c1; const int64_t v_j = c3;
        a0[((v_i)) * 11LL + (v_j + 2LL)] = (((float)scalars[0]) + a0[((v_i)) * 11LL + (v_j)]); }
    }
  }
}
int main(void) {
  float A[11][11] = {{0}};
  A[8][1] = 0.0f;           /* the original value C's order reads into A[10][0] */
  A[6][2] = 1.0f;           /* copied into A[8][1] later (i = 1, j = 6): must not reach A[10][0] */
  void *arr[1] = {A};
  double sc[1] = {0.5};
  mica_program(arr, sc);
  printf("%f\n", A[10][0]);
  return 0;
}
