#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare weft's CPU layouts, all of them from the Open MPI 4.1 model, with mpirun.

mpirun --do-not-launch maps a job without starting anything; with
hwloc_base_topo_file every host has the topology of the given file, and with
rmaps_base_verbose 5 it prints the cpus it binds each rank to. Each case of
CASES ("TOPOLOGY | HOSTS | OPTIONS | NP[,NP...]", HOSTS as ompi-model takes
them, '!' marking mpirun's own host, which the script names with this host's
name) runs through mpirun and through

  model      the ompi-model helper (the model's three steps);
  weft-topo  weft-topo --json, for the cases it can spell: mpirun's own host
             alone, one program, --map-by, --bind-to, --cpus-per-proc (its --pe),
             --oversubscribe, --use-hwthread-cpus;
  srun       weftrun --engine srun --dry-run in a Slurm allocation it is told of
             (SLURM_JOB_ID, SLURM_JOB_NODELIST: nothing is started), then each
             rank's weft-rank as srun starts it (SLURM_PROCID, ...) with the
             arguments the plan gives it: the binding it would give itself;
             for the cases srun takes (one program, no --nolocal or
             --nooversubscribe, which only mpirun has).

The tools read the topology without its GPUs: with GPUs to give, weft places
ranks by its GPU rule (weft's one departure, not mpirun's layout); Open MPI
maps the same without them. Ranks, hosts, local ranks and bindings must agree,
or both must refuse; a binding to every processor counts as no binding, as in
mpirun's --report-bindings. Do-not-launch counts NUMA bindings across hosts (a
real launch counts each host alone), so NUMA bindings are compared on the first
host only.

usage: ompi-oracle.py MODEL CASES [-v]      exit 0 all agree, 1 some differ
  WEFT_TOPO, WEFTRUN, WEFT_RANK in the environment: the tools to check besides
"""
import os
import re
import subprocess
import sys

TOPDIR = os.environ.get("WEFT_TOPDIR", ".")
MPIRUN = os.environ.get("MPIRUN", "mpirun")
TOOLS = ("model", "weft-topo", "srun")
# weft-topo's spelling of the mpirun options it has ("" for a flag)
TOPO_OPTS = {"--map-by": "--map-by", "--bind-to": "--bind-to", "--cpus-per-proc": "--pe",
             "--oversubscribe": "", "--use-hwthread-cpus": ""}


def parse_cases(path):
    cases = []
    for lineno, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) != 4:
            sys.exit("%s:%d: want TOPOLOGY | HOSTS | OPTIONS | NP" % (path, lineno))
        cases.append((lineno, f[0], f[1], f[2].split(), f[3]))
    return cases


def cpuset(text):
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def without_gpus(path, tmpdir):
    """A copy of hwloc XML PATH without its NVIDIA GPUs (their PCI objects), same name."""
    out = os.path.join(tmpdir, "nogpu")
    os.makedirs(out, exist_ok=True)
    dest = os.path.join(out, os.path.basename(path))
    if os.path.exists(dest):
        return dest
    kept, skip = [], 0
    for line in open(path):
        # hwloc writes one tag a line: the objects open and close the GPU's subtree
        depth = ("<object " in line and not line.rstrip().endswith("/>")) - line.count("</object>")
        if skip:
            skip += depth
            continue
        if re.search(r'<object type="PCIDev" .*pci_type="03[0-9a-f]{2} \[10de:', line):
            skip = depth
            continue
        kept.append(line)
    with open(dest, "w") as f:
        f.writelines(kept)
    return dest


def all_pus(path):
    return frozenset(int(m) for m in re.findall(r'type="PU"[^>]*os_index="(\d+)"', open(path).read()))


def run_model(model, topo, hosts, opts, nps):
    p = subprocess.run([model, topo, hosts] + opts + ["--", nps],
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 2:
        sys.exit("ompi-model: " + p.stderr)
    if p.returncode:
        return None, p.stdout.strip()
    ranks, desc = {}, ""
    for line in p.stdout.splitlines():
        if line.startswith("#"):
            desc = line
            continue
        m = re.match(r"(\S+) rank (\d+) local (\d+) app (\d+) bind (\S+)", line)
        ranks[int(m.group(2))] = (m.group(1), int(m.group(3)), m.group(5))
    return ranks, desc


def write_hostfile(topo, hosts, opts, me, tmp):
    # a hostfile, so that a host without slots is one whose slots are not given
    names = []
    with open(tmp, "w") as f:
        for h in hosts.split(","):
            name, _, slots = h.replace("!", "").partition(":")
            if "!" in h:
                name = me
            if not slots or slots == "0":
                # do-not-launch leaves such a host at 1 slot, where a launch gives it its
                # cores (orte_set_default_slots): say so for it
                what = 'type="PU"' if "--use-hwthread-cpus" in opts or "hwthread" in opts else 'type="Core"'
                slots = str(open(topo).read().count(what))
            f.write(name + " slots=" + slots + "\n")
            names.append(name)
    return names


def run_mpirun(topo, hosts, opts, nps, me, tmp):
    write_hostfile(topo, hosts, opts, me, tmp)
    cmd = [MPIRUN, "--allow-run-as-root", "--do-not-launch", "--display-devel-map",
           "--mca", "hwloc_base_topo_file", topo, "--mca", "rmaps_base_verbose", "5",
           "--hostfile", tmp] + opts
    for k, n in enumerate(nps.split(",")):
        if k:
            cmd.append(":")
        if n != "0":
            cmd += ["-np", n]
        cmd.append("true")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    text = p.stdout + p.stderr
    ranks, node, binds = {}, None, {}
    for line in text.splitlines():
        m = re.search(r"Data for node: (\S+)", line)
        if m:
            node = m.group(1)
        m = re.search(r"Data for proc: \[\[\d+,1\],(\d+)\]", line)
        if m:
            cur = int(m.group(1))
        m = re.search(r"Local rank: (\d+)", line)
        if m and node:
            ranks[cur] = [node, int(m.group(1)), "-"]
        m = re.search(r"PROC \[\[\d+,1\],(\d+)\] BITMAP (\S*)", line) or \
            re.search(r"BOUND PROC \[\[\d+,1\],(\d+)\] TO ([0-9,-]+)\[", line)
        if m:
            binds[int(m.group(1))] = m.group(2) or "-"
    if not ranks:
        return None, text
    # binding in place is done for mpirun's own host only when nothing is launched
    in_place = "bind in place for job" in text
    for r, b in binds.items():
        if r in ranks:
            ranks[r][2] = b
    return {r: tuple(v) + (in_place,) for r, v in ranks.items()}, text


def run_weft_topo(tool, cpu_topo, hosts, opts, nps, me):
    """weft-topo's layout of the case, None (it refuses) or "n/a" (it cannot spell it)."""
    if "," in nps or hosts.replace(":0", "") != "me!":
        return "n/a", ""
    args, i = [], 0
    while i < len(opts):
        if opts[i] not in TOPO_OPTS:
            return "n/a", ""
        args.append(TOPO_OPTS[opts[i]] or opts[i])
        if TOPO_OPTS[opts[i]]:
            args.append(opts[i + 1])
            i += 1
        i += 1
    cmd = [tool, "--topology", cpu_topo, "--host", me, "--json"] + args
    if nps != "0":
        cmd += ["-np", nps]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode:
        return None, p.stderr.strip()
    ranks = {}
    for m in re.finditer(r'"rank": (\d+), "host": "([^"]*)", "node_rank": \d+, "local_rank": (\d+), '
                         r'"gpu": [^,]*, "cpus": "([^"]*)"', p.stdout):
        ranks[int(m.group(1))] = (m.group(2), int(m.group(3)), m.group(4))
    return ranks, p.stderr.strip()


