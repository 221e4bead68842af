#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Host discovery for weftrun --host-discovery from a file an operator edits:
# checks it and prints its hosts, one "HOST slots=N" line each.
#
#   file.sh FILE
#
# FILE has the hostfile grammar weftrun reads: "HOST slots=N" per line, '#'
# comments and blank lines allowed. To take a host out (maintenance, a VM
# about to go), delete or comment its line; to add one, add a line: the next
# restart takes the change. Edit with a program that writes a new file and
# renames it (most editors; or: cp hosts hosts.new; edit hosts.new;
# mv hosts.new hosts), so that a discovery never reads half a file. Exit 0
# with the hosts (none if every line is commented out), or 1 with one line on
# stderr naming the file and line of the first mistake.
set -u
prog=${0##*/}
case ${1-} in
  -h | --help) sed -n '3,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
[ $# -eq 1 ] && [ -n "$1" ] || { echo "$prog: usage: $prog FILE" >&2; exit 1; }
[ -f "$1" ] && [ -r "$1" ] || { echo "$prog: cannot read the host file '$1'" >&2; exit 1; }
awk -v file="$1" -v prog="$prog" '
  function fail(msg) { printf "%s: %s:%d: %s\n", prog, file, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
  { sub(/#.*/, ""); sub(/\r$/, "") }
  NF == 0 { next }
  {
    if ($1 !~ /^[A-Za-z0-9]([-A-Za-z0-9._:]*[A-Za-z0-9])?$/) fail("\"" $1 "\" is not a host name or address")
    if (NF != 2 || $2 !~ /^slots=[1-9][0-9]*$/)
      fail("expected \"HOST slots=N\" (N from 1), got \"" $0 "\"")
    if ($1 in seen) fail($1 " is listed again (first on line " seen[$1] "); one line per host")
    seen[$1] = NR
    out[++n] = $1 " " $2
  }
  END { if (bad) exit 1; for (i = 1; i <= n; i++) print out[i] }' "$1"
