/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the runtime's pure pieces: layout parsing and its errors,
 * mesh coordinates and group membership (golden text in rt-mesh.golden,
 * regenerated with WEFT_UPDATE_GOLDEN=1), fp16/bf16 conversion (round to
 * nearest even, subnormals, NaN and infinities), element sizes and names.
 */
#include "rt_private.h"

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
    {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff},
    {6.103515625e-05f, 0x0400},   /* smallest normal */
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
  assert_int_equal(weft_float_to_half(0x1p-25f), 0x0000);          /* tie to even zero */
  assert_int_equal(weft_float_to_half(0x1p-25f + 0x1p-30f), 0x0001);
  assert_int_equal(weft_float_to_half(3 * 0x1p-25f), 0x0002);      /* 1.5 ulp: to even */
  assert_int_equal(weft_float_to_half(65520.0f), 0x7c00);          /* rounds up to Inf */
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
  assert_int_equal(weft_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);   /* tie to even */
  assert_int_equal(weft_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  assert_int_equal(weft_float_to_bf16(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81);
  assert_int_equal(weft_float_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(weft_float_to_bf16(3.4e38f), 0x7f80);          /* rounds up to Inf */
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

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layout_ok),   cmocka_unit_test(test_layout_errors),
    cmocka_unit_test(test_mask),        cmocka_unit_test(test_coords),
    cmocka_unit_test(test_mesh_golden), cmocka_unit_test(test_half),
    cmocka_unit_test(test_bf16),        cmocka_unit_test(test_dtypes),
    cmocka_unit_test(test_divide),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
