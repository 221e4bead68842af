/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Open MPI's MCA parameters that decide placement (weftx/ompi.h lists them),
 * as mpirun will see them: the command line's (--mca, and the options that
 * set a parameter, such as --map-by), else the environment's OMPI_MCA_*, else
 * the parameter files ($HOME/.openmpi/mca-params.conf before
 * <sysconfdir>/openmpi-mca-params.conf, or the list in mca_base_param_files),
 * and over everything the override file
 * <sysconfdir>/openmpi-mca-params-override.conf. <sysconfdir> is Open MPI's,
 * found by configure; OPAL_SYSCONFDIR or OPAL_PREFIX move it, as they move
 * Open MPI's. Reading the files is this stage's only I/O.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

extern char **environ;

static int own(wr_mca *m, char *s)
{
  char **v = s ? realloc(m->strings, (size_t)(m->nstrings + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(s);
    return -1;
  }
  m->strings = v;
  m->strings[m->nstrings++] = s;
  return 0;
}

static int set(wr_mca *m, int id, const char *value, const char *from, int force)
{
  char *v, *f;
  if (id < 0 || (m->m.v[id] && !force))
    return 0;
  v = strdup(value);
  f = strdup(from);
  if (own(m, v) || own(m, f))
    return -1;
  m->m.v[id] = v;
  m->m.from[id] = f;
  return 0;
}

static void sysconfdir(char *buf, size_t len)
{
  const char *s = getenv("OPAL_SYSCONFDIR"), *p = getenv("OPAL_PREFIX");
  if (s && *s)
    snprintf(buf, len, "%s", s);
  else if (p && *p)
    snprintf(buf, len, "%s/etc", p);
  else
    snprintf(buf, len, "%s", WEFT_OMPI_SYSCONFDIR);
}

/* One parameter file: "key = value" lines, '#' comments. A file that is not there is
 * nothing; one that cannot be read is an error, as for Open MPI. */
static int read_file(wr_mca *m, const char *path, int force)
{
  FILE *f = fopen(path, "r");
  char line[4096], from[4200];
  int lineno = 0;

  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR)
      return 0;
    fprintf(stderr, "weftrun: cannot read Open MPI's parameter file %s: %s\n", path,
            strerror(errno));
    return WR_EXIT_NOINPUT;
  }
  while (fgets(line, sizeof(line), f)) {
    char *k = line, *eq, *v, *end;
    lineno++;
    while (isspace((unsigned char)*k))
      k++;
    if (*k == '#' || !*k || !(eq = strchr(k, '=')))
      continue;
    for (end = eq; end > k && isspace((unsigned char)end[-1]); end--)
      ;
    *end = '\0';
    for (v = eq + 1; isspace((unsigned char)*v); v++)
      ;
    for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
      ;
    *end = '\0';
    snprintf(from, sizeof(from), "%s:%d", path, lineno);
    if (set(m, weftx_ompi_mca_id(k), v, from, force)) {
      fclose(f);
      fprintf(stderr, "weftrun: out of memory\n");
      return WR_EXIT_ENGINE;
    }
  }
  fclose(f);
  return 0;
}

int wr_mca_gather(const wr_opts *o, wr_mca *m)
{
  char etc[4096], path[4200];
  int rc;

  memset(m, 0, sizeof(*m));
  sysconfdir(etc, sizeof(etc));
  /* the override file first: nothing else changes what it says */
  snprintf(path, sizeof(path), "%s/openmpi-mca-params-override.conf", etc);
  if ((rc = read_file(m, path, 1)))
    return rc;
  for (int id = 0; id < WEFTX_OMPI_MCA_COUNT; id++)
    m->fixed[id] = m->m.v[id] != NULL;
  /* the command line of the first program (later ones set theirs after Open MPI read
   * its defaults); a later word wins, as mpirun sets them in turn */
  for (int i = 0; i < o->ncmd_mca; i++) {
    int id = weftx_ompi_mca_id(o->cmd_mca[i].key);
    if (o->cmd_mca_app[i] == 0 && id >= 0 && !m->fixed[id] &&
        set(m, id, o->cmd_mca[i].value, o->cmd_mca_from[i], 1))
      goto nomem;
  }
  /* the environment */
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    char name[256];
    size_t n;
    if (strncmp(*e, "OMPI_MCA_", 9) || !eq || (n = (size_t)(eq - *e - 9)) >= sizeof(name))
      continue;
    memcpy(name, *e + 9, n);
    name[n] = '\0';
    snprintf(path, sizeof(path), "OMPI_MCA_%s", name);
    if (set(m, weftx_ompi_mca_id(name), eq + 1, path, 0))
      goto nomem;
  }
  /* the files, the first listed first */
  {
    const char *list = getenv("OMPI_MCA_mca_base_param_files");
    char dflt[8400], *copy, *tok, *save = NULL;
    const char *home = getenv("HOME");
    if (!list || !*list) {
      snprintf(dflt, sizeof(dflt), "%s/.openmpi/mca-params.conf:%s/openmpi-mca-params.conf",
               home && *home ? home : "/nonexistent", etc);
      list = dflt;
    }
    if (!(copy = strdup(list)))
      goto nomem;
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
      if (strcmp(tok, "none") && (rc = read_file(m, tok, 0))) {
        free(copy);
        return rc;
      }
    free(copy);
  }
  /* the default hostfile Open MPI looks at when nothing else names hosts */
  if (!m->m.v[WEFTX_OMPI_MCA_DEFAULT_HOSTFILE]) {
    snprintf(path, sizeof(path), "%s/openmpi-default-hostfile", etc);
    if (set(m, WEFTX_OMPI_MCA_DEFAULT_HOSTFILE, path, "Open MPI's default", 0))
      goto nomem;
    m->default_hostfile_builtin = 1;
  }
  return 0;
nomem:
  fprintf(stderr, "weftrun: out of memory\n");
  return WR_EXIT_ENGINE;
}

void wr_mca_free(wr_mca *m)
{
  for (int i = 0; i < m->nstrings; i++)
    free(m->strings[i]);
  free(m->strings);
  memset(m, 0, sizeof(*m));
}
