/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the runtime's pure pieces: layout parsing and its errors,
 * mesh coordinates and group membership (golden text in rt-mesh.golden,
 * regenerated with WEFT_UPDATE_GOLDEN=1), fp16/bf16 conversion (round to
 * nearest even, subnormals, NaN and infinities), element sizes and names,
 * the reduction kernels of the host shared-memory collectives, the WEFT_*
 * settings: how they are read, the comparison of the ranks' records and the
 * line that names a difference; how weft_init reads CUDA_VISIBLE_DEVICES,
 * decides whether WEFT_GPU can be trusted as CUDA's numbering, and parses
 * PCI addresses (init.c).
 */
#include "rt_private.h"
#include "shm.h"

#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_layout_ok(void **state)
{
  struct weft__layout l;
  char why[256];
  (void)state;
  assert_int_equal(weft__layout_parse("tp=2,pp=2,dp=*", 16, &l, why, sizeof(why)), 0);
  assert_int_equal(l.ndims, 3);
  assert_string_equal(l.dims[2].name, "dp");
  assert_int_equal(l.dims[2].size, 4);
  assert_int_equal(weft__layout_parse("dp=8", 8, &l, why, sizeof(why)), 0);
  assert_int_equal(weft__layout_parse("a_1=1,B2=*", 3, &l, why, sizeof(why)), 0);
  assert_int_equal(l.dims[1].size, 3);
}

static void test_layout_errors(void **state)
{
  static const struct {
    const char *layout;
    int world, code;
    const char *says;
  } bad[] = {
    {"", 4, WEFT_EPARSE, "empty"},
    {"tp", 4, WEFT_EPARSE, "name=size"},
    {"=2", 4, WEFT_EPARSE, "name=size"},
    {"tp=2;dp=2", 4, WEFT_EPARSE, "\",\""},
    {"tp=2,", 4, WEFT_EPARSE, "ends with"},
    {"tp=two", 4, WEFT_EPARSE, "number"},
    {"tp=*,dp=*", 4, WEFT_EPARSE, "more than one"},
    {"tp=2,tp=2", 4, WEFT_ENAME, "twice"},
    {"tp=0,dp=*", 4, WEFT_ERANGE, "1 or more"},
    {"tp=3,dp=*", 4, WEFT_ERANGE, "does not divide the world size 4"},
    {"tp=2,dp=4", 4, WEFT_ERANGE, "not the world size 4"},
    {"a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1", 1, WEFT_EPARSE, "more than 8"},
  };
  struct weft__layout l;
  char why[256];
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    why[0] = '\0';
    assert_int_equal(weft__layout_parse(bad[i].layout, bad[i].world, &l, why, sizeof(why)),
                     bad[i].code);
    if (!strstr(why, bad[i].says))
      fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i].layout, why, bad[i].says);
  }
}

static void test_mask(void **state)
{
  struct weft__layout l;
  unsigned mask;
  (void)state;
  assert_int_equal(weft__layout_parse("tp=2,pp=2,dp=*", 8, &l, NULL, 0), 0);
  assert_int_equal(weft__layout_mask(&l, "dp,tp", &mask, NULL, 0), 0);
  assert_int_equal(mask, 5);
  assert_int_equal(weft__layout_mask(&l, "cp", &mask, NULL, 0), WEFT_ENAME);
  assert_int_equal(weft__layout_mask(&l, "tp,tp", &mask, NULL, 0), WEFT_ENAME);
  assert_int_equal(weft__layout_mask(&l, "tp,", &mask, NULL, 0), WEFT_EPARSE);
  assert_int_equal(weft__layout_mask(&l, "", &mask, NULL, 0), WEFT_EPARSE);
}

static void test_coords(void **state)
{
  struct weft__layout l;
  int c[WEFT__MESH_MAXDIMS], r;
  (void)state;
  assert_int_equal(weft__layout_parse("tp=2,pp=2,dp=*", 16, &l, NULL, 0), 0);
  for (r = 0; r < 16; r++) {
    weft__layout_coords(&l, r, c);
    /* Megatron order: tp fastest. */
    assert_int_equal(c[0], r % 2);
    assert_int_equal(c[1], (r / 2) % 2);
    assert_int_equal(c[2], r / 4);
  }
}

