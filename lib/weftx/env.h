/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The environment of a rank: an ordered KEY=VALUE list that remembers where
 * each value came from, the per-rank variables as a pure function, the
 * forwarding rules of weftrun (-x and default patterns), and the choice of the
 * network interface, MASTER_ADDR and MASTER_PORT.
 *
 * Precedence, everywhere: what the user set (the launching environment, as
 * forwarded, and -x) is never overwritten by what weft computes. weftrun fills
 * a weftx_env with the user's variables first, then lets weftx_rank_env() add
 * its own with "set unless present"; --dry-run prints the origin of each.
 */
#ifndef WEFTX_ENV_H
#define WEFTX_ENV_H

#include <weft/common.h>
#include <weft/errors.h>
#include <weftx/map.h>
#include <weftx/topo.h>

/* Where a variable's value came from. */
typedef enum weftx_env_origin {
  WEFTX_ENV_USER = 0, /* the user's environment (forwarded by pattern, or imported) */
  WEFTX_ENV_XARG,     /* -x VAR or -x VAR=VALUE */
  WEFTX_ENV_WEFT,     /* computed by weft (rank, GPU, interface, ...) */
  WEFTX_ENV_PRESET,   /* an NCCL preset; the detail names it */
  WEFTX_ENV_MCA,      /* derived from an --mca option */
} weftx_env_origin;

typedef struct weftx_env weftx_env;

WEFT_BEGIN_DECLS

/* --- The list ------------------------------------------------------------ */

/** \brief An empty list, allocated by the callee; free with weftx_env_destroy().
 * \return 0 or WEFT_ENOMEM. */
int weftx_env_create(weftx_env **out);
/** \brief Free \p e and its strings (NULL is fine). */
void weftx_env_destroy(weftx_env *e);

/** \brief Is \p key a valid variable name ([A-Za-z_][A-Za-z0-9_]*, at most 255 chars)? 1 or 0. */
int weftx_env_key_valid(const char *key);

/** \brief Set \p key to \p value, replacing any value and origin (keeps its position).
 * \param detail free text shown with the origin ("a3-highgpu", "--mca btl tcp"), may be NULL; copied.
 * \return 0; WEFT_EINVAL (bad key, NULL value); WEFT_ENOMEM. */
int weftx_env_set(weftx_env *e, const char *key, const char *value, weftx_env_origin origin,
                  const char *detail);
/** \brief Set \p key unless it is already in \p e (whoever set it wins).
 * \return 0 when set, 1 when an existing value was kept; WEFT_EINVAL; WEFT_ENOMEM. */
int weftx_env_set_default(weftx_env *e, const char *key, const char *value, weftx_env_origin origin,
                          const char *detail);
/** \brief As weftx_env_set() from "KEY=VALUE". \return 0, WEFT_EPARSE (no '=' or bad key), WEFT_ENOMEM. */
int weftx_env_put(weftx_env *e, const char *kv, weftx_env_origin origin, const char *detail);
/** \brief The value of \p key, or NULL. Belongs to \p e, valid until \p key changes. */
const char *weftx_env_get(const weftx_env *e, const char *key);
/** \brief Remove \p key. \return 0 when removed, 1 when it was not there. */
int weftx_env_unset(weftx_env *e, const char *key);
/** \brief Number of variables. */
int weftx_env_count(const weftx_env *e);
/** \brief The index of \p key in insertion order (for weftx_env_entry()), or -1. */
int weftx_env_index(const weftx_env *e, const char *key);
/** \brief Keep the first \p n variables (insertion order), remove the others. */
void weftx_env_truncate(weftx_env *e, int n);
/** \brief Variable \p i in insertion order; any out pointer may be NULL. Strings belong to \p e.
 * \return 0, or WEFT_EINVAL when \p i is out of range. */
int weftx_env_entry(const weftx_env *e, int i, const char **key, const char **value,
                    weftx_env_origin *origin, const char **detail);
