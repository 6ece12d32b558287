#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_soname.sh - file names, SONAME and dependencies: libgdrapi.so.2.6 with SONAME
# libgdrapi.so.2, the two symlinks clients dlopen, and no link-time need of CUDA or Vulkan.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
dir=${BUILD:-build}/lib
lib=$dir/libgdrapi.so.2.6
[ -f "$lib" ] || { t_fail "soname" "$lib is not built"; exit 1; }
dyn=$(readelf -d "$lib")

soname=$(echo "$dyn" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "libgdrapi.so.2" ] && t_ok "soname_is_libgdrapi.so.2" ||
    t_fail "soname_is_libgdrapi.so.2" "got '$soname'"

for link in libgdrapi.so.2 libgdrapi.so; do
    if [ -L "$dir/$link" ] && [ "$(readlink -f "$dir/$link")" = "$(readlink -f "$lib")" ]; then
        t_ok "symlink_$link"
    else
        t_fail "symlink_$link" "missing or not pointing to libgdrapi.so.2.6"
    fi
done

needed=$(echo "$dyn" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | tr '\n' ' ')
if echo "$needed" | grep -qE 'libcuda|libvulkan|libcudart|libnvidia'; then
    t_fail "no_gpu_library_needed" "NEEDED $needed"
else
    t_ok "no_gpu_library_needed"
fi
if echo "$dyn" | grep -q 'BIND_NOW\|FLAGS.*NOW'; then
    t_ok "bind_now"
else
    t_fail "bind_now" "the library is not linked with -z now"
fi
t_done
