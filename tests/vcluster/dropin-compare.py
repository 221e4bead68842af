#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""weftrun as a drop-in for mpirun, line by line.

Every line of the corpus (dropin-corpus.txt) is run twice, once as
`mpirun LINE` and once as `weftrun LINE`, on this host ("local") or on a
virtual cluster of 3 nodes with 2 slots each ("vc", weft-vcluster run, which
sets Open MPI's binding off and oversubscription on, as sites do). The program
is dropin-probe.sh, which leaves one record per rank: where it ran and as what
(host, OMPI_COMM_WORLD_*), its working directory, its binding
(Cpus_allowed_list), its arguments and its environment. Then:

  identical   same exit status, same ranks with the same records, the same
              output (stdout and stderr, lines in any order, pids, job ids and
              times made equal), the same files of --output-filename;
              the environment compared without weft's documented additions
              (weftrun(1), ENVIRONMENT) and without what changes from job to
              job (PMIx names, session directories, URIs);
  refused     weftrun exits 2 before starting anything, with one line that
              names the option, says Open MPI has it and weftrun does not, and
              what to use instead;
  different   a silent difference: both ran, something above differs;
  broken      weftrun failed where mpirun ran, or refused without following
              the rule;
  both-refuse mpirun refuses the line too (not counted: the rule is about
              lines mpirun accepts).

usage: dropin-compare.py [--quick] [--only local|vc] [--vc PREFIX] [-v] CORPUS
With --vc PREFIX the cluster is there already (else "vc" lines bring one up and
take it down). Exit 0 when no line is different or broken.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.environ.get("WEFT_TOPDIR", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BUILD = os.environ.get("WEFT_BUILDDIR", os.path.join(TOP, "_build"))
WEFTRUN = os.path.join(BUILD, "src/weftrun/weftrun")
# as a user types it: an absolute path would be mpirun's --prefix (its bin/ and lib/ at
# the front of every rank's PATH and LD_LIBRARY_PATH), which weftrun must not add
MPIRUN = os.environ.get("MPIRUN", "mpirun")
VC = os.path.join(TOP, "contrib/vcluster/weft-vcluster")
PROBE = os.path.join(TOP, "tests/vcluster/dropin-probe.sh")
TIMEOUT = 90

# weft's documented additions to a rank's environment (weftrun(1), ENVIRONMENT)
WEFT_ADDED = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
              "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE",
              "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
              "TORCHELASTIC_MAX_RESTARTS", "MASTER_ADDR", "MASTER_PORT",
              "CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
              "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}
WEFT_ADDED_PREFIX = ("WEFT_",)
# what changes from one job to the next, for mpirun as for weftrun
VOLATILE = re.compile(r"^(PMIX_|OMPI_MCA_orte_hnp_uri$|OMPI_MCA_orte_local_daemon_uri$|"
                      r"OMPI_MCA_ess_base_jobid$|OMPI_MCA_orte_precondition_transports$|"
                      r"OMPI_FILE_LOCATION$|OMPI_MCA_orte_jobfam_session_dir$|_$)")


def parse_corpus(path):
    lines = []
    for n, raw in enumerate(open(path), 1):
        text = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not text:
            continue
        f = [x.strip() for x in text.split("|")]
        if len(f) != 3:
            sys.exit("%s:%d: want WHERE | ENV | OPTIONS" % (path, n))
        where, quick, version = f[0], False, None
        m = re.match(r"^(\w+)(\*?)(?:@([45]))?$", where)
        if not m or m.group(1) not in ("local", "vc"):
            sys.exit("%s:%d: WHERE is local or vc (with * for the quick set, @4 or @5 for "
                     "lines of one Open MPI version)" % (path, n))
        where, quick, version = m.group(1), m.group(2) == "*", m.group(3)
        env = dict(kv.split("=", 1) for kv in f[1].split()) if f[1] else {}
        lines.append({"n": n, "where": where, "quick": quick, "version": version, "env": env,
                      "opts": f[2]})
    return lines


def mpirun_major():
    """The major version of Open MPI's mpirun ("4", "5"), or None."""
    try:
        out = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\(Open MPI\) (\d+)\.", out)
    return m.group(1) if m else None


RACY_END = False  # set under Open MPI 5 (main)
# Open MPI 5's ssh launcher under weft-vcluster's rsh agent warns of setpgid in some runs and
# not others, under mpirun as under weftrun
PRRTE_NOISE = re.compile(r"plm:ssh: Warning: setpgid\(\d+,\d+\) failed in parent")
RACY_LINE = re.compile(r"^(out|err) \w+ rank [02-9]\d*$")


# weft-rank's line when Open MPI bound a rank elsewhere than weftrun's plan said
PLAN_WARNING = re.compile(r"weftrun's plan.* said .*report this")


def hostname():
    return os.uname().nodename.split(".")[0]


def words(line, ctx):
    """The line's words with its placeholders filled in."""
    out = []
    for w in line["opts"].split():
        if w in ("PROG", "PROGB", "PROG_EXIT3"):
            out += [PROBE, ctx["results"], "b" if w == "PROGB" else "a"] + \
                   (["3"] if w == "PROG_EXIT3" else [])
        elif w == "PROBE_NAME":
            out += ["dropin-probe.sh", ctx["results"], "a"]
        else:  # placeholders inside a word too (HOST0:2, HOST0,HOST1)
            sub = ctx["subst"]
            names = sorted(sub, key=len, reverse=True)
            out.append(re.sub(r"\b(%s)\b" % "|".join(names), lambda m: sub[m.group(1)], w))
    return out


def setup_files(ctx, where):
    d = ctx["dir"]
    hosts = ["vnode0", "vnode1", "vnode2"] if where == "vc" else [hostname()]
    slots = 2

    def write(name, text):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(text)
        return p
    sub = {}
    sub["HF"] = write("hf", "".join("%s slots=%d\n" % (h, slots) for h in hosts))
    sub["HF_NOSLOTS"] = write("hf-noslots", "".join("%s\n" % h for h in hosts))
    sub["HF_DUP"] = write("hf-dup", "".join("%s\n%s\n" % (h, h) for h in hosts))
    sub["HF_MAX"] = write("hf-max", "".join("%s slots=%d max_slots=%d\n" % (h, slots, slots)
                                            for h in hosts))
    sub["HF_COMMENT"] = write("hf-comment", "# the cluster\n" + "".join(
        "%s slots=%d   # node %d\n" % (h, slots, k) for k, h in enumerate(hosts)))
    sub["RF"] = write("rf", "rank 0=%s slot=0\n" % hosts[0])
    sub["APPFILE"] = write("appfile", "-np 1 %s %s a\n" % (PROBE, ctx["results"]))
    sub["HOSTS"] = ",".join(hosts)
    for k, h in enumerate(hosts):
        sub["HOST%d" % k] = h
    sub["WDIR"] = os.path.join(d, "wdir")
    os.makedirs(sub["WDIR"], exist_ok=True)
    sub["OUTDIR"] = os.path.join(d, "out")
    sub["PROBE_DIR"] = os.path.dirname(PROBE)
    ctx["subst"] = sub


def run_one(launcher, line, where, vc_prefix, base):
    ctx = {"dir": tempfile.mkdtemp(prefix="run-", dir=base)}
    ctx["results"] = os.path.join(ctx["dir"], "records")
    os.makedirs(ctx["results"])
    setup_files(ctx, where)
    cwd = os.path.join(ctx["dir"], "cwd")
    os.makedirs(cwd)
    env = dict(os.environ)
    for k in ("OMPI_MCA_orte_default_hostfile", "SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE",
              "WEFT_TOPOLOGY", "WEFT_VERBOSE", "MPIEXEC_TIMEOUT"):
        env.pop(k, None)
    env.update({k: ctx["subst"].get(v, v) for k, v in line["env"].items()})
    cmd = [WEFTRUN if launcher == "weftrun" else MPIRUN] + words(line, ctx)
    if where == "vc":
        pre = ["env"] + ["%s=%s" % (k, ctx["subst"].get(v, v)) for k, v in line["env"].items()] \
            if line["env"] else []
        cmd = [VC, "--prefix", vc_prefix, "run", "--"] + pre + cmd
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=TIMEOUT, errors="replace")
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        if isinstance(out, bytes):
            out, err = out.decode(errors="replace"), err.decode(errors="replace")
    recs = {}
    for name in sorted(os.listdir(ctx["results"])):
        if name.startswith("rank-") and not name.endswith(".tmp"):
            recs[name[5:]] = open(os.path.join(ctx["results"], name)).read()
    files = {}
    outdir = ctx["subst"]["OUTDIR"]
    for root, _, fs in os.walk(outdir):
        for f in fs:
            p = os.path.join(root, f)
            files[os.path.relpath(p, outdir)] = open(p, errors="replace").read()
    return {"rc": rc, "out": out, "err": err, "recs": recs, "files": files, "cmd": cmd,
            "dir": ctx["dir"], "subst": ctx["subst"]}


# weft's documented lines when a rank fails (weftrun(1), EXIT STATUS): the summary, the
# later failures it names, and the agent's line (under plain mpirun, or when weftrun was
# not told); and its note of the variables that stay on this host
WEFT_FAILURE = re.compile(r"^(weftrun: job failed: rank \d+ host |weftrun:   then rank \d+ host |"
                          r"weftrun: .* set here but reach(es)? only this host's ranks |"
                          r"weft-rank: rank \d+ host \S+ gpu \S+: .*(exited with status|"
                          r"killed by signal))")


# Open MPI's accounts of how a job ended, each a block between rules of dashes: weftrun
# leaves them out when its summary names the cause (src/weftrun/engine/banners.c has the
# same list), and plain mpirun prints some in some runs of the same line and not in
# others (-np 6 PROG_EXIT3 on 3 vnodes), so they are not compared
ENDED = ("terminated normally, but",
         "mpirun detected that one or more processes exited with non-zero status",
         "mpirun noticed that process rank",
         "mpirun has exited due to process rank",
         "MPI_ABORT was invoked on rank",
         "ORTE was unable to reliably start one or more daemons",
         "ORTE does not know how to route a message to the specified daemon",
         "ORTE has lost communication with a remote daemon",
         "An ORTE daemon has unexpectedly failed after launch",
         "mpirun was unable to start the specified application",
         # Open MPI 5's (PRRTE's prterun)
         "prterun detected that one or more processes exited with non-zero status",
         "prterun noticed that process rank",
         "prterun has exited due to process rank",
         "prterun was unable to start the specified application")
RULE = "-" * 74


def drop_abort_account(raw):
    """The lines less Open MPI's blocks (rule, lines, rule) that tell how the job ended."""
    out, i = [], 0
    while i < len(raw):
        if raw[i] == RULE:
            j = i + 1
            while j < len(raw) and raw[j] != RULE:
                j += 1
            if j < len(raw) and any(e in "\n".join(raw[i:j]) for e in ENDED):
                i = j + 1
                continue
        out.append(raw[i])
        i += 1
    return out


def norm_text(text, res):
    """Output lines in any order, with what varies from job to job made equal."""
    lines = []
    for l in drop_abort_account(text.splitlines()):
        if WEFT_FAILURE.search(l) or PRRTE_NOISE.search(l):
            continue
        l = l.replace(res["dir"], "DIR")
        l = re.sub(r"\[([\w.-]+):\d+\]", r"[\1:PID]", l)
        l = re.sub(r"\[\[\d+,(\d+)\],(\d+)\]", r"[[J,\1],\2]", l)
        l = re.sub(r"\[\d+,(\d+)\]<", r"[J,\1]<", l)
        l = re.sub(r"prterun-[\w.-]+-\d+@(\d+)", r"prterun-J@\1", l)
        l = re.sub(r"(JOB|jobid:?) \[\d+,\d+\]", r"\1 [J]", l)
        l = re.sub(r"\b\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\b", "TIME", l)
        l = re.sub(r"(Pid|PID): \d+", r"\1: P", l)
        lines.append(l.rstrip())
    return sorted(l for l in lines if l)


def env_of(rec):
    env = {}
    for l in rec.splitlines():
        if l.startswith("env "):
            k, _, v = l[4:].partition("=")
            env[k] = v
    return env


def head_of(rec):
    return [l for l in rec.splitlines() if not l.startswith("env ")]


def compare(m, w):
    """Differences between mpirun's run and weftrun's (empty: identical)."""
    diff = []
    if m["rc"] != w["rc"]:
        diff.append("exit status: mpirun %s, weftrun %s" % (m["rc"], w["rc"]))
    if sorted(m["recs"]) != sorted(w["recs"]):
        diff.append("ranks: mpirun %s, weftrun %s" % (sorted(m["recs"]), sorted(w["recs"])))
    for r in sorted(set(m["recs"]) & set(w["recs"])):
        hm = [l.replace(m["dir"], "DIR") for l in head_of(m["recs"][r])]
        hw = [l.replace(w["dir"], "DIR") for l in head_of(w["recs"][r])]
        if hm != hw:
            diff.append("rank %s: mpirun %s / weftrun %s" % (r, hm, hw))
        em, ew = env_of(m["recs"][r]), env_of(w["recs"][r])
        for k in sorted(set(em) | set(ew)):
            if VOLATILE.search(k):
                continue
            vm = em.get(k, "").replace(m["dir"], "DIR")
            vw = ew.get(k, "").replace(w["dir"], "DIR")
            if vm == vw:
                continue
            if k not in em and (k in WEFT_ADDED or k.startswith(WEFT_ADDED_PREFIX)):
                continue  # a documented addition
            diff.append("rank %s env %s: mpirun %r, weftrun %r" % (r, k, em.get(k), ew.get(k)))
    for what in ("out", "err"):
        nm, nw = norm_text(m[what], m), norm_text(w[what], w)
        if RACY_END and m["rc"] == w["rc"] and m["rc"] not in (0, "timeout"):
            # Open MPI 5 ends the other ranks of a failed job so soon that whether rank 0's
            # one line was written before varies from run to run, under mpirun as under
            # weftrun: the probe's lines of the ranks that did not fail are not compared
            nm = [l for l in nm if not RACY_LINE.match(l)]
            nw = [l for l in nw if not RACY_LINE.match(l)]
        if nm != nw:
            only_m = [l for l in nm if l not in nw][:3]
            only_w = [l for l in nw if l not in nm][:3]
            diff.append("std%s: mpirun only %s; weftrun only %s" % (what, only_m, only_w))
    fm = {k: norm_text(v, m) for k, v in m["files"].items()}
    fw = {k: norm_text(v, w) for k, v in w["files"].items()}
    if fm != fw:
        diff.append("--output-filename files: mpirun %s, weftrun %s" % (sorted(fm), sorted(fw)))
    return diff


REFUSAL = re.compile(r"^weftrun: .*'-{1,2}[\w-]+'.*(Open MPI option that weftrun does not "
                     r"support|Open MPI has it, weftrun does not)")


def refusal_ok(w):
    lines = [l for l in w["err"].splitlines() if l.strip()]
    if w["rc"] != 2 or len(lines) != 1 or w["recs"]:
        return False
    l = lines[0]
    return bool(REFUSAL.search(l) or ("Open MPI has it, weftrun does not" in l) or
                re.search(r"Open MPI 4\.1 .*; use ", l))


def classify(m, w):
    if not m["recs"] and m["rc"] != 0:  # (--do-not-launch: accepted, starts nothing)
        if not w["recs"] and w["rc"] != 0:
            return "both-refuse", []
        return "broken", ["mpirun exit %s where weftrun ran: %s" % (m["rc"], m["err"].strip()[-400:])]
    if not w["recs"] and w["rc"] == 2:
        return ("refused" if refusal_ok(w) else "broken"), [w["err"].strip()]
    if not w["recs"] and (w["rc"] != m["rc"] or m["recs"]):
        return "broken", ["weftrun exit %s: %s" % (w["rc"], w["err"].strip()[-400:])]
    d = compare(m, w)
    if not d:
        return "identical", []
    if m["rc"] != w["rc"] or len(m["recs"]) != len(w["recs"]):
        return "broken", d
    return "different", d


def vc_up(prefix):
    p = subprocess.run([VC, "--prefix", prefix, "up", "3", "--slots", "2"], capture_output=True,
                       text=True, timeout=180)
    if p.returncode != 0:
        return p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    return None


def vc_down(prefix):
    subprocess.run([VC, "--prefix", prefix, "down"], capture_output=True, timeout=180)


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    verbose = "-v" in args
    only = args[args.index("--only") + 1] if "--only" in args else None
    vc_prefix = args[args.index("--vc") + 1] if "--vc" in args else None
    corpus = [a for a in args if a.endswith(".txt")][0]
    global RACY_END
    major = mpirun_major()
    RACY_END = major == "5"
    lines = [l for l in parse_corpus(corpus) if (not quick or l["quick"]) and
             (not only or l["where"] == only) and (not l["version"] or l["version"] == major)]
    print("Open MPI %s: %d lines" % (major or "?", len(lines)))
    base = tempfile.mkdtemp(prefix="weft-dropin-")
    made_vc = False
    if any(l["where"] == "vc" for l in lines) and not vc_prefix:
        vc_prefix = "wvc-dropin-%d" % os.getpid()
        why = vc_up(vc_prefix)
        if why:
            print("note: no virtual cluster (%s): the vc lines are left out" % why)
            lines = [l for l in lines if l["where"] != "vc"]
        else:
            made_vc = True
    counts = {"identical": 0, "refused": 0, "different": 0, "broken": 0, "both-refuse": 0}
    refusals = []
    warnings = 0
    try:
        for l in lines:
            m = run_one("mpirun", l, l["where"], vc_prefix, base)
            w = run_one("weftrun", l, l["where"], vc_prefix, base)
            kind, why = classify(m, w)
            if kind == "broken":
                # once more, both: on a loaded machine either launcher can fail to start a
                # job (seen: Open MPI 5's mpirun with PE=2 under CI's load); a broken line
                # that is real breaks again
                print("retry       %s:%d (%s)" % (os.path.basename(corpus), l["n"],
                                                 why[0][:200] if why else "broken"))
                shutil.rmtree(m["dir"], ignore_errors=True)
                shutil.rmtree(w["dir"], ignore_errors=True)
                m = run_one("mpirun", l, l["where"], vc_prefix, base)
                w = run_one("weftrun", l, l["where"], vc_prefix, base)
                kind, why = classify(m, w)
            counts[kind] += 1
            warned = [x for x in w["err"].splitlines() if PLAN_WARNING.search(x)]
            warnings += len(warned)
            name = "%s:%d %-5s %s%s" % (os.path.basename(corpus), l["n"], l["where"],
                                         " ".join("%s=%s" % kv for kv in l["env"].items()) +
                                         " " if l["env"] else "", l["opts"])
            if kind == "refused":
                refusals.append((name, why[0]))
            if warned:
                print("warning     %s\n            %s" % (name, warned[0]))
            if kind in ("different", "broken") or verbose:
                print("%-11s %s" % (kind, name))
                for d in why[:6]:
                    print("            " + d)
                if kind in ("different", "broken") and verbose:
                    print("            mpirun: %s" % " ".join(m["cmd"]))
            shutil.rmtree(m["dir"], ignore_errors=True)
            shutil.rmtree(w["dir"], ignore_errors=True)
    finally:
        if made_vc:
            vc_down(vc_prefix)
        shutil.rmtree(base, ignore_errors=True)
    accepted = counts["identical"] + counts["refused"] + counts["different"] + counts["broken"]
    print("refusals:")
    for name, why in refusals:
        print("  %s\n      %s" % (name, why))
    print("%d lines: %d identical, %d refused, %d silent differences, %d broken (of the %d "
          "mpirun accepts: %.0f%% identical); %d refused by mpirun too; %d plan warnings" %
          (len(lines), counts["identical"], counts["refused"], counts["different"],
           counts["broken"], accepted, 100.0 * counts["identical"] / accepted if accepted else 0,
           counts["both-refuse"], warnings))
    return 1 if counts["different"] or counts["broken"] or warnings else 0


if __name__ == "__main__":
    sys.exit(main())
