# SPDX-License-Identifier: BSD-3-Clause
# Shared by the weftrun launch tests (sourced): paths, a scratch directory, a
# program with a name unique to the test (so pgrep finds only its processes),
# and the check that nothing of it is left running.
: "${WEFT_BUILDDIR:?}" "${WEFT_TOPDIR:?}"
weftrun="$WEFT_BUILDDIR/src/weftrun/weftrun"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
# this host alone, whatever allocation or default hostfile the machine has
unset SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE OMPI_MCA_orte_default_hostfile PRTE_MCA_prte_default_hostfile
tmp=$(mktemp -d)
uniq="wft$$x$(date +%N)"
# a copy of sleep under a unique name
cp "$(command -v sleep)" "$tmp/$uniq-sleep"
cleanup() {
  pkill -KILL -f "$uniq" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# left_running: 0 when nothing of this test is running (waits up to 5 s for teardown)
nothing_left() {
  i=0
  while pgrep -f "$uniq" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -ge 50 ]; then
      echo "FAIL: processes left running:"
      pgrep -af "$uniq"
      return 1
    fi
    sleep 0.1
  done
  return 0
}

now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{ printf "%d", $2 - $1 }'; }
