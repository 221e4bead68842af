#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --engine srun on the Slurm virtual cluster: every rank started by
# "srun --mpi=pmix" where the plan puts it, with its rank from srun's
# variables, mpi-hello's all-reduce across 3 nodes (no mpirun, no ssh); a
# failed rank ends the step with its code, --timeout with 124; --tag-output
# and --output-filename as with mpirun; what srun cannot do, and srun outside
# an allocation, refused in one line; nothing left, no Slurm job left.
# Open MPI 4.1.4's TCP transport crashes in MPI_Init in a few of 100 direct
# launches on a loaded machine (shared/reference/slurm.md): a crash is retried
# once, and said so; a crash that repeats fails the test.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
. "$WEFT_TOPDIR/tests/vcluster/weftrun-slurm-lib.sh"
slurm_up
on vnode0 srun --mpi=list 2>&1 | grep -q pmix || skip "this Slurm has no PMIx plugin (srun --mpi=list)"

cat >"$work/job.sh" <<JOB
#!/bin/sh
"$weftrun" --engine srun --dry-run "$work/$uniq-check" || exit \$?
"$weftrun" --engine srun "$hello" || exit \$?
"$weftrun" --engine srun "$work/$uniq-check"
JOB
chmod +x "$work/job.sh"
launch() {
  rc=0
  on vnode0 salloc -N3 -n6 "$work/job.sh" >"$work/srun.out" 2>&1 || rc=$?
}
crashed() {
  [ $rc -ne 0 ] && grep -Eq 'Segmentation fault|signal 11|Signal: Segmentation|core dumped' "$work/srun.out"
}
launch
if crashed; then
  echo "NOTE: a direct launch crashed (exit $rc; Open MPI 4.1.4's known TCP crash, see slurm.md); retrying once"
  grep -E 'Segmentation|signal 11' "$work/srun.out" | head -3
  launch
  crashed && { cat "$work/srun.out"; fail "weftrun --engine srun crashed twice in a row (exit $rc): not the rare known crash"; }
fi
[ $rc -eq 0 ] || { cat "$work/srun.out"; fail "salloc -N3 -n6 weftrun --engine srun exited $rc"; }
grep -q '^# engine: srun (--engine srun)$' "$work/srun.out" &&
  grep -q '^# command: [^ ]*srun .*--distribution=arbitrary .*--mpi=pmix [^ ]*weft-rank ' "$work/srun.out" ||
  { cat "$work/srun.out"; fail "--dry-run does not show the srun engine and its command"; }
check_hello "$work/srun.out" "weftrun --engine srun mpi-hello"
check_placed "$work/srun.out" "weftrun --engine srun"
echo "ok salloc -N3 -n6 weftrun --engine srun: all-reduce over 3 nodes, ranks as planned"

check_failure srun

# --timeout: 124 and the step ended
rc=0
on vnode0 salloc -N3 -n6 "$weftrun" --engine srun --timeout 2 "$tmp/$uniq-sleep" 60 >"$work/timeout.out" 2>&1 || rc=$?
# the summary counts the ranks still running, then one line each (as under mpirun)
[ $rc -eq 124 ] &&
  grep -q '^weftrun: job ended: --timeout 2 s expired; 6 of 6 ranks were still running (exit 124)$' \
    "$work/timeout.out" && [ "$(grep -c '^weftrun:   rank [0-5] host vnode[0-2] ' "$work/timeout.out")" -eq 6 ] ||
  { cat "$work/timeout.out"; fail "--engine srun --timeout 2: exit $rc, not 124 with its line"; }
nothing_left || fail "processes left after --timeout"
no_job_left "--timeout"
echo "ok --engine srun --timeout: 124, nothing left"

# --tag-output (srun's task labels) and --output-filename (Open MPI's layout, DIR/1/rank.N)
rc=0
on vnode0 salloc -N3 -n6 sh -c "\"$weftrun\" --engine srun --tag-output sh -c 'echo out \$RANK' &&
  \"$weftrun\" --engine srun --output-filename \"$work/of\" sh -c 'echo out \$RANK; echo err \$RANK >&2'" \
  >"$work/io.out" 2>&1 || rc=$?
[ $rc -eq 0 ] || { cat "$work/io.out"; fail "--tag-output / --output-filename: exit $rc"; }
for r in 0 1 2 3 4 5; do
  grep -q "^ *$r: out $r\$" "$work/io.out" || { cat "$work/io.out"; fail "--tag-output: no line '$r: out $r'"; }
  [ "$(cat "$work/of/1/rank.$r/stdout")" = "out $r" ] && [ "$(cat "$work/of/1/rank.$r/stderr")" = "err $r" ] ||
    fail "--output-filename: $work/of/1/rank.$r/stdout and stderr do not hold rank $r's output"
done
echo "ok --engine srun --tag-output and --output-filename"

# refused in one line, exit 2, nothing started
expect_refusal() { # PATTERN WHERE ARGS...
  _p=$1 _w=$2
  shift 2
  rc=0
  if [ "$_w" = salloc ]; then
    on vnode0 salloc -N1 "$weftrun" --engine srun "$@" "$work/$uniq-check" >"$work/ref.out" 2>&1 || rc=$?
  else
    on vnode0 "$weftrun" --engine srun "$@" "$work/$uniq-check" >"$work/ref.out" 2>&1 || rc=$?
  fi
  [ $rc -eq 2 ] && grep -q "^weftrun: .*$_p" "$work/ref.out" && ! grep -q '^R ' "$work/ref.out" ||
    { cat "$work/ref.out"; fail "--engine srun $*: exit $rc, not 2 with '$_p'"; }
}
expect_refusal '--timestamp-output: srun cannot stamp' salloc --timestamp-output
expect_refusal '--display-map is an option of Open MPI' salloc --display-map
expect_refusal "host 'vnode2' (from -H)" salloc -H vnode2
expect_refusal '--engine srun starts the ranks inside a Slurm allocation' none
no_job_left "the refusals"
echo "ok --engine srun: --timestamp-output, Open MPI's options, hosts outside the allocation, no allocation: refused"
