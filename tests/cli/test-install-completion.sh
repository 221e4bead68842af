#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The bash completion (share/completion/weftrun, made at build time from the
# tools' own --help-completion tables): sourced in bash, `complete -p` names
# its function for each of weftrun, weft-topo, weft-bench and weft-vcluster,
# and COMP_WORDS/COMP_CWORD give options, their choices (--map-by, --bind-to,
# --rank-by, --nccl-preset, weft-bench -d and -o), topology names
# (weft-topo --list-topologies) for --topology and not the directory's other
# files, .xml files and paths once the word has a '/', files for --hostfile,
# collectives for weft-bench, commands for weft-vcluster and a program for
# weftrun. Every option each tool's --help shows is completed, and
# weft-vcluster's table has exactly the options of its usage. make install
# puts it in $(bashcompletiondir), the other names as links; with
# bash-completion installed, its loader finds it there.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
command -v bash >/dev/null 2>&1 || skip "bash is not installed"
comp=$WEFT_BUILDDIR/share/completion/weftrun
[ -f "$comp" ] || fail "$comp was not built"
bin=$tmp/bin
mkdir -p "$bin" "$tmp/cwd/hosts.d"
: >"$tmp/cwd/hosts.d/b"
for t in "$WEFT_BUILDDIR/src/weftrun/weftrun" "$WEFT_BUILDDIR/src/weft-topo/weft-topo" \
         "$WEFT_BUILDDIR/src/weft-bench/weft-bench" "$vc"; do
  ln -s "$t" "$bin/$(basename "$t")"
done
: >"$tmp/cwd/hostfile-a"
: >"$tmp/cwd/a3-mine.xml"

# try WORD...: the completions of the last word, sorted, on one line.
cat >"$tmp/try.bash" <<'EOF'
. "$1"
shift
for t in weftrun weft-topo weft-bench weft-vcluster; do
  complete -p "$t" | grep -q -- "-F _weft_" || { echo "no completion function for $t"; exit 1; }
