#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --monitor on a 3-node virtual cluster, one rank per vnode, rank 1
# (on vnode1) sleeping while the others spin: the straggler line names rank 1
# and vnode1; the timeline has one record per rank per sample (seq 1, 2, ...
# without a gap or a repeat) with the documented fields, on the rank's host;
# the picture (timeline.html) has a line per rank; the Prometheus files (one
# per host, weft-JOB-HOST.prom, each with exactly that host's ranks) parse as
# the text format with the documented metrics and labels while the job runs,
# a rank that ends first leaves its host's file to the others, and all are gone
# after the job, failed or not; the launch line and the closing figures come on success and on failure
# (rank 2 exits 3: exit 3, vnode2's exit named); -q silences them; an
# existing timeline is never overwritten. Exit 77 when namespaces cannot be
# made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-vc-lib.sh"
up
cat >"$tmp/$uniq-job" <<'EOS'
#!/bin/sh
# rank 1 sleeps, the others spin for $1 seconds; rank $2 then exits 3
if [ "$RANK" = 1 ]; then sleep "$1"; else timeout "$1" sh -c 'while :; do :; done' || :; fi
[ "$RANK" != "${2:-none}" ] || exit 3
exit 0
EOS
chmod +x "$tmp/$uniq-job"

# A small parser of Prometheus's text format (0.0.4): comments, names, labels,
# values. Arguments: the directory, then HOST=RANK,RANK... for every host: the
# directory must hold exactly one weft-JOB-HOST.prom per host, each with every
# documented metric of exactly that host's ranks, host label its own.
cat >"$tmp/prom.py" <<'EOP'
import os, re, sys
name_re = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
sample_re = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
file_re = re.compile(r'weft-(.+)-(vnode[0-9]+)\.prom$')
want = {"weft_rank_cpu_seconds_total": "counter", "weft_rank_cpu_utilization_ratio": "gauge",
        "weft_rank_resident_memory_bytes": "gauge", "weft_rank_threads": "gauge",
        "weft_rank_processes": "gauge"}
hosts = {h: set(r.split(",")) for h, r in (a.split("=") for a in sys.argv[2:])}
files = sorted(f for f in os.listdir(sys.argv[1]) if f.endswith(".prom"))
got = {}
for f in files:
    fm = file_re.match(f)
    if not fm:
        sys.exit("%s: not weft-JOB-HOST.prom" % f)
    host = fm.group(2)
    types, seen = {}, {}
    for n, line in enumerate(open(os.path.join(sys.argv[1], f)), 1):
        line = line.rstrip("\n")
        where = "%s:%d: " % (f, n)
        if line.startswith("#"):
            w = line.split(" ", 3)
            if w[1] == "TYPE":
                if not name_re.match(w[2]) or w[3] not in ("counter", "gauge", "untyped"):
                    sys.exit(where + "bad TYPE: " + line)
                if w[2] in types:
                    sys.exit(where + "a second TYPE of " + w[2])
                types[w[2]] = w[3]
            elif w[1] != "HELP" or not name_re.match(w[2]):
                sys.exit(where + "bad comment: " + line)
            continue
        m = sample_re.match(line)
        if not m:
            sys.exit(where + "not a sample: " + line)
        name, labels, value = m.group(1), m.group(3) or "", float(m.group(4))
        lab, rest = {}, labels
        while rest:
            l = label_re.match(rest)
            if not l:
                sys.exit(where + "bad labels: " + line)
            lab[l.group(1)] = l.group(2)
            rest = rest[l.end():]
        if types.get(name) != want.get(name):
            sys.exit(where + "%s: type %s" % (name, types.get(name)))
        if set(lab) != {"job", "rank", "host"} or lab["host"] != host:
            sys.exit(where + "labels: %s" % lab)
        if value < 0 or value != value:
            sys.exit(where + "value: " + line)
        if lab["rank"] in seen.setdefault(name, set()):
            sys.exit(where + "rank %s twice" % lab["rank"])
        seen[name].add(lab["rank"])
    ranks = set().union(*seen.values()) if seen else set()
    for name in want:
        if seen.get(name) != ranks:
            sys.exit("%s: %s of ranks %s, not %s" % (f, name, sorted(seen.get(name, [])), sorted(ranks)))
    got[host] = ranks
if got != hosts or len(files) != len(hosts):
    sys.exit("files %s: ranks by host %s, not %s" % (files, got, hosts))
print("ok %d Prometheus files parse: %s" % (len(files), " ".join(
    "%s=%s" % (h, ",".join(sorted(r))) for h, r in sorted(got.items()))))
EOP
# The parser's verdict on $1 with hosts and ranks $2...: tried for up to 5 s
# (every rank must have sent a sample, the file rewritten since).
prom_check()
{
  i=0
  until /usr/bin/python3 "$tmp/prom.py" "$@" >"$tmp/prom-check" 2>&1; do
    i=$((i + 1))
    [ $i -lt 25 ] || { cat "$tmp/prom-check"; ls -la "$1"; return 1; }
    sleep 0.2
  done
  cat "$tmp/prom-check"
}

