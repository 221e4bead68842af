#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Host discovery for weftrun --host-discovery: the VMs of a Google Cloud
# managed instance group that are running now, one "NAME slots=N" line each
# (the hostfile grammar), for Spot or preemptible VMs that the group recreates
# after a preemption, often with a new address (the name stays; weftrun
# resolves it on every attempt).
#
#   gce-mig.sh GROUP (--zone ZONE | --region REGION) [--project P] [--slots N]
#
# Slots per VM: --slots, else WEFT_DISCOVERY_SLOTS; one of them is needed (the
# ranks each VM takes, usually its GPUs). Only instances whose status is
# RUNNING and on which the group is doing nothing (current action NONE) are
# printed: one that the group is still creating, verifying or recreating
# comes at a later discovery. Exit 0 with the list (maybe empty), or 1 with one
# line on stderr when gcloud is missing, fails, or prints what this does not
# read.
set -u
prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 1; }
group= where= project= slots=${WEFT_DISCOVERY_SLOTS-}
while [ $# -gt 0 ]; do
  case $1 in
    --zone | --region | --project | --slots)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"
      case $1 in
        --zone) where="--zone=$2" ;;
        --region) where="--region=$2" ;;
        --project) project="--project=$2" ;;
        --slots) slots=$2 ;;
      esac
      shift 2 ;;
    --zone=?* | --region=?*) where=$1; shift ;;
    --project=?*) project=$1; shift ;;
    --slots=?*) slots=${1#--slots=}; shift ;;
    -h | --help) sed -n '3,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option '$1'; see $prog --help" ;;
    *) [ -z "$group" ] || die "one group only ('$group' and '$1')"; group=$1; shift ;;
  esac
done
[ -n "$group" ] || die "no managed instance group named; usage: $prog GROUP --zone ZONE --slots N"
[ -n "$where" ] || die "say where group '$group' is: --zone ZONE (zonal group) or --region REGION (regional)"
case $slots in
  '') die "how many slots per VM? give --slots N or set WEFT_DISCOVERY_SLOTS (the ranks each VM takes, usually its GPUs)" ;;
  *[!0-9]* | 0*) die "slots '$slots' is not a whole number from 1 up" ;;
esac
command -v gcloud >/dev/null 2>&1 ||
  die "gcloud is not on PATH; install the Google Cloud CLI on the host that runs weftrun"

out=$(mktemp) && err=$(mktemp) || die "cannot make a temporary file"
trap 'rm -f "$out" "$err"' EXIT
# value(): tab-separated fields, no header, the same in every gcloud release.
# shellcheck disable=SC2086 # $project is one word or nothing
if ! gcloud compute instance-groups managed list-instances "$group" "$where" $project \
  --format='value(instance.basename(),instanceStatus,currentAction)' >"$out" 2>"$err"; then
  die "gcloud compute instance-groups managed list-instances $group $where failed: $(tr '\n' ' ' <"$err" | cut -c1-300)"
fi
awk -F '\t' -v slots="$slots" -v prog="$prog" '
  NF == 0 { next }
  NF < 2 || $1 !~ /^[a-z]([-a-z0-9]*[a-z0-9])?$/ {
    printf "%s: cannot read line %d of gcloud'\''s list: %s\n", prog, NR, $0 > "/dev/stderr"; bad = 1; exit 1 }
  $2 == "RUNNING" && ($3 == "" || $3 == "NONE") { print $1 " slots=" slots }
  END { exit bad }' "$out" || exit 1
