/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Meshes: a layout string ("tp=2,pp=2,dp=*") names the dimensions of the
 * world, the first varying fastest (Megatron's order), so that
 * rank = c0 + s0 * (c1 + s1 * (c2 + ...)). A group for some dimensions holds
 * the ranks whose other coordinates equal ours. The parsing and coordinate
 * math are pure functions (unit-tested); the groups are MPI_Comm_split.
 */
#include "rt_private.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t whysize, int code, const char *fmt, ...) WEFT_PRINTF(4, 5);

static int fail(char *why, size_t whysize, int code, const char *fmt, ...)
{
  va_list ap;

  if (why) {
    va_start(ap, fmt);
    vsnprintf(why, whysize, fmt, ap);
    va_end(ap);
  }
  return code;
}

int weft__layout_parse(const char *layout, int world_size, struct weft__layout *out, char *why,
                       size_t whysize)
{
  const char *p = layout;
  int star = -1, i, j;
  long prod = 1;

  memset(out, 0, sizeof(*out));
  if (!layout || !*layout)
    return fail(why, whysize, WEFT_EPARSE, "empty layout; write e.g. \"tp=2,dp=*\"");
  while (*p) {
    struct weft__dim *d;
    size_t n = 0;
    if (out->ndims == WEFT__MESH_MAXDIMS)
      return fail(why, whysize, WEFT_EPARSE, "layout \"%s\" has more than 8 dimensions", layout);
    d = &out->dims[out->ndims];
    while (isalnum((unsigned char)p[n]) || p[n] == '_')
      n++;
    if (n == 0 || n >= sizeof(d->name) || p[n] != '=')
      return fail(
        why, whysize, WEFT_EPARSE,
        "layout \"%s\": expected name=size (name: letters, digits, _) separated by commas", layout);
    memcpy(d->name, p, n);
    d->name[n] = '\0';
    p += n + 1;
    if (*p == '*') {
      if (star >= 0)
        return fail(why, whysize, WEFT_EPARSE, "layout \"%s\": more than one size is \"*\"",
                    layout);
      star = out->ndims;
      d->size = 0;
      p++;
    } else {
      char *end;
      long v;
      if (!isdigit((unsigned char)*p))
        return fail(why, whysize, WEFT_EPARSE, "layout \"%s\": a size must be a number or \"*\"",
                    layout);
      v = strtol(p, &end, 10);
      if (v < 1 || v > (1L << 24))
        return fail(why, whysize, WEFT_ERANGE, "layout \"%s\": sizes must be 1 or more", layout);
      d->size = (int)v;
      prod *= v;
      if (prod > (1L << 30))
        return fail(why, whysize, WEFT_ERANGE, "layout \"%s\": too many ranks", layout);
      p = end;
    }
    for (j = 0; j < out->ndims; j++)
      if (!strcmp(out->dims[j].name, d->name))
        return fail(why, whysize, WEFT_ENAME, "layout names dimension \"%s\" twice", d->name);
    out->ndims++;
    if (*p == ',')
      p++;
    else if (*p)
      return fail(why, whysize, WEFT_EPARSE, "layout \"%s\": expected \",\" between dimensions",
                  layout);
    if (*p == '\0' && p[-1] == ',')
      return fail(why, whysize, WEFT_EPARSE, "layout \"%s\" ends with \",\"", layout);
  }
  if (star >= 0) {
    if (world_size % prod != 0)
      return fail(why, whysize, WEFT_ERANGE,
                  "layout \"%s\": the fixed sizes multiply to %ld, which does not divide the "
                  "world size %d",
                  layout, prod, world_size);
    out->dims[star].size = (int)(world_size / prod);
  } else if (prod != world_size) {
    return fail(why, whysize, WEFT_ERANGE,
                "layout \"%s\": sizes multiply to %ld, not the world size %d; use \"*\" for one "
                "dimension",
                layout, prod, world_size);
  }
  for (i = 0; i < out->ndims; i++)
    if (out->dims[i].size < 1)
      return fail(why, whysize, WEFT_ERANGE, "layout \"%s\": a dimension has size 0", layout);
  return 0;
}

void weft__layout_coords(const struct weft__layout *l, int rank, int *coord)
{
  int i;

  for (i = 0; i < l->ndims; i++) {
    coord[i] = rank % l->dims[i].size;
    rank /= l->dims[i].size;
  }
}

int weft__layout_mask(const struct weft__layout *l, const char *dims, unsigned *mask, char *why,
                      size_t whysize)
{
  const char *p = dims;

  *mask = 0;
  if (!dims || !*dims)
    return fail(why, whysize, WEFT_EPARSE, "empty list of dimensions");
  while (*p) {
    char name[WEFT__NAME_MAX];
    size_t n = strcspn(p, ",");
    int i, found = -1;
    if (n == 0 || n >= sizeof(name))
      return fail(why, whysize, WEFT_EPARSE, "bad list of dimensions \"%s\"", dims);
    memcpy(name, p, n);
    name[n] = '\0';
    for (i = 0; i < l->ndims; i++)
      if (!strcmp(l->dims[i].name, name))
        found = i;
    if (found < 0)
      return fail(why, whysize, WEFT_ENAME, "the mesh has no dimension \"%s\"", name);
    if (*mask & (1u << found))
      return fail(why, whysize, WEFT_ENAME, "dimension \"%s\" named twice", name);
    *mask |= 1u << found;
    p += n;
    if (*p == ',' && *++p == '\0')
      return fail(why, whysize, WEFT_EPARSE, "bad list of dimensions \"%s\"", dims);
  }
  return 0;
}

int weft__layout_color(const struct weft__layout *l, unsigned mask, int rank)
{
  int coord[WEFT__MESH_MAXDIMS], i, color = 0, stride = 1;

  weft__layout_coords(l, rank, coord);
  for (i = 0; i < l->ndims; i++)
    if (!(mask & (1u << i))) {
      color += coord[i] * stride;
      stride *= l->dims[i].size;
    }
  return color;
}

int weft__layout_members(const struct weft__layout *l, unsigned mask, int rank, int *out)
{
  int world = 1, i, n = 0, color = weft__layout_color(l, mask, rank);

  for (i = 0; i < l->ndims; i++)
    world *= l->dims[i].size;
  for (i = 0; i < world; i++)
    if (weft__layout_color(l, mask, i) == color)
      out[n++] = i;
  return n;
}

int weft_mesh_create(weft_ctx *ctx, const char *layout, weft_mesh **out)
{
  weft_mesh *m;
  char why[256];
  int rc;

  if (!ctx || !out)
    return WEFT_EINVAL;
  *out = NULL;
  m = calloc(1, sizeof(*m));
  if (!m)
    return weft__rt_fail(ctx, WEFT_ENOMEM, "weft_mesh_create: out of memory");
  rc = weft__layout_parse(layout, ctx->size, &m->layout, why, sizeof(why));
  if (rc != 0) {
    free(m);
    return weft__rt_fail(ctx, rc, "weft_mesh_create: %s", why);
  }
  m->ctx = ctx;
  weft__layout_coords(&m->layout, ctx->rank, m->coord);
  m->next = ctx->meshes;
  ctx->meshes = m;
  *out = m;
  return 0;
}

weft_group *weft_mesh_group(weft_mesh *m, const char *dims)
{
  weft_group *g;
  MPI_Comm comm;
  unsigned mask;
  char why[256];
  int rc;

  if (!m)
    return NULL;
  for (g = m->groups; g; g = g->next)
    if (dims && !strcmp(g->name, dims))
      return g;
  rc = weft__layout_mask(&m->layout, dims, &mask, why, sizeof(why));
  if (rc != 0) {
    weft__rt_fail(m->ctx, rc, "weft_mesh_group: %s", why);
    return NULL;
  }
  /* MPI_Comm_split has no deadline of its own: with WEFT_COLL_TIMEOUT, a
   * barrier first makes sure that every rank has come. */
  if (m->ctx->coll_timeout > 0 && weft_barrier(m->ctx->world) != 0)
    return NULL;
  rc = MPI_Comm_split(m->ctx->world->comm, weft__layout_color(&m->layout, mask, m->ctx->rank),
                      m->ctx->rank, &comm);
  if (rc != MPI_SUCCESS) {
    weft__rt_fail(m->ctx, WEFT_EMPI, "weft_mesh_group(\"%s\"): MPI_Comm_split failed", dims);
    return NULL;
  }
  if (weft__group_new(m->ctx, comm, dims, &g) != 0)
    return NULL;
  weft__nccl_split(g, weft__layout_color(&m->layout, mask, m->ctx->rank), m->ctx->rank);
  g->next = m->groups;
  m->groups = g;
  return g;
}

static int dim_index(const weft_mesh *m, const char *dim)
{
  int i;

  for (i = 0; m && dim && i < m->layout.ndims; i++)
    if (!strcmp(m->layout.dims[i].name, dim))
      return i;
  return WEFT_ENAME;
}

int weft_mesh_coord(const weft_mesh *m, const char *dim)
{
  int i = dim_index(m, dim);
  return i < 0 ? i : m->coord[i];
}

int weft_mesh_dim_size(const weft_mesh *m, const char *dim)
{
  int i = dim_index(m, dim);
  return i < 0 ? i : m->layout.dims[i].size;
}

int weft_mesh_ndims(const weft_mesh *m) { return m ? m->layout.ndims : WEFT_EINVAL; }

void weft_mesh_destroy(weft_mesh *m)
{
  weft_mesh **pp;

  if (!m)
    return;
  for (pp = &m->ctx->meshes; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  while (m->groups) {
    weft_group *g = m->groups;
    m->groups = g->next;
    weft__group_free(g);
  }
  free(m);
}
