#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun's topology cache and the probe it spares mpirun. The first run
# probes this machine and writes the cache (a 0600 file in a 0700 directory
# under $XDG_CACHE_HOME), the next ones load it; the ranks are placed and bound
# the same either way; a damaged cache is probed again and rewritten;
# WEFT_TOPOLOGY_CACHE=0 reads and writes nothing. mpirun reads weftrun's XML
# (HWLOC_XMLFILE in its environment, never in the program's) whenever every rank is
# here, whoever places the ranks, and Open MPI's binding report stays whole; not when
# the user sets one of hwloc's variables or a topology file in Open MPI's parameter
# files, or a host of the job is another (a stand-in mpirun shows what it got there).
# A topology file of the user's own is refused (Open MPI would map by it).
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
local_jobs
fail=0
XDG_CACHE_HOME="$tmp/cache"
export XDG_CACHE_HOME
unset WEFT_TOPOLOGY_CACHE OMPI_MCA_hwloc_base_topo_file OMPI_MCA_hwloc_base_cpu_list || true
file="$XDG_CACHE_HOME/weft/topology-$(hostname | sed 's/[^A-Za-z0-9.-]/_/g').xml"

run() { # NAME ARGS...: weftrun -v with WEFT_VERBOSE=topo, its stderr in $tmp/err
  _name=$1
  shift
  WEFT_VERBOSE=topo timeout 60 "$weftrun" -v "$@" >"$tmp/out" 2>"$tmp/err" ||
    { echo "FAIL: $_name: exit $?:"; cat "$tmp/err"; fail=1; }
}
has() { grep -q -- "$2" "$tmp/err" || { echo "FAIL: $1: no '$2' in:"; cat "$tmp/err"; fail=1; }; }
hasnt() { ! grep -q -- "$2" "$tmp/err" || { echo "FAIL: $1: '$2' in:"; cat "$tmp/err"; fail=1; }; }
# weft's binding lines, or Open MPI's when it places the ranks (less the pid)
bindings() { grep -E '^\[weft\]|MCW rank [0-9]+ ' "$tmp/err" | sed 's/^\[\([^]:]*\):[0-9]*\]/[\1]/' | sort; }
topo_env='environment HWLOC_XMLFILE=[^ ]*/weft-[0-9]*-[^/ ]*/topology.xml'

# --gpus-per-node 2: weft places the ranks (one per GPU, as on a GPU host), the case where
# mpirun may read weftrun's XML; without it Open MPI places them and probes for itself
run "first run" -np 2 --gpus-per-node 2 --report-bindings true
has "first run" "topology cache: wrote $file"
has "first run: mpirun reads the file" "$topo_env"
[ "$(stat -c %a "$file" 2>/dev/null)" = 600 ] && [ "$(stat -c %a "$XDG_CACHE_HOME/weft")" = 700 ] ||
  { echo "FAIL: cache not private: $(ls -ld "$XDG_CACHE_HOME/weft" "$file" 2>&1)"; fail=1; }
bindings >"$tmp/probed"

run "second run" -np 2 --gpus-per-node 2 --report-bindings true
has "second run" "topology cache: loaded $file"
hasnt "second run" "topology cache: wrote"
bindings >"$tmp/cached"
[ -s "$tmp/cached" ] && cmp -s "$tmp/probed" "$tmp/cached" ||
  { echo "FAIL: placement from the cache differs from the probe's:"; diff "$tmp/probed" "$tmp/cached"; fail=1; }

# Open MPI places and binds the ranks from the file: its report is whole (from
# hwloc_base_topo_file it printed "bound to :"), the program sees no HWLOC_*
run "Open MPI places" -np 2 --report-bindings sh -c 'env | grep "^HWLOC_" || :'
has "Open MPI places: mpirun reads the file" "$topo_env"
has "Open MPI places: report" "MCW rank 1 bound to [^:]*[a-z][^:]*: \\["
hasnt "Open MPI places: empty report" "bound to : *$"
[ ! -s "$tmp/out" ] || { echo "FAIL: the program saw hwloc's variables:"; cat "$tmp/out"; fail=1; }

# damaged: half a file under its own key is not trusted
head -c 2000 "$file" >"$tmp/half" && tail -n 1 "$file" >>"$tmp/half" && cat "$tmp/half" >"$file"
run "damaged cache" -np 2 --oversubscribe true
has "damaged cache" "topology cache: wrote $file"
hasnt "damaged cache" "topology cache: loaded"
run "after the damaged cache" -np 2 --oversubscribe true
has "after the damaged cache" "topology cache: loaded $file"

# off: nothing read or written, and mpirun still spared its probe
mv "$file" "$tmp/mine.xml"
WEFT_TOPOLOGY_CACHE=0 run "WEFT_TOPOLOGY_CACHE=0" -np 2 --gpus-per-node 2 true
has "WEFT_TOPOLOGY_CACHE=0" "topology cache: off (WEFT_TOPOLOGY_CACHE=0)"
has "WEFT_TOPOLOGY_CACHE=0" "$topo_env"
[ ! -e "$file" ] || { echo "FAIL: WEFT_TOPOLOGY_CACHE=0 wrote $file"; fail=1; }

