#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench's command line without starting a job: --help (golden),
# --version, usage errors (exit 2 with one line naming the problem), scale
# mode's checks, and the man page listing every option of the table.
# WEFT_UPDATE_GOLDEN=1 rewrites bench-help.out.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
man=$WEFT_BUILDDIR/share/man/weft-bench.1
golden=$WEFT_TOPDIR/tests/cli/bench-help.out
unset WEFT_VCLUSTER_HOSTFILE OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK RANK

# expect STATUS PATTERN ARGS...: exit status and a line of stdout+stderr.
expect()
{
  want=$1 pattern=$2
  shift 2
  rc=0
  timeout 20 "$bench" "$@" >"$tmp/out" 2>&1 || rc=$?
  [ $rc -eq "$want" ] || { cat "$tmp/out"; fail "weft-bench $*: exit $rc, expected $want"; }
  grep -q -e "$pattern" "$tmp/out" || { cat "$tmp/out"; fail "weft-bench $*: no '$pattern'"; }
}

timeout 20 "$bench" --help >"$tmp/help"
golden_check "$golden" "$tmp/help" || exit 1
expect 0 '^weft-bench [0-9]' --version
expect 2 'which collective' 
expect 2 "unknown collective 'allreduse'" allreduse -b 1K
expect 2 "unknown option '-x'" allreduce -x
expect 2 "'1Q' is not a size" allreduce -b 1Q
expect 2 "'2Q' is not a size" allreduce --sizes 1K,2Q
expect 2 'longer than 1023 characters' allreduce --sizes "$(seq -s, 1000 1250)"
expect 2 'minbytes 4096 is larger than --maxbytes 1024' allreduce -b 4K -e 1K
expect 2 'not a whole number from 0 to 1' allreduce --check 3
expect 2 "unknown type 'float8'" allreduce -d float8
expect 2 "unknown operation 'mean'" allreduce -o sum,mean
expect 2 "'-n' needs an argument" allreduce -n
expect 2 "'--baseline' takes no argument" allreduce --baseline=1
expect 2 "'--floor' takes no argument" allreduce --floor=1
expect 2 'use --floor with --memory host' allreduce --floor --memory device
expect 2 "did you mean '--maxbytes'" allreduce --maxbyte 1K
expect 2 "unexpected argument 'extra'" allreduce extra
expect 2 "did you mean 'allreduce'" allreduse
# nccl-tests' short options also take their argument in the same word.
expect 2 "'1Q' is not a size" allreduce -b1Q
expect 2 "'float8'" allreduce -dfloat8
expect 2 "'3' is not a whole number from 0 to 1" allreduce -c3
expect 2 'not a bandwidth' allreduce --min-busbw fast
# nccl-tests' options: accepted with the one value that means what weft-bench
# does, refused in one line otherwise; nccl-tests' type names.
expect 2 '^weft-bench: -g 8: weft-bench drives one GPU per rank' allreduce -g 8
expect 2 '^weft-bench: -t 4: weft-bench runs one thread per rank.*--tensors' allreduce -t 4
expect 2 "^weft-bench: -m 4: weft has no grouped launch" allreduce -m 4
expect 2 "^weft-bench: -m device: -m is nccl-tests' aggregated iterations.*--memory" allreduce -m device
expect 2 '^weft-bench: -G 1: weft-bench does not capture CUDA graphs' allreduce -G1
expect 2 "'2' is not a whole number from 0 to 1" allreduce -p 2
expect 2 "'4' is not a whole number from 0 to 3" allreduce -a 4
expect 2 "'9' is not a whole number from 0 to 3" allreduce -z 9
expect 2 "unknown type 'uint32': use int8 uint8 int32 int64 half bfloat16 float double" allreduce -d uint32
[ "$(wc -l <"$tmp/out")" -eq 1 ] || { cat "$tmp/out"; fail "a refused option gave more than one line"; }
# Accepted: the usage error that follows comes from the word after them.
expect 2 "unexpected argument 'x'" allreduce -t 1 -g 1 -m 1 -G 0 -p 1 -a 0 -z 2 -d float,half,double x
expect 0 '^usage: weft-bench scale' scale --help
expect 2 'no hosts: give --hostfile' scale
printf 'hostA slots=2\n' >"$tmp/hosts"
expect 2 'asks for 4 nodes but' scale --hostfile "$tmp/hosts" --nodes 1,4 --out "$tmp/o"
expect 2 'increasing counts' scale --hostfile "$tmp/hosts" --nodes 2,1
expect 2 'unknown collective' scale --hostfile "$tmp/hosts" --coll nope
expect 2 "did you mean 'sendrecv'" scale --hostfile "$tmp/hosts" --coll sendrcv
expect 2 "did you mean '--nodes'" scale --hostfile "$tmp/hosts" --node 1
expect 2 "unexpected argument 'extra'" scale --hostfile "$tmp/hosts" extra
expect 2 'more than 30 weft-bench options' scale --hostfile "$tmp/hosts" -- $(seq 1 31)
printf 'hostA slots=x\n' >"$tmp/bad"
expect 2 'bad:1' scale --hostfile "$tmp/bad"

# Every option of both tables is in the man page, which also has the busbw factors.
[ -f "$man" ] || fail "$man is not built"
timeout 20 "$bench" scale --help >>"$tmp/help"
for opt in $(grep -o -e '--[a-z_-]*' "$tmp/help" | sort -u); do
  o=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
  grep -q -e "$o" "$man" || fail "weft-bench(1) does not document $opt"
done
grep -q '2(n\\-1)/n' "$man" || fail "weft-bench(1) lacks the allreduce busbw factor"
echo "PASS: weft-bench command line, usage errors, scale checks, man page"
