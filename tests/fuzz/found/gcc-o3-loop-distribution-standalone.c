/* GCC 12.2 -O3 miscompiles this plain C (fuzz bug 14, tests/fuzz/FOUND.md): its loop distribution pass
   (-ftree-loop-distribution, on at -O3) gives A[4] = 4.7558 instead of 6.6298 (-O0, -O2, and
   -O3 -fno-tree-loop-distribution). Build: gcc -O3 -std=c11 this.c && ./a.out */
#include <stdio.h>
void kernel_fuzz(int n, int m, float beta, float A[5], float B[n + 1])
{
  int i, j, k, l;
  for (i = 0; i < 3; i += 1) {
    A[i + 2] += beta + A[i + 1] + (A[i] * B[i]);
    for (j = (i + 2 < 8 ? i + 2 : 8) - 1; j >= i; j--)
      B[j + 2] = 1.5f;
  }
}
int main(void) {
  float A[5] = {0.85f, 0.64f, 0.5f, 0.3f, 0.2f};
  float B[7] = {0.04f, 0.07f, 0.5f, 0.3f, 0.2f, 0.1f, 0.9f};
  kernel_fuzz(6, 9, 0.7f, A, B);
  for (int i = 0; i < 5; i++) printf("%g ", A[i]);
  printf("\n");
  return 0;
}
