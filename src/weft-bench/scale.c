/* SPDX-License-Identifier: BSD-3-Clause */
/* weft-bench scale: not written yet. */
#include <stdio.h>

#include "driver.h"

int bench_scale_main(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  fprintf(stderr, "weft-bench: scale mode is not built yet\n");
  return BENCH_EXIT_USAGE;
}
