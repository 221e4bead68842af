#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Local launches of -np 2, 3 and 8 (oversubscribed): every rank gets the
# torchrun and weft variables right, its actual binding (Cpus_allowed_list,
# Open MPI's on a host without GPUs) is the one WEFT_CPUS says, and a variable
# set with -x is never overwritten.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs  # this host alone, whatever allocation or default hostfile the machine has
fail=0
cat >"$tmp/$uniq-check" <<'EOS'
#!/bin/sh
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "R $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $MASTER_ADDR $MASTER_PORT" \
     "$OMP_NUM_THREADS ${WEFT_CPUS:-none} $cpus ${CUDA_DEVICE_ORDER:-unset} ${MY_VAR:-unset}" \
     "${OMPI_COMM_WORLD_RANK:-}"
EOS
chmod +x "$tmp/$uniq-check"

# (binding more ranks than cores to cores needs Open MPI's overload-allowed, as with mpirun)
for np in 2 3 8; do
  timeout 60 "$weftrun" -np $np --oversubscribe --bind-to core:overload-allowed "$tmp/$uniq-check" \
    >"$tmp/out" 2>"$tmp/err" || {
    echo "FAIL: -np $np exited $?:"; cat "$tmp/err"; fail=1; continue; }
  n=$(grep -c '^R ' "$tmp/out" || true)
  [ "$n" = "$np" ] || { echo "FAIL: -np $np: $n lines"; cat "$tmp/out" "$tmp/err"; fail=1; }
  ranks=$(awk '/^R /{print $2}' "$tmp/out" | sort -n | tr '\n' ' ')
  want=$(seq 0 $((np - 1)) | tr '\n' ' ')
  [ "$ranks" = "$want" ] || { echo "FAIL: -np $np: ranks '$ranks'"; fail=1; }
  # RANK = OMPI rank, WORLD_SIZE = np, one host: LOCAL_RANK = RANK, NODE_RANK 0,
  # MASTER_ADDR loopback, OMP_NUM_THREADS >= 1, actual binding = WEFT_CPUS
  if ! awk -v np=$np '/^R / {
        if ($2 != $14 || $3 != np || $4 != $2 || $5 != np || $6 != 0 || $7 != "127.0.0.1" ||
            $8 < 1024 || $9 < 1 || $10 != $11 || $12 != "PCI_BUS_ID" || $13 != "unset") { print "bad: " $0; bad = 1 } }
        END { exit bad }' "$tmp/out"; then
    echo "FAIL: -np $np: wrong rank environment (R RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE" \
         "NODE_RANK MASTER_ADDR MASTER_PORT OMP WEFT_CPUS actual CUDA_DEVICE_ORDER MY_VAR OMPI_RANK)"
    fail=1
  fi
  ports=$(awk '/^R /{print $8}' "$tmp/out" | sort -u | wc -l)
  [ "$ports" = 1 ] || { echo "FAIL: -np $np: ranks disagree on MASTER_PORT"; fail=1; }
  echo "ok -np $np"
done

# slots given as mpirun takes them (-H host:N) may exceed the cores: as with mpirun,
# no --oversubscribe is needed
timeout 60 "$weftrun" -np 4 -H "$(hostname):4" "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err" &&
  [ "$(grep -c '^R ' "$tmp/out")" = 4 ] || { echo "FAIL: -H $(hostname):4:"; cat "$tmp/out" "$tmp/err"; fail=1; }
echo "ok -H host:4"

# nothing the user types reaches a shell: arguments arrive as they were given
timeout 60 "$weftrun" -np 1 printf '%s|' '$(touch '"$tmp/pwned"')' 'a b' ';' >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: quoting run:"; cat "$tmp/err"; fail=1; }
[ "$(cat "$tmp/out")" = "\$(touch $tmp/pwned)|a b|;|" ] && [ ! -e "$tmp/pwned" ] ||
  { echo "FAIL: arguments changed on the way: $(cat "$tmp/out")"; fail=1; }
echo "ok arguments"

# the user's variables win: -x and the launching environment
OMP_NUM_THREADS=7 timeout 60 "$weftrun" -np 2 --oversubscribe -x MY_VAR=hello -x RANK=99 \
  "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: -x run:"; cat "$tmp/err"; fail=1; }
awk '/^R / { if ($2 != 99 || $9 != 7 || $13 != "hello") { print "bad: " $0; bad = 1 } }
     END { exit bad }' "$tmp/out" || { echo "FAIL: a user's variable was overwritten"; fail=1; }
echo "ok -x"

# --report-bindings on a host without GPUs: Open MPI's own line per rank, the binding it
# applied (no weft line: there is no GPU to tell of)
timeout 60 "$weftrun" -np 2 --oversubscribe --report-bindings "$tmp/$uniq-check" >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: --report-bindings run:"; cat "$tmp/err"; fail=1; }
n=$(grep -c '^\[[^]]*:[0-9]*\] MCW rank [01] \(bound to\|is not bound\)' "$tmp/err" || true)
[ "$n" = 2 ] && ! grep -q '^\[weft\]' "$tmp/err" ||
  { echo "FAIL: --report-bindings gave $n lines of Open MPI's:"; cat "$tmp/err"; fail=1; }
echo "ok --report-bindings"
# a topology file that is not this machine: each rank's placement is the one
# weftrun --dry-run plans, exported (device LOCAL_RANK is the rank's GPU) and
# reported, but not bound
a3="$topos/a3-highgpu-8g.xml"
timeout 60 "$weftrun" -np 2 --oversubscribe --report-bindings --topology "$a3" \
  sh -c 'echo G $RANK $CUDA_DEVICE_ORDER $CUDA_VISIBLE_DEVICES $WEFT_GPU $WEFT_CPUS' \
  >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: --topology run:"; cat "$tmp/err"; fail=1; }
timeout 60 "$weftrun" -np 2 --oversubscribe --dry-run --topology "$a3" | grep -v '^#' | sort >"$tmp/plan"
sed -n 's/^\[weft\] \(.*\) (not bound: topology from .*)$/\1/p' "$tmp/err" | sort >"$tmp/agent"
diff "$tmp/plan" "$tmp/agent" >/dev/null && [ "$(wc -l <"$tmp/plan")" = 2 ] ||
  { echo "FAIL: --topology: agent and plan differ:"; cat "$tmp/plan" "$tmp/err"; fail=1; }
for r in 0 1; do
  gpu=$(sed -n "s/.* rank $r (local $r): GPU \([0-9]*\) .*/\1/p" "$tmp/plan")
  cpus=$(sed -n "s/.* rank $r (local $r): .* cores \([0-9,-]*\) .*/\1/p" "$tmp/plan")
  # device LOCAL_RANK of CUDA_VISIBLE_DEVICES is the rank's GPU
  awk -v r=$r -v g="$gpu" -v c="$cpus" '$1 == "G" && $2 == r { split($4, d, ",");
      ok = $3 == "PCI_BUS_ID" && d[r + 1] == g && length(d) == 8 && $5 == g && $6 == c }
      END { exit !ok }' "$tmp/out" ||
    { echo "FAIL: --topology: rank $r environment (want GPU $gpu, cpus $cpus):"; cat "$tmp/out"; fail=1; }
done
echo "ok --topology"
nothing_left || fail=1
exit $fail
