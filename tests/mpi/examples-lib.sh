# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the example tests after tests/lib.sh (which has run_np): where
# the examples are, and the same run through weftrun. Sets $launch (the
# launcher's name, for messages).
#   run_weftrun N OUTFILE PROGRAM [ARGS...]  run_np through weftrun (77 when
#                                        weftrun is not built)
need_mpirun
examples=$WEFT_BUILDDIR/examples
launch=mpirun

# Oversubscribed ranks must yield the core while they wait: mpirun sees the
# oversubscription itself, weftrun's mpirun gets exact slot counts, so say it.
run_weftrun()
{
  np=$1 out=$2
  shift 2
  [ -x "$weftrun" ] || return 77
  timeout 60 "$weftrun" --oversubscribe --bind-to none \
    --mca mpi_yield_when_idle 1 -np "$np" "$@" >"$out" 2>"$out.err"
}
