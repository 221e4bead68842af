#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check a weft-topo --json plan against the hwloc XML it came from, read
independently of libweft: every rank its own GPU, cores only from that GPU's
NUMA node (and no core given twice), memory on that node, and the NIC below
the GPU's PCI switch when a named one is there.

usage: weft-topo-check.py TOPOLOGY.xml < plan.json   (exit 0 good, 1 wrong)
"""
import json
import sys
import xml.etree.ElementTree as ET

IO = ("Bridge", "PCIDev", "OSDev")


def mask(text):
    """hwloc's "0x0000ffff,0xffffffff" bitmap as a set of indexes."""
    value = int("".join(w.replace("0x", "") for w in text.split(",")), 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


def cpulist(text):
    """ "0-12,104-116" as a set."""
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def main():
    root = ET.parse(sys.argv[1]).getroot()
    parent = {c: p for p in root.iter() for c in p}

    def ancestors(o):
        while o in parent:
            o = parent[o]
            yield o

    def switch(o):
        for a in ancestors(o):
            if a.get("type") == "Bridge" and a.get("depth") == "1":
                return a
        return None

    def numa(o):
        for a in ancestors(o):
            if a.get("type") in IO:
                continue
            nodes = [c for c in a if c.get("type") == "NUMANode"]
            return nodes[0] if len(nodes) == 1 else None
        return None

    gpus, nics = {}, []
    for o in root.iter("object"):
        if o.get("type") == "PCIDev" and o.get("pci_type", "").startswith("03") \
                and "[10de:" in o.get("pci_type", ""):
            gpus[o.get("pci_busid")] = o
        if o.get("type") == "OSDev" and o.get("osdev_type") == "2" and o.get("name"):
            nics.append((o.get("name"), switch(parent[o])))

    try:
        plan = json.load(sys.stdin)
    except ValueError as e:
        print("weft-topo-check: the plan is not JSON: %s" % e)
        return 1
    errors, used_gpus, used_cpus = [], set(), set()
    for r in plan["ranks"]:
        rank = r["rank"]
        if r["gpu"] is None:
            errors.append("rank %d has no GPU" % rank)
            continue
        pci = r["gpu"]["pci"]
        if pci not in gpus:
            errors.append("rank %d: GPU %s is not in the topology" % (rank, pci))
            continue
        if pci in used_gpus:
            errors.append("rank %d: GPU %s given twice" % (rank, pci))
        used_gpus.add(pci)
        cpus = cpulist(r["cpus"])
        if not cpus or cpus & used_cpus:
            errors.append("rank %d: cpus %s empty or given twice" % (rank, r["cpus"]))
        used_cpus |= cpus
        node = numa(gpus[pci])
        if node is not None:
            if not cpus <= mask(node.get("cpuset")):
                errors.append("rank %d: cpus %s outside NUMA node %s of GPU %s"
                              % (rank, r["cpus"], node.get("os_index"), pci))
            if r["numa"] != [int(node.get("os_index"))]:
                errors.append("rank %d: memory on %s, GPU %s is on NUMA node %s"
                              % (rank, r["numa"], pci, node.get("os_index")))
        sw = switch(gpus[pci])
        near = [name for name, s in nics if sw is not None and s is sw]
        if near and r["nic"] not in near:
            errors.append("rank %d: NIC %s, but %s sit(s) on the PCI switch of GPU %s"
                          % (rank, r["nic"], ",".join(near), pci))
    if len(used_gpus) != len(plan["ranks"]):
        errors.append("%d ranks on %d GPUs" % (len(plan["ranks"]), len(used_gpus)))
    for e in errors:
        print("weft-topo-check: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
