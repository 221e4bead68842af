# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the weft-bench tests: the program, how to start N ranks of it,
# and how to mask what changes from run to run (times, bandwidths, pids,
# hosts, versions) so that the rest can be compared with a golden file.
: "${WEFT_BUILDDIR:?run through make check}"
bench=$WEFT_BUILDDIR/src/weft-bench/weft-bench
MPIRUN=${MPIRUN:-mpirun}
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  echo "SKIP: $MPIRUN not found"
  exit 77
fi
unset WEFT_MACHINE_TYPE WEFT_BENCH_INJECT_ERROR WEFT_GPU WEFT_NIC NCCL_SOCKET_IFNAME

# run_np N OUTFILE ARGS...: weft-bench on N ranks, stdout to OUTFILE, stderr
# to OUTFILE.err; returns weft-bench's exit status (mpirun passes it on).
run_np()
{
  np=$1 out=$2
  shift 2
  timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np "$np" "$bench" "$@" >"$out" 2>"$out.err"
}

# The table with every measured number replaced by T and every float of the
# footer by F; rank lines keep their shape only.
mask()
{
  sed -E -e 's/^(# weft-bench [a-z_]+: weft ).*/\1VERSIONS/' \
      -e 's/^(#  Rank +[0-9]+ Pid) .*/\1 PID on HOST GPU GPU NIC NIC/' \
      -e 's/^(# [0-9]+ ranks? on [0-9]+ hosts?:).*/\1 HOSTS/' \
      -e '/^# (Avg|Peak)/s/[0-9]+\.[0-9]+/F/g' "$1" |
    awk '/^#/ { print; next }
         { $6 = $7 = $8 = "T"; if (NF > 9) { $10 = $11 = $12 = $13 = "T" } print }'
}

fail_run()
{
  echo "FAIL: $1"
  shift
  for f in "$@"; do
    echo "--- $f"; cat "$f"; echo "--- $f.err"; cat "$f.err"
  done
  exit 1
}
