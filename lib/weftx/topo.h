/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Machine topology: GPUs, NICs, NUMA nodes, packages, cores and processors,
 * and where each GPU and NIC sits (PCI switch, NUMA node, package, cpuset).
 *
 * A weftx_topo is loaded from the live machine or from an hwloc XML file and is
 * read-only afterwards. The structs it hands out belong to it and live until
 * weftx_topo_destroy(). cpusets hold OS processor numbers (as the guest OS
 * numbers them), nodesets NUMA OS indexes, as everywhere in hwloc.
 */
#ifndef WEFTX_TOPO_H
#define WEFTX_TOPO_H

#include <stdio.h>

#include <hwloc.h>

#include <weft/common.h>
#include <weft/errors.h>

typedef struct weftx_topo weftx_topo;

/* Where a device sits relative to another one, nearest first. */
typedef enum weftx_near {
  WEFTX_NEAR_SWITCH = 0,  /* below the same PCI switch (same bridge below the host bridge) */
  WEFTX_NEAR_NUMA = 1,    /* same NUMA node */
  WEFTX_NEAR_PACKAGE = 2, /* same package (socket) */
  WEFTX_NEAR_SYSTEM = 3,  /* anywhere else, or locality unknown */
} weftx_near;

/* The PCI path between two devices, as nvidia-smi topo -m names it, nearest first. */
typedef enum weftx_path {
  WEFTX_PATH_PIX = 0,  /* through at most one PCIe bridge (below one PCIe switch) */
  WEFTX_PATH_PXB = 1,  /* through several PCIe bridges, no host bridge */
  WEFTX_PATH_PHB = 2,  /* through a PCIe host bridge */
  WEFTX_PATH_NODE = 3, /* between host bridges of one NUMA node */
  WEFTX_PATH_SYS = 4,  /* between NUMA nodes, or the locality is unknown */
} weftx_path;

/* numa is -1 both when the device carries no locality and when its nearest CPU-side
 * object spans several NUMA nodes (then package and cpuset still say where it is). */
typedef struct weftx_gpu {
  int index;    /* 0.. in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID) */
  char pci[16]; /* "0000:04:00.0" */
  unsigned vendor_id, device_id;
  char model[96];              /* "" when unknown (from hwloc infos, NVML or CUDA) */
  char uuid[48];               /* "" when unknown */
  unsigned long long memory;   /* bytes; 0 when unknown */
  int numa;                    /* NUMA OS index; -1 when the device carries no locality */
  int package;                 /* package OS index; -1 when unknown */
  int pci_switch;              /* id shared by devices below the same PCI switch (0.., in PCI order
                                   of the topmost bridges below the host bridges); -1 when none */
  hwloc_const_cpuset_t cpuset; /* processors local to the GPU; the whole machine when no locality */
} weftx_gpu;

typedef struct weftx_nic {
  int index;     /* 0.. in PCI bus order */
  char name[32]; /* interface name ("enp6s0"); "" when the topology has none */
  char pci[16];  /* "0000:06:00.0"; "" for a NIC with no PCI device */
  unsigned vendor_id, device_id;
  int gvnic;                     /* 1 for Google's gVNIC (PCI vendor 0x1ae0) */
  char rdma[32];                 /* OpenFabrics device ("mlx5_0"), "" when none */
  unsigned long long speed_mbps; /* 0 when unknown (XML: info LinkSpeed in Mb/s; live: sysfs) */
  int numa;                      /* -1 when no locality */
  int package;
  int pci_switch;
  hwloc_const_cpuset_t cpuset;
} weftx_nic;

typedef struct weftx_numa {
  int os_index;
  int package;               /* -1 when unknown */
  unsigned long long memory; /* bytes local to the node; 0 when unknown */
  hwloc_const_cpuset_t cpuset;
} weftx_numa;

/* weftx_topo_load() flags */
#define WEFTX_TOPO_IGNORE_ENV                                                                      \
  0x1 /* with path == NULL, probe the machine even if WEFT_TOPOLOGY is set */
/* path is an XML export of this very machine (weftrun hands its own to the ranks on its
 * host, which saves each rank the live probe): hwloc treats it as this system, so binding
 * acts and weftx_topo_is_live() is 1, and GPU details come from NVML/CUDA as for a live load.
 * The caller vouches for the file (e.g. by checking weftx_topo_hostname()). */
