# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the weftrun Slurm tests after tests/lib.sh: a 3-node Slurm
# cluster of 2-CPU vnodes (slurm_up), programs for weftrun to run, and the
# checks the engines share. $work/$uniq-check prints one line per rank:
#   R RANK HOST NODE_RANK LOCAL_RANK WORLD_SIZE WEFT_GPU CUDA_VISIBLE_DEVICES
# $work/$uniq-fail exits 3 on rank 3 while the others sleep; a remote shell
# agent that leaves a mark ($work/rsh) proves that no rank was started by ssh.
hello=$WEFT_BUILDDIR/tests/vcluster/mpi-hello
[ -x "$hello" ] || fail "$hello is not built (make -C tests/vcluster check)"
need_mpirun
unique_name
work=$tmp
cat >"$work/$uniq-check" <<'EOS'
#!/bin/sh
echo "R $RANK $(hostname) $NODE_RANK $LOCAL_RANK $WORLD_SIZE ${WEFT_GPU:-none} ${CUDA_VISIBLE_DEVICES:-none}"
EOS
cat >"$work/$uniq-fail" <<EOS
#!/bin/sh
[ "\$RANK" != 3 ] || { sleep 1; exit 3; }
exec "$tmp/$uniq-sleep" 60
EOS
cat >"$work/rsh" <<AGENT
#!/bin/sh
echo "\$*" >>"$work/rsh-used"
exit 255
AGENT
chmod +x "$work/$uniq-check" "$work/$uniq-fail" "$work/rsh"
export OMPI_MCA_plm_rsh_agent="$work/rsh"

slurm_up() { vc_up_slurm 3 --slots 2 "$@"; }

# The ranks of a --dry-run plan, "RANK HOST GPU" sorted by rank (GPU: none without one).
planned() { # FILE
  sed -n 's/^\(vnode[0-9]*\) rank \([0-9]*\) (local [0-9]*):\( GPU \([0-9]*\)\)\{0,1\}.*/\2 \1 \4/p' "$1" |
    awk '{ print $1, $2, ($3 == "" ? "none" : $3) }' | sort -n
}

# The R lines of $uniq-check, "RANK HOST GPU" sorted by rank.
ran() { # FILE
  awk '$1 == "R" { print $2, $3, ($7 == "-1" ? "none" : $7) }' "$1" | sort -n
}

# mpi-hello's output of 6 ranks, 2 on each node, and its all-reduce.
check_hello() { # FILE WHAT
  hosts=$(sed -n 's/^rank [0-9]* of 6 on //p' "$1" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
  [ "$hosts" = "vnode0=2 vnode1=2 vnode2=2 " ] || fail "$2: expected 2 ranks on each node; got '$hosts'"
  grep -qx 'allreduce ok 6' "$1" || fail "$2: no 'allreduce ok 6'"
}

# Every rank where the plan put it, with the torchrun numbers of that place.
check_placed() { # FILE WHAT
  planned "$1" >"$work/planned"
  ran "$1" >"$work/ran"
  [ "$(wc -l <"$work/planned")" -eq 6 ] || { cat "$1"; fail "$2: the plan has not 6 ranks"; }
  diff "$work/planned" "$work/ran" >/dev/null ||
    { cat "$1"; fail "$2: ranks did not run where planned (plan: $(tr '\n' ' ' <"$work/planned"))"; }
  awk '$1 == "R" { if ($4 != int($2 / 2) || $5 != $2 % 2 || $6 != 6) { print "bad: " $0; bad = 1 } }
       END { exit bad }' "$1" || fail "$2: NODE_RANK, LOCAL_RANK or WORLD_SIZE wrong"
  [ ! -e "$work/rsh-used" ] || fail "$2: a rank was started by a remote shell: $(cat "$work/rsh-used")"
}

# No Slurm job left (a job ends as its salloc or batch script does), within 10 s.
no_job_left() { # WHAT
  _i=0
  while [ -n "$(on vnode0 squeue -h -o %i)" ]; do
    _i=$((_i + 1))
    [ $_i -lt 100 ] || { on vnode0 squeue; fail "$1: a Slurm job is left"; }
    sleep 0.1
  done
}

# weftrun ENGINE ARGS as "salloc -N3 -n6", with the failing program: the failed
# rank's code, one summary line naming it, nothing left behind.
check_failure() { # ENGINE
  rc=0
  on vnode0 salloc -N3 -n6 "$weftrun" --engine "$1" "$work/$uniq-fail" >"$work/fail.out" 2>&1 || rc=$?
  [ $rc -eq 3 ] || { cat "$work/fail.out"; fail "--engine $1: a rank exiting 3 gave exit $rc, not 3"; }
  [ "$(grep -c '^weftrun: job failed: ' "$work/fail.out")" -eq 1 ] &&
    grep -q '^weftrun: job failed: rank 3 host vnode1 gpu none: exited with status 3 (exit 3)$' "$work/fail.out" ||
    { cat "$work/fail.out"; fail "--engine $1: not one summary line naming rank 3 on vnode1"; }
  nothing_left || fail "--engine $1: processes left after a rank failed"
  no_job_left "--engine $1 after a rank failed"
  echo "ok --engine $1: a failed rank ends the job with its code, nothing left"
}
