/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the child-process helper (lib/core/proc.c, exe.c): exit codes,
 * signals, the deadline with its grace period, stop requests, lines passed on,
 * kept output and its cap, a command that cannot run, and that nothing of the
 * child's process group is left. Each runs /bin/sh for a fraction of a second. */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <weftx.h>

static int sh(const char *script, weftx_proc_spec *s, weftx_proc_result *r)
{
  static char *argv[4];
  char why[256];
  argv[0] = (char *)"/bin/sh";
  argv[1] = (char *)"-c";
  argv[2] = (char *)script;
  argv[3] = NULL;
  s->argv = argv;
  return weftx_proc_run(s, r, why, sizeof(why));
}

static void test_status(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  (void)state;
  weftx_proc_spec_init(&s);
  assert_int_equal(sh("exit 0", &s, &r), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(sh("exit 3", &s, &r), 0);
  assert_int_equal(r.status, 3);
  assert_int_equal(sh("kill -9 $$", &s, &r), 0);
  assert_int_equal(r.status, 128 + SIGKILL);
  assert_false(r.timed_out);
}

static void test_keep_and_cap(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  (void)state;
  weftx_proc_spec_init(&s);
  s.out = WEFTX_PROC_PIPE;
  s.err = WEFTX_PROC_NULL;
  assert_int_equal(sh("echo one; echo two >&2; printf two", &s, &r), 0);
  assert_int_equal(r.status, 0);
  assert_string_equal(r.output, "one\ntwo");
  assert_int_equal(r.len, 7);
  free(r.output);
  /* more than the cap: the child is killed, capped says so, nothing more is kept */
  s.max_output = 1000;
  double t0 = weftx_monotonic();
  assert_int_equal(sh("yes 0123456789; sleep 30", &s, &r), 0);
  assert_true(r.capped);
  assert_true(r.len <= 1000);
  assert_true(weftx_monotonic() - t0 < 5);
  free(r.output);
}

typedef struct lines {
  char text[2][256];
  int calls[2];
  int events[8];
  int nevents;
} lines;

static void on_output(void *arg, int stream, const char *data, size_t len)
{
  lines *l = arg;
  size_t have = strlen(l->text[stream - 1]);
  assert_true(len > 0);
  assert_true(data[len - 1] == '\n' || stream == 2); /* stream 2 ends without one below */
  if (have + len < sizeof(l->text[0]))
    memcpy(l->text[stream - 1] + have, data, len);
  l->calls[stream - 1]++;
}

static void on_event(void *arg, weftx_proc_event ev, int value)
{
  lines *l = arg;
  (void)value;
  if (l->nevents < 8)
    l->events[l->nevents++] = (int)ev;
}

static void test_lines(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  lines l;
  (void)state;
  memset(&l, 0, sizeof(l));
  weftx_proc_spec_init(&s);
  s.out = s.err = WEFTX_PROC_PIPE;
  s.on_output = on_output;
  s.arg = &l;
  assert_int_equal(sh("printf 'a\\nb'; sleep 0.2; printf 'c\\n'; printf 'e1\\ne2' >&2", &s, &r), 0);
  assert_int_equal(r.status, 0);
  assert_null(r.output);
  assert_string_equal(l.text[0], "a\nbc\n");
  assert_string_equal(l.text[1], "e1\ne2");
  /* "b" waited for its newline: whole lines only */
  assert_int_equal(l.calls[0], 2);
}

static void test_deadline(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  lines l;
  (void)state;
  memset(&l, 0, sizeof(l));
  weftx_proc_spec_init(&s);
  s.on_event = on_event;
  s.arg = &l;
  s.timeout = 0.3;
  s.grace = 0.3;
  /* ends at once on SIGTERM (exec: a shell waiting for its child would wait for it) */
  assert_int_equal(sh("exec sleep 30", &s, &r), 0);
  assert_int_equal(r.status, WEFTX_PROC_TIMEOUT);
  assert_true(r.timed_out);
  assert_true(r.seconds < 3);
  assert_int_equal(l.events[0], WEFTX_PROC_EV_DEADLINE);
  /* ignores SIGTERM: killed with its group after the grace period, its background child too */
  l.nevents = 0;
  s.stop_group = 1;
  char script[256];
  snprintf(script, sizeof(script),
           "trap '' TERM; sleep 30 & echo $! >%s/weft-test-core-proc-%ld; wait",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
  assert_int_equal(sh(script, &s, &r), 0);
  assert_int_equal(r.status, WEFTX_PROC_TIMEOUT);
  assert_true(r.seconds >= 0.5 && r.seconds < 3);
  assert_int_equal(l.nevents, 3);
  assert_int_equal(l.events[1], WEFTX_PROC_EV_KILL);
  assert_int_equal(l.events[2], WEFTX_PROC_EV_EXIT);
  char path[256];
  snprintf(path, sizeof(path), "%s/weft-test-core-proc-%ld",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
  FILE *f = fopen(path, "r");
  long bg = 0;
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%ld", &bg), 1);
  fclose(f);
  unlink(path);
  assert_true(bg > 0);
  /* the group's background sleep is gone (or a zombie its new parent has not reaped
   * yet), within moments of the SIGKILL */
  snprintf(path, sizeof(path), "/proc/%ld/stat", bg);
  char st = '?';
  for (int i = 0; i < 200 && st != 'Z'; i++) {
    st = 'Z';
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%*d (%*[^)]) %c", &st) != 1)
        st = '?';
      fclose(f);
    }
    if (st != 'Z')
      usleep(10000);
  }
  assert_int_equal(st, 'Z');
}

/* The caller's own descriptor in the same loop: called at the start, when it is
 * readable and at the time it asks for; it stops the child; after the exit it keeps
 * the loop going until it says it is done. */
typedef struct watching {
  int calls, after_exit, fd;
  double first;
} watching;

static double on_watch(void *arg, double now, int exited, int *stop)
{
  watching *w = arg;
  if (!w->calls++)
    w->first = now;
  if (exited)
    return ++w->after_exit < 3 ? now + 0.05 : 0;
  if (now - w->first > 0.3)
    *stop = SIGTERM;
  return now + 0.1;
}

static void test_watch(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  watching w = {0, 0, -1, 0};
  int p[2];
  (void)state;
  assert_int_equal(pipe(p), 0);
  weftx_proc_spec_init(&s);
  s.watch_fd = p[0];
  s.watch_drain = 5;
  s.on_watch = on_watch;
  s.arg = &w;
  s.death_signal = SIGTERM;
  assert_int_equal(sh("exec sleep 30", &s, &r), 0);
  assert_int_equal(r.status, 128 + SIGTERM); /* stopped by the watch */
  assert_true(w.calls >= 4);
  assert_int_equal(w.after_exit, 3); /* the loop went on until it said done */
  assert_true(r.seconds < 3);
  close(p[0]);
  close(p[1]);
}

static void test_stop(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  int p[2];
  (void)state;
  assert_int_equal(pipe(p), 0);
  unsigned char c = SIGINT;
  assert_int_equal(write(p[1], &c, 1), 1); /* a request already waiting */
  weftx_proc_spec_init(&s);
  s.stop_fd = p[0];
  assert_int_equal(sh("exec sleep 30", &s, &r), 0);
  assert_int_equal(r.stopped, SIGINT);
  assert_int_equal(r.status, 128 + SIGINT);
  assert_true(r.seconds < 3);
  close(p[0]);
  close(p[1]);
}

static void test_noexec_and_find(void **state)
{
  weftx_proc_spec s;
  weftx_proc_result r;
  char why[256], buf[4096];
  char *argv[] = {(char *)"weft-no-such-program", NULL};
  (void)state;
  weftx_proc_spec_init(&s);
  s.argv = argv;
  assert_int_equal(weftx_proc_run(&s, &r, why, sizeof(why)), 0);
  assert_int_equal(r.status, WEFTX_PROC_NOEXEC);
  assert_non_null(strstr(why, "cannot run weft-no-such-program"));

  const char *sh_[] = {"/nonexistent/sh", "weft-no-such-program", "sh", NULL};
  assert_non_null(weftx_find_exe(sh_, buf, sizeof(buf)));
  assert_non_null(strstr(buf, "/sh"));
  const char *none[] = {"$ORIGIN/weft-no-such-program", "weft-no-such-program", NULL};
  assert_null(weftx_find_exe(none, buf, sizeof(buf)));
  /* this test program itself, next to itself: made canonical */
  const char *self[] = {"$ORIGIN/test-core-proc", "$ORIGIN/lt-test-core-proc", NULL};
  assert_non_null(weftx_find_exe(self, buf, sizeof(buf)));
  assert_true(buf[0] == '/');
  assert_null(strstr(buf, "/./"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_status), cmocka_unit_test(test_keep_and_cap),
    cmocka_unit_test(test_lines),  cmocka_unit_test(test_deadline),
    cmocka_unit_test(test_stop),   cmocka_unit_test(test_noexec_and_find),
    cmocka_unit_test(test_watch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
