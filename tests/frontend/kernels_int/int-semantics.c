/* C's integer semantics, one statement each: promotions of char/short/unsigned char to int, wrap on a
   narrowing store or cast, truncating / and % (negative operands), float <-> int conversions, an int
   data select, compound %=, and a data-valued int local (a temporary). */
#include <stdint.h>

void kernel_int_semantics(int n, int8_t a[n], signed char b[n], uint8_t u[n], short s[n], int x[n], float f[n],
                          double d[n], char c8[n], int16_t s16[n], unsigned char uc[n], int r[n][9], float g[n][3])
{
  for (int i = 0; i < n; i++) {
    c8[i] = a[i] + b[i];
    s16[i] = x[i] * 100;
    uc[i] = x[i];
    r[i][0] = a[i] * b[i];
    r[i][1] = u[i] * 300 - s[i];
    r[i][2] = (int)f[i];
    r[i][3] = d[i] * 3.5;
    r[i][4] = (char)x[i] + (unsigned char)x[i];
    r[i][5] = x[i] / 7 % 5 + -x[i] % 3;
    r[i][6] = a[i] > b[i] ? x[i] : -x[i];
    r[i][7] = x[i];
    r[i][7] %= 9;
    int t = x[i] / 3;
    r[i][8] = t * t - t % 2;
    g[i][0] = x[i] / 2;
    g[i][1] = (float)x[i] / 2;
    g[i][2] = x[i] * f[i] + s[i];
  }
}