#define WEFTX_TOPO_THIS_SYSTEM 0x2
/* With path == NULL and no $WEFT_TOPOLOGY: this machine through the per-user topology
 * cache ($XDG_CACHE_HOME/weft, else ~/.cache/weft; WEFT_TOPOLOGY_CACHE=0 turns it off).
 * The cached XML is used only when every part of its key (boot id, hwloc's library
 * and plugins, the PCI devices and their drivers, PCI network interfaces, online
 * CPUs and NUMA nodes, the process's allowed CPUs and cgroup, HWLOC_* and
 * CUDA_VISIBLE_DEVICES, host name, weft's version) is what it is now, and it goes
 * through the same checks as any XML file; otherwise the machine is probed and the
 * cache rewritten (atomically, 0600 in a 0700 directory owned by the user). */
#define WEFTX_TOPO_CACHE 0x4
/* Leave GPU model, UUID and memory to hwloc and the PCI names: never ask NVML or the
 * CUDA runtime, which start the GPU driver (seconds on a large GPU machine). For
 * callers that place ranks, which use none of the three. */
#define WEFTX_TOPO_NO_DETAILS 0x8

/* weftx_topo_cache_state() */
typedef enum weftx_topo_cache_how {
  WEFTX_TOPO_CACHE_OFF = 0,   /* not asked for, turned off, or not possible here */
  WEFTX_TOPO_CACHE_HIT,       /* loaded from the cache */
  WEFTX_TOPO_CACHE_WRITTEN,   /* probed; the cache now holds it */
  WEFTX_TOPO_CACHE_UNWRITTEN, /* probed; the cache could not be written */
} weftx_topo_cache_how;

WEFT_BEGIN_DECLS

/** \brief Load a topology.
 * \param path an hwloc XML file or a topology name (weftx_topo_find()), or NULL for
 *        this machine (then $WEFT_TOPOLOGY names one to use instead, unless
 *        WEFTX_TOPO_IGNORE_ENV).
 * \param why  on failure, a one-line reason naming the file and what to do (may be NULL).
 * \return 0; WEFT_ENOENT (no such file), WEFT_EPARSE (not valid hwloc XML),
 *         WEFT_ETOPO (hwloc failed), WEFT_ENOMEM.
 * An XML file is checked before hwloc parses it (hwloc 2.9 crashes on some
 * damaged files); hwloc's own stderr reports about it are silenced by setting
 * HWLOC_HIDE_ERRORS=2 when unset (not with WEFT_VERBOSE=topo): call it before
 * starting threads. */
int weftx_topo_load(const char *path, unsigned flags, weftx_topo **out, char *why, size_t whylen);
/** \brief Unset what weftx_topo_load() set in the environment for hwloc
 * (HWLOC_HIDE_ERRORS, when the user had not set it), so that a program started
 * afterwards gets the environment it would have had without weft. */
void weftx_topo_env_restore(void);
void weftx_topo_destroy(weftx_topo *t);

/** \brief Write \p t as hwloc XML to \p out: the cache's text when it came from the
 * cache (or was just cached), else hwloc's export.
 * \return 0, WEFT_EIO (write error), WEFT_ENOMEM. */
int weftx_topo_export_xml(const weftx_topo *t, FILE *out);
/** \brief How WEFTX_TOPO_CACHE went for \p t (a weftx_topo_cache_how). */
int weftx_topo_cache_state(const weftx_topo *t);
/** \brief A small text beside the topology in weft's per-user cache ($XDG_CACHE_HOME/weft/NAME,
 * the same directory and rules: the user's own 0600 file in a 0700 directory, off with
 * WEFT_TOPOLOGY_CACHE=0): weftx_cache_get() copies it into \p buf (0) or says there is none
 * usable (-1: off, missing, not private, longer than \p len); weftx_cache_put() replaces it
 * atomically (0 or -1). For facts as costly to learn as the topology, such as the version
 * of the MPI launcher. */
int weftx_cache_get(const char *name, char *buf, size_t len);
int weftx_cache_put(const char *name, const char *text);

/* A topology shipped with weft (or added to its data directory), by name. */
typedef struct weftx_topo_entry {
  char name[128]; /* the file name less ".xml": "a3-highgpu-8g" */
  char desc[256]; /* first line of the comment that ends the file, less a leading
                       "NAME:"; "" when there is none */
} weftx_topo_entry;

/** \brief The directory of named topologies: weftx_datadir()/topologies.
 * \return 0 or WEFT_ERANGE. */
int weftx_topo_dir(char *buf, size_t len);

/** \brief The file weftx_topo_load() reads for \p name: \p name itself when it holds a
 * '/' or exists (a file here wins over a name), else weftx_topo_dir()/NAME, with
 * ".xml" added unless \p name ends with it.
 * \return 0 with the file in \p path; WEFT_ENOENT with a one-line reason that says
 * where it looked, lists the names there and the nearest one; WEFT_ERANGE. */
