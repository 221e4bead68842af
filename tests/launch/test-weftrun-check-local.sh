#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun --check on this host alone: the table (one row, every column) and
# its verdict, the JSON (weft's version as weftrun's, the facts), a missing
# program, MASTER_PORT taken by another process (named with its pid), GPUs
# through NVML's stand-in (tests/standin: ECC errors, retired pages, a busy
# GPU, persistence off, a GPU NVML does not see, a hung NVML within its
# deadline), an engine that starts nothing (WEFT_MPIRUN=/bin/true) and one
# that hangs (ended at --timeout), each with its exit status and one line;
# nothing left running. (Many hosts: tests/vcluster/test-weftrun-check-vcluster.sh.)
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
fail=0
s="$tmp/$uniq-sleep"

check() # expected-codes (a|b) max-seconds weftrun-args...
{
  want=$1 max=$2
  shift 2
  t0=$(now)
  rc=0
  timeout 60 "$weftrun" --check "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  dt=$(elapsed "$t0" "$(now)")
  echo "# weftrun --check $*: exit $rc in about $dt s"
  cat "$tmp/out"
  case "|$want|" in *"|$rc|"*) ;; *) echo "FAIL: exit $rc, not $want"; cat "$tmp/err"; fail=1 ;; esac
  [ "$dt" -le "$max" ] || { echo "FAIL: took $dt s (at most $max)"; fail=1; }
  nothing_left || fail=1
}

expect() # pattern what
{
  grep -q -- "$1" "$tmp/out" || { echo "FAIL: $2: no line matches '$1'"; cat "$tmp/err"; fail=1; }
}

# this host is healthy enough to run (warnings, e.g. a small /dev/shm, may be)
check '0|80' 20 "$s"
expect '^HOST  *REACH  *VERSIONS  *PROGRAM  *GPUS  *NET  *PAIRS  *CLOCK  *MEMORY$' "the table's head"
expect "^[^ #]*  *OK [0-9.]* s  *OK weft [0-9.]*  *OK ELF64 .* OK master " "this host's row"
expect '^# check: .*(exit \(0\|80\)) in ' "the verdict"
check '0|80' 20 --json "$s"
version=$("$weftrun" --version | sed -n 's/^weftrun (weft) //p')
/usr/bin/python3 - "$tmp/out" "$version" <<'EOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit"] in (0, 80) and d["status"] in ("OK", "WARN"), d
assert len(d["hosts"]) == 1 and d["hosts"][0]["answered"] and d["hosts"][0]["complete"]
facts = dict(d["hosts"][0]["facts"])
assert facts["ver.weft"] == sys.argv[2], (facts["ver.weft"], sys.argv[2])
assert facts["program"].startswith("elf ELF64 "), facts["program"]
assert facts["port"].endswith(" free") and facts["clock"] == "0 0", facts
for k in ("ver.ompi", "ver.hwloc", "ver.nccl", "ver.cudart", "gpu.pci", "gpu.nvml", "mem.avail",
          "shm", "memlock"):
    assert k in facts, k
print("ok JSON")
EOF

# a missing program
check 81 20 "$tmp/$uniq-nosuch"
expect "^FAIL \[program\] [^ ]*: $tmp/$uniq-nosuch is not there (not found at that path)" "the missing program"

# MASTER_PORT taken by another process
# below Linux's ephemeral ports (32768-60999), which outgoing connections take
port=$((20000 + $$ % 12000))
hold_port $port
check 81 20 -x "MASTER_PORT=$port" "$s"
expect "^FAIL \[net\] [^ ]*: MASTER_PORT $port is taken there, by pid $holder (python3)" "the taken port"
kill $holder 2>/dev/null || true

# GPUs through NVML: the stand-in's (tests/standin, never a GPU) on a topology of 8
standin=$WEFT_BUILDDIR/tests/standin/.libs
[ -e "$standin/libnvidia-ml.so.1" ] || fail "the NVML stand-in is not built ($standin)"
gpu() { WEFT_TOPOLOGY=$topos/a3-highgpu-8g.xml LD_LIBRARY_PATH=$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
WEFT_STANDIN_NVML_FAULT=ecc:3:12,retired:5,busy:2:$$,persistence-off gpu check 80 20 "$s"
expect '^[^ #]* .* WARN 8 weft stand-in (not a GPU) ' "the GPUs cell"
expect "^WARN \[gpus\] [^ ]*: GPU 2 is in use by pid $$ (" "a busy GPU"
expect '^WARN \[gpus\] [^ ]*: GPU 3 has had 12 uncorrected ECC errors' "ECC errors"
expect '^WARN \[gpus\] [^ ]*: GPU 5 has retired memory pages waiting for a reset' "retired pages"
expect '^WARN \[gpus\] [^ ]*: persistence mode is off on 8 GPUs' "persistence mode"
WEFT_STANDIN_DEVICES=7 gpu check 81 20 "$s"
expect '^FAIL \[gpus\] [^ ]*: NVML sees 7 GPUs, the PCI bus 8' "a GPU NVML does not see"
expect '^FAIL \[gpus\] [^ ]*: the plan puts 8 ranks there, each on a GPU of its own, and it has 7 GPUs' \
  "the plan against the GPUs"
WEFT_STANDIN_NVML_FAULT=hang gpu check 81 15 "$s"
expect '^FAIL \[gpus\] [^ ]*: the gpus check did not finish within 5 s there' "a hung NVML"
expect '^[^ #]*  *OK .* OK ELF64 .* FAIL no answer .* OK master ' "the other checks of a host with a hung NVML"

# an engine that starts nothing, and one that never answers (the check's own deadline)
WEFT_MPIRUN=/bin/true check 81 20 "$s"
expect '^FAIL \[reach\] [^ ]*: not reached through mpirun (the engine ended without starting weft-rank there)' \
  "an engine that starts nothing"
cat >"$tmp/$uniq-hang" <<EOF
#!/bin/sh
exec $s 60
EOF
chmod +x "$tmp/$uniq-hang"
WEFT_MPIRUN="$tmp/$uniq-hang" check 81 12 --timeout 4 "$s"
expect '^FAIL \[reach\] [^ ]*: not reached through mpirun (' "a hung engine"
exit $fail
