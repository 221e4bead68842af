/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Google Cloud: the GCE metadata server, machine families and their NCCL
 * presets, GPU-NIC discovery, checks, preemption watch and host order.
 *
 * Whether the machine is a GCE VM is decided from DMI first
 * (/sys/class/dmi/id/product_name is "Google Compute Engine"); off GCE no
 * metadata request is ever made, unless GCE_METADATA_HOST (host[:port]) names
 * a metadata server, as in Google's own client libraries. Tests point
 * WEFT_GCP_SYSROOT at a fake tree that holds sys/class/dmi and sys/class/net,
 * and GCE_METADATA_HOST at a fake server.
 */
#ifndef WEFTX_GCP_H
#define WEFTX_GCP_H

#include <signal.h>

#include <weft/common.h>
#include <weft/errors.h>
#include <weftx/env.h>

/* Signal sent to the local ranks on a preemption notice, then SIGKILL after the
 * agent's grace period (Spot VMs get 30 s from the notice to power-off). */
#define WEFTX_PREEMPT_SIGNAL SIGTERM

/* Grace period between WEFTX_PREEMPT_SIGNAL and SIGKILL (weftrun --preempt-grace),
 * and the time a Spot VM has from the notice to power-off. */
#define WEFTX_PREEMPT_GRACE_S 5
#define WEFTX_PREEMPT_GRACE_MAX_S 30

#define WEFTX_GCP_MAX_NICS 16

WEFT_BEGIN_DECLS

/* ---- Metadata server --------------------------------------------------- */

typedef struct weftx_gcp_md weftx_gcp_md;

/** \brief 1 when DMI says this is a GCE VM ($WEFT_GCP_SYSROOT/sys/class/dmi/id/product_name). */
int weftx_gcp_dmi_is_gce(void);

/** \brief Open a metadata client. Makes no request.
 * \return 0; WEFT_ENOTGCE when DMI says this is no GCE VM and GCE_METADATA_HOST
 * is unset; WEFT_ENOCURL in a build without libcurl or when libcurl.so.4
 * cannot be loaded (it is opened on first use, never off GCE); WEFT_ENOMEM.
 * The handle is allocated by the callee, free with weftx_gcp_md_close(). One
 * handle per thread. */
int weftx_gcp_md_open(weftx_gcp_md **md);
void weftx_gcp_md_close(weftx_gcp_md *md);

/** \brief The metadata URL base in use ("http://HOST/computeMetadata/v1/"). */
const char *weftx_gcp_md_base(const weftx_gcp_md *md);

/** \brief GET \p path (relative to computeMetadata/v1/, e.g. "instance/zone").
 * Retries 503/5xx/429 and connection failures with bounded backoff (5 tries, under 4 s).
 * \p value is allocated by the callee, free with free(); \p etag (may be NULL)
 * receives the ETag header. \return 0; WEFT_ENOENT for 404; WEFT_EHTTP;
 * WEFT_ETIMEDOUT. */
int weftx_gcp_md_get(weftx_gcp_md *md, const char *path, char **value, char *etag, size_t etaglen);

/** \brief Long-poll \p path with wait_for_change=true: returns when the value's
 * ETag differs from \p last_etag (at once when it already differs, "0" for
 * instance; NULL: at the next change), or after \p timeout_sec seconds with
 * the unchanged value and ETag, as the server answers then.
 * Ownership as weftx_gcp_md_get(). \return as weftx_gcp_md_get(). */
int weftx_gcp_md_wait(weftx_gcp_md *md, const char *path, const char *last_etag, int timeout_sec,
                      char **value, char *etag, size_t etaglen);

/* ---- Detection --------------------------------------------------------- */

typedef struct weftx_gcp_nic {
  int index;    /* instance/network-interfaces/<index> */
  char mac[18]; /* lower case */
  char ip[64];
  char network[160]; /* projects/N/networks/NAME */
  char ifname[32];   /* matched /sys/class/net name, "" when none */
  char pci[16];      /* PCI_SLOT_NAME ("0000:06:00.0"), "" when unknown */
  int mtu;           /* -1 when unknown */
  int gvnic;         /* 1: driver gve or PCI vendor 0x1ae0; 0: other; -1: unknown */
  int gpu;           /* 1 for a GPU-data NIC, 0 for a host NIC */
} weftx_gcp_nic;

/* What one VM says about itself. Filled by weftx_gcp_detect(); plain data. */
typedef struct weftx_gcp_info {
  int on_gce;
  char machine_type[64]; /* basename: "a3-highgpu-8g" */
  char zone[64];         /* basename: "us-central1-a" */
  char hostname[256];
  char physical_host[256]; /* "/cluster/rack/host", "" without compact placement */
  int preemptible;         /* scheduling/preemptible is TRUE */
  const char *family;      /* family name (static), NULL when unknown */
  int nnics;
  weftx_gcp_nic nics[WEFTX_GCP_MAX_NICS]; /* host NICs first, then GPU NICs in PCI order */
} weftx_gcp_info;

