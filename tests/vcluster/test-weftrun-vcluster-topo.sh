#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# mpirun reads weftrun's topology of its own host across vnodes too (HWLOC_XMLFILE in
# its environment: no second probe), because the daemons on the others start through
# an rsh agent, with a fresh environment; each rank still runs on its own vnode, with
# none of hwloc's variables. An agent called ssh that passes mpirun's environment on
# (as srun does) makes a daemon there read this host's topology for its own: weft-rank
# on that host refuses to start the rank, naming the daemon's host, and the job ends
# with 70, nothing left.
# Exit 77 when namespaces cannot be made here.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
unique_name
fail=0
vc_up 3 >/dev/null
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- "$@"; }
cat >"$tmp/$uniq-where" <<'EOS'
#!/bin/sh
echo "R $RANK $(hostname) ${HWLOC_XMLFILE:-none} ${HWLOC_THISSYSTEM:-none}"
EOS
chmod +x "$tmp/$uniq-where"

if vrun "$weftrun" -v -N 1 "$tmp/$uniq-where" >"$tmp/out" 2>"$tmp/err"; then
  printf '%s\n' "R 0 vnode0 none none" "R 1 vnode1 none none" "R 2 vnode2 none none" >"$tmp/want"
  if ! grep -q 'environment HWLOC_XMLFILE=[^ ]*/weft-[0-9]*-[^/ ]*/topology.xml' "$tmp/err"; then
    echo "FAIL: mpirun was not given weftrun's topology:"; cat "$tmp/err"; fail=1
  elif ! grep '^R ' "$tmp/out" | sort -n -k2 | diff "$tmp/want" - ; then
    echo "FAIL: ranks (want one per vnode, no hwloc variable):"; cat "$tmp/out"; fail=1
  else
    echo "ok -N 1 on 3 vnodes: mpirun read weftrun's topology, ranks on their own vnodes"
  fi
else
  echo "FAIL: -N 1 on 3 vnodes:"; cat "$tmp/err"; fail=1
fi
nothing_left || fail=1

# an "ssh" that passes hwloc's variables on to the daemons' command
mkdir "$tmp/leak"
cat >"$tmp/leak/ssh" <<'EOS'
#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
exec "$WEFT_VCLUSTER_RSH" "$host" "HWLOC_XMLFILE=${HWLOC_XMLFILE:-} HWLOC_THISSYSTEM=${HWLOC_THISSYSTEM:-} $*"
EOS
chmod +x "$tmp/leak/ssh"
set +e
vrun env OMPI_MCA_plm_rsh_agent="$tmp/leak/ssh" "$weftrun" -N 1 "$tmp/$uniq-where" >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
if [ $rc = 70 ] && grep -q "^weftrun: job failed: rank [12] host vnode[12] gpu none: mpirun's daemon on vnode[12] read weftrun's topology of vnode0 (HWLOC_XMLFILE reached it" "$tmp/err"; then
  echo "ok a launcher that passes HWLOC_XMLFILE on: 70, naming the daemon's host"
else
  echo "FAIL: a launcher that passes HWLOC_XMLFILE on: exit $rc:"; cat "$tmp/out" "$tmp/err"; fail=1
fi
nothing_left || fail=1
exit $fail