/** \brief Origin of \p key (WEFT_EINVAL when absent: check with weftx_env_get()). */
int weftx_env_origin_of(const weftx_env *e, const char *key, weftx_env_origin *origin);
/** \brief "user", "-x", "weft", "preset", "mca". */
const char *weftx_env_origin_name(weftx_env_origin o);
/** \brief "user", "-x", "weft", "preset a3-highgpu": the origin with its detail, into \p buf.
 * \return 0 or WEFT_ERANGE. */
int weftx_env_describe(const weftx_env *e, int i, char *buf, size_t len);

/** \brief Add every "KEY=VALUE" of \p envp (NULL-terminated, as environ) with \p origin,
 * overwriting. Entries without '=' or with invalid names are skipped.
 * \return 0 or WEFT_ENOMEM. */
int weftx_env_import(weftx_env *e, char *const *envp, weftx_env_origin origin);
/** \brief A NULL-terminated "KEY=VALUE" array of \p e, allocated by the callee (one
 * block), for execve(); free with free(). \return 0 or WEFT_ENOMEM. */
int weftx_env_to_envp(const weftx_env *e, char ***envp);
/** \brief Make \p e this process's whole environment (for weft-rank before exec): a
 * variable of environ that \p e does not hold is gone. \return 0 or WEFT_ENOMEM. */
int weftx_env_apply(const weftx_env *e);

/* --- Forwarding (weftrun) --------------------------------------------------- */

/** \brief Is \p key forwarded by default: NCCL_*, GLOO_*, CUDA_*, WEFT_*, OMP_*, PYTHON*,
 * LD_LIBRARY_PATH, PATH? 1 or 0. (OMPI_* goes through Open MPI itself.) */
int weftx_env_forward_default(const char *key);
/** \brief Add every variable of \p envp that weftx_env_forward_default() accepts,
 * with origin WEFTX_ENV_USER. \return 0 or WEFT_ENOMEM. */
int weftx_env_forward(weftx_env *e, char *const *envp);
/** \brief One -x argument as mpirun reads it: "VAR=VALUE" sets VAR to VALUE (everything
 * after the first '='; no quoting); "VAR" forwards VAR's value from \p envp.
 * Origin WEFTX_ENV_XARG, overwriting.
 * \return 0; WEFT_EPARSE (bad name) with a reason; WEFT_ENOENT when "VAR" is not set in
 *         \p envp (mpirun warns and goes on: so may the caller) with a reason; WEFT_ENOMEM. */
int weftx_env_add_x(weftx_env *e, const char *arg, char *const *envp, char *why, size_t whylen);

/* --- The per-rank environment (pure) --------------------------------------- */

typedef enum weftx_gpu_visibility {
  WEFTX_GPUVIS_ALL = 0, /* every GPU visible, ordered so that device LOCAL_RANK is the rank's GPU */
  WEFTX_GPUVIS_OWN,     /* only the rank's GPU ("" when it has none) */
  WEFTX_GPUVIS_NONE,    /* CUDA_VISIBLE_DEVICES left alone */
} weftx_gpu_visibility;

/** \brief Parse "all", "own", "none". \return 0 or WEFT_EPARSE. */
int weftx_gpu_visibility_parse(const char *s, weftx_gpu_visibility *out);

#define WEFTX_RANK_CPUS_MAX 1024

/* Everything weftx_rank_env() needs. Initialise with weftx_rank_info_init(); fill
 * the placement fields from a weftx_place with weftx_rank_info_set_place(). */
