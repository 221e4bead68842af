#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun hands its own host's topology to the ranks on that host as an XML
# file in a private directory under $TMPDIR: the ranks load it (and are still
# really bound: Cpus_allowed_list is what they report), and the directory is
# gone after a normal exit, a failing rank, --timeout and SIGTERM to weftrun.
# hwloc's plugins are kept out of that load without the program seeing it.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs  # this host alone, whatever allocation or default hostfile the machine has
fail=0
s="$tmp/$uniq-sleep"
TMPDIR="$tmp/t"
export TMPDIR
mkdir "$TMPDIR"

left() { # what the last job left under $TMPDIR
  if [ -n "$(ls -A "$TMPDIR")" ]; then
    echo "FAIL: $1: left under \$TMPDIR: $(ls -A "$TMPDIR")"
    fail=1
  else
    echo "ok $1: nothing left"
  fi
  nothing_left || fail=1
}

# the ranks load the file (WEFT_VERBOSE=topo names it) while it exists, and are bound
cat >"$tmp/$uniq-check" <<'EOS'
#!/bin/sh
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "R $RANK ${WEFT_CPUS:-none} $cpus $(ls "$TMPDIR"/weft-*/topology.xml 2>/dev/null | wc -l)" \
     "${HWLOC_PLUGINS_PATH:-unset}"
EOS
chmod +x "$tmp/$uniq-check"
WEFT_VERBOSE=topo timeout 60 "$weftrun" -np 2 --oversubscribe --bind-to core --report-bindings \
  "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: run:"; cat "$tmp/err"; fail=1; }
n=$(grep -c "loaded $TMPDIR/weft-[0-9]*-[^/]*/topology.xml" "$tmp/err" || true)
[ "$n" = 2 ] || { echo "FAIL: $n ranks loaded weftrun's XML (want 2):"; cat "$tmp/err"; fail=1; }
[ "$(grep -c '\] MCW rank [01] bound to ' "$tmp/err" || true)" = 2 ] ||
  { echo "FAIL: ranks not reported bound (Open MPI binds them on this host without GPUs):"
    cat "$tmp/err"; fail=1; }
awk '/^R / { n++; if ($3 != $4 || $5 != 1 || $6 != "unset") { print "bad: " $0; bad = 1 } }
     END { exit bad || n != 2 }' "$tmp/out" ||
  { echo "FAIL: binding differs from WEFT_CPUS, no XML during the run or weft's hwloc setting leaked" \
         "(R RANK WEFT_CPUS actual nxml HWLOC_PLUGINS_PATH):"
    cat "$tmp/out"; fail=1; }
left "normal exit"

# a --topology file stays in charge: no XML of this host is written
timeout 60 "$weftrun" -np 2 --oversubscribe --topology "$WEFT_TOPDIR/share/weft/topologies/a3-highgpu-8g.xml" \
  "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: --topology run:"; cat "$tmp/err"; fail=1; }
awk '/^R / { if ($5 != 0) bad = 1 } END { exit bad }' "$tmp/out" ||
  { echo "FAIL: an XML was written with --topology:"; cat "$tmp/out"; fail=1; }
left "--topology"

# weft-rank probes its host itself when the XML is not there or is another host's
# (a $TMPDIR shared between hosts); the topology cache, which would answer for the
# probe, is off here (test-weftrun-topocache.sh has it)
rank="$WEFT_BUILDDIR/src/weft-rank/weft-rank"
lstopo-no-graphics --of xml -f "$tmp/mine.xml" 2>/dev/null && sed 's/name="HostName" value="[^"]*"/name="HostName" value="not-this-host"/' "$tmp/mine.xml" >"$tmp/other.xml" ||
  { echo "SKIP part: lstopo-no-graphics cannot write XML"; cp /dev/null "$tmp/other.xml"; }
for xml in "$tmp/other.xml" "$tmp/none.xml"; do
  if ! OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
       WEFT_TOPOLOGY_CACHE=0 WEFT_VERBOSE=topo timeout 30 "$rank" --layout 1 --host-xml "$xml" -- true \
       >"$tmp/out" 2>"$tmp/err" || ! grep -q "topo: loaded live" "$tmp/err"; then
    echo "FAIL: weft-rank --host-xml $xml: no live probe instead:"; cat "$tmp/err"; fail=1
  else
    echo "ok --host-xml $(basename "$xml"): probed live"
  fi
done

set +e
timeout 60 "$weftrun" -np 2 --oversubscribe sh -c "if [ \$RANK = 1 ]; then exit 3; fi; exec $s 30" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 3 ] || { echo "FAIL: failing rank: exit $rc:"; cat "$tmp/err"; fail=1; }
left "failing rank"

set +e
timeout 60 "$weftrun" -np 2 --oversubscribe --timeout 1 "$s" 30 >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 124 ] || { echo "FAIL: --timeout: exit $rc:"; cat "$tmp/err"; fail=1; }
left "--timeout"

# SIGTERM once the ranks run, to weftrun alone: --foreground, or timeout would also
# signal its process group and weftrun would take the second SIGTERM as "kill now"
timeout --foreground 60 "$weftrun" -np 2 --oversubscribe "$s" 30 >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ "$(pgrep -f "^$s 30" | wc -l)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
set +e
wait $pid
rc=$?
set -e
[ $rc = 143 ] || { echo "FAIL: SIGTERM: exit $rc:"; cat "$tmp/err"; fail=1; }
left "SIGTERM"
exit $fail