def run_srun(weftrun, agent, cpu_topo, hosts, opts, nps, me, tmp):
    """weft-rank's bindings under weftrun --engine srun, None (refused) or "n/a"."""
    if "," in nps or "--nolocal" in opts or "--nooversubscribe" in opts:
        return "n/a", ""
    names = write_hostfile(cpu_topo, hosts, opts, me, tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_MCA_"))}
    env.update(SLURM_JOB_ID="1", SLURM_JOB_NODELIST=",".join(names))
    cmd = [weftrun, "--engine", "srun", "--dry-run", "--report-bindings", "--hostfile", tmp,
           "--topology", cpu_topo] + (["-np", nps] if nps != "0" else []) + opts + ["true"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    if p.returncode:
        return None, " ".join(p.stderr.split()[-40:])
    if "weft-rank binds them as Open MPI does" not in p.stdout:
        return "n/a", "weft's GPU rule"
    plan, hosts_order = {}, []
    for line in p.stdout.splitlines():
        m = re.match(r"(\S+) rank (\d+) \(local (\d+)\):", line)
        if m:
            plan[int(m.group(2))] = (m.group(1), int(m.group(3)))
            if m.group(1) not in hosts_order:
                hosts_order.append(m.group(1))
    m = re.search(r"^# command: .* (\S*weft-rank) (.*) -- true$", p.stdout, re.M)
    if not m:
        return None, "no weft-rank in the plan's command"
    argv = [m.group(1)] + m.group(2).split() + ["--", "true"]
    count = [sum(1 for h, _ in plan.values() if h == name) for name in hosts_order]
    ranks = {}
    for r, (host, local) in sorted(plan.items()):
        tenv = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURM_JOB_ID": "1",
                "SLURM_STEP_ID": "0", "SLURM_PROCID": str(r), "SLURM_NTASKS": str(len(plan)),
                "SLURM_LOCALID": str(local), "SLURM_NODEID": str(hosts_order.index(host)),
                "SLURM_STEP_TASKS_PER_NODE": ",".join(map(str, count)), "PMIX_RANK": str(r)}
        q = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=tenv)
        w = re.search(r"^\[weft\] \S+ rank %d \(local %d\):.* cores (\S+) .*\((not bound\)|not bound: "
                      r"topology from )" % (r, local), q.stderr, re.M)
        if q.returncode or not w:
            return None, "weft-rank (rank %d): %s" % (r, " ".join(q.stderr.split()[-40:]))
        ranks[r] = (host, local, "-" if w.group(2) == "not bound)" else w.group(1))
    return ranks, ""


