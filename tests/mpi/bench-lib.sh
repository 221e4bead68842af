# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the weft-bench tests after tests/lib.sh: skip without mpirun, no
# setting of the user's in the way, and how to mask what changes from run to
# run (times, bandwidths, pids, hosts, versions) so that the rest can be
# compared with a golden file. Start N ranks with run_np N OUT "$bench" ARGS.
need_mpirun
unset WEFT_MACHINE_TYPE WEFT_BENCH_INJECT_ERROR WEFT_GPU WEFT_NIC NCCL_SOCKET_IFNAME

# The table with every measured number replaced by T (N/A stays: a cell that
# was not measured) and every float of the footer by F; rank lines keep their
# shape only. Columns: 6-9 out of place, 10-13 in place (time algbw busbw
# #wrong), 14-21 the baseline (time algbw busbw speedup, out of and in place).
# The "# sharing:" line goes: it depends on how many processors this machine has.
mask()
{
  sed -E -e 's/^(# weft-bench [a-z_]+: weft ).*/\1VERSIONS/' \
      -e 's/^(#  Rank +[0-9]+ Group +[0-9]+ Pid) .*/\1 PID on HOST device GPU NIC NIC/' \
      -e '/^# sharing: /d' \
      -e 's/^(# [0-9]+ ranks? on [0-9]+ hosts?:).*/\1 HOSTS/' \
      -e '/^# (Avg|Peak)/s/[0-9]+\.[0-9]+/F/g' "$1" |
    awk '/^#/ { print; next }
         { for (i = 6; i <= NF; i++) if (i != 9 && i != 13 && $i != "N/A") $i = "T"; print }'
}
