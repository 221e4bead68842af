/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA side of the stand-in tested on its own (no MPI, no NCCL): device
 * order and visibility, contexts, stream capture and graphs. (Cases to come.)
 */
#include <stdio.h>

int main(void)
{
  printf("standin-cuda-rules: no cases yet\n");
  return 0;
}
