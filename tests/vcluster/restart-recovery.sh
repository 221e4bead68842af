#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# By hand (root, namespaces): the time from a vnode's death to the job running
# again, weftrun --restarts against a shell loop around plain mpirun that does the
# same recovery (keep the hosts that still answer, rewrite the hostfile, start
# again). 4 vnodes, one rank each; vnode2 is killed 11 s after the 4 ranks run (past
# weftrun's fast-failure window, so no backoff). Prints one line per run:
#   restart-recovery.sh weftrun|loop RUNS      (from the build directory's top)
set -u
mode=${1:?weftrun or loop} runs=${2:-5}
top=$(cd "$(dirname "$0")/../.." && pwd)
vc=$top/contrib/vcluster/weft-vcluster
weftrun=${WEFTRUN:-$PWD/src/weftrun/weftrun}
prefix=rsrec-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/restart-recovery.XXXXXX")
trap '"$vc" --prefix "$prefix" down >/dev/null 2>&1; rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CK="$work/ck"
cat >"$work/prog.sh" <<'PROG'
#!/bin/sh
a=${WEFT_RESTART_COUNT:-$ATTEMPT}
r=${RANK:-$OMPI_COMM_WORLD_RANK}
echo "start attempt $a rank $r at $(date +%s.%N)"
touch "$CK/attempt$a.rank$r"
[ "$a" = 0 ] && exec sleep 60
sleep 2
PROG
cat >"$work/loop.sh" <<'LOOP'
#!/bin/sh
hf=$1; shift
attempt=0
while :; do
  mpirun --hostfile "$hf" -N 1 -x ATTEMPT=$attempt -x CK "$@"
  rc=$?
  [ $rc -eq 0 ] && break
  attempt=$((attempt + 1))
  [ $attempt -le 2 ] || break
  : >"$hf.new"
  for h in $(awk '{print $1}' "$hf"); do
    timeout 2 "$WEFT_VCLUSTER_RSH" "$h" true >/dev/null 2>&1 && grep "^$h " "$hf" >>"$hf.new"
  done
  mv "$hf.new" "$hf"
done
exit $rc
LOOP
chmod +x "$work/prog.sh" "$work/loop.sh"
for i in $(seq "$runs"); do
  "$vc" --prefix "$prefix" down >/dev/null 2>&1
  hostfile=$("$vc" --prefix "$prefix" up 4 2>/dev/null) || { echo "cannot bring the cluster up"; exit 1; }
  rm -rf "$CK"
  mkdir -p "$CK"
  (
    while [ "$(ls "$CK" | grep -c '^attempt0')" -lt 4 ]; do sleep 0.1; done
    sleep 11
    date +%s.%N >"$work/killed"
    "$vc" --prefix "$prefix" kill vnode2 >/dev/null 2>&1
  ) &
  if [ "$mode" = weftrun ]; then
    "$vc" --prefix "$prefix" run -- "$weftrun" -q --restarts 2 --min-hosts 2 --checkpoint-dir "$CK" \
      -x CK -N 1 "$work/prog.sh" >"$work/out" 2>"$work/err"
  else
    cp "$hostfile" "$work/hosts"
    "$vc" --prefix "$prefix" run -- env OMPI_MCA_orte_default_hostfile=none sh "$work/loop.sh" \
      "$work/hosts" "$work/prog.sh" >"$work/out" 2>"$work/err"
  fi
  rc=$?
  wait
  s=$(sed -n 's/^start attempt 1 rank .* at \([0-9.]*\)$/\1/p' "$work/out" | sort -n | tail -n 1)
  n=$(grep -c '^start attempt 1 ' "$work/out")
  awk -v k="$(cat "$work/killed")" -v s="${s:-0}" -v rc=$rc -v n="$n" -v m="$mode" \
    'BEGIN { printf "%s: exit %d, %d ranks restarted, from the kill to the last running: %.2f s\n", m, rc, n, s - k }'
done