def differences(want, got, me, numa, pus):
    """The ranks where got is not want, as lines."""
    first = want.get(0, ("",))[0]
    diff = []

    def same_cpus(b):
        if b == "-" or cpuset(b) == pus:
            return "-"
        return ",".join(map(str, sorted(cpuset(b))))

    for r in sorted(set(want) | set(got)):
        w, g = want.get(r), got.get(r)
        if w and g:
            in_place = w[3]
            w = w[:3]
            if (numa and w[0] != first) or (in_place and w[0] != me):
                w, g = w[:2], g[:2]
            elif pus is not None:
                w, g = w[:2] + (same_cpus(w[2]),), g[:2] + (same_cpus(g[2]),)
        elif w:
            w = w[:3]
        if w != g:
            diff.append("rank %d: mpirun %s, %%s %s" % (r, w, g))
    return diff


def main():
    model, cases = sys.argv[1], sys.argv[2]
    verbose = "-v" in sys.argv
    topo_tool, weftrun, agent = (os.environ.get(k) for k in ("WEFT_TOPO", "WEFTRUN", "WEFT_RANK"))
    me = os.uname().nodename.split(".")[0]
    tmpdir = os.environ.get("TMPDIR", "/tmp")
    tmp = os.path.join(tmpdir, "ompi-oracle-%d.hosts" % os.getpid())
    n, bad = 0, set()
    tally = {t: [0, 0, 0] for t in TOOLS}  # agree, differ, n/a
    for lineno, topo, hosts, opts, nps in parse_cases(cases):
        n += 1
        path = topo if os.path.isabs(topo) else os.path.join(TOPDIR, "share/weft/topologies", topo)
        cpu_path = without_gpus(path, tmpdir)
        pus = all_pus(path)
        want, wtext = run_mpirun(path, hosts, opts, nps, me, tmp)
        # the model takes the hosts in Open MPI's pool order: mpirun's own first
        hl = hosts.split(",")
        hl = [h for h in hl if "!" in h] + [h for h in hl if "!" not in h]
        mhosts = ",".join(me + h[h.index(":"):].replace("!", "") + "!" if "!" in h and ":" in h
                          else me + "!" if "!" in h else h for h in hl)
        results = {"model": run_model(model, path, mhosts, opts, nps)}
        if topo_tool:
            results["weft-topo"] = run_weft_topo(topo_tool, cpu_path, hosts, opts, nps, me)
        if weftrun and agent:
            results["srun"] = run_srun(weftrun, agent, cpu_path, hosts, opts, nps, me, tmp)
        name = "%s:%d: %s | %s | %s | %s" % (os.path.basename(cases), lineno, topo, hosts,
                                             " ".join(opts), nps)
        mdesc = results["model"][1] if results["model"][0] is not None else ""
        for tool, (got, gtext) in results.items():
            if got == "n/a":
                tally[tool][2] += 1
                if verbose:
                    print("n/a %s %s%s" % (tool, name, "  [" + gtext + "]" if gtext else ""))
                continue
            if want is None and got is None:
                tally[tool][0] += 1
                if verbose:
                    print("ok %s (both refuse) %s\n   %s: %s" % (tool, name, tool, gtext))
                continue
            if want is None or got is None:
                tally[tool][1] += 1
                bad.add(lineno)
                print("DIFFER %s %s" % (tool, name))
                print("   mpirun: " + ("refuses: " + " ".join(wtext.split()[-40:]) if want is None
                                        else "maps %d ranks" % len(want)))
                print("   %s: %s" % (tool, "refuses: " + gtext if got is None
                                      else "maps %d ranks" % len(got)))
                continue
            diff = differences(want, got, me, "bind-to numa" in mdesc,
                               None if tool == "model" else pus)
            if diff:
                tally[tool][1] += 1
                bad.add(lineno)
                print("DIFFER %s %s  [%s]" % (tool, name, mdesc))
                for d in diff[:8]:
                    print("   " + d % tool)
            else:
                tally[tool][0] += 1
                if verbose:
                    print("ok %s %s  [%s]" % (tool, name, mdesc))
    os.unlink(tmp)
    print("%d of %d cases agree; %s" % (n - len(bad), n, ", ".join(
        "%s %d agree %d differ %d n/a" % (t, *tally[t]) for t in TOOLS if sum(tally[t]))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
