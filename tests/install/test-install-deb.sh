#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# weft as a Debian package, from the source tree to a clean removal:
#   1. copies the tree (git's tracked and unignored files, or all of an
#      unpacked release but its build folders) and builds the
#      packages with contrib/debian: dpkg-buildpackage -us -uc -b;
#   2. lintian on them: any error (E:) or warning (W:) fails;
#   3. installs weft and libweft-dev into a copy of this machine's root (an
#      overlay in a private mount namespace, so the machine itself is never
#      touched) and there runs weftrun -np 2 true, weft-topo, weft-topo
#      --topology a3-highgpu-8g.xml -np 8 from a directory without the file,
#      a program built with pkg-config --cflags --libs weft under mpirun and
#      weftrun, the installed examples' Makefile, weft-gather-topology, the
#      bash completion and the modulefile (module avail finds it with
#      environment-modules' own MODULEPATH);
#   4. purges both packages and checks that dpkg knows nothing of weft and
#      that no file of it is left (every path dpkg -L listed, and nothing
#      named weft written to the overlay outside dpkg's own logs).
# Needs root, debhelper, lintian and mount namespaces with overlayfs; exits
# 77 (skip) with the reason when something is missing. Prints the time of
# each step. WEFT_DEB_CHECK=1 also runs the unit tests inside the package
# build (they run in make check anyway); WEFT_DEB_KEEP=DIR keeps the .debs.
#
# Usage: tests/install/test-install-deb.sh      (from anywhere; exit 0 pass, 1 fail, 77 skip)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "installing a package needs root"
for tool in dpkg-buildpackage dh lintian unshare chroot; do
  command -v $tool >/dev/null 2>&1 ||
    skip "$tool not found (Debian: apt-get install dpkg-dev debhelper lintian util-linux)"
done
if dpkg-query -W -f='${Status}' weft 2>/dev/null | grep -q 'installed'; then
  skip "a weft package is installed on this machine; the test starts from none"