/* The golden text: every group of every dimension set for a few layouts. */
static void write_groups(FILE *f)
{
  static const struct {
    const char *layout;
    int world;
    const char *dims[6];
  } cases[] = {
    {"tp=2,pp=2,dp=*", 16, {"tp", "pp", "dp", "tp,pp", "tp,dp", "pp,dp"}},
    {"tp=4,dp=*", 8, {"tp", "dp", "dp,tp"}},
    {"dp=*", 3, {"dp"}},
    {"tp=2,cp=2,ep=1,pp=*", 8, {"cp", "ep", "tp,cp,ep,pp"}},
  };
  size_t i, j;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct weft__layout l;
    assert_int_equal(weft__layout_parse(cases[i].layout, cases[i].world, &l, NULL, 0), 0);
    fprintf(f, "layout %s world %d\n", cases[i].layout, cases[i].world);
    for (j = 0; j < 6 && cases[i].dims[j]; j++) {
      unsigned mask;
      int r, k, n, members[64], seen[64] = {0};
      assert_int_equal(weft__layout_mask(&l, cases[i].dims[j], &mask, NULL, 0), 0);
      fprintf(f, "  %s:", cases[i].dims[j]);
      for (r = 0; r < cases[i].world; r++) {
        if (seen[r])
          continue;
        n = weft__layout_members(&l, mask, r, members);
        fprintf(f, " [");
        for (k = 0; k < n; k++) {
          seen[members[k]] = 1;
          fprintf(f, k ? " %d" : "%d", members[k]);
        }
        fprintf(f, "]");
      }
      fprintf(f, "\n");
    }
  }
}

static void test_mesh_golden(void **state)
{
  const char *top = getenv("WEFT_TOPDIR");
  char path[1024], *got = NULL, want[8192];
  size_t gotlen = 0, n;
  FILE *f;
  (void)state;
  assert_non_null(top);
  snprintf(path, sizeof(path), "%s/tests/unit/rt-mesh.golden", top);
  f = open_memstream(&got, &gotlen);
  assert_non_null(f);
  write_groups(f);
  fclose(f);
  if (getenv("WEFT_UPDATE_GOLDEN")) {
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(got, f);
    fclose(f);
  }
  f = fopen(path, "r");
  assert_non_null(f);
  n = fread(want, 1, sizeof(want) - 1, f);
  fclose(f);
  want[n] = '\0';
  if (strcmp(want, got))
    fail_msg("mesh groups differ from %s:\n%s", path, got);
  free(got);
}

