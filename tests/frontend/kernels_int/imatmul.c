/* int32 matrix product (the register-blocked float contraction does not apply: plain loops). */
void kernel_imatmul(int ni, int nj, int nk, int C[ni][nj], int A[ni][nk], int B[nk][nj])
{
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      C[i][j] = 0;
      for (int k = 0; k < nk; k++)
        C[i][j] += A[i][k] * B[k][j];
    }
}
