#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare the Open MPI 4.1 model (the ompi-model helper) with mpirun itself.

mpirun --do-not-launch maps a job without starting anything; with
hwloc_base_topo_file every host has the topology of the given file, and with
rmaps_base_verbose 5 it prints the cpus it binds each rank to. Each case of
CASES ("TOPOLOGY | HOSTS | OPTIONS | NP[,NP...]", HOSTS as ompi-model takes
them, '!' marking mpirun's own host, which the script names with this host's
name) runs through both; ranks, hosts, local ranks and bindings must agree, or
both must refuse. Do-not-launch counts NUMA bindings across hosts (a real
launch counts each host alone), so NUMA bindings are compared on the first
host only.

usage: ompi-oracle.py MODEL CASES [-v]      exit 0 all agree, 1 some differ
"""
import os
import re
import subprocess
import sys

TOPDIR = os.environ.get("WEFT_TOPDIR", ".")
MPIRUN = os.environ.get("MPIRUN", "mpirun")


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


def run_mpirun(topo, hosts, opts, nps, me, tmp):
    # a hostfile, so that a host without slots is one whose slots are not given
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


def main():
    model, cases = sys.argv[1], sys.argv[2]
    verbose = "-v" in sys.argv
    me = os.uname().nodename.split(".")[0]
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ompi-oracle-%d.hosts" % os.getpid())
    bad = 0
    n = 0
    for lineno, topo, hosts, opts, nps in parse_cases(cases):
        n += 1
        path = topo if os.path.isabs(topo) else os.path.join(TOPDIR, "share/weft/topologies", topo)
        want, wtext = run_mpirun(path, hosts, opts, nps, me, tmp)
        # the model takes the hosts in Open MPI's pool order: mpirun's own first
        hl = hosts.split(",")
        hl = [h for h in hl if "!" in h] + [h for h in hl if "!" not in h]
        mhosts = ",".join(me + h[h.index(":"):].replace("!", "") + "!" if "!" in h and ":" in h
                          else me + "!" if "!" in h else h for h in hl)
        got, gtext = run_model(model, path, mhosts, opts, nps)
        name = "%s:%d: %s | %s | %s | %s" % (os.path.basename(cases), lineno, topo, hosts,
                                             " ".join(opts), nps)
        if want is None and got is None:
            if verbose:
                print("ok (both refuse) " + name + "\n   model: " + gtext)
            continue
        if want is None or got is None:
            bad += 1
            print("DIFFER " + name)
            print("   mpirun: " + ("refuses: " + " ".join(wtext.split()[-40:]) if want is None
                                    else "maps %d ranks" % len(want)))
            print("   model:  " + ("refuses: " + gtext if got is None else "maps %d ranks" % len(got)))
            continue
        numa = "bind-to numa" in gtext
        first = want.get(0, ("",))[0]
        diff = []
        for r in sorted(set(want) | set(got)):
            w, g = want.get(r), got.get(r)
            if w and g:
                in_place = w[3]
                w = w[:3]
                if (numa and w[0] != first) or (in_place and w[0] != me):
                    w, g = w[:2], g[:2]
            elif w:
                w = w[:3]
            if w != g:
                diff.append("rank %d: mpirun %s, model %s" % (r, w, g))
        if diff:
            bad += 1
            print("DIFFER " + name + "  [" + gtext + "]")
            for d in diff[:8]:
                print("   " + d)
        elif verbose:
            print("ok " + name + "  [" + gtext + "]")
    os.unlink(tmp)
    print("%d of %d cases agree" % (n - bad, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