static void test_half(void **state)
{
  static const struct {
    float f;
    uint16_t h;
  } exact[] = {
    {0.0f, 0x0000},
    {-0.0f, 0x8000},
    {1.0f, 0x3c00},
    {-2.0f, 0xc000},
    {65504.0f, 0x7bff},
    {6.103515625e-05f, 0x0400},        /* smallest normal */
    {5.9604644775390625e-08f, 0x0001}, /* smallest subnormal */
    {0.333251953125f, 0x3555},
  };
  uint32_t i;
  size_t k;
  (void)state;
  for (k = 0; k < sizeof(exact) / sizeof(exact[0]); k++) {
    assert_int_equal(weft_float_to_half(exact[k].f), exact[k].h);
    assert_true(weft_half_to_float(exact[k].h) == exact[k].f);
  }
  /* Every finite half survives the round trip. */
  for (i = 0; i < 0x10000; i++)
    if ((i & 0x7c00) != 0x7c00)
      assert_int_equal(weft_float_to_half(weft_half_to_float((uint16_t)i)), i);
  /* Ties go to even: 1 + 2^-11 lies between 0x3c00 and 0x3c01. */
  assert_int_equal(weft_float_to_half(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(weft_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
  assert_int_equal(weft_float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  assert_int_equal(weft_float_to_half(0x1p-25f), 0x0000); /* tie to even zero */
  assert_int_equal(weft_float_to_half(0x1p-25f + 0x1p-30f), 0x0001);
  assert_int_equal(weft_float_to_half(3 * 0x1p-25f), 0x0002); /* 1.5 ulp: to even */
  assert_int_equal(weft_float_to_half(65520.0f), 0x7c00);     /* rounds up to Inf */
  assert_int_equal(weft_float_to_half(65519.0f), 0x7bff);
  assert_int_equal(weft_float_to_half(INFINITY), 0x7c00);
  assert_int_equal(weft_float_to_half(-INFINITY), 0xfc00);
  assert_true(isnan(weft_half_to_float(weft_float_to_half(NAN))));
  assert_true(isinf(weft_half_to_float(0x7c00)));
  assert_true(isnan(weft_half_to_float(0x7e00)));
}

static void test_bf16(void **state)
{
  uint32_t i;
  (void)state;
  assert_int_equal(weft_float_to_bf16(1.0f), 0x3f80);
  assert_int_equal(weft_float_to_bf16(-0.0f), 0x8000);
  assert_int_equal(weft_float_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
  assert_int_equal(weft_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  assert_int_equal(weft_float_to_bf16(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81);
  assert_int_equal(weft_float_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(weft_float_to_bf16(3.4e38f), 0x7f80); /* rounds up to Inf */
  assert_true(isnan(weft_bf16_to_float(weft_float_to_bf16(NAN))));
  for (i = 0; i < 0x10000; i++)
    if ((i & 0x7f80) != 0x7f80)
      assert_int_equal(weft_float_to_bf16(weft_bf16_to_float((uint16_t)i)), i);
}

static void test_dtypes(void **state)
{
  (void)state;
  assert_int_equal(weft_dtype_size(WEFT_BFLOAT16), 2);
  assert_int_equal(weft_dtype_size(WEFT_INT64), 8);
  assert_int_equal(weft_dtype_size((weft_dtype)42), 0);
  assert_string_equal(weft_dtype_name(WEFT_FLOAT16), "float16");
  assert_string_equal(weft_op_name(WEFT_AVG), "avg");
  assert_string_equal(weft_op_name((weft_op)-1), "?");
}

static void test_divide(void **state)
{
  uint16_t h[2] = {0x4200, 0x3c00}; /* 3, 1 */
  float f[2] = {3, 1};
  (void)state;
  weft__divide(h, 2, WEFT_FLOAT16, 2);
  assert_true(weft_half_to_float(h[0]) == 1.5f && weft_half_to_float(h[1]) == 0.5f);
  weft__divide(f, 2, WEFT_FLOAT32, 4);
  assert_true(f[0] == 0.75f && f[1] == 0.25f);
}

#define RN 1003 /* elements per kernel test: leaves a vector tail */

/* ---- the shared-memory collectives' reduction kernels (reduce.c): every
 * type and operation against a scalar reference written from the documented
 * rules (weft's for 16-bit floats, Open MPI's MIN/MAX for the others), on
 * lengths that leave a vector tail, with extreme values, NaN, infinities and
 * signed zeros, and in place on either input ---- */

/* Deterministic pseudo-random bytes. */
static uint64_t next(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Inputs with the type's edge values among random ones. */
static void fill(void *buf, weft_dtype dt, uint64_t seed)
{
  static const float specials[] = {0.0f,     -0.0f,     INFINITY, -INFINITY, NAN,  1e-40f,
                                   65504.0f, -65520.0f, 3.0e38f,  1.0f,      -1.0f};
  size_t es = weft_dtype_size(dt), i;
  uint64_t s = seed;

  for (i = 0; i < RN; i++) {
    uint64_t r = next(&s);
    float f = (float)((int64_t)(r % 20001) - 10000) / 64.0f;
    if (i % 17 == 3)
      f = specials[(i / 17) % (sizeof(specials) / sizeof(specials[0]))];
    switch (dt) {
    case WEFT_FLOAT16: ((uint16_t *)buf)[i] = i % 5 ? weft_float_to_half(f) : (uint16_t)r; break;
    case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = i % 5 ? weft_float_to_bf16(f) : (uint16_t)r; break;
    case WEFT_FLOAT32: ((float *)buf)[i] = f; break;
    case WEFT_FLOAT64: ((double *)buf)[i] = (double)f * (i % 7 ? 1 : 1e300); break;
    default: memcpy((char *)buf + i * es, &r, es); break; /* integers: any bits */
    }
  }
}

/* weft's rule for 16-bit floats, written out again: NaN on either side
 * gives NaN (then the canonical one, below), -0 below +0. */
static float ref16(float x, float y, weft_op op)
{
  if ((op == WEFT_MIN || op == WEFT_MAX) && (isnan(x) || isnan(y)))
    return NAN;
  switch (op) {
  case WEFT_PROD: return x * y;
  case WEFT_MIN: return x < y || (x == y && signbit(x)) ? x : y;
  case WEFT_MAX: return x > y || (x == y && signbit(y)) ? x : y;
  default: return x + y;
  }
}

#define REF(T, U)                                                                                  \
  do {                                                                                             \
    T x = ((const T *)a)[i], y = ((const T *)b)[i];                                                \
    ((T *)d)[i] = op == WEFT_PROD  ? (T)(U)((U)x * (U)y)                                           \
                  : op == WEFT_MIN ? (x < y ? x : y)                                               \
                  : op == WEFT_MAX ? (x > y ? x : y)                                               \
                                   : (T)(U)((U)x + (U)y);                                          \
  } while (0)

#define REFF(T)                                                                                    \
  do {                                                                                             \
    T x = ((const T *)a)[i], y = ((const T *)b)[i];                                                \
    ((T *)d)[i] = op == WEFT_PROD  ? x * y                                                         \
                  : op == WEFT_MIN ? (x < y ? x : y)                                               \
                  : op == WEFT_MAX ? (x > y ? x : y)                                               \
                                   : x + y;                                                        \
  } while (0)

static void reference(weft_dtype dt, weft_op op, void *d, const void *a, const void *b)
{
  size_t i;

  for (i = 0; i < RN; i++)
    switch (dt) {
    case WEFT_INT8: REF(int8_t, uint8_t); break;
    case WEFT_UINT8: REF(uint8_t, unsigned); break;
    case WEFT_INT32: REF(int32_t, uint32_t); break;
    case WEFT_INT64: REF(int64_t, uint64_t); break;
    case WEFT_FLOAT32: REFF(float); break;
    case WEFT_FLOAT64: REFF(double); break;
    case WEFT_FLOAT16: {
      float r = ref16(weft_half_to_float(((const uint16_t *)a)[i]),
                      weft_half_to_float(((const uint16_t *)b)[i]), op);
      ((uint16_t *)d)[i] = isnan(r) ? 0x7e00 : weft_float_to_half(r);
      break;
    }
    case WEFT_BFLOAT16: {
      float r = ref16(weft_bf16_to_float(((const uint16_t *)a)[i]),
                      weft_bf16_to_float(((const uint16_t *)b)[i]), op);
      ((uint16_t *)d)[i] = isnan(r) ? 0x7fc0 : weft_float_to_bf16(r);
      break;
    }
    default: break;
    }
}

static void test_reduce_kernels(void **state)
{
  size_t es, n;
  int dt, op;
  (void)state;

  for (dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
    for (op = 0; op < WEFT_OP_COUNT; op++) {
      char a[RN * 8], b[RN * 8], d[RN * 8], want[RN * 8], x[RN * 8];
      es = weft_dtype_size((weft_dtype)dt);
      fill(a, (weft_dtype)dt, 0x9e3779b97f4a7c15ull + (uint64_t)dt);
      fill(b, (weft_dtype)dt, 0xbf58476d1ce4e5b9ull + (uint64_t)op);
      reference((weft_dtype)dt, (weft_op)op, want, a, b);
      /* Every length up to 40 (vector tails), then all of it. */
      for (n = 0; n <= RN; n = n < 40 ? n + 1 : RN) {
        memset(d, 0x5a, sizeof(d));
        weft__reduce((weft_dtype)dt, (weft_op)op, d, a, b, n);
        if (memcmp(d, want, n * es) != 0)
          fail_msg("%s %s n=%zu: differs from the reference", weft_dtype_name(dt), weft_op_name(op),
                   n);
        if (n == RN)
          break;
      }
      memcpy(x, a, sizeof(x)); /* out = a */
      weft__reduce((weft_dtype)dt, (weft_op)op, x, x, b, RN);
      if (memcmp(x, want, RN * es) != 0)
        fail_msg("%s %s: in place on the first input differs", weft_dtype_name(dt),
                 weft_op_name(op));
      memcpy(x, b, sizeof(x)); /* out = b */
      weft__reduce((weft_dtype)dt, (weft_op)op, x, a, x, RN);
      if (memcmp(x, want, RN * es) != 0)
        fail_msg("%s %s: in place on the second input differs", weft_dtype_name(dt),
                 weft_op_name(op));
    }
}

/* The rules themselves, on values worked out by hand. */
static void test_reduce_rules(void **state)
{
  int8_t i8a = 100, i8b = 100, i8d;
  int32_t i32a = INT32_MAX, i32b = 2, i32d;
  uint8_t u8a = 200, u8b = 200, u8d;
  float fa = NAN, fb = 1.0f, fd;
  uint16_t ha = weft_float_to_bf16(1.0f), hb = weft_float_to_bf16(0x1p-8f), hd;
  (void)state;

  weft__reduce(WEFT_INT8, WEFT_SUM, &i8d, &i8a, &i8b, 1);
  assert_int_equal(i8d, -56); /* wraps; Open MPI 4.1's AVX sum would give 127 */
  weft__reduce(WEFT_INT32, WEFT_SUM, &i32d, &i32a, &i32b, 1);
  assert_int_equal(i32d, INT32_MIN + 1);
  weft__reduce(WEFT_UINT8, WEFT_PROD, &u8d, &u8a, &u8b, 1);
  assert_int_equal(u8d, (200 * 200) % 256);
  weft__reduce(WEFT_FLOAT32, WEFT_MIN, &fd, &fa, &fb, 1);
  assert_true(fd == 1.0f); /* Open MPI's: the second side when the two do not compare */
  weft__reduce(WEFT_FLOAT32, WEFT_MIN, &fd, &fb, &fa, 1);
  assert_true(isnan(fd));
  weft__reduce(WEFT_BFLOAT16, WEFT_SUM, &hd, &ha, &hb, 1);
  assert_int_equal(hd, weft_float_to_bf16(1.0f)); /* 1 + 2^-8: a tie, to even */
  ha = 0x7f81; /* a NaN with a payload: the result is the canonical one */
  weft__reduce(WEFT_BFLOAT16, WEFT_MAX, &hd, &ha, &hb, 1);
  assert_int_equal(hd, 0x7fc0);
  weft__reduce(WEFT_BFLOAT16, WEFT_MAX, &hd, &hb, &ha, 1);
  assert_int_equal(hd, 0x7fc0);
  ha = weft_float_to_bf16(-0.0f);
  hb = weft_float_to_bf16(0.0f);
  weft__reduce(WEFT_BFLOAT16, WEFT_MIN, &hd, &hb, &ha, 1);
  assert_int_equal(hd, 0x8000); /* -0 below +0, whichever side it is on */
}

/* The ranks' records, reduced as weft_init does: each slot's maximum, then
 * the maximum of its negation. */
static void reduce_records(const int64_t (*rec)[WEFT__SETTINGS_MAX], int nranks, int n,
                           int64_t *red)
{
  for (int k = 0; k < n; k++) {
    red[k] = INT64_MIN;
    red[n + k] = INT64_MIN;
    for (int r = 0; r < nranks; r++) {
      if (rec[r][k] > red[k])
        red[k] = rec[r][k];
      if (-rec[r][k] > red[n + k])
        red[n + k] = -rec[r][k];
    }
  }
}

static int slot_of(const char *var)
{
  for (int k = 1; k < weft__settings_count(); k++)
    if (!strcmp(weft__settings_name(k), var))
      return k;
  fail_msg("%s is not an agreed setting", var);
  return -1;
}

static void test_settings_agree(void **state)
{
  static const char *const vars[] = {
    "WEFT_BACKEND",         "WEFT_ALLREDUCE",     "WEFT_HIER_THRESHOLD", "WEFT_MPI_CHUNK",
    "WEFT_COLL_TIMEOUT",    "WEFT_INIT_TIMEOUT",  "WEFT_HOST_SHM",       "WEFT_HOST_SHM_THRESHOLD",
    "WEFT_HOST_SHM_STAGED", "WEFT_RANKS_PER_NODE"};
  static const char *const set[3][2] = {
    {"WEFT_COLL_TIMEOUT", "3"},   /* rank 0 */
    {"WEFT_COLL_TIMEOUT", "3.0"}, /* rank 1: the same value */
    {"WEFT_HOST_SHM", "1"},       /* rank 2: the default written out, and no timeout */
  };
  int64_t rec[3][WEFT__SETTINGS_MAX], red[2 * WEFT__SETTINGS_MAX];
  int n = weft__settings_count();
  weft_ctx ctx;
  (void)state;

  assert_true(n <= WEFT__SETTINGS_MAX);
  assert_int_equal(n, (int)(sizeof(vars) / sizeof(vars[0])) + 1);
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
    unsetenv(vars[i]);
  for (int r = 0; r < 3; r++) {
    memset(&ctx, 0, sizeof(ctx));
    setenv(set[r][0], set[r][1], 1);
    assert_int_equal(weft__settings_read(&ctx), 0);
    weft__settings_record(&ctx, 0, rec[r]);
    unsetenv(set[r][0]);
  }
  assert_int_equal(rec[0][slot_of("WEFT_COLL_TIMEOUT")], 3000000);
  assert_int_equal(rec[0][slot_of("WEFT_HOST_SHM")], 1);
  assert_int_equal(rec[0][slot_of("WEFT_MPI_CHUNK")], INT_MAX);
  reduce_records(rec, 2, n, red);
  assert_int_equal(weft__settings_differs(red, n, 0), -1); /* 3 and 3.0 */
  reduce_records(rec, 3, n, red);
  assert_int_equal(weft__settings_differs(red, n, 0), slot_of("WEFT_COLL_TIMEOUT"));
  assert_int_equal(weft__settings_differs(red, n, slot_of("WEFT_COLL_TIMEOUT") + 1), -1);

  /* A rank that could not read its settings: slot 0, and no values. */
  memset(&ctx, 0, sizeof(ctx));
  setenv("WEFT_ALLREDUCE", "ring", 1);
  assert_int_equal(weft__settings_read(&ctx), WEFT_EINVAL);
  assert_non_null(strstr(ctx.err, "WEFT_ALLREDUCE=ring: use one of auto,flat,hier"));
  weft__settings_record(&ctx, WEFT_EINVAL, rec[1]);
  assert_int_equal(rec[1][0], 1);
  reduce_records(rec, 2, n, red);
  assert_int_equal(weft__settings_differs(red, n, 0), 0);
  unsetenv("WEFT_ALLREDUCE");

  /* Each kind refuses what it cannot read, naming the variable. */
  static const char *const bad[][2] = {
    {"WEFT_BACKEND", "gloo"},       {"WEFT_HIER_THRESHOLD", "lots"}, {"WEFT_MPI_CHUNK", "0"},
    {"WEFT_COLL_TIMEOUT", "-1"},    {"WEFT_INIT_TIMEOUT", "nan"},    {"WEFT_HOST_SHM", "2"},
    {"WEFT_RANKS_PER_NODE", "1.5"}, {"WEFT_HOST_SHM_STAGED", "16Q"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    memset(&ctx, 0, sizeof(ctx));
    setenv(bad[i][0], bad[i][1], 1);
    assert_int_equal(weft__settings_read(&ctx), WEFT_EINVAL);
    assert_non_null(strstr(ctx.err, bad[i][0]));
    unsetenv(bad[i][0]);
  }
}

static void test_settings_line(void **state)
{
  struct weft__setting_seen all[12];
  char line[1024];
  (void)state;

  memset(all, 0, sizeof(all));
  for (int r = 0; r < 12; r++) {
    /* ranks 0-1 on a, 3 s; 2-9 on b..i, unset; 10 on j, 5 s; 11 on k, 7 s */
    all[r].value = r < 2 ? 3000000 : r < 10 ? 0 : r == 10 ? 5000000 : 7000000;
    snprintf(all[r].raw, sizeof(all[r].raw), "%s", r < 2 ? "3" : r < 10 ? "" : r == 10 ? "5" : "7");
    snprintf(all[r].host, sizeof(all[r].host), "%c", r < 2 ? 'a' : 'a' + r - 1);
  }
  weft__settings_line("WEFT_COLL_TIMEOUT", all, 12, "WEFT_HOST_SHM", line, sizeof(line));
  assert_string_equal(line,
                      "ranks disagree on WEFT_COLL_TIMEOUT: 3 on ranks 0, 1 (host a); unset on "
                      "ranks 2, 3, 4, 5 and 4 more (host b, c, d and 5 more hosts); 5 on rank 10 "
                      "(host j); and 1 more value (WEFT_HOST_SHM differs too); set it on every "
                      "host, or pass -x WEFT_COLL_TIMEOUT to mpirun or weftrun");
  /* A short buffer: cut, terminated. */
  weft__settings_line("WEFT_COLL_TIMEOUT", all, 12, "", line, 40);
  assert_int_equal(strlen(line), 39);
}

/* CUDA_VISIBLE_DEVICES entries as CUDA reads them: indexes, UUIDs (or their
 * start), MIG instances, and what ends CUDA's list. */
static void test_vis_entry(void **state)
{
  static const struct {
    const char *s;
    enum weft__vis_kind kind;
    long index;
  } cases[] = {
    {"0", WEFT__VIS_INDEX, 0},
    {"7", WEFT__VIS_INDEX, 7},
    {"12", WEFT__VIS_INDEX, 12},
    {"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", WEFT__VIS_UUID, -1},
    {"GPU-8932f937", WEFT__VIS_UUID, -1},
    {"MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", WEFT__VIS_MIG, -1},
    {"MIG-c6e9f2ad-3b1b-5e0b-9f0e-1b2c3d4e5f60", WEFT__VIS_MIG, -1},
    {"-1", WEFT__VIS_OTHER, -1},
    {"+1", WEFT__VIS_OTHER, -1},
    {" 1", WEFT__VIS_OTHER, -1},
    {"1a", WEFT__VIS_OTHER, -1},
    {"", WEFT__VIS_OTHER, -1},
    {"gpu-1", WEFT__VIS_OTHER, -1},
    {"99999999999999999999", WEFT__VIS_OTHER, -1},
  };
  (void)state;

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    long idx = 42;
    enum weft__vis_kind k = weft__vis_entry(cases[i].s, strlen(cases[i].s), &idx);
    if (k != cases[i].kind || idx != cases[i].index)
      fail_msg("'%s': kind %d index %ld, want %d %ld", cases[i].s, (int)k, idx, (int)cases[i].kind,
               cases[i].index);
  }
  /* an entry is its len bytes, not the rest of the list */
  {
    long idx;
    assert_int_equal(weft__vis_entry("3,GPU-1", 1, &idx), WEFT__VIS_INDEX);
    assert_int_equal(idx, 3);
  }
}

/* When WEFT_GPU (PCI order) is CUDA's numbering once looked up in the list,
 * and what stands in the way otherwise. */
static void test_gpu_index_trusted(void **state)
{
  static const struct {
    const char *vis, *order;
    int trusted;
    const char *says;
  } cases[] = {
    {NULL, "PCI_BUS_ID", 1, ""},
    {"", "PCI_BUS_ID", 1, ""},
    {"0,1,2,3", "PCI_BUS_ID", 1, ""},
    {"5", "PCI_BUS_ID", 1, ""},
    {NULL, NULL, 0, "CUDA_DEVICE_ORDER is unset: CUDA's default, FASTEST_FIRST"},
    {"0,1", NULL, 0, "CUDA_DEVICE_ORDER is unset"},
    {NULL, "FASTEST_FIRST", 0, "CUDA_DEVICE_ORDER=FASTEST_FIRST"},
    {NULL, "pci_bus_id", 0, "CUDA_DEVICE_ORDER=pci_bus_id"},
    {"GPU-8932f937-d72c", "PCI_BUS_ID", 0,
     "CUDA_VISIBLE_DEVICES names a GPU by UUID: GPU-8932f937-d72c"},
    {"0,MIG-1234", "PCI_BUS_ID", 0, "names a MIG instance: MIG-1234"},
    {"0,-1,2", "PCI_BUS_ID", 0, "names an entry that is no index: -1"},
    {"0,,1", "PCI_BUS_ID", 0, "names an entry that is no index: "},
  };
  char why[160];
  (void)state;

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    why[0] = '\0';
    int t = weft__gpu_index_trusted(cases[i].vis, cases[i].order, why, sizeof(why));
    if (t != cases[i].trusted || !strstr(why, cases[i].says))
      fail_msg("vis %s order %s: trusted %d (%s), want %d (%s)",
               cases[i].vis ? cases[i].vis : "unset", cases[i].order ? cases[i].order : "unset", t,
               why, cases[i].trusted, cases[i].says);
  }
}

static void test_gpu_ordinal(void **state)
{
  (void)state;
  assert_int_equal(weft__gpu_ordinal(3, NULL), 3);
  assert_int_equal(weft__gpu_ordinal(3, ""), 3);
  assert_int_equal(weft__gpu_ordinal(3, "0,1,2,3"), 3);
  assert_int_equal(weft__gpu_ordinal(5, "5,0,1,2,3,4,6,7"), 0);
  assert_int_equal(weft__gpu_ordinal(4, "3,4"), 1);
  assert_int_equal(weft__gpu_ordinal(6, "3,4"), -1);
  assert_int_equal(weft__gpu_ordinal(1, "11,1"), 1); /* whole entries, not digits */
}

static void test_pci_parse(void **state)
{
  uint64_t a, b;
  (void)state;

  assert_int_equal(weft__pci_parse("0000:04:00.0", 12, &a), 0);
  assert_int_equal(weft__pci_parse("00000000:04:00.0", 16, &b), 0); /* nvidia-smi's */
  assert_true(a == b);
  assert_int_equal(weft__pci_parse("0000:3b:00.0", 12, &a), 0);
  assert_int_equal(weft__pci_parse("0000:3B:00.0", 12, &b), 0); /* CUDA's upper case */
  assert_true(a == b);
  assert_int_equal(weft__pci_parse("0000:3b:00.1", 12, &b), 0);
  assert_true(a != b);
  assert_int_equal(weft__pci_parse("0001:3b:00.0", 12, &b), 0);
  assert_true(a != b);
  assert_int_equal(weft__pci_parse("0000:00:1f.7", 12, &b), 0);
  assert_int_equal(weft__pci_parse("0000:04:00.0,0000:05:00.0", 12, &b), 0); /* len bytes */
  static const char *const bad[] = {
    "",
    "04:00.0",
    "0000:04:00",
    "0000:04:00.8",
    "0000:04:20.0",
    "0000:104:00.0",
    "0000:04:00.0x",
    "000000000:04:00.0",
    "0000-04:00.0",
    "zzzz:04:00.0",
    "0000::00.0",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    if (weft__pci_parse(bad[i], strlen(bad[i]), &a) == 0)
      fail_msg("'%s' taken for a PCI address", bad[i]);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layout_ok),
    cmocka_unit_test(test_layout_errors),
    cmocka_unit_test(test_mask),
    cmocka_unit_test(test_coords),
    cmocka_unit_test(test_mesh_golden),
    cmocka_unit_test(test_half),
    cmocka_unit_test(test_bf16),
    cmocka_unit_test(test_dtypes),
    cmocka_unit_test(test_divide),
    cmocka_unit_test(test_reduce_kernels),
    cmocka_unit_test(test_reduce_rules),
    cmocka_unit_test(test_settings_agree),
    cmocka_unit_test(test_settings_line),
    cmocka_unit_test(test_vis_entry),
    cmocka_unit_test(test_gpu_index_trusted),
    cmocka_unit_test(test_gpu_ordinal),
    cmocka_unit_test(test_pci_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
