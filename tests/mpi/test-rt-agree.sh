#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Ranks that read different WEFT_* settings: weft_init fails on every rank alike, at once, with one
# line naming the variable, its values and ranks, and what to do; equal values (also written
# differently, or a default written out) pass; a bad value on one rank fails every rank.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
need_mpirun
prog=$WEFT_BUILDDIR/tests/mpi/test-rt-agree
out=$tmp/out

# run NAME WANT-CODE MPMD-ARGS...: every one of the 3 ranks must say WANT-CODE, within 20 s
run()
{
  _name=$1 _want=$2
  shift 2
  _start=$(date +%s)
  mpirun_np "$@" >"$out" 2>&1 || true
  _took=$(($(date +%s) - _start))
  sed "s/^/# $_name: /" "$out"
  _n=$(grep -c "^AGREE rank [0-2]: $_want\$" "$out" || true)
  [ "$_n" -eq 3 ] || fail "$_name: $_n of 3 ranks returned $_want"
  [ "$_took" -le 20 ] || fail "$_name: took ${_took}s"
}

run differ WEFT_EDISAGREE 1 env WEFT_COLL_TIMEOUT=3 "$prog" : -np 1 env WEFT_COLL_TIMEOUT=5 "$prog" \
  : -np 1 "$prog"
line=$(grep 'ranks disagree' "$out") || fail "differ: no line naming the difference"
[ "$(grep -c 'ranks disagree' "$out")" -eq 1 ] || fail "differ: more than one line"
for want in 'WEFT_COLL_TIMEOUT: 3 on rank 0 (host ' '5 on rank 1 (host ' 'unset on rank 2 (host ' \
            'pass -x WEFT_COLL_TIMEOUT to mpirun or weftrun (WEFT_EDISAGREE)'; do
  case $line in *"$want"*) ;; *) fail "differ: the line lacks '$want'" ;; esac
done

run choice WEFT_EDISAGREE 2 env WEFT_ALLREDUCE=flat WEFT_HOST_SHM=0 "$prog" \
  : -np 1 env WEFT_ALLREDUCE=hier "$prog"
grep -q 'ranks disagree on WEFT_ALLREDUCE: flat on ranks 0, 1 (host [^)]*); hier on rank 2 (host [^)]*) (WEFT_HOST_SHM differs too)' "$out" ||
  fail "choice: the line does not name both values and the other variable"

run same OK 1 env WEFT_COLL_TIMEOUT=3 WEFT_HOST_SHM=1 "$prog" : -np 1 env WEFT_COLL_TIMEOUT=3.0 "$prog" \
  : -np 1 env WEFT_COLL_TIMEOUT=3 WEFT_HOST_SHM_STAGED=64M "$prog"

run bad WEFT_EINVAL 2 "$prog" : -np 1 env WEFT_ALLREDUCE=ring "$prog"
grep -q 'WEFT_ALLREDUCE=ring: use one of auto,flat,hier' "$out" || fail "bad: no line naming the value"