/** \brief Fill \p info: on_gce = 0 and return 0 off GCE (no request made);
 * otherwise the metadata keys above and the NICs matched by MAC.
 * \return 0, or a negative code with a one-line reason in \p why. */
int weftx_gcp_detect(weftx_gcp_info *info, char *why, size_t whylen);

/** \brief The cheap part of weftx_gcp_detect(): only on_gce, machine_type, family
 * and physical_host (two requests; none off GCE, where on_gce is 0 and 0 is
 * returned). For weftrun's probe of every host. \return as weftx_gcp_detect(). */
int weftx_gcp_identify(weftx_gcp_info *info, char *why, size_t whylen);

/** \brief Match info->nics' MACs to $WEFT_GCP_SYSROOT/sys/class/net/ * /address,
 * read MTU, PCI slot and driver, mark GPU NICs for info->family and sort them by
 * PCI slot. weftx_gcp_detect() calls it; tests call it on a filled info. */
int weftx_gcp_nics_match(weftx_gcp_info *info);

/* ---- Families ---------------------------------------------------------- */

/** \brief Family of a machine type ("a3-highgpu-8g", "projects/1/machineTypes/g2-standard-24"):
 * "n1", "a2", "g2", "a3-highgpu-small", "a3-highgpu-8g", "a3-edgegpu-8g",
 * "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"; NULL when unknown.
 * The string is static. */
const char *weftx_gcp_family(const char *machine_type);

/** \brief Host (not GPU-data) NICs of a family: 2 on A3 Ultra and A4, else 1. */
int weftx_gcp_family_host_nics(const char *family);

/* ---- Presets ----------------------------------------------------------- */

typedef struct weftx_preset weftx_preset;

/* One variable of a resolved preset. */
typedef struct weftx_preset_var {
  const char *key;
  const char *value;  /* placeholders filled */
  int prepend;        /* 1: prepend value to a ':' list (LD_LIBRARY_PATH) */
  const char *source; /* "preset a3-highgpu-8g" or "... (/var/lib/tcpxo/.../nccl-env-profile.sh)" */
  const char
    *unresolved; /* weftx_preset_preview() only: why a placeholder is left in value; else NULL */
} weftx_preset_var;

/** \brief Load preset \p name: a family name ("a3-highgpu-8g", read from
 * weftx_datadir()/presets/NAME.preset) or a path containing '/'.
 * \return 0; WEFT_ENAME (unknown name); WEFT_EPARSE with "file:line: reason" in \p why.
 * Allocated by the callee, free with weftx_preset_free(). */
int weftx_preset_load(const char *name, weftx_preset **p, char *why, size_t whylen);
void weftx_preset_free(weftx_preset *p);

/** \brief The --nccl-preset choice: "none" and "auto" on a single-VM job or off
 * GCE or an unknown family give *p = NULL and 0; "auto" otherwise loads the
 * family's preset; any other word is a preset name for weftx_preset_load(). */
int weftx_preset_select(const char *arg, const weftx_gcp_info *info, int multi_vm, weftx_preset **p,
                        char *why, size_t whylen);

const char *weftx_preset_name(const weftx_preset *p);
/** \brief The preset's reserve-cpus list ("8-35,112-139"), for weftx_policy.reserved_cpus; NULL when none. */
const char *weftx_preset_reserved_cpus(const weftx_preset *p);
/** \brief MTU the GPU NICs need, 0 when the preset says nothing. */
int weftx_preset_mtu(const weftx_preset *p);

/** \brief Resolve the preset for this VM: fill @host_nic@, @host_nics@,
 * @gpu_nics@ and @gpu_nicN@ from \p info (which may be NULL off GCE), and take
 * the values of the family's profile script when it is installed. Variables
 * named in \p user_set (NULL-terminated "KEY" or "KEY=VALUE" strings; may be
 * NULL) are left out: the user's own values win.
 * \p vars belongs to \p p and stays valid until the next resolve or free.
 * \return 0; WEFT_ENOENT with the missing NIC and the fix in \p why. */
int weftx_preset_resolve(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                         const weftx_preset_var **vars, int *nvars, char *why, size_t whylen);

