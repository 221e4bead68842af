#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# share/weft/discovery/gce-mig.sh against a fake gcloud on PATH: only RUNNING
# instances the group is not acting on, the slots from --slots or
# WEFT_DISCOVERY_SLOTS, the arguments gcloud gets; and one line on stderr and
# exit 1 when gcloud is missing, fails, or prints what the script cannot read,
# or when the slots or the zone are not given.
set -eu
. "${WEFT_TOPDIR:?run through make check or tests/run-test.sh}/tests/lib.sh"
script=$WEFT_TOPDIR/share/weft/discovery/gce-mig.sh
mkdir "$tmp/bin"
# The fake prints $FAKE_OUT (value() format: tab-separated) and records its arguments.
cat >"$tmp/bin/gcloud" <<'SH'
#!/bin/sh
printf '%s\n' "$@" >"$FAKE_ARGS"
[ -z "${FAKE_FAIL-}" ] || { echo "ERROR: (gcloud.compute.instance-groups.managed.list-instances) $FAKE_FAIL" >&2; exit 1; }
cat "$FAKE_OUT"
SH
chmod +x "$tmp/bin/gcloud"
export FAKE_ARGS="$tmp/args" FAKE_OUT="$tmp/list"
tab=$(printf '\t')
cat >"$tmp/list" <<EOF2
train-a1b2${tab}RUNNING${tab}NONE
train-c3d4${tab}RUNNING${tab}VERIFYING
train-e5f6${tab}STOPPING${tab}RECREATING
train-g7h8${tab}RUNNING${tab}NONE
train-i9j0${tab}PROVISIONING${tab}CREATING
train-k1l2${tab}TERMINATED${tab}NONE
EOF2
fail=0
# expect STATUS COMMAND...: the exit status, stdout in $tmp/out, stderr in $tmp/err
expect() {
  _want=$1; shift
  _rc=0
  PATH="$tmp/bin:$PATH" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || _rc=$?
  if [ "$_rc" != "$_want" ]; then
    echo "FAIL: $* exited $_rc, not $_want; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
    fail=1
    return 1
  fi
}

expect 0 "$script" train --zone us-central1-a --slots 8
printf 'train-a1b2 slots=8\ntrain-g7h8 slots=8\n' >"$tmp/want"
cmp -s "$tmp/want" "$tmp/out" || { echo "FAIL: hosts: got"; cat "$tmp/out"; fail=1; }
[ ! -s "$tmp/err" ] || { echo "FAIL: stderr on success: $(cat "$tmp/err")"; fail=1; }
grep -qx 'list-instances' "$tmp/args" && grep -qx 'train' "$tmp/args" && grep -qx -- '--zone=us-central1-a' "$tmp/args" ||
  { echo "FAIL: gcloud's arguments:"; cat "$tmp/args"; fail=1; }
# Regional group, project, slots from the environment.
WEFT_DISCOVERY_SLOTS=2 expect 0 "$script" train --region us-central1 --project p1 &&
  grep -qx 'train-g7h8 slots=2' "$tmp/out" && grep -qx -- '--region=us-central1' "$tmp/args" &&
  grep -qx -- '--project=p1' "$tmp/args" || { echo "FAIL: --region --project WEFT_DISCOVERY_SLOTS"; fail=1; }
# An empty group: nothing available, exit 0.
: >"$tmp/empty"
FAKE_OUT="$tmp/empty" expect 0 "$script" train --zone z --slots 1 && [ ! -s "$tmp/out" ] ||
  { echo "FAIL: empty group printed: $(cat "$tmp/out")"; fail=1; }

# Each failure: exit 1, nothing on stdout, one line on stderr that contains the words.
refused() { # WORDS COMMAND...
  _words=$1; shift
  expect 1 "$@" || return 0
  if [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -q -- "$_words" "$tmp/err"; then
    echo "FAIL: $*: want one line with '$_words'; stdout: $(cat "$tmp/out"); stderr: $(cat "$tmp/err")"
    fail=1
  fi
}
refused "give --slots N or set WEFT_DISCOVERY_SLOTS" env -u WEFT_DISCOVERY_SLOTS "$script" train --zone z
refused "slots '0' is not a whole number" "$script" train --zone z --slots 0
refused "slots 'x8' is not a whole number" "$script" train --zone z --slots x8
refused "--zone ZONE (zonal group) or --region REGION" "$script" train --slots 8
refused "no managed instance group named" "$script" --zone z --slots 8
refused "unknown option '--zones'" "$script" train --zones z --slots 8
FAKE_FAIL="The resource 'projects/p/zones/z/instanceGroupManagers/train' was not found" \
  refused "list-instances train --zone=z failed: ERROR: .*was not found" "$script" train --zone z --slots 8
printf 'NAME ZONE STATUS\ntrain-a1b2 z RUNNING\n' >"$tmp/table"
FAKE_OUT="$tmp/table" refused "cannot read line 1 of gcloud's list: NAME ZONE STATUS" "$script" train --zone z --slots 8
# gcloud not on PATH at all: a PATH with only what the script needs.
mkdir "$tmp/nogcloud"
for t in sh awk mktemp rm tr cut cat sed; do ln -s "$(command -v $t)" "$tmp/nogcloud/$t"; done
_rc=0
env PATH="$tmp/nogcloud" "$script" train --zone z --slots 8 >"$tmp/out" 2>"$tmp/err" || _rc=$?
[ $_rc = 1 ] && grep -q "gcloud is not on PATH" "$tmp/err" ||
  { echo "FAIL: without gcloud: exit $_rc: $(cat "$tmp/err")"; fail=1; }
[ $fail = 0 ] && echo "PASS: gce-mig.sh: RUNNING instances only, slots, and every failure in one line"
exit $fail