fi
[ -f "$top/contrib/debian/control" ] || { echo "FAIL: no contrib/debian in $top"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
t0=$(date +%s)
step() { echo "== $(( $(date +%s) - t0 ))s: $*"; }

# A mount namespace with an overlay of / must work here, or nothing can be tested.
mkdir "$tmp/probe"
unshare -m sh -c "mount -t tmpfs none '$tmp/probe' && mkdir '$tmp/probe/u' '$tmp/probe/w' '$tmp/probe/r' &&
  mount -t overlay overlay -o lowerdir=/,upperdir='$tmp/probe/u',workdir='$tmp/probe/w' '$tmp/probe/r'" \
  2>"$tmp/probe.err" || skip "cannot mount an overlay of / in a mount namespace: $(cat "$tmp/probe.err")"

step "copy the tree and build the packages"
src="$tmp/weft-src"
mkdir "$src"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$top" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) | tar -xf - -C "$src"
else # an unpacked release: all of it but build folders
  (cd "$top" && tar --exclude='./_build*' --exclude=./debian -cf - .) | tar -xf - -C "$src"
fi
ln -s contrib/debian "$src/debian"
if ! (cd "$src" && dpkg-checkbuilddeps) >"$tmp/deps" 2>&1; then
  skip "build dependencies missing: $(sed 's/.*Unmet build dependencies: //' "$tmp/deps")"
fi
opts="parallel=$(nproc)"
[ "${WEFT_DEB_CHECK:-0}" = 1 ] || opts="$opts nocheck"
if ! (cd "$src" && DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
  echo "FAIL: dpkg-buildpackage -us -uc -b:"
  tail -40 "$tmp/build.log"
  exit 1
fi
ls "$tmp"/weft_*.deb "$tmp"/libweft1_*.deb "$tmp"/libweft-dev_*.deb >/dev/null
fail=0

step "lintian"
lintian "$tmp"/weft_*.changes >"$tmp/lintian" 2>&1 || true
grep -v '^running with root privileges' "$tmp/lintian" || true
if grep -q -e '^E:' -e '^W:' "$tmp/lintian"; then
  echo "FAIL: lintian reports errors or warnings (above)"
  fail=1
else
  echo "ok lintian: no errors, no warnings"
fi

step "install into an overlay of this machine, run, purge"
root="$tmp/ov/root"
mkdir -p "$tmp/ov" "$tmp/debs"
cp "$tmp"/weft_*.deb "$tmp"/libweft1_*.deb "$tmp"/libweft-dev_*.deb "$tmp/debs/"
cat >"$tmp/debs/inside.sh" <<'EOS'
#!/bin/sh
# Runs chrooted in the overlay: install, use, purge, look for leftovers.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PATH=/usr/sbin:/usr/bin:/sbin:/bin
# a user's home of its own: what weft keeps there (the topology cache) is the user's,
# not the package's, and is not looked for among the leftovers
mkdir -p /tmp/home && export HOME=/tmp/home
unset XDG_CACHE_HOME WEFT_DATADIR WEFT_TOPOLOGY WEFT_RANK_PATH WEFT_VERBOSE OMPI_MCA_orte_default_hostfile \
  SLURM_JOB_NODELIST LD_LIBRARY_PATH PKG_CONFIG_PATH
fail=0
ok() { echo "ok $*"; }
bad() { echo "FAIL: $*"; fail=1; }
run() { # what, command...: run with a deadline, output to /tmp/out
  what=$1; shift
  rc=0
  timeout 120 "$@" >/tmp/out 2>&1 || rc=$?
  [ $rc = 0 ] && return 0
  bad "$what: exit $rc:"; tail -20 /tmp/out; return 1
}
# expect WHAT PATTERN: the last run's output holds PATTERN
expect() { if grep -q -e "$2" /tmp/out; then ok "$1"; else bad "$1: no '$2' in:"; tail -20 /tmp/out; fi; }
cd /tmp/debs
run "dpkg -i" dpkg -i ./weft_*.deb ./libweft1_*.deb ./libweft-dev_*.deb && ok "dpkg -i weft libweft1 libweft-dev"
dpkg -L weft libweft1 libweft-dev | sort -u >/tmp/files
mkdir -p /tmp/elsewhere && cd /tmp/elsewhere

run "weftrun -np 2 true" weftrun -np 2 true && ok "weftrun -np 2 true"
run "weftrun --version" weftrun --version && expect "weftrun --version" '^weftrun (weft) '
run "weft-topo" weft-topo && expect "weft-topo" '^Machine: ' && grep '^Machine: ' /tmp/out
run "weft-topo --topology a3-highgpu-8g.xml -np 8" weft-topo --topology a3-highgpu-8g.xml -np 8 &&
  expect "weft-topo --topology a3-highgpu-8g.xml -np 8 (the preset's cores kept)" \
    '^7     7     0000:8b:00.0  6     1    enp140s0         98-103,202-207'
run "weft-topo --list-topologies" weft-topo --list-topologies &&
  expect "weft-topo --list-topologies" '^n2-standard-16  *Google Cloud N2'
run "weftrun --dry-run by name" weftrun --dry-run -H a,b --topology a3-highgpu-8g -np 16 true &&
  expect "weftrun --dry-run -H a,b --topology a3-highgpu-8g -np 16" '^b rank 15 (local 7): GPU 7'

cat >hello.c <<'EOF'
#include <stdio.h>
#include <weft.h>
int main(int argc, char **argv)
{
  weft_ctx *ctx;
  int one = 1, sum = 0;
  if (weft_init(&argc, &argv, &ctx) != 0)
    return 1;
  if (weft_allreduce(weft_world(ctx), &one, &sum, 1, WEFT_INT32, WEFT_SUM, NULL) != 0)
    return 2;
  printf("hello from rank %d of %d: sum %d, weft %s\n", weft_rank(ctx), weft_size(ctx), sum,
         weft_version_string());
  return weft_finalize(ctx) != 0;
}
EOF
if run "cc hello.c \$(pkg-config --cflags --libs weft)" \
     sh -c 'cc -Wall -Werror -o hello hello.c $(pkg-config --cflags --libs weft)'; then
  ok "cc hello.c \$(pkg-config --cflags --libs weft): $(pkg-config --cflags --libs weft)"
  run "mpirun -np 2 ./hello" mpirun --oversubscribe -np 2 ./hello &&
    expect "mpirun -np 2 ./hello" '^hello from rank 1 of 2: sum 2, weft '
  run "weftrun -np 2 ./hello" weftrun -np 2 --bind-to none ./hello &&
    expect "weftrun -np 2 ./hello" '^hello from rank 1 of 2: sum 2, weft '
fi
cp -r /usr/share/weft/examples ex
if run "make in a copy of /usr/share/weft/examples" make -C ex &&
   run "weftrun -np 2 ex/dp_train" weftrun -np 2 --bind-to none ex/dp_train --epochs 2; then
  expect "the installed examples build with their Makefile; dp_train runs" '^epoch  *2  loss'
fi
run "weftrun -np 2 heat2d" weftrun -np 2 --bind-to none /usr/libexec/weft/examples/heat2d &&
  expect "weftrun -np 2 /usr/libexec/weft/examples/heat2d" 'heat2d'
run "weft-gather-topology" weft-gather-topology --input /usr/share/weft/topologies/g2-standard-48.xml \
  --name g2 -o g2.xml && run "weft-topo --topology ./g2.xml" weft-topo --topology ./g2.xml &&
  expect "weft-gather-topology, and weft-topo reads its file" '4 GPUs'
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
  run "weftrun -np 2 python3 train_ddp.py" weftrun -np 2 --bind-to none python3 \
    /usr/share/weft/examples/train_ddp.py --epochs 2 --samples 1024 &&
    expect "weftrun -np 2 python3 /usr/share/weft/examples/train_ddp.py" '^train_ddp: 2 ranks, backend gloo'
else
  echo "note: no torch for /usr/bin/python3: train_ddp.py not run"
fi
# The bash completion, where bash-completion looks, under each tool's name.
c=/usr/share/bash-completion/completions
if [ -f $c/weftrun ] && [ -L $c/weft-bench ] && [ -L $c/weft-topo ] && [ -L $c/weft-vcluster ]; then
  run "bash completion" bash -c ". $c/weft-bench && COMP_WORDS=(weft-bench allr) COMP_CWORD=1 &&
    _weft_weft_bench && echo \"\${COMPREPLY[*]}\"" && expect "bash completion of weft-bench" '^allreduce$'
else
  bad "no bash completion in $c: $(ls $c 2>&1 | grep weft)"
fi
# The modulefile where Debian's environment-modules looks: module avail lists it with
# the shell's own MODULEPATH, and loading it leaves MANPATH and LD_LIBRARY_PATH alone.
if [ -r /usr/share/modules/init/sh ]; then
  run "module avail weft" env -i PATH=/usr/bin:/bin HOME=/tmp/home \
    sh -c '. /usr/share/modules/init/sh && module -t avail weft 2>&1' &&
    expect "module avail finds weft with Debian's MODULEPATH" '^weft/'
  run "module load weft" env -i PATH=/usr/bin:/bin HOME=/tmp/home \
    sh -c '. /usr/share/modules/init/sh && module load weft && weft-topo --version && env' &&
    expect "module load weft; weft-topo --version" '^weft-topo ' &&
    if grep -e '^MANPATH=' -e '^LD_LIBRARY_PATH=' /tmp/out; then bad "module load weft sets MANPATH or LD_LIBRARY_PATH"
    else ok "module load weft leaves MANPATH and LD_LIBRARY_PATH alone"; fi
else
  echo "note: environment-modules is not installed (apt-get install environment-modules): module avail not run"
fi

cd /
run "dpkg --purge" dpkg --purge libweft-dev weft libweft1 && ok "dpkg --purge libweft-dev weft libweft1"
if dpkg -l | grep -i weft; then bad "dpkg still lists weft"; fi
left=0
while read -r f; do
  case $f in /|/usr|/usr/*/|/usr/bin|/usr/lib|/usr/lib/*-linux-gnu|/usr/lib/*-linux-gnu/pkgconfig|/usr/include|\
    /usr/libexec|/usr/share|/usr/share/doc|/usr/share/man|/usr/share/man/man[13]|/.|\
    /usr/share/bash-completion|/usr/share/bash-completion/completions) continue ;; esac
  [ -e "$f" ] || [ -L "$f" ] || continue
  # a directory another installed package owns too (environment-modules' modulefiles)
  [ -d "$f" ] && [ ! -L "$f" ] && dpkg -S "$f" >/dev/null 2>&1 && continue
  echo "left on disk: $f"; left=1
done </tmp/files
[ $left = 0 ] && ok "nothing dpkg -L listed is left ($(wc -l </tmp/files) paths)" || bad "files left after purge"
exit $fail
EOS
chmod +x "$tmp/debs/inside.sh"

rc=0
unshare -m sh -c '
  set -e
  ov=$1 debs=$2
  mount --make-rprivate /
  mount -t tmpfs none "$ov"
  mkdir "$ov/upper" "$ov/work" "$ov/root"
  mount -t overlay overlay -o lowerdir=/,upperdir="$ov/upper",workdir="$ov/work" "$ov/root"
  mount --rbind /dev "$ov/root/dev"
  mount -t proc proc "$ov/root/proc"
  mount --rbind /sys "$ov/root/sys"
  mount -t tmpfs none "$ov/root/tmp"
  mount -t tmpfs none "$ov/root/run"
  cp -r "$debs" "$ov/root/tmp/debs"
  rc=0
  chroot "$ov/root" /tmp/debs/inside.sh || rc=$?
  # What the packages wrote to the root and left there: dpkg'"'"'s own records aside.
  (cd "$ov/upper" && find . -iname "*weft*" ! -path "./var/log/*" ! -path "./var/lib/dpkg/*" \
     ! -path "./tmp/*" ! -path "./var/cache/man/*") >"$ov/root/tmp/left" 2>/dev/null || true
  if [ -s "$ov/root/tmp/left" ]; then echo "FAIL: left in the root after purge:"; cat "$ov/root/tmp/left"; rc=1
  else echo "ok nothing named weft left in the root after purge"; fi
  exit $rc' sh "$tmp/ov" "$tmp/debs" || rc=$?
[ $rc = 0 ] || fail=1
if [ -n "${WEFT_DEB_KEEP:-}" ]; then
  mkdir -p "$WEFT_DEB_KEEP" && cp "$tmp"/*.deb "$tmp/build.log" "$tmp/lintian" "$WEFT_DEB_KEEP/"
  echo "kept the packages in $WEFT_DEB_KEEP"
fi
step "done"
if [ $fail = 0 ]; then echo "PASS: weft .deb built, lintian clean, installed, used, purged"; else echo "FAIL"; fi
exit $fail
