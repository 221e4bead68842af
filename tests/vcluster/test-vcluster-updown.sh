#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# up 4 makes 4 nodes with their own hostnames and addresses and leaves the
# root namespace's network alone; up again changes nothing; down leaves no
# namespace, process or state behind, and is safe twice.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_root

root_links_before=$(ip -o link show | cut -d: -f2 | sort | tr -d ' ' | tr '\n' ' ')
t0=$(date +%s%N)
vc_up 4
t1=$(date +%s%N)
echo "up 4: $(( (t1 - t0) / 1000000 )) ms"

n=$(ip netns list | cut -d' ' -f1 | grep -c "^$prefix-")
[ "$n" -eq 5 ] || fail "expected 5 namespaces ($prefix-br, $prefix-vnode0..3), found $n"
[ "$(wc -l <"$hostfile")" -eq 4 ] || fail "hostfile $hostfile should have 4 lines"
grep -qx 'vnode3 slots=2' "$hostfile" || fail "hostfile lacks 'vnode3 slots=2': $(cat "$hostfile")"
root_links_after=$(ip -o link show | cut -d: -f2 | sort | tr -d ' ' | tr '\n' ' ')
[ "$root_links_before" = "$root_links_after" ] ||
  fail "the root namespace's links changed: '$root_links_before' -> '$root_links_after'"
[ "$(hostname)" != vnode0 ] || fail "the root namespace's hostname changed"

for k in 0 1 2 3; do
  h=$("$vc" --prefix "$prefix" exec vnode$k hostname)
  [ "$h" = "vnode$k" ] || fail "vnode$k calls itself '$h'"
done
# Every node resolves every other node to its own address.
a=$("$vc" --prefix "$prefix" exec vnode2 sh -c 'getent hosts vnode1' | cut -d' ' -f1)
b=$("$vc" --prefix "$prefix" exec vnode1 sh -c "ip -4 -o addr show dev eth0" | awk '{ sub(/\/.*/, "", $4); print $4 }')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "vnode2 resolves vnode1 to '$a', but vnode1 has '$b'"
case "$a" in 198.18.*|198.19.*) ;; *) fail "address $a is outside 198.18.0.0/15" ;; esac
# Nodes reach each other over the bridge (bash's /dev/tcp is not needed: a
# listening socket check through /proc would be more code than this).
"$vc" --prefix "$prefix" exec vnode3 sh -c "ip route get $a" | grep -q 'dev eth0' ||
  fail "vnode3 has no route to vnode1 ($a) over eth0"

# A second cluster beside it: its own namespaces, subnet and hostfile; its
# down leaves the first one alone.
at_exit '"$vc" --prefix "$prefix-b" down >/dev/null 2>&1'
hfb=$("$vc" --prefix "$prefix-b" up 2 2>/dev/null) || fail "a second cluster did not come up"
[ "$hfb" != "$hostfile" ] || fail "two clusters share the hostfile $hostfile"
sa=$("$vc" --prefix "$prefix" env | sed -n "s/^export WEFT_VCLUSTER_SUBNET='\(.*\)'/\1/p")
sb=$("$vc" --prefix "$prefix-b" env | sed -n "s/^export WEFT_VCLUSTER_SUBNET='\(.*\)'/\1/p")
[ -n "$sa" ] && [ "$sa" != "$sb" ] || fail "two clusters on the subnets '$sa' and '$sb'"
[ "$("$vc" --prefix "$prefix-b" exec vnode1 hostname)" = vnode1 ] || fail "the second cluster's vnode1 is not vnode1"
"$vc" --prefix "$prefix-b" down 2>/dev/null || fail "down of the second cluster failed"
n=$(ip netns list | cut -d' ' -f1 | grep -c "^$prefix-")
[ "$n" -eq 5 ] || fail "down of $prefix-b changed $prefix: $n namespaces left, not 5"

# up again: the same hostfile, the same node processes.
pids1=$(for k in 0 1 2 3; do ip netns pids "$prefix-vnode$k"; done | sort | tr '\n' ' ')
hf2=$("$vc" --prefix "$prefix" up 4 2>/dev/null) || fail "a second up 4 failed"
[ "$hf2" = "$hostfile" ] || fail "a second up printed '$hf2', not '$hostfile'"
pids2=$(for k in 0 1 2 3; do ip netns pids "$prefix-vnode$k"; done | sort | tr '\n' ' ')
[ "$pids1" = "$pids2" ] || fail "a second up changed the node processes: '$pids1' -> '$pids2'"
rc=0; "$vc" --prefix "$prefix" up 3 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "up 3 on a 4-node cluster should exit 2, not $rc"

# A process left running on a node is ended by down.
"$vc" --prefix "$prefix" exec vnode1 sh -c 'sleep 300 </dev/null >/dev/null 2>&1 &'
pids3=$(for k in 0 1 2 3; do ip netns pids "$prefix-vnode$k"; done | sort | tr '\n' ' ')
[ "$(echo $pids3 | wc -w)" -ge 5 ] || fail "expected 4 node processes and one sleep 300, found: $pids3"
state=$(dirname "$hostfile")
t0=$(date +%s%N)
"$vc" --prefix "$prefix" down
t1=$(date +%s%N)
echo "down: $(( (t1 - t0) / 1000000 )) ms"
left=$(ip netns list | cut -d' ' -f1 | grep "^$prefix-" || true)
[ -z "$left" ] || fail "namespaces left after down: $left"
# Killed processes are reparented to init, which may reap them a little
# later: a zombie is dead.
for p in $pids3; do
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$p/status 2>/dev/null || true)
  [ -z "$st" ] || [ "$st" = Z ] || fail "node process $p survived down (state $st)"
done
[ ! -e "$state" ] || fail "state directory $state left after down"
"$vc" --prefix "$prefix" down 2>/dev/null || fail "a second down failed"
echo "ok"