# the user's own topology file: Open MPI would map by it, which weftrun cannot
# predict: refused in one line, exit 2, nothing started
rc=0
"$weftrun" -np 2 --oversubscribe --mca hwloc_base_topo_file "$tmp/mine.xml" true >"$tmp/out" 2>"$tmp/err" || rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q 'topology file' "$tmp/err" ||
  { echo "FAIL: the user's hwloc_base_topo_file: exit $rc, expected 2 and one line:"; cat "$tmp/err"; fail=1; }

# with a stand-in mpirun that keeps its command line and hwloc's variables: a variable
# of hwloc's set by the user, a topology file in Open MPI's parameter files, and the
# cases that read the file. With a rank on another host, or a job that names one (Open
# MPI may start a daemon there), mpirun reads it only when an agent called ssh or rsh
# (weft-vcluster's is one) starts the daemons there, with a fresh environment: not in a
# resource manager's job, whose launcher passes mpirun's environment on, nor through
# an agent of another name
cat >"$tmp/mpirun" <<EOS
#!/bin/sh
echo "\$*" >"$tmp/args"
env | grep "^HWLOC_" >"$tmp/env" || :
EOS
chmod +x "$tmp/mpirun"
standin() { # NAME WANT(0|1) VAR=VALUE WEFTRUN-ARGS...
  _name=$1 _want=$2 _var=$3
  shift 3
  rm -f "$tmp/args" "$tmp/env"
  # the stand-in starts no rank: weftrun then says so and exits 70; only what it got counts
  env -u SLURM_JOB_ID -u SLURM_JOBID -u PBS_JOBID -u PBS_ENVIRONMENT -u LSB_JOBID -u PE_HOSTFILE \
    -u SGE_ROOT -u FLUX_URI -u OMPI_MCA_plm -u OMPI_MCA_plm_rsh_agent -u OMPI_MCA_orte_rsh_agent \
    "$_var" WEFT_MPIRUN="$tmp/mpirun" timeout 60 "$weftrun" "$@" true >"$tmp/out" 2>"$tmp/err" || :
  if [ -f "$tmp/args" ] && grep -q -- "--host-xml" "$tmp/args"; then
    [ "$(grep -c '^HWLOC_XMLFILE=.*/topology.xml$' "$tmp/env")" = "$_want" ] &&
      [ "$(grep -c '^HWLOC_THISSYSTEM=1$' "$tmp/env")" = "$_want" ] ||
      { echo "FAIL: $_name: HWLOC_XMLFILE given $_want times? mpirun got:"; cat "$tmp/env"; fail=1; }
  else
    echo "FAIL: $_name with a stand-in mpirun:"; cat "$tmp/err" "$tmp/args"; fail=1
  fi
}
standin "weft places the ranks" 1 WEFT_T=1 -np 2 --gpus-per-node 2
standin "Open MPI places the ranks" 1 WEFT_T=1 -np 2 --oversubscribe
standin "a processor list" 1 OMPI_MCA_hwloc_base_cpu_list=0 -np 2 --gpus-per-node 2
standin "a variable of hwloc's" 0 HWLOC_HIDE_ERRORS=1 -np 2 --gpus-per-node 2
mkdir -p "$tmp/home/.openmpi"
echo "  hwloc_base_topo_file = $tmp/mine.xml" >"$tmp/home/.openmpi/mca-params.conf"
standin "~/.openmpi/mca-params.conf" 0 HOME="$tmp/home" -np 2 --gpus-per-node 2
echo "# hwloc_base_topo_file = $tmp/mine.xml" >"$tmp/params.conf"
standin "a commented-out parameter" 1 OMPI_MCA_mca_base_param_files="$tmp/params.conf" -np 2 --gpus-per-node 2
echo "hwloc_base_topo_file=$tmp/mine.xml" >>"$tmp/params.conf"
standin "OMPI_MCA_mca_base_param_files" 0 OMPI_MCA_mca_base_param_files="$tmp/none,$tmp/params.conf" -np 2 --gpus-per-node 2
two="$(hostname):1,198.18.0.99:1"
standin "two hosts" 1 WEFT_T=1 -H "$two" --gpus-per-node 0
standin "another host named" 1 WEFT_T=1 -np 2 -H "$(hostname):2,198.18.0.99:1"
standin "two hosts, ssh with options" 1 "OMPI_MCA_plm_rsh_agent=/usr/bin/ssh -p 2222" -H "$two"
standin "two hosts, --mca plm rsh" 1 WEFT_T=1 --mca plm rsh -H "$two"
standin "two hosts in a Slurm job" 0 SLURM_JOB_ID=42 -H "$two"
standin "two hosts in a PBS job" 0 PBS_JOBID=42.server -H "$two"
standin "two hosts, --mca plm slurm" 0 WEFT_T=1 --mca plm slurm -H "$two"
standin "two hosts, an agent of the user's" 0 OMPI_MCA_plm_rsh_agent=/opt/site/launch -H "$two"
standin "two hosts, weft-vcluster's rsh" 1 OMPI_MCA_plm_rsh_agent=/run/weft-vcluster/x/rsh -H "$two"
standin "two hosts, ssh : rsh" 1 "OMPI_MCA_orte_rsh_agent=ssh : rsh" -H "$two"
echo "plm_rsh_agent = /opt/site/launch" >"$tmp/home/.openmpi/mca-params.conf"
standin "an agent in ~/.openmpi/mca-params.conf" 0 HOME="$tmp/home" -H "$two"
[ $fail = 0 ] && echo "ok topology cache and mpirun's topology file"
nothing_left || fail=1
exit $fail
