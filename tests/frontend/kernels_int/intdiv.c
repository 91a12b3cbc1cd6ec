/* int32 element-wise arithmetic with C's truncating division and remainder (negative operands too). */
#include <stdint.h>

void kernel_intdiv(int n, int m, int32_t a[n][m], int32_t b[n][m], int32_t q[n][m], int32_t r[n][m])
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      q[i][j] = a[i][j] / b[i][j] - 3 * (a[i][j] % 7);
      r[i][j] = (a[i][j] * 5 + 1) % b[i][j] + a[i][j] / -4;
    }
}
