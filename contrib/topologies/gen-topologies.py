#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generate share/weft/topologies/*.xml: hwloc v2 XML files of Google Cloud
machine shapes and of a few test machines, built from one description per
shape so that cpusets, bus ranges and PCI switches stay consistent.

Published facts come from shared/reference/gcp_nccl.md section 1 (machine
shapes, a3-highgpu-8g PCI/NUMA table, NIC names); everything else (bridge
numbering, exact core counts where Google does not publish them, PCI device
ids of the bridges, MAC addresses, UUIDs) is modelled and every file says so
in the comment at its end. The comment is at the end because hwloc's
minimalistic XML parser (used when libxml2 is not available) rejects comments
before the root element.

Usage: gen-topologies.py [OUTDIR]   (default: share/weft/topologies next to this script)
"""

import os
import sys

# PCI ids
NV = 0x10DE
GVNIC = (0x1AE0, 0x0042)
VIRTIO_NET = (0x1AF4, 0x1000)
CX7_VF = (0x15B3, 0x101E)     # Mellanox ConnectX family virtual function (the CX-7s are VFs on GCE)
# hwloc's NVML backend counts 25,000 MB/s per NVLink of versions 2 to 4 in its
# NVLinkBandwidth matrix (topology-nvml.c); weft reads links back as bandwidth / 25,000.
NVLINK_MBPS = 25000
GPU_IDS = {
    # model: (class, device id, memory in bytes)
    "NVIDIA H100 80GB HBM3": (0x0302, 0x2330, 80 << 30),
    "NVIDIA H200": (0x0302, 0x2335, 141 << 30),
    "NVIDIA B200": (0x0302, 0x2901, 180 << 30),
    "NVIDIA A100-SXM4-40GB": (0x0302, 0x20B0, 40 << 30),
    "NVIDIA L4": (0x0302, 0x27B8, 24 << 30),
    "Tesla V100-SXM2-16GB": (0x0302, 0x1DB1, 16 << 30),
    "NVIDIA T4 test GPU": (0x0302, 0x1EB8, 16 << 30),
}
BRIDGE_IDS = "[8086:2030] [0000:0000] 00"   # modelled: a generic PCIe root port / switch port


def bitmap(bits):
    """hwloc bitmap string: comma-separated 32-bit words, most significant first."""
    v = 0
    for b in bits:
        v |= 1 << b
    if v == 0:
        return "0x0"
    words = []
    while v:
        words.append(v & 0xFFFFFFFF)
        v >>= 32
    return ",".join("0x%08x" % w for w in reversed(words))


def esc(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

    def gpi(self):
        self.gp += 1
        return self.gp

    def open(self, depth, attrs, empty=False):
        s = " ".join('%s="%s"' % (k, esc(str(v))) for k, v in attrs)
        self.lines.append("  " * depth + "<object " + s + ("/>" if empty else ">"))

    def close(self, depth):
        self.lines.append("  " * depth + "</object>")

    def info(self, depth, name, value):
        self.lines.append("  " * depth + '<info name="%s" value="%s"/>' % (esc(name), esc(str(value))))


# ---- device descriptions -------------------------------------------------

def gpu(bus, model, dev=0, func=0, domain=0):
    return {"kind": "gpu", "bus": bus, "dev": dev, "func": func, "domain": domain, "model": model}


def nic(bus, name, ids=GVNIC, dev=0, func=0, domain=0, speed=0, rdma=None):
    return {"kind": "nic", "bus": bus, "dev": dev, "func": func, "domain": domain, "name": name,
            "ids": ids, "speed": speed, "rdma": rdma}


def switch(rootport, sec, sub, devices, domain=0):
    """A PCIe switch below root port `rootport` (bus, dev): the root port's
    secondary bus `sec` holds the switch's upstream port, whose bus sec+1 holds
    one downstream port per device."""
    return {"kind": "switch", "rp": rootport, "sec": sec, "sub": sub, "devices": devices,
            "domain": domain}


def hostbridge(lo, hi, children, attach, domain=0):
    """attach: package index, or None for the Machine (no locality)."""
    return {"lo": lo, "hi": hi, "children": children, "attach": attach, "domain": domain}


def busid(d):
    return "%04x:%02x:%02x.%x" % (d["domain"], d["bus"], d["dev"], d["func"])


# ---- XML emission --------------------------------------------------------

class Shape:
    def __init__(self, name, summary, packages, cores, threads, mem_gb, bridges, comment,
                 gce=True, hostname=None, numa_per_package=1, l3_mb=105, nvlinks=0):
        self.name = name
        self.summary = summary        # the comment's first line: weft-topo --list-topologies shows it
        self.packages = packages
        self.cores = cores            # per package
        self.threads = threads
        self.mem = mem_gb * (1 << 30)
        self.bridges = bridges
        self.comment = comment
        self.gce = gce
        self.hostname = hostname if hostname is not None else name
        self.npp = numa_per_package
        self.l3 = l3_mb << 20
        self.nic_macs = 0
        self.nvlinks = nvlinks        # NVLinks between every GPU pair (through NVSwitch); 0: none
        self.nvml_gp = {}             # GPU number -> gp_index of its nvml OS device

    def pu(self, pkg, core, thread):
        """OS processor number as a Linux guest numbers them: first thread of
        every core of every package, then the second threads."""
        ncores = self.packages * self.cores
        return thread * ncores + pkg * self.cores + core

    def pkg_pus(self, pkg):
        return [self.pu(pkg, c, t) for c in range(self.cores) for t in range(self.threads)]

    def numa_pus(self, pkg, sub):
        per = self.cores // self.npp
        return [self.pu(pkg, c, t) for c in range(sub * per, (sub + 1) * per)
                for t in range(self.threads)]

    def all_pus(self):
        return list(range(self.packages * self.cores * self.threads))

    def sets(self, pus, nodes):
        return [("cpuset", bitmap(pus)), ("complete_cpuset", bitmap(pus)),
                ("nodeset", bitmap(nodes)), ("complete_nodeset", bitmap(nodes))]

    def number_gpus(self):
        """cudaN / nvmlN in PCI bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID numbers them."""
        def walk(children):
            for ch in children:
                if ch["kind"] == "switch":
                    yield from walk(ch["devices"])
                elif ch["kind"] == "gpu":
                    yield ch
        gpus = [g for hb in self.bridges for g in walk(hb["children"])]
        for k, g in enumerate(sorted(gpus, key=lambda g: (g["domain"], g["bus"], g["dev"], g["func"]))):
            g["k"] = k

    def emit(self):
        self.number_gpus()
        w = Writer()
        allpus = self.all_pus()
        allnodes = list(range(self.packages * self.npp))
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
               '<topology version="2.0">']
        w.lines = out
        w.open(1, [("type", "Machine"), ("os_index", 0)] + self.sets(allpus, allnodes)[:2]
               + [("allowed_cpuset", bitmap(allpus))] + self.sets(allpus, allnodes)[2:]
               + [("allowed_nodeset", bitmap(allnodes)), ("gp_index", w.gpi())])
        if self.gce:
            w.info(2, "DMIProductName", "Google Compute Engine")
            w.info(2, "DMIBoardVendor", "Google")
            w.info(2, "DMIBoardName", "Google Compute Engine")
        w.info(2, "Backend", "Linux")
        w.info(2, "OSName", "Linux")
        w.info(2, "HostName", self.hostname)
        w.info(2, "Architecture", "x86_64")
        w.info(2, "hwlocVersion", "2.9.0")
        w.info(2, "WeftModel", self.name)
        for p in range(self.packages):
            nodes = list(range(p * self.npp, (p + 1) * self.npp))
            w.open(2, [("type", "Package"), ("os_index", p)] + self.sets(self.pkg_pus(p), nodes)
                   + [("gp_index", w.gpi())])
            w.info(3, "CPUVendor", "GenuineIntel")
            w.info(3, "CPUModel", "Intel(R) Xeon(R) CPU @ 2.60GHz (modelled)")
            for s in range(self.npp):
                n = p * self.npp + s
                w.open(3, [("type", "NUMANode"), ("os_index", n)]
                       + self.sets(self.numa_pus(p, s), [n])
                       + [("gp_index", w.gpi()), ("local_memory", self.mem // len(allnodes))], empty=True)
            w.open(3, [("type", "L3Cache"), ("os_index", p)] + self.sets(self.pkg_pus(p), nodes)
                   + [("gp_index", w.gpi()), ("cache_size", self.l3), ("depth", 3),
                      ("cache_linesize", 64), ("cache_associativity", 15), ("cache_type", 0)])
            for c in range(self.cores):
                pus = [self.pu(p, c, t) for t in range(self.threads)]
                node = [p * self.npp + c // (self.cores // self.npp)]
                cid = p * self.cores + c
                w.open(4, [("type", "L2Cache"), ("os_index", cid)] + self.sets(pus, node)
                       + [("gp_index", w.gpi()), ("cache_size", 2 << 20), ("depth", 2),
                          ("cache_linesize", 64), ("cache_associativity", 16), ("cache_type", 0)])
                w.open(5, [("type", "L1Cache"), ("os_index", cid)] + self.sets(pus, node)
                       + [("gp_index", w.gpi()), ("cache_size", 48 << 10), ("depth", 1),
                          ("cache_linesize", 64), ("cache_associativity", 12), ("cache_type", 1)])
                w.open(6, [("type", "Core"), ("os_index", c)] + self.sets(pus, node)
                       + [("gp_index", w.gpi())])
                for pu in pus:
                    w.open(7, [("type", "PU"), ("os_index", pu)] + self.sets([pu], node)
                           + [("gp_index", w.gpi())], empty=True)
                w.close(6)
                w.close(5)
                w.close(4)
            w.close(3)
            for hb in self.bridges:
                if hb["attach"] == p:
                    self.emit_hostbridge(w, 3, hb)
            w.close(2)
        for hb in self.bridges:
            if hb["attach"] is None:
                self.emit_hostbridge(w, 2, hb)
        w.close(1)
        if self.nvlinks:
            self.emit_nvlinks(w)
        out.append("</topology>")
        out.append("<!--")
        out.append("  %s: %s" % (self.name, self.summary))
        out.append("  Generated by contrib/topologies/gen-topologies.py; do not edit by hand.")
        for line in self.comment.strip().splitlines():
            out.append("  " + line.strip() if line.strip() else "")
        out.append("-->")
        return "\n".join(out) + "\n"

    def emit_nvlinks(self, w):
        """hwloc's NVLinkBandwidth matrix as its NVML backend leaves it once the
        NVSwitch ports are merged and closed over (hwloc_distances_transform):
        every GPU pair linked by self.nvlinks links, the diagonal 1,000,000."""
        ks = sorted(self.nvml_gp)
        n = len(ks)
        vals = [1000000 if i == j else self.nvlinks * NVLINK_MBPS for i in range(n) for j in range(n)]
        w.lines.append('  <distances2 type="OSDev" nbobjs="%d" kind="9" name="NVLinkBandwidth" '
                       'indexing="gp">' % n)
        w.lines.append('    <indexes length="%d">%s </indexes>'
                       % (len(" ".join(str(self.nvml_gp[k]) for k in ks)) + 1,
                          " ".join(str(self.nvml_gp[k]) for k in ks)))
        text = " ".join(str(v) for v in vals)
        w.lines.append('    <u64values length="%d">%s </u64values>' % (len(text) + 1, text))
        w.lines.append('  </distances2>')

    def emit_hostbridge(self, w, depth, hb):
        w.open(depth, [("type", "Bridge"), ("gp_index", w.gpi()), ("bridge_type", "0-1"), ("depth", 0),
                       ("bridge_pci", "%04x:[%02x-%02x]" % (hb["domain"], hb["lo"], hb["hi"]))])
        for ch in hb["children"]:
            self.emit_child(w, depth + 1, ch)
        w.close(depth)

    def emit_child(self, w, depth, ch):
        if ch["kind"] == "switch":
            dom = ch["domain"]
            rpbus, rpdev = ch["rp"]
            w.open(depth, [("type", "Bridge"), ("gp_index", w.gpi()),
                           ("pci_busid", "%04x:%02x:%02x.0" % (dom, rpbus, rpdev)),
                           ("pci_type", "0604 " + BRIDGE_IDS), ("pci_link_speed", "31.507692"),
                           ("bridge_type", "1-1"), ("depth", 1),
                           ("bridge_pci", "%04x:[%02x-%02x]" % (dom, ch["sec"], ch["sub"]))])
            up = ch["sec"]
            w.open(depth + 1, [("type", "Bridge"), ("gp_index", w.gpi()),
                               ("pci_busid", "%04x:%02x:00.0" % (dom, up)),
                               ("pci_type", "0604 " + BRIDGE_IDS), ("pci_link_speed", "31.507692"),
                               ("bridge_type", "1-1"), ("depth", 2),
                               ("bridge_pci", "%04x:[%02x-%02x]" % (dom, up + 1, ch["sub"]))])
            for i, d in enumerate(sorted(ch["devices"], key=lambda d: d["bus"])):
                w.open(depth + 2, [("type", "Bridge"), ("gp_index", w.gpi()),
                                   ("pci_busid", "%04x:%02x:%02x.0" % (dom, up + 1, i + 1)),
                                   ("pci_type", "0604 " + BRIDGE_IDS), ("pci_link_speed", "31.507692"),
                                   ("bridge_type", "1-1"), ("depth", 3),
                                   ("bridge_pci", "%04x:[%02x-%02x]" % (dom, d["bus"], d["bus"]))])
                self.emit_child(w, depth + 3, d)
                w.close(depth + 2)
            w.close(depth + 1)
            w.close(depth)
        elif ch["kind"] == "gpu":
            klass, devid, mem = GPU_IDS[ch["model"]]
            k = ch["k"]
            w.open(depth, [("type", "PCIDev"), ("gp_index", w.gpi()), ("pci_busid", busid(ch)),
                           ("pci_type", "%04x [%04x:%04x] [%04x:%04x] a1" % (klass, NV, devid, NV, 0x1839)),
                           ("pci_link_speed", "31.507692")])
            w.info(depth + 1, "PCIVendor", "NVIDIA Corporation")
            w.open(depth + 1, [("type", "OSDev"), ("gp_index", w.gpi()), ("name", "cuda%d" % k),
                               ("subtype", "CUDA"), ("osdev_type", 5)])
            w.info(depth + 2, "Backend", "CUDA")
            w.info(depth + 2, "GPUVendor", "NVIDIA Corporation")
            w.info(depth + 2, "GPUModel", ch["model"])
            w.info(depth + 2, "CUDAGlobalMemorySize", mem >> 10)
            w.close(depth + 1)
            self.nvml_gp[k] = w.gpi()
            w.open(depth + 1, [("type", "OSDev"), ("gp_index", self.nvml_gp[k]), ("name", "nvml%d" % k),
                               ("subtype", "NVML"), ("osdev_type", 1)])
            w.info(depth + 2, "Backend", "NVML")
            w.info(depth + 2, "GPUVendor", "NVIDIA Corporation")
            w.info(depth + 2, "GPUModel", ch["model"])
            w.info(depth + 2, "NVIDIAUUID", "GPU-00000000-0000-4000-8000-%012x" % (0xE0000 + k))
            w.close(depth + 1)
            w.close(depth)
        elif ch["kind"] == "nic":
            ven, dev = ch["ids"]
            self.nic_macs += 1
            w.open(depth, [("type", "PCIDev"), ("gp_index", w.gpi()), ("pci_busid", busid(ch)),
                           ("pci_type", "0200 [%04x:%04x] [%04x:%04x] 00" % (ven, dev, ven, 0x0058)),
                           ("pci_link_speed", "0.000000")])
            w.open(depth + 1, [("type", "OSDev"), ("gp_index", w.gpi()), ("name", ch["name"]),
                               ("osdev_type", 2)])
            w.info(depth + 2, "Address", "42:01:0a:00:00:%02x" % self.nic_macs)
            if ch["speed"]:
                w.info(depth + 2, "LinkSpeed", ch["speed"])
            w.close(depth + 1)
            if ch["rdma"]:
                w.open(depth + 1, [("type", "OSDev"), ("gp_index", w.gpi()), ("name", ch["rdma"]),
                                   ("subtype", "OpenFabrics"), ("osdev_type", 3)])
                w.info(depth + 2, "Backend", "OpenFabrics")
                w.close(depth + 1)
            w.close(depth)


# ---- the shapes ----------------------------------------------------------

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"


def a3(name, gpu_nics):
    """a3-highgpu-8g / a3-megagpu-8g: GPU pairs at 04/05, 0a/0b, 84/85, 8a/8b,
    each pair below its own PCIe switch with its GPU NIC(s)."""
    groups = [(0x04, 0x05), (0x0A, 0x0B), (0x84, 0x85), (0x8A, 0x8B)]
    sws = []
    for i, g in enumerate(groups):
        nics = [b for b in gpu_nics if g[1] < b <= g[1] + 3]
        rp = (g[0] & 0x80, 2 + (i % 2))
        sws.append(switch(rp, g[0] - 2, max(list(g) + nics),
                          [gpu(b, H100) for b in g]
                          + [nic(b, "enp%ds0" % b, speed=200000) for b in nics]))
    host = nic(0x00, "enp0s12", dev=0x0C, speed=200000)
    return [hostbridge(0x00, max(sws[1]["sub"], 0x0C), [host, sws[0], sws[1]], 0),
            hostbridge(0x80, sws[3]["sub"], [sws[2], sws[3]], 1)]


A3_COMMENT = """
Published facts (shared/reference/gcp_nccl.md 1.1-1.3; cloud.google.com/compute/docs/gpus,
cluster-toolkit examples/machine-learning/{name}): 8 x H100 80GB; 208 vCPUs as 2 sockets x 52
cores x 2 threads (Slurm node_conf CoresPerSocket 52, ThreadsPerCore 2); 1,872 GB memory;
NUMA 0 = CPUs 0-51,104-155, NUMA 1 = 52-103,156-207 (from Google's TCPX CPU bindings);
GPUs at PCI 0000:04,05,0a,0b:00.0 on NUMA 0 and 84,85,8a,8b on NUMA 1, two GPUs per PCIe switch;
{nics}; host NIC enp0s12 at 00:0c.0 on its own bus; all NICs gVNIC (PCI 1ae0:0042), 200 Gbps;
NVLink full mesh through NVSwitch, 900 GB/s (GCP gpus comparison chart): nvidia-smi topo -m shows
NV18 between every GPU pair, here hwloc's NVLinkBandwidth matrix of 18 links x 25,000 MB/s.
Modelled: the bridge devices and bus numbers between the root ports and the devices, cache
sizes, CPU model string, MAC addresses, GPU UUIDs (not real), memory per NUMA node (half each).
"""

SHAPES = []

SHAPES.append(Shape(
    "a3-highgpu-8g", "Google Cloud A3 High: 8 x H100 80GB, 208 vCPUs, 2 NUMA nodes, "
    "4 GPU NICs and a host NIC (gVNIC, GPUDirect-TCPX)", 2, 52, 2, 1872, a3("a3-highgpu-8g", [0x06, 0x0C, 0x86, 0x8C]),
    A3_COMMENT.format(name="a3-highgpu-8g",
                      nics="4 GPU NICs enp6s0, enp12s0, enp134s0, enp140s0 at 06, 0c, 86, 8c, "
                           "one per PCIe switch (GPU pair)"), nvlinks=18))

SHAPES.append(Shape(
    "gpu-numa-interleaved", "test machine: 4 GPUs whose PCI order is not their NUMA order, "
    "2 NICs", 2, 8, 2, 64,
    [hostbridge(0x00, 0x05, [switch((0x00, 2), 0x02, 0x05, [gpu(0x04, "NVIDIA T4 test GPU"),
                                                            nic(0x05, "enp5s0", speed=100000)])], 1),
     hostbridge(0x10, 0x15, [switch((0x10, 2), 0x12, 0x15, [gpu(0x14, "NVIDIA T4 test GPU"),
                                                            nic(0x15, "enp21s0", speed=100000)])], 0),
     hostbridge(0x40, 0x44, [switch((0x40, 2), 0x42, 0x44, [gpu(0x44, "NVIDIA T4 test GPU")])], 1),
     hostbridge(0x50, 0x54, [switch((0x50, 2), 0x52, 0x54, [gpu(0x54, "NVIDIA T4 test GPU")])], 0)],
    """
Test topology, entirely modelled: a machine whose GPU PCI order does NOT follow its NUMA
order. 2 packages x 8 cores x 2 threads (NUMA 0 = CPUs 0-7,16-23, NUMA 1 = 8-15,24-31).
GPU 0 (0000:04) and GPU 2 (0000:44) are on NUMA 1, GPU 1 (0000:14) and GPU 3 (0000:54) on
NUMA 0. NIC enp5s0 shares GPU 0's PCI switch, NIC enp21s0 shares GPU 1's; GPUs 2 and 3
have only a NIC on their NUMA node.
""", gce=False, hostname="numa-interleaved"))

SHAPES.append(Shape(
    "a3-megagpu-8g", "Google Cloud A3 Mega: 8 x H100 80GB, 208 vCPUs, 2 NUMA nodes, "
    "8 GPU NICs and a host NIC (gVNIC, GPUDirect-TCPXO)", 2, 52, 2, 1872,
    a3("a3-megagpu-8g", [0x06, 0x07, 0x0D, 0x0E, 0x86, 0x87, 0x8D, 0x8E]),
    A3_COMMENT.format(name="a3-megagpu-8g",
                      nics="8 GPU NICs enp6s0, enp7s0, enp13s0, enp14s0, enp134s0, enp135s0, "
                           "enp141s0, enp142s0 at 06,07,0d,0e,86,87,8d,8e (Google's TCPXO NIC "
                           "regex); two per PCIe switch, i.e. one per GPU (inference)"), nvlinks=18))



def a3ultra(model):
    """a3-ultragpu-8g / a4-highgpu-8g: GPU pairs at 8f/90, 96/97 (NUMA 0) and
    c4/c5, cb/cc (NUMA 1), each pair below its own PCIe switch and host bridge
    with its two ConnectX-7 RDMA NICs (one per GPU); the gVNICs enp0s19
    (00:13.0) and enp192s20 (c0:14.0)."""
    groups = [(0x8F, 0x90), (0x96, 0x97), (0xC4, 0xC5), (0xCB, 0xCC)]
    bridges = [hostbridge(0x00, 0x13, [nic(0x00, "enp0s19", dev=0x13, speed=200000)], 0)]
    for i, g in enumerate(groups):
        nics = [g[1] + 1, g[1] + 2]
        lo = g[0] - 3
        sw = switch((lo, 2), g[0] - 2, max(nics),
                    [gpu(b, model) for b in g]
                    + [nic(b, "enp%ds0" % b, ids=CX7_VF, speed=400000,
                           rdma="mlx5_%d" % (2 * i + k)) for k, b in enumerate(nics)])
        children = [sw]
        if i == 2:
            children.insert(0, nic(0xC0, "enp192s20", dev=0x14, speed=200000))
            lo = 0xC0
        bridges.append(hostbridge(lo, max(nics), children, 0 if i < 2 else 1))
    return bridges


A3ULTRA_COMMENT = """
Published facts (shared/reference/gcp_nccl.md 1.1-1.3, 2.3; cloud.google.com/compute/docs/gpus and
gpu-network-bandwidth; cluster-toolkit examples/machine-learning/{name}): 8 x {gpu}; 224 vCPUs as
2 sockets x 56 cores x 2 threads (Slurm node_conf CoresPerSocket 56, ThreadsPerCore 2); {mem};
"eight NVIDIA ConnectX-7 NICs and two gVNIC", each CX-7 (an MRDMA virtual function, RoCE, 400 Gbps)
aligned with one GPU and for GPU-to-GPU traffic only, the two gVNICs (enp0s19 and enp192s20 on
Ubuntu/Debian) for the host; NVLink full mesh through NVSwitch: nvidia-smi topo -m shows NV18
between every GPU pair, here hwloc's NVLinkBandwidth matrix of 18 links x 25,000 MB/s (hwloc
counts links so; {linknote}).{gpus}
Modelled: one GPU pair with its two CX-7s per PCIe switch, each switch below its own host bridge,
two per NUMA node (nvidia-smi topo -m on 8-GPU B200 servers shows PIX to the NICs of a GPU's
switch, NODE to the other NICs of its NUMA node, SYS across), the CX-7
interface names (enpNs0 after their bus) and RDMA names (mlx5_0-7 in PCI order), the gVNICs' PCI
slots from their names, bridges and bus numbers, cache sizes, CPU model string, MAC addresses,
GPU UUIDs (not real), memory per NUMA node (half each).
"""

SHAPES.append(Shape(
    "a3-ultragpu-8g", "Google Cloud A3 Ultra: 8 x H200 141GB, 224 vCPUs, 2 NUMA nodes, "
    "8 ConnectX-7 RDMA NICs (one per GPU) and 2 gVNICs, NVSwitch", 2, 56, 2, 2952,
    a3ultra("NVIDIA H200"),
    A3ULTRA_COMMENT.format(name="a3-ultragpu-8g", gpu="H200 141GB", mem="2,952 GB memory",
                           linknote="NVLink 4, as on H100",
                           gpus="\nGPUs at PCI 0000:8f,90,96,97,c4,c5,cb,cc:00.0 (nccl-tests' device listing in\n"
                                "skypilot examples/gcp_gpu_direct_tcpx), the first four on NUMA 0."),
    nvlinks=18))

SHAPES.append(Shape(
    "a4-highgpu-8g", "Google Cloud A4: 8 x B200, 224 vCPUs, 2 NUMA nodes, "
    "8 ConnectX-7 RDMA NICs (one per GPU) and 2 gVNICs, NVSwitch", 2, 56, 2, 3968,
    a3ultra("NVIDIA B200"),
    A3ULTRA_COMMENT.format(name="a4-highgpu-8g", gpu="B200", mem="3,968 GB memory (GCP's machine type "
                           "table; not in shared/reference)",
                           linknote="NVLink 5 links are twice as fast, which this file does not show",
                           gpus="\nGPU PCI addresses are not published: modelled as a3-ultragpu-8g's, the "
                                "first four\non NUMA 0."),
    nvlinks=18))

def a2(gpus_per_numa, vcpus):
    """A2: A100s two per PCIe switch, half on each NUMA node; the single gVNIC
    ens4 at 00:04.0."""
    cores = vcpus // 4
    hbs = []
    for p in range(2):
        base = 0x00 if p == 0 else 0x80
        sws = []
        for s in range(gpus_per_numa // 2):
            sec = base + 0x10 + 0x08 * s
            devs = [gpu(sec + 3, A100), gpu(sec + 4, A100)]
            sws.append(switch((base, 5 + s), sec, sec + 4, devs))
        children = ([nic(0x00, "ens4", dev=4, speed=100000)] if p == 0 else []) + sws
        hbs.append(hostbridge(base, sws[-1]["sub"], children, p))
    return cores, hbs


A2_COMMENT = """
Published facts (shared/reference/gcp_nccl.md 1.1, 1.2): {gpus} x A100 40GB; 96 vCPUs
(Cascade Lake only); {mem} GB memory; one gVNIC, named ens4 at PCI 00:04.0 on Ubuntu/Debian;
up to 100 Gbps; NVLink/NVSwitch between the GPUs ("NVLink Full Mesh @ 600 GBps", GCP comparison
chart): nvidia-smi topo -m shows NV12 between every GPU pair, here hwloc's NVLinkBandwidth matrix
of 12 links x 25,000 MB/s.
Modelled: 2 sockets x 24 cores x 2 threads, one NUMA node per socket with half the GPUs each,
GPUs two per PCIe switch, bus numbers, caches, UUIDs, MACs. GPUs on NUMA 1 have no NIC on
their NUMA node (weft warns about that, as it would on the real machine).
"""

c, hb = a2(4, 96)
SHAPES.append(Shape("a2-highgpu-8g", "Google Cloud A2 High: 8 x A100 40GB, 96 vCPUs, "
                    "2 NUMA nodes, one gVNIC", 2, c, 2, 680, hb, A2_COMMENT.format(gpus=8, mem=680), l3_mb=39,
                    nvlinks=12))
c, hb = a2(8, 96)
SHAPES.append(Shape("a2-megagpu-16g", "Google Cloud A2 Mega: 16 x A100 40GB, 96 vCPUs, "
                    "2 NUMA nodes, one gVNIC", 2, c, 2, 1360, hb, A2_COMMENT.format(gpus=16, mem=1360), l3_mb=39,
                    nvlinks=12))

SHAPES.append(Shape(
    "g2-standard-48", "Google Cloud G2: 4 x L4 24GB, 48 vCPUs, 1 NUMA node, one gVNIC", 1, 24, 2, 192,
    [hostbridge(0x00, 0x08, [nic(0x00, "ens4", dev=4, speed=50000)]
                + [switch((0x00, 5 + i), 0x01 + 2 * i, 0x02 + 2 * i,
                          [gpu(0x02 + 2 * i, "NVIDIA L4")]) for i in range(4)], 0)],
    """
