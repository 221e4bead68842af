# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the weftrun vcluster tests after tests/lib.sh: up brings up a
# 3-node virtual cluster with a different topology per node (a3-highgpu-8g,
# a2-highgpu-8g, g2-standard-48), vrun runs weftrun on it; $uniq names the
# test's processes for nothing_left.
need_mpirun
unique_name
fail=0

up()
{
  vc_up 3 --topology "vnode0=$topos/a3-highgpu-8g.xml" \
    --topology "vnode1=$topos/a2-highgpu-8g.xml" --topology "vnode2=$topos/g2-standard-48.xml"
}
vrun() { timeout 90 "$vc" --prefix "$prefix" run -- "$weftrun" "$@"; }

