#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fuzz weftrun's options, hostfiles and -H lists: N random inputs (default
10,000; FUZZ_N, FUZZ_SEED), each run as "weftrun --dry-run ... true" (nothing
is ever launched; WEFT_NO_PROBE=1 so that no host is probed) within 10 s.
An input passes when weftrun exits with a documented status (0, 2, 65-70),
prints no sanitizer report and says what it has to say clearly. It fails as
a crash (a signal or a sanitizer line), a hang (the deadline), an odd exit
status, an input that could not be run, or an unclear message, one of these
(CONTRIBUTING.md: bad input gets one line that says what is wrong, where and
what to do):
  silent     a failure with no "weftrun: " line
  wordy      a failure in more than one line (notes and warnings aside)
  foreign    a line that is not weftrun's (another program's; a newline of an
             input weftrun quotes does not end its line)
  cut        a line that ends inside an input it echoes: the explanation was
             cut off with the rest of a long word
  long       a line of more than 1,000 characters (an input echoed whole)
  bare       a line that ends in the bare words of an error code ("...:
             invalid argument"): what failed, not what is wrong or what to do
Prints the figures and the first failing inputs with their messages (to rerun
by hand), exits 1 on any of them.

    tests/run-test.sh --build _build tests/cli/fuzz-weftrun.py      # about 70 s on 2 cores
    FUZZ_N=300 ... (test-weftrun-fuzz.sh, in make check)
"""
import concurrent.futures
import errno
import os
import random
import re
import subprocess
import sys
import tempfile
import time

build = os.environ["WEFT_BUILDDIR"]
top = os.environ["WEFT_TOPDIR"]
# absolute: each input runs in a scratch directory
weftrun = os.path.abspath(os.path.join(build, "src", "weftrun", "weftrun"))
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
    return p, data


def case(d, i):
    """The arguments, and the hostfiles' contents (what weftrun may echo)."""
    args, files = [], []
    for _ in range(rng.randrange(0, 7)):
        o = rng.choice(OPTS)
        args.append(o)
        if o in ("--hostfile", "--machinefile") and rng.random() < 0.7:
            p, data = hostfile(d, i)
            args.append(p)
            files.append(data)
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
    return args, files


env = dict(os.environ, WEFT_NO_PROBE="1")
for v in ("OMPI_MCA_orte_default_hostfile", "SLURM_JOB_NODELIST", "PRTE_MCA_prte_default_hostfile",
          "MPIEXEC_TIMEOUT"):
    env.pop(v, None)


# The sentences of weft's error codes (one table): a message that ends in one
# of them says what failed, not what is wrong or what to do.
with open(os.path.join(top, "lib", "include", "weft", "errors.h")) as f:
    CODE_WORDS = [m.encode() for m in re.findall(r'XX\(\w+, -\d+, "([^"]*)"\)', f.read())]
if len(CODE_WORDS) < 20:
    sys.exit("fuzz-weftrun.py: cannot read the error table in lib/include/weft/errors.h")
CUT = 12        # a line whose last CUT bytes are inside an input ends inside it
LONG = 1000


def cut(line, x):
    """Whether line ends with a part of input x but not all of it (its closing
    quote aside): the rest of x, and whatever came after it, was cut off."""
    line = line.rstrip(b"'\"")
    if len(x) < CUT or line[-CUT:] not in x:
        return False
    lo, hi = CUT, min(len(line), len(x))     # the longest end of line inside x
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if line[-mid:] in x:
            lo = mid
        else:
            hi = mid - 1
    return lo < len(x)


def quoted_newline(line, nxt, words):
    """Whether line and the next one are the two sides of a newline in one of words."""
    for w in words:
        i = w.find(b"\n")
        while i >= 0:
            if line.endswith(w[max(0, i - 8):i]) and nxt.startswith(w[i + 1:i + 9].split(b"\n")[0]):
                return True
            i = w.find(b"\n", i + 1)
    return False


def unclear(rc, err, args, files):
    """Why what weftrun printed is unclear, or None."""
    words = [a.encode("utf-8", "surrogateescape") for a in args]
    inputs = words + files
    lines = []
    for ln in err.split(b"\n"):
        # a newline of a word that the line quotes continues the line (weftrun prints what
        # it quotes as it is; the message is still one)
        if lines and quoted_newline(lines[-1], ln, words):
            lines[-1] += b"\n" + ln
        else:
            lines.append(ln)
    if lines and not lines[-1]:
        lines.pop()
    for ln in lines:
        if not ln.startswith(b"weftrun: "):
            return "foreign: a line that is not weftrun's"
        if len(ln) > LONG:
            return "long: a line of %d characters" % len(ln)
        if any(cut(ln, x) for x in inputs):
            return "cut: the line ends inside an input it echoes"
        if any(ln.endswith(b": " + w) for w in CODE_WORDS):
            return "bare: the line ends in an error code's words"
    errors = [ln for ln in lines if not ln.startswith((b"weftrun: note: ", b"weftrun: warning: "))]
    if rc and not errors:
        return "silent: a failure without a message"
    if rc and len(errors) > 1:
        return "wordy: %d lines for one failure" % len(errors)
    return None


def run(case, cwd):
    args, files = case
    t0 = time.time()
    try:
        # in the scratch directory: an --output-filename among the inputs writes there
        p = subprocess.run([weftrun] + args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10)
    except subprocess.TimeoutExpired:
        return "hang", case, 124, b"", time.time() - t0
    except OSError as e:
        if e.errno == errno.E2BIG:  # the whole command line over the kernel's bound
            return "ok", case, -e.errno, b"", time.time() - t0
        return "not run", case, -e.errno, str(e).encode(), time.time() - t0
    err = p.stderr
    if p.returncode < 0 or p.returncode >= 128 or b"Sanitizer" in err or b"runtime error" in err:
        return "crash", case, p.returncode, err, time.time() - t0
    if p.returncode not in DOCUMENTED:
        return "odd", case, p.returncode, err, time.time() - t0
    why = unclear(p.returncode, err, args, files)
    if why:
        return "unclear " + why.split(":")[0], case, p.returncode, err, time.time() - t0, why
    return "ok", case, p.returncode, b"", time.time() - t0


def shown(w, n=60):
    return repr(w) if len(w) <= n + 20 else repr(w[:n]) + "...(%d)" % len(w)


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
            for r in ex.map(run, cases, [d] * len(cases)):
                kind, rc, dt = r[0], r[2], r[4]
                counts[kind] = counts.get(kind, 0) + 1
                codes[rc] = codes.get(rc, 0) + 1
                slowest = max(slowest, dt)
                if kind != "ok" and len(bad) < 10:
                    bad.append(r)
    for r in bad:
        kind, (args, files), rc, err = r[:4]
        print("%s (exit %s): weftrun %s" % (r[5] if len(r) > 5 else kind, rc, " ".join(shown(a) for a in args)))
        for i, data in enumerate(files):
            print("  hostfile %d: %s" % (i + 1, shown(data, 300)))
        text = err.decode("utf-8", "replace").rstrip("\n")
        print("  stderr: %s" % (shown(text, 600) if text else "(nothing)"))
    print("# %d inputs (seed %d) in %.0f s, slowest %.2f s: %s; exit codes %s" % (
        n, seed, time.time() - t0, slowest, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        ", ".join("%s: %d" % kv for kv in sorted(codes.items()))))
    unclear_n = sum(v for k, v in counts.items() if k.startswith("unclear"))
    print("%d crashes, %d hangs, %d other exit codes, %d unclear messages, %d not run" % (
        counts.get("crash", 0), counts.get("hang", 0), counts.get("odd", 0), unclear_n,
        counts.get("not run", 0)))
    failed = n - counts.get("ok", 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