Published facts (shared/reference/gcp_nccl.md 1.1, 1.2): g2-standard-48 = 4 x L4 (24 GB,
PCIe, no NVLink), 48 vCPUs, 192 GB, up to 50 Gbps; gVNIC ens4 at 00:04.0.
Modelled: 1 socket x 24 cores x 2 threads and one NUMA node, each L4 below its own root port,
bus numbers, caches, UUIDs, MACs.
""", l3_mb=39))

SHAPES.append(Shape(
    "n1-standard-32-4xv100", "Google Cloud N1 with 4 x V100 16GB: 32 vCPUs, 1 NUMA node, "
    "a virtio NIC (no gVNIC)", 1, 16, 2, 120,
    [hostbridge(0x00, 0x00, [nic(0x00, "ens4", ids=VIRTIO_NET, dev=4)]
                + [gpu(0x00, "Tesla V100-SXM2-16GB", dev=5 + i) for i in range(4)], 0)],
    """
Published facts (shared/reference/gcp_nccl.md 1.1, 1.2): n1-standard-32 (32 vCPUs, 120 GB)
with 4 x V100 16GB (NVLink ring); first NIC ens4 at 00:04.0, here the default virtio-net
(1af4:1000), not gVNIC, so weft warns that this cloud VM has no gVNIC.
Modelled: 1 socket x 16 cores x 2 threads, one NUMA node, GPUs at 00:05.0-00:08.0 on bus 0,
caches, UUIDs, MACs.
""", l3_mb=39))

SHAPES.append(Shape(
    "n2-standard-16", "Google Cloud N2, CPU only: 16 vCPUs, 1 NUMA node, one gVNIC", 1, 8, 2, 64,
    [hostbridge(0x00, 0x00, [nic(0x00, "ens4", dev=4, speed=32000)], 0)],
    """