# success: 6 s at 0.5 s a sample; the Prometheus files read while it runs
mkdir "$tmp/prom"
rc=0
vrun -N 1 --bind-to none --monitor=0.5 --monitor-out "$tmp/mon" --monitor-prom "$tmp/prom" \
  "$tmp/$uniq-job" 6 >"$tmp/out" 2>"$tmp/out.err" &
job=$!
prom_check "$tmp/prom" vnode0=0 vnode1=1 vnode2=2 || prom_bad=1
wait $job || rc=$?
[ $rc = 0 ] || fail_run "weftrun --monitor exited $rc" "$tmp/out"
[ -z "${prom_bad:-}" ] || fail "Prometheus files"
[ -z "$(ls -A "$tmp/prom")" ] || { ls -la "$tmp/prom"; fail "Prometheus files left after the job"; }
echo "ok Prometheus files gone after the job"
/usr/bin/python3 - "$tmp/mon/timeline.jsonl" >"$tmp/check" 2>&1 <<'EOP' || { cat "$tmp/check" "$tmp/out.err"; fail "timeline"; }
import json, sys
want = {"t", "rank", "host", "seq", "span", "cpu", "cpu_time", "rss", "threads", "procs"}
seqs, spin, slow = {}, [], []
for n, line in enumerate(open(sys.argv[1]), 1):
    r = json.loads(line)
    missing = want - set(r)
    if missing:
        sys.exit("line %d lacks %s: %s" % (n, sorted(missing), line))
    if r["host"] != "vnode%d" % r["rank"]:
        sys.exit("line %d: rank %d on %s" % (n, r["rank"], r["host"]))
    if r["cpu"] < 0 or r["rss"] <= 0 or r["threads"] < 1 or r["procs"] < 1 or r["span"] <= 0:
        sys.exit("line %d: impossible figures: %s" % (n, line))
    if "nic" in r and not ("nic_tx" in r and "nic_rx" in r):
        sys.exit("line %d: a NIC without its rates: %s" % (n, line))
    seqs.setdefault(r["rank"], []).append(r["seq"])
    (slow if r["rank"] == 1 else spin).append(r["cpu"])
if sorted(seqs) != [0, 1, 2]:
    sys.exit("ranks sampled: %s" % sorted(seqs))
for rank, s in seqs.items():
    if s != list(range(1, len(s) + 1)) or len(s) < 6:
        sys.exit("rank %d: samples %s (one per sample, at least 6 in 6 s)" % (rank, s))