int weftx_topo_find(const char *name, char *path, size_t len, char *why, size_t whylen);

/** \brief The *.xml files of weftx_topo_dir(), sorted by name, with their descriptions.
 * \p list is allocated by the callee (NULL when empty), free with free().
 * \return 0; WEFT_ENOENT (the directory cannot be read) with a reason; WEFT_ENOMEM. */
int weftx_topo_list(weftx_topo_entry **list, int *n, char *why, size_t whylen);

/** \brief "live" or the XML path it was loaded from. */
const char *weftx_topo_source(const weftx_topo *t);
/** \brief 1 when the topology is this machine's own (binding it is meaningful). */
int weftx_topo_is_live(const weftx_topo *t);
/** \brief The underlying hwloc topology (read-only; belongs to \p t). */
hwloc_topology_t weftx_topo_hwloc(const weftx_topo *t);
/** \brief The machine's hostname recorded in the topology, or "" when unknown. */
const char *weftx_topo_hostname(const weftx_topo *t);

int weftx_topo_ngpus(const weftx_topo *t);
const weftx_gpu *weftx_topo_gpu(const weftx_topo *t, int i);
int weftx_topo_nnics(const weftx_topo *t);
const weftx_nic *weftx_topo_nic(const weftx_topo *t, int i);
/** \brief The NIC whose interface name is \p name, or NULL. */
const weftx_nic *weftx_topo_nic_by_name(const weftx_topo *t, const char *name);
int weftx_topo_nnuma(const weftx_topo *t);
const weftx_numa *weftx_topo_numa(const weftx_topo *t, int i);
int weftx_topo_npackages(const weftx_topo *t);
int weftx_topo_ncores(const weftx_topo *t);
int weftx_topo_npus(const weftx_topo *t);
/** \brief All processors of the machine. */
hwloc_const_cpuset_t weftx_topo_cpuset(const weftx_topo *t);

/** \brief 0 when PCI devices carry no locality (a flat VM: numa_node -1 and
 * every device attached to the machine root), 1 otherwise. */
int weftx_topo_has_locality(const weftx_topo *t);

/** \brief How near NIC \p nic is to GPU \p gpu (indexes). */
weftx_near weftx_topo_gpu_nic_near(const weftx_topo *t, int gpu, int nic);
/** \brief How near GPU \p a is to GPU \p b. */
weftx_near weftx_topo_gpu_gpu_near(const weftx_topo *t, int a, int b);
/** \brief How near NIC \p a is to NIC \p b. */
weftx_near weftx_topo_nic_nic_near(const weftx_topo *t, int a, int b);

/** \brief The PCI path between GPUs \p a and \p b, GPU \p gpu and NIC \p nic, NICs \p a and \p b
 * (indexes), from hwloc's PCI tree: PIX, PXB, PHB below a common bridge, else NODE or SYS. */
weftx_path weftx_topo_gpu_gpu_path(const weftx_topo *t, int a, int b);
weftx_path weftx_topo_gpu_nic_path(const weftx_topo *t, int gpu, int nic);
weftx_path weftx_topo_nic_nic_path(const weftx_topo *t, int a, int b);
/** \brief nvidia-smi's label of \p p: "PIX", "PXB", "PHB", "NODE", "SYS". */
const char *weftx_path_label(weftx_path p);
/** \brief NVLinks between GPUs \p a and \p b (through NVSwitch counted as nvidia-smi counts
 * them: NV18 on an H100 machine), from hwloc's NVLinkBandwidth matrix; 0 when none is known
 * (no NVLink, or hwloc without its NVML backend on a live machine). */
int weftx_topo_gpu_nvlinks(const weftx_topo *t, int a, int b);

/** \brief Warnings found at load time ("PCI devices carry no NUMA locality ...",
 * "GPU 3 has no NIC on its PCI switch or NUMA node", "no gVNIC on a cloud VM").
 * Each is one sentence; they belong to \p t. */
int weftx_topo_nwarnings(const weftx_topo *t);
const char *weftx_topo_warning(const weftx_topo *t, int i);

/** \brief Format a cpuset as OS processor ranges ("0-12,104-116"); "" for an empty set.
 * \return 0 or WEFT_ERANGE when \p buf is too small. */
int weftx_cpuset_format(hwloc_const_bitmap_t set, char *buf, size_t len);

WEFT_END_DECLS

#endif /* WEFTX_TOPO_H */