typedef struct weftx_rank_info {
  int rank, size;             /* RANK, WORLD_SIZE */
  int local_rank, local_size; /* LOCAL_RANK, LOCAL_WORLD_SIZE */
  int node_rank, nnodes;      /* NODE_RANK = GROUP_RANK, GROUP_WORLD_SIZE */
  const char *master_addr;    /* MASTER_ADDR; NULL: not set */
  int master_port;            /* MASTER_PORT; 0: not set */
  const char *run_id;         /* TORCHELASTIC_RUN_ID, the same on every rank; NULL: "none",
                               * torchrun's own when it has no rendezvous id */
  const char *ifname;         /* NCCL_SOCKET_IFNAME (the interface weft chose); NULL: not set */
  const char *restart_count;  /* TORCHELASTIC_RESTART_COUNT (weftrun's WEFT_RESTART_COUNT); NULL:
                               * not set */
  const char *max_restarts;   /* TORCHELASTIC_MAX_RESTARTS (WEFT_MAX_RESTARTS); NULL: not set */
  weftx_gpu_visibility gpu_visibility;
  /* Placement: */
  int ngpus;          /* GPUs on this host (0 when none) */
  int gpu;            /* the rank's GPU index (PCI bus order), -1 for none; with
                               * devices, the rank's GPU as this process numbers it */
  const int *devices; /* the GPUs the rank may see, as CUDA numbers them in this
                               * process (a Slurm job's, renumbered from 0 under device
                               * cgroups), in PCI order; NULL for 0..ngpus-1 */
  int ndevices;
  int ncores;                     /* cores bound: OMP_NUM_THREADS; 0: not set */
  char cpus[WEFTX_RANK_CPUS_MAX]; /* WEFT_CPUS "0-12,26"; "": not set */
  char nic[32];                   /* WEFT_NIC "enp6s0"; "": the rank has no NIC */
  char gpu_pci[32];               /* WEFT_GPU_PCI "0000:04:00.0": the topology's PCI address of
                               * the rank's GPU (whatever numbering gpu is in); "": none */
} weftx_rank_info;

/** \brief Zero \p ri, with gpu -1 and visibility all. */
void weftx_rank_info_init(weftx_rank_info *ri);
/** \brief Fill ngpus, gpu, gpu_pci, ncores, cpus, nic of \p ri from a placement on \p t.
 * \return 0, or WEFT_ERANGE when the cpuset does not fit WEFTX_RANK_CPUS_MAX. */
int weftx_rank_info_set_place(weftx_rank_info *ri, const weftx_topo *t, const weftx_place *pl);

/** \brief CUDA_VISIBLE_DEVICES for a rank under \p mode, into \p buf.
 *  - all: every GPU 0..ngpus-1, the rank's GPU \p gpu moved to position \p local_rank and
 *    the others in order around it (8 GPUs, local rank 3 owns GPU 3: "0,1,2,3,4,5,6,7";
 *    local rank 0 owns GPU 5: "5,0,1,2,3,4,6,7"). When local_rank >= ngpus the GPU goes
 *    first. A rank without a GPU gets "" in buf and 1 is returned (leave the variable unset).
 *  - own: "g"; "" for a rank without a GPU (it sees none).
 *  - none: nothing to set (returns 1).
 *  With ngpus 0 nothing is set (returns 1).
 * \return 0 when \p buf holds the value to set, 1 when the variable is to be left alone,
 *         WEFT_EINVAL (gpu >= ngpus), WEFT_ERANGE (buf too small). */
int weftx_cuda_visible_devices(weftx_gpu_visibility mode, int ngpus, int gpu, int local_rank,
                               char *buf, size_t len);
/** \brief As weftx_cuda_visible_devices() over the \p n devices \p ids (in order)
 * instead of 0..ngpus-1: all gives \p ids with \p gpu (one of them, or -1) moved to
 * position \p local_rank, own gives \p gpu. \return as weftx_cuda_visible_devices();
 * WEFT_EINVAL when \p gpu is not one of \p ids. */
int weftx_cuda_visible_list(weftx_gpu_visibility mode, const int *ids, int n, int gpu,
                            int local_rank, char *buf, size_t len);

