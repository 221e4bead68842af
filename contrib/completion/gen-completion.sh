#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Writes the bash completion of weft's tools on stdout: TEMPLATE
# (contrib/completion/weft.bash.in) with each tool's own --help-completion
# table in place of @WEFT_COMPLETION_TABLES@, so that the completion is made
# from the option tables and cannot drift from them. Run at build time by
# share/completion.am:
#   gen-completion.sh TEMPLATE WEFTRUN WEFT-TOPO WEFT-BENCH WEFT-VCLUSTER
set -eu
[ $# -eq 5 ] || { echo "usage: gen-completion.sh TEMPLATE WEFTRUN WEFT-TOPO WEFT-BENCH WEFT-VCLUSTER" >&2; exit 2; }
template=$1
tmp=$(mktemp "${TMPDIR:-/tmp}/weft-completion.XXXXXX")
trap 'rm -f "$tmp"' EXIT

# quoted NAME COMMAND...: NAME='what COMMAND prints', quoted for bash.
quoted()
{
  name=$1
  shift
  out=$("$@") || { echo "gen-completion.sh: '$*' failed" >&2; exit 1; }
  [ -n "$out" ] || { echo "gen-completion.sh: '$*' printed nothing" >&2; exit 1; }
  printf "%s='%s'\n" "$name" "$(printf '%s\n' "$out" | sed "s/'/'\\\\''/g")"
}

# weft-bench's table, then its scale mode's.
bench_tables() { "$1" --help-completion && "$1" scale --help-completion; }

{
  quoted _weft_table_weftrun "$2" --help-completion
  quoted _weft_table_weft_topo "$3" --help-completion
  quoted _weft_table_weft_bench bench_tables "$4"
  quoted _weft_table_weft_vcluster /bin/sh "$5" --help-completion
} >"$tmp"
sed -e "/@WEFT_COMPLETION_TABLES@/{r $tmp" -e 'd;}' "$template"