spin.sort()
print("samples %s; spinners' median CPU %.2f, sleeper's max %.2f" %
      ({r: len(s) for r, s in seqs.items()}, spin[len(spin) // 2], max(slow)))
if max(slow) > 0.1:
    sys.exit("the sleeping rank used %.2f of a core" % max(slow))
EOP
cat "$tmp/check"
# the picture: one line per rank in each chart, named
n=$(grep -c '<polyline ' "$tmp/mon/timeline.html" || true)
[ "$n" = 6 ] && grep -q '<title>rank 1 (vnode1)</title>' "$tmp/mon/timeline.html" ||
  fail_run "timeline.html: $n lines" "$tmp/mon/timeline.html"
grep -q '^weftrun: 3 ranks on 3 hosts started in [0-9.]* s$' "$tmp/out.err" || fail_run "no launch line" "$tmp/out"
grep -q '^weftrun: ran [0-9.]* s; exit by host: vnode0 0, vnode1 0, vnode2 0$' "$tmp/out.err" ||
  fail_run "no closing line" "$tmp/out"
grep -q '^weftrun: CPU time: most rank [02] (vnode[02]) [0-9.]* s, least rank 1 (vnode1) [0-9.]* s$' \
  "$tmp/out.err" || fail_run "CPU time line" "$tmp/out"
grep -q '^weftrun: peak memory: rank 0 [0-9.]* MiB, rank 1 [0-9.]* MiB, rank 2 [0-9.]* MiB$' \
  "$tmp/out.err" || fail_run "peak memory line" "$tmp/out"
# the straggler: rank 1 by name, and no other rank; on a machine too loaded for
# the spinners to reach a fifth of a core the rule (rightly) has no verdict
n=$(grep -c '^weftrun: straggler: ' "$tmp/out.err" || true)
if grep -q '^weftrun: straggler: rank 1 on vnode1: CPU 0% for the last 3 samples' "$tmp/out.err" &&
   [ "$n" = 1 ]; then
  echo "ok straggler rank 1 on vnode1 named"
  # the picture marks the stragglers the live line named, those only (one rule)
  grep -q "Straggler: rank 1 (vnode1), its CPU below half its peers' median for 3 samples in a row, 0% on average" \
    "$tmp/mon/timeline.html" || fail_run "the picture does not name rank 1" "$tmp/mon/timeline.html"
  [ "$(grep -c 'Straggler: ' "$tmp/mon/timeline.html")" = 1 ] ||
    fail_run "the picture names other stragglers" "$tmp/mon/timeline.html"
  echo "ok the picture names rank 1, as the live line did"
elif [ "$n" = 0 ] && grep -q "median CPU 0\.[01]" "$tmp/check"; then
  echo "# no straggler verdict: the spinners got under a fifth of a core (machine loaded)"
  ! grep -q 'Straggler: ' "$tmp/mon/timeline.html" ||
    fail_run "the picture names a straggler the live line did not" "$tmp/mon/timeline.html"
else
  fail_run "straggler lines: $n" "$tmp/out"
fi
echo "ok timeline, launch line, closing figures"

# one file per host with two ranks each; rank 0 (its host's lowest, the file's
# writer) ends first: vnode0's file stays, with rank 1 alone; all go at the end
cat >"$tmp/$uniq-wait" <<'EOS'
#!/bin/sh
# rank 0 ends when $1/stop0 appears, the others when $1/stop does (30 s at most)
f=$1/stop; [ "$RANK" != 0 ] || f=$1/stop0
i=0; while [ ! -e "$f" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
EOS
chmod +x "$tmp/$uniq-wait"
mkdir "$tmp/prom2"
rc=0
vrun -N 2 --bind-to none --monitor=0.3 --monitor-prom "$tmp/prom2" "$tmp/$uniq-wait" "$tmp" \
  >"$tmp/out" 2>"$tmp/out.err" &
job=$!
prom_check "$tmp/prom2" vnode0=0,1 vnode1=2,3 vnode2=4,5 || prom_bad=1
touch "$tmp/stop0"
# while rank 0 ends, vnode0's file never goes away, not even for a moment
i=0
while [ -z "${prom_bad:-}" ] && [ $i -lt 60 ]; do
  ls "$tmp/prom2" | grep -q '^weft-.*-vnode0\.prom$' || prom_bad=gone
  sleep 0.03
  i=$((i + 1))
done
[ -n "${prom_bad:-}" ] || prom_check "$tmp/prom2" vnode0=1 vnode1=2,3 vnode2=4,5 || prom_bad=2
touch "$tmp/stop"
wait $job || rc=$?
[ $rc = 0 ] || fail_run "weftrun -N 2 --monitor-prom exited $rc" "$tmp/out"
[ -z "${prom_bad:-}" ] || fail "Prometheus files of 2 ranks a host (check ${prom_bad:-})"
[ -z "$(ls -A "$tmp/prom2")" ] || { ls -la "$tmp/prom2"; fail "Prometheus files left after the job"; }
echo "ok a rank that ended first left its host's file to the other; all gone after the job"

# an existing timeline is never overwritten: refused before anything starts
rc=0
vrun -N 1 --monitor-out "$tmp/mon" "$tmp/$uniq-job" 1 >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 66 ] && grep -q "timeline.jsonl: File exists (a timeline is never overwritten" "$tmp/out.err" ||
  fail_run "existing timeline: exit $rc" "$tmp/out"
echo "ok existing timeline refused (66)"

# failure: rank 2 exits 3; the closing figures still come, vnode2's exit named
rc=0
mkdir "$tmp/prom3"
vrun -N 1 --bind-to none --monitor=0.5 --monitor-prom "$tmp/prom3" "$tmp/$uniq-job" 1 2 \
  >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 3 ] || fail_run "failing job exited $rc" "$tmp/out"
[ -z "$(ls -A "$tmp/prom3")" ] || { ls -la "$tmp/prom3"; fail "Prometheus files left after a failed job"; }
grep -q '^weftrun: job failed: rank 2 host vnode2 ' "$tmp/out.err" || fail_run "no summary line" "$tmp/out"
grep -q '^weftrun: ran [0-9.]* s; exit by host: .*vnode2 3 (rank 2)' "$tmp/out.err" ||
  fail_run "closing line on failure" "$tmp/out"
grep -q '^weftrun: peak memory: ' "$tmp/out.err" || fail_run "peak memory on failure" "$tmp/out"
echo "ok closing figures on failure"

# -q: no launch line, no figures (the summary line stays)
rc=0
vrun -q -N 1 --monitor=0.5 "$tmp/$uniq-job" 1 2 >"$tmp/out" 2>"$tmp/out.err" || rc=$?
[ $rc = 3 ] && grep -q '^weftrun: job failed: rank 2' "$tmp/out.err" &&
  ! grep -q '^weftrun: \(ran\|peak\|CPU time\|3 ranks\)' "$tmp/out.err" || fail_run "-q: exit $rc" "$tmp/out"
echo "ok -q"
nothing_left
