/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft_restart_info: what a rank learns about the attempt it runs in, from
 * the variables weftrun --restarts sets on every rank (and torchrun's, which
 * weftrun sets too, so that torchrun programs resume unchanged). Each value
 * is read strictly: a variable that is set but not a number in range, or two
 * that contradict each other, fail the call with a line naming them, as a
 * rank that guesses its attempt would resume from the wrong checkpoint or
 * start over without saying so.
 */
#include "rt_private.h"

#include <stdlib.h>

#define MAX_COUNT (1L << 30)

/* The value of var, in [lo, MAX_COUNT]: 1 when set, 0 when unset, or
 * WEFT_EINVAL (said through ctx). */
static int read_count(weft_ctx *ctx, const char *var, long lo, long *out)
{
  const char *s = getenv(var);

  if (!s)
    return 0;
  if (weftx_parse_long(s, lo, MAX_COUNT, out) != 0)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "%s='%s' is not a whole number from %ld to %ld; unset it or let weftrun "
                         "--restarts set it",
                         var, s, lo, MAX_COUNT);
  return 1;
}

/* One value from weft's variable and torchrun's (tvar, may be NULL): *out
 * (left alone when neither is set) and which were set (bit 0 weft's, bit 1 torchrun's), or WEFT_EINVAL. */
static int read_pair(weft_ctx *ctx, const char *var, const char *tvar, long lo, long *out)
{
  long w = 0, t = 0;
  int hw = read_count(ctx, var, lo, &w), ht = tvar ? read_count(ctx, tvar, lo, &t) : 0;

  if (hw < 0)
    return hw;
  if (ht < 0)
    return ht;
  if (hw && ht && w != t)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "%s=%ld but %s=%ld: the launcher sets both to the same value; unset "
                         "the one set by hand",
                         var, w, tvar, t);
  if (hw || ht)
    *out = hw ? w : t;
  return hw | ht << 1;
}

int weft_restart_info(weft_ctx *ctx, weft_restart *out)
{
  long count = 0, max = -1, prev = 0;
  int has_count, has_max, has_prev;
  const char *dir = getenv("WEFT_CHECKPOINT_DIR");

  if (!out)
    return weft__rt_fail(ctx, WEFT_EINVAL, "weft_restart_info: out is NULL");
  has_count = read_pair(ctx, "WEFT_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", 0, &count);
  if (has_count < 0)
    return has_count;
  has_max = read_pair(ctx, "WEFT_MAX_RESTARTS", "TORCHELASTIC_MAX_RESTARTS", 0, &max);
  if (has_max < 0)
    return has_max;
  has_prev = read_pair(ctx, "WEFT_PREV_WORLD_SIZE", NULL, 1, &prev);
  if (has_prev < 0)
    return has_prev;
  if (has_max && count > max)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "restart %ld of at most %ld (WEFT_RESTART_COUNT above WEFT_MAX_RESTARTS "
                         "or their TORCHELASTIC_ twins); the launcher never sets that",
                         count, max);
  if (has_prev && count == 0)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "WEFT_PREV_WORLD_SIZE=%ld on the first attempt (WEFT_RESTART_COUNT 0 or "
                         "unset); unset it, or set WEFT_RESTART_COUNT too",
                         prev);
  /* weftrun gives every later attempt the world size before it; torchrun
   * alone does not, so there it is unknown (0). */
  if ((has_count & 1) && count > 0 && !has_prev)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "WEFT_RESTART_COUNT=%ld without WEFT_PREV_WORLD_SIZE: weftrun sets "
                         "both; set the previous attempt's number of ranks too",
                         count);
  if (dir && !*dir)
    return weft__rt_fail(ctx, WEFT_EINVAL,
                         "WEFT_CHECKPOINT_DIR is set but empty; unset it or name a directory "
                         "every host can reach");
  out->restarted = count > 0;
  out->count = (int)count;
  out->max_restarts = (int)max;
  out->prev_world_size = (int)prev;
  out->checkpoint_dir = dir;
  return 0;
}