/** \brief Add the per-rank variables to \p env, each only when \p env does not already
 * hold it (fill \p env with the user's variables first): RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
 * CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA_VISIBLE_DEVICES (weftx_cuda_visible_list() over
 * ri->devices),
 * OMP_NUM_THREADS, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME (PyTorch's gloo: the value
 * NCCL_SOCKET_IFNAME ends up with, whoever set it, less NCCL's leading '='; not for an
 * exclusion list "^..."), WEFT_GPU (index or -1), WEFT_GPU_PCI (ri->gpu_pci, when the
 * rank has a GPU and WEFT_GPU is weft's own: beside a WEFT_GPU the user set it could name
 * another GPU), WEFT_CPUS, WEFT_NIC (when the rank has one), WEFT_LOCAL_RANK,
 * WEFT_LOCAL_SIZE, WEFT_NODE_RANK, WEFT_NNODES.
 * All with origin WEFTX_ENV_WEFT.
 * \return 0; WEFT_EINVAL (inconsistent ranks/sizes) with a reason; WEFT_ENOMEM. */
int weftx_rank_env(weftx_env *env, const weftx_rank_info *ri, char *why, size_t whylen);

/* --- Network interface, MASTER_ADDR and MASTER_PORT ----------------------- */

/* One address of one interface (getifaddrs() gives one per address). */
typedef struct weftx_netif {
  char name[32];          /* "ens4" */
  int family;             /* AF_INET or AF_INET6 */
  unsigned char addr[16]; /* network byte order; 4 bytes used for AF_INET */
  int prefixlen;          /* 24 for 255.255.255.0 */
  unsigned flags;         /* IFF_UP, IFF_LOOPBACK, IFF_RUNNING (net/if.h) */
} weftx_netif;

/* An address to reach (a host of the job, resolved). */
typedef struct weftx_netaddr {
  int family; /* AF_INET or AF_INET6 */
  unsigned char addr[16];
} weftx_netaddr;

/** \brief Fill \p nif from "10.0.0.5/24" or "fe80::1/64" (for tests and --mca-style input).
 * \return 0 or WEFT_EPARSE. */
int weftx_netif_make(weftx_netif *nif, const char *name, const char *cidr, unsigned flags);
/** \brief Fill \p a from a numeric address "10.0.0.7" or "fe80::1". \return 0 or WEFT_EPARSE. */
int weftx_netaddr_parse(weftx_netaddr *a, const char *s);
/** \brief Text of an address ("10.0.0.5"). \return 0 or WEFT_ERANGE. */
int weftx_netaddr_format(int family, const unsigned char *addr, char *buf, size_t len);

/** \brief 1 for interfaces never chosen for the job's traffic: lo*, docker*, veth*,
 * virbr*, br-*, cni*, flannel*, cali*, tun*, tap*; else 0. */
int weftx_netif_excluded(const char *name);
/** \brief Does \p nif's subnet contain \p a (same family, same first prefixlen bits)? 1 or 0. */
int weftx_netif_contains(const weftx_netif *nif, const weftx_netaddr *a);

/** \brief Choose the interface for the job (pure).
 * Candidates are the up, non-excluded entries of \p ifs. Each scores one point per target
 * in its subnet and one per target whose route (\p routes[k], the interface name the kernel
 * would send target k out of; NULL array or NULL entry: unknown) names it. The highest score
 * wins; ties go to \p default_if (the default route's interface, may be NULL), then to IPv4,
 * then to the first. With no targets (a single-host job) \p default_if wins if it is a
 * candidate, else the first candidate, else the loopback entry. Targets that are loopback
 * addresses are ignored.
 * \param[out] index  the chosen entry of \p ifs.
 * \return 0; WEFT_ENOENT with a reason ("no interface other than lo, docker*, ... is up;
 *         name one with NCCL_SOCKET_IFNAME") when none fits. */
int weftx_netif_choose(const weftx_netif *ifs, int nifs, const weftx_netaddr *targets,
                       const char *const *routes, int ntargets, const char *default_if, int *index,
                       char *why, size_t whylen);

/** \brief This machine's interface addresses (getifaddrs(), AF_INET and AF_INET6 only),
 * allocated by the callee; free with free(). \return 0, WEFT_ESYS, WEFT_ENOMEM. */
