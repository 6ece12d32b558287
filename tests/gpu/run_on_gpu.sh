#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_on_gpu.sh - on a GPU machine, from the repository root: build the library and
# the GPU programs, run the functional test as root and again as an ordinary user, then the
# benchmark. Full logs go to $OUT (default /tmp/vramio-gpu); a summary goes to stdout.
# On a machine without a Vulkan loader, put the loader packages and env.sh in .gpu/ first.
# Fork/exit, gdr_open's default and the sanity suite on every kind: tests/gpu/run_fork_on_gpu.sh
# (separate, so that each script's logs stay within what one run brings back).
set -u
OUT=${OUT:-/tmp/vramio-gpu}
mkdir -p "$OUT"
[ -f .gpu/env.sh ] && . .gpu/env.sh
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,pci.bus_id --format=csv; uname -r;
  ls -l /dev/nvidia*; grep -m1 'model name' /proc/cpuinfo; } > "$OUT/machine.log" 2>&1
head -3 "$OUT/machine.log"
if ! make -j16 lib gpu-tests bench-gpu > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    exit 1
fi

summary() { # log label
    echo "== $2: $(grep -c '^ok ' "$1") ok, $(grep -c '^not ok ' "$1") not ok, $(grep -c '^skip ' "$1") skip; $(tail -n1 "$1")"
    grep -E '^(not ok|skip) ' "$1"
}

timeout 300 build/gpu/gpu_backend_test > "$OUT/test_root.log" 2>&1
echo "exit $?" >> "$OUT/test_root.log"
grep -E '^#' "$OUT/test_root.log" | cut -c1-300
summary "$OUT/test_root.log" "functional test as root"

# The same as an ordinary user, from a directory that user can read.
user=vramiotest
id "$user" >/dev/null 2>&1 || useradd -M -s /bin/sh "$user"
d=/tmp/vramio-user
rm -rf "$d" && mkdir -p "$d"
cp -a build/lib/libgdrapi.so* build/gpu/gpu_backend_test "$d/"
icd=
if [ -n "${VK_DRIVER_FILES:-}" ]; then cp "$VK_DRIVER_FILES" "$d/icd.json"; icd="VK_DRIVER_FILES=$d/icd.json"; fi
chmod -R a+rX "$d"
timeout 300 setpriv --reuid="$user" --regid="$user" --clear-groups \
    env -i PATH="$PATH" HOME="$d" LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" $icd \
    "$d/gpu_backend_test" > "$OUT/test_user.log" 2>&1
echo "exit $?" >> "$OUT/test_user.log"
grep -E '^# uid' "$OUT/test_user.log"
summary "$OUT/test_user.log" "functional test as user $user"

# Once more as root under AddressSanitizer + UBSan (leak checking off: the CUDA and Vulkan
# drivers keep process-lifetime allocations; CUDA needs the shadow gap unprotected).
if make -j16 BUILD=build/asan SANITIZE=asan lib build/asan/gpu/gpu_backend_test \
        > "$OUT/build_asan.log" 2>&1; then
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 timeout 300 build/asan/gpu/gpu_backend_test \
        > "$OUT/test_asan.log" 2>&1
    echo "exit $?" >> "$OUT/test_asan.log"
    summary "$OUT/test_asan.log" "functional test under ASan+UBSan"
    grep -m5 -E 'ERROR: AddressSanitizer|runtime error' "$OUT/test_asan.log"
else
    echo "== ASan build failed"; tail -5 "$OUT/build_asan.log"
fi

timeout 240 build/bench/gpu_bench > "$OUT/bench.log" 2>&1
echo "exit $?" >> "$OUT/bench.log"
cat "$OUT/bench.log"

# Where the time of an import goes (the library's debug log; slower with logging on).
GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 timeout 60 build/bench/gpu_bench --costs \
    > "$OUT/costs_debug.log" 2>&1
echo "== import breakdown (debug log on)"
grep -E 'vulkan: (imported|released)|first pin' "$OUT/costs_debug.log" | cut -c1-220 | head -16
