# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the example tests: how to start N ranks of a program here, and
# where the examples are. Sets $launch (the launcher's name, for messages).
#   run_np N OUTFILE PROGRAM [ARGS...]   stdout to OUTFILE, stderr to OUTFILE.err;
#                                        returns the launcher's exit status
#   run_weftrun N OUTFILE PROGRAM [ARGS...]  the same through weftrun (77 when
#                                        weftrun is not built)
: "${WEFT_BUILDDIR:?run through make check}"
examples=$WEFT_BUILDDIR/examples
MPIRUN=${MPIRUN:-mpirun}
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  echo "SKIP: $MPIRUN not found"
  exit 77
fi
launch=mpirun

run_np()
{
  np=$1 out=$2
  shift 2
  timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np "$np" "$@" >"$out" 2>"$out.err"
}

# Oversubscribed ranks must yield the core while they wait: mpirun sees the
# oversubscription itself, weftrun's mpirun gets exact slot counts, so say it.
run_weftrun()
{
  np=$1 out=$2
  shift 2
  [ -x "$WEFT_BUILDDIR/src/weftrun/weftrun" ] || return 77
  timeout 60 "$WEFT_BUILDDIR/src/weftrun/weftrun" --oversubscribe --bind-to none \
    --mca mpi_yield_when_idle 1 -np "$np" "$@" >"$out" 2>"$out.err"
}

# Print a failed run's output and fail the test.
fail_run()
{
  echo "FAIL: $1"
  shift
  for f in "$@"; do
    echo "--- $f"; cat "$f"; echo "--- $f.err"; cat "$f.err"
  done
  exit 1
}
