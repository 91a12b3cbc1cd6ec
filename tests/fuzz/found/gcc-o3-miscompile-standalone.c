/* GCC 12.2.0 (Debian 12.2.0-14+deb12u1), x86-64: -O3 miscompiles this loop nest (the loop vectorizer
   vectorizes the outer loop across its (1, 1) dependence). Found through MICA (see ../FOUND.md, 9).

     cc -O3 gcc-o3-miscompile-standalone.c && ./a.out     ->  A[2][3] = -0.142857 (expected 0.428571)
     cc -O2 ... / cc -O3 -fno-tree-loop-vectorize ...     ->  A[2][3] = 0.428571
*/
#include <stdio.h>

__attribute__((noinline)) void kernel(double A[8][7]) {
  for (int i = 0; i < 6; i++)
    for (int j = 1; j < 6; ++j)
      A[i + 1][j + 1] -= A[i][j];
}

int main(void) {
  double A[8][7];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 7; j++)
      A[i][j] = ((i * 7 + j) * 37 % 11) / 7.0;
  kernel(A);
  printf("A[2][3] = %g (expected 0.428571)\n", A[2][3]);
  return A[2][3] > 0.4 ? 0 : 1;
}