Published facts (shared/reference/gcp_nccl.md 1.2): CPU-only N2 shape, 16 vCPUs, 64 GB, with
its gVNIC ens4 at 00:04.0.
Modelled: 1 socket x 8 cores x 2 threads, one NUMA node, caches, MAC, link speed.
""", l3_mb=54))

SHAPES.append(Shape(
    "flat-vm-2numa", "test machine: a VM with 2 NUMA nodes whose PCI devices carry no "
    "locality", 2, 4, 2, 32,
    [hostbridge(0x00, 0x00, [nic(0x00, "ens4", ids=VIRTIO_NET, dev=3)]
                + [gpu(0x00, "NVIDIA T4 test GPU", dev=4 + i) for i in range(2)], None)],
    """
Test topology, entirely modelled: a VM with 2 NUMA nodes whose PCI devices carry no locality
(numa_node -1 in sysfs): the only host bridge hangs off the Machine object, so hwloc gives
every device the whole machine. weft must say so instead of picking NUMA node 0.
""", gce=False, hostname="flat-vm"))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "share", "weft",
                                                                "topologies")
    only = set(sys.argv[2:])
    for s in SHAPES:
        if only and s.name not in only:
            continue
        path = os.path.join(outdir, s.name + ".xml")
        with open(path, "w") as f:
            f.write(s.emit())
        print(path)


if __name__ == "__main__":
    main()
