#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Whole lines through weftrun (test-weftrun-lines.sh, test-weftrun-lines-vcluster.sh).

load N: this rank ($OMPI_COMM_WORLD_RANK) writes N numbered lines to stdout, and one
  in ten of them to stderr as well, of mixed sizes (0 to 300 characters; one in 997
  of 5,000, longer than weft's bound of a line), in pieces of random sizes (1 byte to
  16 KiB) cut anywhere, both streams interleaved, as a print-heavy program's buffers
  go out: "R<rank>-O<number>-xxx-END" (stdout) or "R<rank>-E<number>-xxx-END" (stderr).
count NP N [tag] [rank=R]: reads the job's output (of rank R alone: a file of
  --output-filename) on stdin and prints one line of counts:
  glued (a line that is no line of the load, or a piece of one: two ranks' text on one
  line, a piece out of place), mistagged (with tag: a line whose [J,R]<stream>: tag is
  not its rank's and stream's), missing and out of order (every rank's lines of each
  stream, in its order), cut (pieces of long lines, each ending in "[weft: cut]" and
  the next piece of the same line following in that rank's output). Exit 0 when
  nothing was glued, mistagged, missing or out of order.
"""
import os
import random
import re
import sys

CUT = "[weft: cut]"


def text(rank, n, stream):
    rnd = random.Random(rank * 7919 + (stream == "E"))
    out = []
    for i in range(n):
        if stream == "E" and i % 10:
            continue
        pad = 5000 if i % 997 == 5 else rnd.randrange(300)
        out.append("R%d-%s%05d-%s-END\n" % (rank, stream, i, "x" * pad))
    return "".join(out).encode()


def load(n):
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    data = {1: text(rank, n, "O"), 2: text(rank, n, "E")}
    at = {1: 0, 2: 0}
    rnd = random.Random(rank)
    while at[1] < len(data[1]) or at[2] < len(data[2]):
        fd = 1 if rnd.random() < 0.9 else 2
        if at[fd] >= len(data[fd]):
            fd = 3 - fd
        k = rnd.choice((1, 7, 100, 1000, 4095, 4096, 4097, 8192, 16384, rnd.randrange(1, 16384)))
        os.write(fd, data[fd][at[fd]:at[fd] + k])
        at[fd] += k


LINE = re.compile(r"R(\d+)-([OE])(\d+)-(x*)(-END|\[weft: cut\])$")
PIECE = re.compile(r"(x*)(-END|\[weft: cut\])$")
TAG = re.compile(r"\[(\d+),(\d+)\]<std(out|err)>:")


def count(np_, n, tagged, only=None):
    glued = mistagged = disorder = cut = 0
    seen = {}           # (rank, stream): the numbers seen, in order
    open_ = {}          # (rank, stream) of a line cut, its rank's last piece not come
    shown = 0
    for raw in sys.stdin.buffer:
        line = raw.decode(errors="replace").rstrip("\n")
        tag = None
        if tagged:
            m = TAG.match(line)
            if not m:
                glued += 1
                continue
            tag = (int(m.group(2)), "O" if m.group(3) == "out" else "E")
            line = line[m.end():]
        m = LINE.match(line)
        bad = False
        if m:
            key = (int(m.group(1)), m.group(2))
            if tag is not None and tag != key:
                mistagged += 1
            seen.setdefault(key, []).append(int(m.group(3)))
            if m.group(5) == CUT:
                open_[key] = True
                cut += 1
        else:
            p = PIECE.match(line)
            keys = [tag] if tag is not None else list(open_)
            keys = [k for k in keys if k in open_]
            if p and keys:
                if p.group(2) == CUT:
                    cut += 1
                elif tag is not None or len(keys) == 1:
                    open_.pop(keys[0])
                # without tags, which rank's line a last piece ends is not known: the
                # first piece's number was counted; the open lines stay open
            else:
                bad = True
        if bad:
            glued += 1
            if shown < 3:
                print("glued: %s" % line[:160], file=sys.stderr)
                shown += 1
    missing = 0
    for r in range(np_) if only is None else [only]:
        for s in ("O", "E"):
            want = [i for i in range(n) if s == "O" or i % 10 == 0]
            got = seen.get((r, s), [])
            if got != want:
                missing += len(set(want) - set(got))
                disorder += sum(1 for a, b in zip(got, got[1:]) if b <= a)
    print("glued %d, mistagged %d, missing %d, out of order %d, cut %d" %
          (glued, mistagged, missing, disorder, cut))
    return 1 if glued or mistagged or missing or disorder else 0


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load(int(sys.argv[2]))
    else:
        only = [int(a[5:]) for a in sys.argv[4:] if a.startswith("rank=")]
        sys.exit(count(int(sys.argv[2]), int(sys.argv[3]), "tag" in sys.argv[4:],
                       only[0] if only else None))
