#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fuzz weftrun's options, hostfiles and -H lists: N random inputs (default
10,000; FUZZ_N, FUZZ_SEED), each run as "weftrun --dry-run ... true" (nothing
is ever launched; WEFT_NO_PROBE=1 so that no host is probed) within 10 s.
An input passes when weftrun exits with a documented status (0, 2, 65-70,
124 is a hang) and prints no sanitizer report; a crash is a signal or a
sanitizer line, a hang is the deadline. Prints the figures and the first
failing inputs (to rerun by hand), exits 1 on any crash or hang.

    tests/run-test.sh --build _build tests/cli/fuzz-weftrun.py      # ~3 min on 2 cores
    FUZZ_N=300 ... (test-weftrun-fuzz.sh, in make check)
"""
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile
import time

build = os.environ["WEFT_BUILDDIR"]
top = os.environ["WEFT_TOPDIR"]
weftrun = os.path.join(build, "src", "weftrun", "weftrun")
n = int(os.environ.get("FUZZ_N", "10000"))
seed = int(os.environ.get("FUZZ_SEED", "1"))
rng = random.Random(seed)
topo = os.path.join(top, "share", "weft", "topologies")
DOCUMENTED = {0, 2, 65, 66, 67, 68, 69, 70}

WORDS = ["", "-1", "0", "1", "2", "8", "16384", "16385", "99999999999999999999", "abc",
         "a" * 5000, "ppr:2:numa", "ppr:0:core", "core:pe=2", "core:PE=0", "gpu", "node", "slot",
         "numa", "package", "none", "gpu-local", "hwthread", "x:y:z", "::1", "[fe80::1]", "a=b",
         "=", "%s%n%x", "\x01\x02", "h\u00e9", "host:8", "host:-1", "host:", ":4", "h1,h2,,h3",
         "[fe80::1]:2", "localhost", "localhost:2", "127.0.0.1:3", "all", "own", "auto",
         "a3-highgpu-8g", os.path.join(topo, "a3-highgpu-8g.xml"),
         "vnode0=" + os.path.join(topo, "g2-standard-48.xml"), "/dev/zero", "/nonexistent",
         "-", "--", "-np", "--np=3", "1e3", "0x10", " 3", "3 ", "\t", "A" * 300 + "=1"]
OPTS = ["-np", "-n", "-c", "--np", "-N", "--npernode", "--pernode", "-H", "--host", "--hostfile",
        "--machinefile", "--map-by", "--bind-to", "--rank-by", "--oversubscribe",
        "--gpus-per-node", "--topology", "--gpu-visibility", "--nccl-preset", "-x", "--mca",
        "--report-bindings", "--json", "--tag-output", "--timestamp-output", "--output-filename",
        "--timeout", "--host-timeout", "--launch-timeout", "--get-stack-traces", "--preempt-grace",
        "--allow-run-as-root", "-v", "--display-map", "--wdir", "--path", "--prefix", "--bogus",
        "-np=2", "--map-by=core", "-H=localhost", "--nolocal", "--xml", "--monitor", "--monitor=0.5",
        "--monitor-out", "--monitor-prom", "-q"]


def word():
    w = rng.choice(WORDS)
    r = rng.random()
    if r < 0.2:  # mutate: cut, repeat, flip a byte
        b = bytearray(w.encode("utf-8", "surrogateescape"))
        if b:
            i = rng.randrange(len(b))
            op = rng.randrange(3)
            if op == 0:
                b = b[:i]
            elif op == 1:
                b[i] = rng.randrange(1, 256)
            else:
                b = b * rng.randrange(2, 40)
        w = bytes(b).decode("utf-8", "surrogateescape")
    elif r < 0.3:
        w = ",".join(rng.choice(["h%d" % rng.randrange(9999), "localhost", "a:2", "", "b:x", "::1",
                                 "x" * rng.randrange(1, 300)]) for _ in range(rng.randrange(1, 400)))
    # a word the kernel takes whole (MAX_ARG_STRLEN is 128 KiB)
    return w.replace("\0", "")[:100000]


def hostfile(d, i):
    lines = []
    for _ in range(rng.randrange(0, 30)):
        kind = rng.randrange(8)
        if kind == 0:
            lines.append("host%d slots=%s" % (rng.randrange(99), rng.choice(["1", "0", "-3", "x", "", "99999999999"])))
        elif kind == 1:
            lines.append("# comment " + word())
        elif kind == 2:
            lines.append(word() + " " + rng.choice(["max_slots=2", "count = 4", "cpu=1", "slots", "=4", "user=u", "sockets=2"]))
        elif kind == 3:
            lines.append("localhost slots=%d max_slots=%d" % (rng.randrange(1, 9), rng.randrange(0, 9)))
        elif kind == 4:
            lines.append("x" * rng.randrange(1, 9000))
        elif kind == 5:
            lines.append("u@h%d username=v" % rng.randrange(9))
        elif kind == 6:
            lines.append("n\u00f6de slots=2")
        else:
            lines.append("")
    data = ("\n".join(lines) + rng.choice(["\n", "", "\r\n"])).encode("utf-8", "surrogateescape")
    if rng.random() < 0.1:  # binary
        data = data[:rng.randrange(len(data) + 1)] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    p = os.path.join(d, "hf%d" % i)
    with open(p, "wb") as f:
        f.write(data)
    return p


def case(d, i):
    args = []
    for _ in range(rng.randrange(0, 7)):
        o = rng.choice(OPTS)
        args.append(o)
        if o in ("--hostfile", "--machinefile") and rng.random() < 0.7:
            args.append(hostfile(d, i))
        elif rng.random() < 0.85:
            args.append(word())
        if o == "--mca":
            args.append(word())
    # first, always: a word the parser takes for the program makes the rest its
    # arguments, and --dry-run must never be one of them
    args.insert(0, "--dry-run")
    if rng.random() < 0.5:
        args.append("--")
    args.append("true")
    return args


env = dict(os.environ, WEFT_NO_PROBE="1")
for v in ("OMPI_MCA_orte_default_hostfile", "SLURM_JOB_NODELIST", "PRTE_MCA_prte_default_hostfile",
          "MPIEXEC_TIMEOUT"):
    env.pop(v, None)


def run(args, cwd):
    t0 = time.time()
    try:
        # in the scratch directory: an --output-filename among the inputs writes there
        p = subprocess.run([weftrun] + args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10)
    except subprocess.TimeoutExpired:
        return "hang", args, 124, b"", time.time() - t0
    except OSError as e:  # E2BIG: the whole command line over the kernel's bound
        return "ok", args, -e.errno, b"", time.time() - t0
    err = p.stderr
    if p.returncode < 0 or p.returncode >= 128 or b"Sanitizer" in err or b"runtime error" in err:
        return "crash", args, p.returncode, err[-400:], time.time() - t0
    if p.returncode not in DOCUMENTED:
        return "odd", args, p.returncode, err[-400:], time.time() - t0
    # one line per error, saying what is wrong: a message longer than 2 lines is suspicious
    if p.returncode and err.count(b"\n") > 3 and b"probing" not in err:
        return "wordy", args, p.returncode, err[-400:], time.time() - t0
    return "ok", args, p.returncode, b"", time.time() - t0


def main():
    if not os.access(weftrun, os.X_OK):
        print("SKIP: %s not built" % weftrun)
        return 77
    counts, codes, bad = {}, {}, []
    slowest = 0.0
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="weft-fuzz.") as d:
        cases = [case(d, i) for i in range(n)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            for kind, args, rc, err, dt in ex.map(run, cases, [d] * len(cases)):
                counts[kind] = counts.get(kind, 0) + 1
                codes[rc] = codes.get(rc, 0) + 1
                slowest = max(slowest, dt)
                if kind != "ok" and len(bad) < 10:
                    bad.append((kind, rc, args, err))
    for kind, rc, args, err in bad:
        shown = " ".join(repr(a) if len(a) < 80 else repr(a[:60]) + "...(%d)" % len(a) for a in args)
        print("%s (exit %s): weftrun %s\n  %s" % (kind, rc, shown, err.decode("utf-8", "replace").strip()[-300:]))
    print("# %d inputs (seed %d) in %.0f s, slowest %.2f s: %s; exit codes %s" % (
        n, seed, time.time() - t0, slowest, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        ", ".join("%s: %d" % kv for kv in sorted(codes.items()))))
    crashes = counts.get("crash", 0) + counts.get("hang", 0) + counts.get("odd", 0)
    print("%d crashes, %d hangs, %d other exit codes" % (counts.get("crash", 0), counts.get("hang", 0),
                                                        counts.get("odd", 0)))
    return 1 if crashes else 0


sys.exit(main())
