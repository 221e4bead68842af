#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Golden plans: weftrun --dry-run --json for 2 hosts of each topology file
# (-H a,b --topology FILE), and one with a different topology per host.
# WEFT_UPDATE_GOLDEN=1 rewrites the expected files.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
golden="$WEFT_TOPDIR/tests/cli/weftrun-golden"
# hosts come from the command line below, not from the machine's setting
no_host_defaults
fail=0

# The names of the variables forwarded from this environment differ from machine to
# machine: they are left out of the comparison (their line only; the JSON stays valid;
# the preset case below checks them).
check() { # name, weftrun args...
  name=$1
  shift
  if ! timeout 30 "$weftrun" --dry-run --json "$@" >"$tmp/$name.raw" 2>"$tmp/$name.err"; then
    echo "FAIL $name: weftrun $*: $(cat "$tmp/$name.err")"
    fail=1
    return
  fi
  sed '/^  "env_forwarded": /d' "$tmp/$name.raw" >"$tmp/$name.json"
  if golden_check "$golden/$name.json" "$tmp/$name.json"; then
    echo "ok $name"
  else
    fail=1
  fi
}

for f in "$topos"/*.xml; do
  t=$(basename "$f" .xml)
  check "$t" -H a,b --topology "$f"
done
# hosts that differ: a3 and a2 side by side, explicit slots, rank-by node
check mixed -H a3,a2:4 --topology "a3=$topos/a3-highgpu-8g.xml" \
  --topology "a2=$topos/a2-highgpu-8g.xml" --rank-by node
check own-np -np 6 -H a,b --topology "$topos/a3-highgpu-8g.xml" --gpu-visibility own \
  -x NCCL_DEBUG=INFO
# hosts from a hostfile (Open MPI grammar) and from a Slurm allocation
printf '# two hosts\nnode01 slots=2\nnode02 slots=3 max_slots=4\n' >"$tmp/hosts"
check hostfile --hostfile "$tmp/hosts" --topology "$topos/a3-highgpu-8g.xml"
export SLURM_JOB_NODELIST='gpu[07-08]' SLURM_TASKS_PER_NODE='4(x2)'
check slurm --topology "$topos/a3-highgpu-8g.xml"
unset SLURM_JOB_NODELIST SLURM_TASKS_PER_NODE

# --gpus-per-node N and WEFT_NO_PROBE skip the probe of remote hosts (no mpirun here):
# their topology is assumed like this machine's, their slots N (or given)
expect_line() { # name, pattern, weftrun args...
  name=$1 pattern=$2
  shift 2
  if timeout 30 "$weftrun" --dry-run "$@" >"$tmp/out" 2>"$tmp/err" && grep -q -e "$pattern" "$tmp/out"; then
    echo "ok $name"
  else
    echo "FAIL $name: weftrun --dry-run $*: no line '$pattern':"; cat "$tmp/out" "$tmp/err"; fail=1
  fi
}
expect_line gpus-per-node '^# host a: 8 of 8 slots, 1 GPUs (--gpus-per-node), topology assumed like this machine$' \
  --gpus-per-node 1 -H a:8 ./x
expect_line gpus-per-node-2 '^# host b: 3 of 3 slots, 3 GPUs (--gpus-per-node), topology assumed like this machine$' \
  --gpus-per-node 3 -H a,b ./x
export WEFT_NO_PROBE=1
expect_line no-probe '^# host b: .* topology assumed like this machine$' -H a,b ./x
unset WEFT_NO_PROBE

# a 5,000-character -x value and --mca value go through whole (no fixed buffer, no false
# "out of memory")
long=$(awk 'BEGIN { while (i++ < 5000) printf "v" }')
if timeout 30 "$weftrun" --dry-run -H a --topology "$topos/a3-highgpu-8g.xml" -x "LONG=$long" \
     --mca btl_tcp_if_include "$long" ./prog >"$tmp/out" 2>"$tmp/err" &&
   grep -q -- "-x LONG=$long .*--mca btl_tcp_if_include $long " "$tmp/out"; then
  echo "ok 5000-character -x and --mca values"
else
  echo "FAIL: long -x/--mca values:"; cut -c1-300 "$tmp/out" "$tmp/err"; fail=1
fi

# 2,000 hosts (a hostfile) with --topology FILE: the engine's command line stays short
# (the hosts go to mpirun in a hostfile, weft-rank gets a run-length layout)
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "vm-%04d slots=8\n", i }' >"$tmp/hosts2000"
if timeout 60 "$weftrun" --dry-run -v --hostfile "$tmp/hosts2000" --topology "$topos/a3-highgpu-8g.xml" \
     ./prog >"$tmp/out" 2>"$tmp/err"; then
  len=$(grep '^# command: ' "$tmp/out" | wc -c)
  if [ "$len" -gt 0 ] && [ "$len" -lt 4096 ] && grep -q -- '--layout 8x2000 ' "$tmp/out" &&
     [ "$(grep -c '^# hostfile: vm-[0-9]* slots=8$' "$tmp/out")" = 2000 ] &&
     [ "$(grep -c '^vm-[0-9]* rank ' "$tmp/out")" = 16000 ]; then
    echo "ok 2000 hosts: engine command line $len bytes"
  else
    echo "FAIL 2000 hosts: engine command line $len bytes (want under 4096):"; grep '^# command' "$tmp/out"; fail=1
  fi
else
  echo "FAIL 2000 hosts: weftrun --dry-run failed:"; cat "$tmp/err"; fail=1
fi
# Every variable each rank gets (issue 19): an NCCL preset whose NIC placeholders this
# host cannot fill (not a GCE VM) is shown whole, the unfilled ones marked with the
# reason, never dropped; what differs between ranks is shown per rank.
npreset=$(grep -c '^[A-Z_][A-Z0-9_]*=' "$WEFT_TOPDIR/share/weft/presets/a3-megagpu-8g.preset")
if timeout 30 "$weftrun" --dry-run --json -np 4 -H a,b --topology "$topos/a3-megagpu-8g.xml" \
     --nccl-preset a3-megagpu-8g -x FOO=bar ./prog >"$tmp/preset.json" 2>"$tmp/preset.err" &&
   /usr/bin/python3 - "$tmp/preset.json" "$npreset" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
src, env, unres = d["env_source"], d["env"], d.get("env_unresolved", {})
preset = [k for k, v in src.items() if v.startswith("preset a3-megagpu-8g")]
assert len(preset) >= want, ("preset variables shown", len(preset), "of", want)
assert "NCCL_SOCKET_IFNAME" in unres and "not a GCE VM" in unres["NCCL_SOCKET_IFNAME"], unres
assert env["NCCL_SOCKET_IFNAME"] == "@host_nic@", env["NCCL_SOCKET_IFNAME"]
assert src["FOO"] == "-x" and env["FOO"] == "bar"
assert env["WORLD_SIZE"] == "4" and src["WORLD_SIZE"] == "weft"
assert "PATH" in d["env_forwarded"] and "PATH" not in env, d.get("env_forwarded")
for r in d["ranks"]:
    e = r["env"]
    assert e["RANK"] == str(r["rank"]) and e["LOCAL_RANK"] == str(r["local_rank"]), r
    assert e["WEFT_GPU"] == str(r["gpu"]["index"]), r
    assert e["WEFT_CPUS"] == r["cpus"], r
    assert "RANK" not in env
PY
then
  echo "ok preset variables shown unresolved off GCE, per-rank variables"
else
  echo "FAIL: --dry-run --json with --nccl-preset a3-megagpu-8g off GCE:"; cat "$tmp/preset.err"
  head -c 3000 "$tmp/preset.json"; fail=1
fi
if timeout 30 "$weftrun" --dry-run -np 2 -H a --topology "$topos/a3-megagpu-8g.xml" \
     --nccl-preset a3-megagpu-8g ./prog >"$tmp/preset.txt" 2>"$tmp/preset.err" &&
   grep -q '^# env NCCL_SOCKET_IFNAME=@host_nic@  (preset a3-megagpu-8g; unresolved here: this is not a GCE VM, each host fills it in)$' "$tmp/preset.txt" &&
   grep -q '^# env rank 1: RANK=1 LOCAL_RANK=1 ' "$tmp/preset.txt" &&
   grep -q '^# env forwarded as you have them: .*PATH' "$tmp/preset.txt" &&
   [ "$(grep -c '(preset a3-megagpu-8g' "$tmp/preset.txt")" -ge "$npreset" ]; then
  echo "ok preset variables in the text plan"
else
  echo "FAIL: --dry-run with --nccl-preset a3-megagpu-8g off GCE:"; cat "$tmp/preset.txt" "$tmp/preset.err"; fail=1
fi

# When Open MPI places the ranks (no GPU here) mpirun gives other hosts only -x variables:
# weftrun forwards its own WEFT_* as -x NAME, not those that describe one host, not other
# variables (as mpirun), and the user's -x WEFT_FOO=bar wins (no second -x, no override)
unset WEFT_AGREE_UNSET 2>/dev/null || true
if WEFT_AGREE_SET=3 WEFT_AGREE_MINE=env WEFT_TOPOLOGY=x NCCL_AGREE=1 timeout 30 "$weftrun" --dry-run \
     -H a,b --topology "$topos/n2-standard-16.xml" -x WEFT_AGREE_MINE=bar ./prog >"$tmp/ompi.txt" 2>"$tmp/ompi.err" &&
   cmd=$(grep '^# command: ' "$tmp/ompi.txt") &&
   grep -q '^# weftrun plan: .*Open MPI places and binds them' "$tmp/ompi.txt" &&
   grep -q '^# env forwarded as you have them: .*WEFT_AGREE_SET' "$tmp/ompi.txt"; then
  ok=1
  case $cmd in *" -x WEFT_AGREE_SET "*) ;; *) ok=0 ;; esac
  case $cmd in *" -x WEFT_AGREE_MINE=bar "*) ;; *) ok=0 ;; esac
  case $cmd in *"-x WEFT_AGREE_MINE "*|*WEFT_AGREE_UNSET*|*WEFT_TOPOLOGY*|*NCCL_AGREE*) ok=0 ;; esac
  [ "$(printf '%s\n' "$cmd" | grep -o 'WEFT_AGREE_MINE' | wc -l)" -eq 1 ] || ok=0
  if [ $ok = 1 ]; then
    echo "ok WEFT_* forwarded with -x when Open MPI places the ranks"
  else
    echo "FAIL: OMPI mode forwarding: $cmd"; fail=1
  fi
else
  echo "FAIL: --dry-run without GPUs:"; cat "$tmp/ompi.txt" "$tmp/ompi.err"; fail=1
fi
if WEFT_AGREE_SET=3 timeout 30 "$weftrun" --dry-run --json -H a,b --topology "$topos/n2-standard-16.xml" \
     ./prog >"$tmp/ompi.json" 2>"$tmp/ompi.err" &&
   /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["env_forwarded"]; assert "WEFT_AGREE_SET" in f and "PATH" not in f, f' \
     "$tmp/ompi.json"; then
  echo "ok the plan JSON shows WEFT_* forwarded when Open MPI places the ranks"
else
  echo "FAIL: --dry-run --json without GPUs: env_forwarded"; cat "$tmp/ompi.err"; fail=1
fi

exit $fail
