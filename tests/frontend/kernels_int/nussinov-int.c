/* nussinov.c: PolyBench/C 4.2 in its original form -- `base seq[N]` as char, `int table[N][N]`; the
   macros of nussinov.h expanded by hand (MICA's front end takes preprocessed C):
     #define match(b1, b2) (((b1)+(b2)) == 3 ? 1 : 0)
     #define max_score(s1, s2) ((s1 >= s2) ? s1 : s2) */
typedef char base;

void kernel_nussinov(int n, base seq[30 + 0], int table[30 + 0][30 + 0])
{
  int i, j, k;
#pragma scop
  for (i = n - 1; i >= 0; i--) {
    for (j = i + 1; j < n; j++) {
      if (j - 1 >= 0)
        table[i][j] = ((table[i][j] >= table[i][j - 1]) ? table[i][j] : table[i][j - 1]);
      if (i + 1 < n)
        table[i][j] = ((table[i][j] >= table[i + 1][j]) ? table[i][j] : table[i + 1][j]);
      if (j - 1 >= 0 && i + 1 < n) {
        /* don't allow adjacent elements to bond */
        if (i < j - 1)
          table[i][j] = ((table[i][j] >= table[i + 1][j - 1] + (((seq[i]) + (seq[j])) == 3 ? 1 : 0))
                         ? table[i][j] : table[i + 1][j - 1] + (((seq[i]) + (seq[j])) == 3 ? 1 : 0));
        else
          table[i][j] = ((table[i][j] >= table[i + 1][j - 1]) ? table[i][j] : table[i + 1][j - 1]);
      }
      for (k = i + 1; k < j; k++) {
        table[i][j] = ((table[i][j] >= table[i][k] + table[k + 1][j])
                       ? table[i][j] : table[i][k] + table[k + 1][j]);
      }
    }
  }
#pragma endscop
}