int weftx_netif_list(weftx_netif **ifs, int *n);
/** \brief Name of the interface of the IPv4 default route (/proc/net/route) into \p buf;
 * "" when there is none. \return 0, or WEFT_EIO when the file cannot be read. */
int weftx_netif_default_route(char *buf, size_t len);
/** \brief Resolve \p host (getaddrinfo(), AF_UNSPEC, first IPv4 answer preferred).
 * \return 0; WEFT_ENAME with "cannot resolve host 'x': ...; check the name or /etc/hosts". */
int weftx_host_resolve(const char *host, weftx_netaddr *out, char *why, size_t whylen);
/** \brief Resolve \p n host names at once (getaddrinfo_a()), waiting at most \p timeout
 * seconds in all. \p out[i] gets host i's address (first IPv4, else IPv6) and \p err[i]
 * 0, or getaddrinfo's error (EAI_NONAME: no such host; EAI_AGAIN: no answer in time),
 * which gai_strerror() words. \return 0; WEFT_ETIMEDOUT (some did not answer in time,
 * \p why names one); WEFT_ENOMEM. */
int weftx_hosts_resolve(const char *const *hosts, int n, double timeout, weftx_netaddr *out,
                        int *err, char *why, size_t whylen);
/** \brief The interface the kernel would use to reach \p a (a connected UDP socket's
 * getsockname(): no packet is sent), matched against \p ifs. \return 0 with the name in
 * \p buf, WEFT_ENOENT (no route / no match), WEFT_ESYS. */
int weftx_netif_route_to(const weftx_netif *ifs, int nifs, const weftx_netaddr *a, char *buf,
                         size_t len);
/** \brief Is \p a one of this machine's addresses (in \p ifs) or a loopback address? 1 or 0. */
int weftx_netaddr_is_local(const weftx_netif *ifs, int nifs, const weftx_netaddr *a);

/** \brief The probing wrapper: list interfaces, resolve \p hosts, route to each, read the
 * default route, and weftx_netif_choose(). Names of this host are skipped as targets.
 * \param[out] ifname  the chosen interface ("ens4"). \param[out] addr its address ("10.0.0.5").
 * \return 0; WEFT_ENAME (a host does not resolve), WEFT_ENOENT, WEFT_ESYS, with a reason. */
int weftx_netif_pick(const char *const *hosts, int nhosts, char *ifname, size_t iflen, char *addr,
                     size_t addrlen, char *why, size_t whylen);

/** \brief MASTER_ADDR for a job whose first host is \p first_host: the address of the chosen
 * interface \p chosen_addr when \p first_host is this machine (by name or address), else
 * \p first_host resolved (preferring an address in the chosen interface's subnet when the
 * name has several); "127.0.0.1" for a single-host local job when \p chosen_addr is NULL.
 * \return 0; WEFT_ENAME (does not resolve); WEFT_ERANGE. */
int weftx_master_addr(const char *first_host, const char *chosen_addr, char *buf, size_t len,
                      char *why, size_t whylen);

/* MASTER_PORT range: deterministic candidates from a job id, WEFTX_PORT_BASE..+WEFTX_PORT_SPAN-1. */
#define WEFTX_PORT_BASE 29500
#define WEFTX_PORT_SPAN 2000
#define WEFTX_PORT_TRIES 64

/** \brief The \p attempt-th candidate port for \p jobid (pure): WEFTX_PORT_BASE +
 * (jobid + attempt) mod WEFTX_PORT_SPAN. */
int weftx_port_candidate(unsigned long jobid, int attempt);
/** \brief A TCP port free on THIS host (the launching host: the check cannot see the
 * first host when that is another machine). With \p jobid 0 the kernel picks one (bind
 * port 0); else the first of WEFTX_PORT_TRIES candidates that binds.
 * \return 0; WEFT_ESYS / WEFT_ENOENT (none free) with a reason. */
int weftx_master_port(unsigned long jobid, int *port, char *why, size_t whylen);

WEFT_END_DECLS

#endif /* WEFTX_ENV_H */