done
# "(default)": the function left the word to bash's own completion.
compopt() { [[ $* == *default* ]] && _default=1; builtin compopt "$@" 2>/dev/null; }
try() {
  _default=
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  f=$(complete -p "$1" | sed 's/.*-F \([^ ]*\) .*/\1/')
  "$f" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  if ((${#COMPREPLY[@]})); then
    printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//'
    echo
  elif [[ -n $_default ]]; then
    echo "(default)"
  else
    echo "(none)"
  fi
}
while IFS= read -r line; do
  eval "try $line"
done
EOF
cat >"$tmp/cases" <<'EOF'
weftrun --top
weftrun --topology a3-
weftrun --hostfile host
weftrun -hostfile hosts.d/
weftrun --gpu-visibility ""
weftrun -np 4 --nccl-preset ""
weftrun --map-by ""
weftrun --bind-to n
weftrun --rank-by s
weft-topo --map-by l
weft-topo --bind-to gpu
weft-topo --nccl-preset a3-
weft-topo --topology ""
weft-topo --topology ./h
weft-bench allreduce -d b
weft-bench allreduce --datatype float
weft-bench allreduce -o ""
weftrun --mca btl ""
weftrun --mca btl tcp --dry
weftrun -np 2 weftru
weftrun -np 2 -- weft-t
weftrun -np 2 ./prog --dry
weft-topo --topology n2
weft-topo --list
weft-bench ""
weft-bench all
weft-bench allreduce --memory ""
weft-bench allreduce -b 1K --bas
weft-bench allreduce -a ""
weft-bench scale --co
weft-bench scale --coll se
weft-bench scale --launcher ""
weft-bench scale --nodes 1,2 -- --mem
weft-vcluster ""
weft-vcluster st
weft-vcluster --pre
weft-vcluster up 4 --sl
weft-vcluster up 2 --topology a3-m
weft-vcluster run --prefix x -- weft-ben
weft-vcluster run --
weft-vcluster link vnode1 ""
weft-vcluster kill --
weft-vcluster exec vnode1 ls --
EOF
# every topology name, then the .xml file here (not hostfile-a)
topos=$({ ls "$WEFT_TOPDIR/share/weft/topologies" | sed -n 's/\.xml$//p'; echo a3-mine.xml; } | sort |
        tr '\n' ' ' | sed 's/ $//')
cat >"$tmp/want" <<'EOF'
--topology
a3-highgpu-8g a3-megagpu-8g a3-mine.xml a3-ultragpu-8g
hostfile-a hosts.d
hosts.d/b
all none own
a2 a3-edgegpu-8g a3-highgpu-8g a3-highgpu-small a3-megagpu-8g a3-ultragpu-8g a4-highgpu-8g auto g2 n1 none
board core gpu hwthread l1cache l2cache l3cache node numa slot socket
none numa
slot socket
l1cache l2cache l3cache
gpu-local
a3-edgegpu-8g a3-highgpu-8g a3-highgpu-small a3-megagpu-8g a3-ultragpu-8g
@TOPOS@
./hosts.d
bfloat16
float float16 float32 float64
all avg max min prod sum
(none)
--dry-run
weftrun
weft-topo
(default)
n2-standard-16
--list-topologies
all_gather all_reduce all_to_all allgather allreduce alltoall bcast broadcast bucket fusion reduce_scatter reducescatter scale send_recv sendrecv
all_gather all_reduce all_to_all allgather allreduce alltoall
device host
--baseline
0 1 2 3
--coll
send_recv sendrecv
a3-mine.xml hostfile-a hosts.d mpirun weftrun
--memory
down env exec help kill link netem nodes rsh run status up
status
--prefix
--slots --slurm
a3-megagpu-8g a3-mine.xml
weft-bench
-- --help --prefix
down up
--help --prefix --silent
(default)
EOF
sed -i "s|@TOPOS@|$topos|" "$tmp/want"
(cd "$tmp/cwd" && PATH="$bin:$PATH" WEFT_DATADIR="$WEFT_TOPDIR/share/weft" \
   bash "$tmp/try.bash" "$comp" <"$tmp/cases") >"$tmp/got" 2>"$tmp/err" ||
  { cat "$tmp/got" "$tmp/err"; fail "sourcing $comp in bash failed"; }
paste -d '|' "$tmp/cases" "$tmp/want" "$tmp/got" | awk -F'|' '$2 != $3 { print "  " $1 ": want [" $2 "], got [" $3 "]"; bad = 1 } END { exit bad }' ||
  fail "completions differ (above)"

# --nccl-preset's choices are auto, none and the presets weft ships: one each.
presets=$(ls "$WEFT_TOPDIR/share/weft/presets" | sed -n 's/\.preset$//p' | sort | tr '\n' ' ')
for t in weftrun weft-topo; do
  got=$("$bin/$t" --help-completion | awk -F'\t' '$2 ~ /--nccl-preset/ { print $4 }' | tr ' ' '\n' |
        grep -v -x -e auto -e none | sort | tr '\n' ' ')
  [ "$got" = "$presets" ] || fail "$t --nccl-preset completes [$got], the presets are [$presets]"
done

# Every option --help shows is in the completion: it comes from the same table.
# Only the option column counts (lines that start with an option, up to the
# two spaces before the description): a description may name another
# program's option (weftrun's --engine says "srun --mpi=pmix").
for t in weftrun weft-topo weft-bench; do
  "$bin/$t" --help 2>/dev/null | awk '/^  +-/ { sub(/^ +/, ""); sub(/  .*/, ""); print }' |
    grep -o -e '--[a-z][a-z_-]*' | sort -u >"$tmp/help-$t"
  "$bin/$t" --help-completion | cut -f2 | tr ' ' '\n' | sort -u >"$tmp/table-$t"
  missing=$(comm -23 "$tmp/help-$t" "$tmp/table-$t" | tr '\n' ' ')
  [ -z "$missing" ] || fail "$t --help shows options its completion lacks: $missing"
done
# weft-vcluster's table is written beside its usage: the same options both ways,
# counting the synopses but not the descriptions (column 25 on, after two spaces:
# --topology's names "of weft-topo --list-topologies").
"$vc" --help | sed -e '/^ \{24\}/d' -e 's/\([^ ]\)  .*/\1/' | grep -o -e '--[a-z][a-z-]*' | sort -u >"$tmp/help-vc"
"$vc" --help-completion | cut -f2 | tr ' ' '\n' | grep -e '^--' | sort -u >"$tmp/table-vc"
diff "$tmp/help-vc" "$tmp/table-vc" >"$tmp/diff" ||
  fail "weft-vcluster's --help and its completion table differ: $(cat "$tmp/diff")"
cmds=$("$vc" --help-completion | awk -F'\t' '$1 == "-" && $2 == "@" { print $4 }')
for c in $("$vc" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
  case " $cmds " in *" $c "*) ;; *) fail "weft-vcluster command '$c' is not completed" ;; esac
done

# make install: where bash-completion looks, the other names as links.
dirs() { printf 'weft-print:\n\t@echo "$(%s)"\n' "$1" |
         env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
           make -s --no-print-directory -C "$WEFT_BUILDDIR/share" -f Makefile -f - weft-print; }
cdir=$(dirs bashcompletiondir)
[ -n "$cdir" ] || fail "make knows no bashcompletiondir"
if [ "$cdir" = no ]; then
  echo "configured --with-bash-completion-dir=no: nothing to install"
else
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$WEFT_BUILDDIR/share" install-data \
    DESTDIR="$tmp/inst" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install-data failed"; }
  d=$tmp/inst$cdir
  cmp -s "$comp" "$d/weftrun" || fail "$d/weftrun is not the built completion"
  for n in weft-topo weft-bench weft-vcluster; do
    [ -L "$d/$n" ] && [ "$(readlink "$d/$n")" = weftrun ] || fail "$d/$n is not a link to weftrun"
  done
  # bash-completion's loader finds a command's file in XDG_DATA_DIRS.
  bc=/usr/share/bash-completion/bash_completion
  if [ -f "$bc" ] && [ "${cdir%/bash-completion/completions}" != "$cdir" ]; then
    got=$(XDG_DATA_DIRS="$tmp/inst${cdir%/bash-completion/completions}" PATH="$bin:$PATH" \
          bash -c '. "$1" >/dev/null 2>&1; _completion_loader weft-bench 2>/dev/null; complete -p weft-bench' \
          sh "$bc" 2>&1) || true
    case $got in *_weft_weft_bench*) ;; *) fail "bash-completion did not load weft-bench's completion: $got" ;; esac
  else
    echo "note: bash-completion is not installed (Debian: bash-completion): its loader is not tried"
  fi
fi
echo "PASS: bash completion of the four tools, from their option tables, installed with links"