/** \brief As weftx_preset_resolve(), but a placeholder this VM cannot fill (off GCE, a
 * NIC it lacks) is no error: the variable keeps the file's value ("@host_nic@") and its
 * unresolved says why, for --dry-run, which shows every variable the ranks will get
 * while each host resolves them on its own.
 * \return 0; WEFT_ENOMEM; WEFT_EPARSE or WEFT_ERANGE for a malformed value. */
int weftx_preset_preview(weftx_preset *p, const weftx_gcp_info *info, const char *const *user_set,
                         const weftx_preset_var **vars, int *nvars, char *why, size_t whylen);

/** \brief Resolve \p p for this VM (\p info may be NULL off GCE) and add its
 * variables to \p env with origin WEFTX_ENV_PRESET and the preset's name as
 * detail, each only when \p env does not hold it yet: fill \p env with the
 * user's variables first, then apply the preset, then weftx_rank_env().
 * A prepend-path variable (LD_LIBRARY_PATH) is put in front of a forwarded
 * value, but a value given with -x is left alone.
 * \return 0, or as weftx_preset_resolve(). */
int weftx_preset_apply(weftx_preset *p, const weftx_gcp_info *info, weftx_env *env, char *why,
                       size_t whylen);

/** \brief What weftrun and weft-rank call for --nccl-preset \p arg (NULL: auto):
 * detect this VM unless \p arg is "none" (or "auto" on a single-VM job), then
 * weftx_preset_select(). For "auto" a detection failure or a machine type
 * without a preset is not an error: *p is NULL and \p why holds a warning to
 * print ("" when there is nothing to say). For a family name the preset loads even off GCE (resolving
 * then says which NIC it misses). \p info is filled (on_gce 0 when unknown).
 * \return 0; WEFT_ENAME / WEFT_EPARSE for a bad preset name or file, with \p why. */
int weftx_gcp_job_preset(const char *arg, int multi_vm, weftx_gcp_info *info, weftx_preset **p,
                         char *why, size_t whylen);

/* ---- Checks ------------------------------------------------------------ */

typedef void (*weftx_gcp_warn_fn)(void *arg, const char *msg);

/** \brief Check this VM against preset \p p (may be NULL): network plugin
 * library missing, gVNIC absent, GPU-NIC MTU too small, no compact placement
 * (multi-VM only). Calls \p warn once per problem with one line that says the
 * fix. \return the number of warnings. */
int weftx_gcp_check(const weftx_gcp_info *info, const weftx_preset *p, int multi_vm,
                    weftx_gcp_warn_fn warn, void *arg);

/** \brief Google Cloud advice about topology \p t (today: a GCE VM without gVNIC), given
 * only when \p t is this machine and DMI says it is a GCE VM (weftx_gcp_dmi_is_gce()),
 * or \p t is a file whose recorded DMI product name is Google Compute Engine; a file
 * is spoken of as "this topology file models ...". Calls \p warn once per piece of
 * advice. \return the number of warnings. */
int weftx_gcp_topo_check(const weftx_topo *t, weftx_gcp_warn_fn warn, void *arg);

/** \brief Warn when the \p n hosts of a job have different machine types
 * (NULL or "" entries are unknown and ignored). \return 1 when mixed, else 0. */
int weftx_gcp_check_mixed(const char *const *hosts, const char *const *machine_types, int n,
                          weftx_gcp_warn_fn warn, void *arg);

/* ---- Preemption -------------------------------------------------------- */

typedef struct weftx_gcp_watch weftx_gcp_watch;

/* Called once, from the watcher's thread, with what ("preempted" or
 * "maintenance-event") and the new value ("TRUE", "TERMINATE_ON_HOST_MAINTENANCE"). */
typedef void (*weftx_gcp_preempt_fn)(void *arg, const char *what, const char *value);

/** \brief Start a thread that long-polls instance/preempted and
 * instance/maintenance-event (wait_for_change with ETags) and calls \p cb on
 * the first notice. \return 0; WEFT_ENOTGCE off GCE; WEFT_ENOCURL; WEFT_ESYS.
 * Allocated by the callee, free with weftx_gcp_watch_stop(). */
int weftx_gcp_watch_start(weftx_gcp_watch **w, weftx_gcp_preempt_fn cb, void *arg);

/** \brief Stop the watcher (within about 100 ms) and free it; NULL is fine. */
void weftx_gcp_watch_stop(weftx_gcp_watch *w);

/* ---- Host order -------------------------------------------------------- */

/** \brief Order \p n hosts by their physical_host "/cluster/rack/host"
 * (component by component; ties keep input order). \p order receives host
 * indexes. \return 0; WEFT_ENOENT (order = identity) when any entry is NULL or "". */
int weftx_gcp_order_hosts(const char *const *physical_host, int n, int *order);

WEFT_END_DECLS

#endif /* WEFTX_GCP_H */
