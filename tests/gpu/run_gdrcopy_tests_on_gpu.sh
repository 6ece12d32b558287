#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_gdrcopy_tests_on_gpu.sh - GDRCopy 2.6's own test programs (sanity, copylat,
# copybw, apiperf), built from GDRCopy's source against this project's gdrapi.h and
# libgdrapi, on cuMemAlloc memory under vramio-run and on VMM memory (cuMemCreate) with
# VRAMIO_ENABLE_VULKAN=1. Every cuMemAlloc test must pass that its VMM twin passes; each
# test's own result is printed too (GDRCopy's VMM helper asks for no POSIX-fd handle type, so
# without the module its twins cannot pin at all: the absolute results are the telling ones).
#
# GDRCopy's source stays outside the repository. Get it with
#   git clone --depth 1 -b v2.6 https://github.com/NVIDIA/gdrcopy <dir>
# (or unpack its v2.6 release tarball), then, from the repository root on a GPU machine:
#   GDRCOPY_SRC=<dir> tests/gpu/run_gdrcopy_tests_on_gpu.sh
# Only <dir>/tests and <dir>/src/gdrapi_internal.h (sanity includes it) are used; its
# library is not built. Needs g++, the CUDA toolkit's cuda.h (CUDA_HOME, default
# /usr/local/cuda) and a GPU. Logs go to $OUT; result lines and figures to stdout. Every
# step has a timeout; BUDGET (seconds, default 300) bounds the whole run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-gdrcopy 300 gdrcopy_summary.log
G=${GDRCOPY_SRC:-}
if [ -z "$G" ] || [ ! -f "$G/tests/sanity.cpp" ] || [ ! -f "$G/src/gdrapi_internal.h" ]; then
    say "skip gdrcopy_tests/all: set GDRCOPY_SRC to GDRCopy 2.6's source (see this script's header)"
    exit 0
fi
[ -f .gpu/env.sh ] && . .gpu/env.sh
CUDA=${CUDA_HOME:-/usr/local/cuda}
B=build/gpu/gdrcopy
RUN=build/bin/vramio-run
mkdir -p "$B"
if [ -z "${SKIP_BUILD:-}" ] && ! timeout $(tmo 200) make -j16 lib bridge > "$OUT/gdrcopy_build.log" 2>&1; then
    say "not ok gdrcopy_tests/build: make failed"; tail -20 "$OUT/gdrcopy_build.log"; exit 1
fi
# Our gdrapi.h comes first; GDRCopy's src/ only for the internal header sanity includes.
for t in sanity copylat copybw apiperf; do
    extra=; [ "$t" = sanity ] && extra=$G/tests/testsuites/testsuite.cpp
    timeout $(tmo 120) g++ -O2 -Iinclude -I"$G/src" -I"$CUDA/include" -o "$B/gdrcopy_$t" \
        "$G/tests/$t.cpp" "$G/tests/common.cpp" $extra -L"$CUDA/lib64/stubs" -lcuda \
        -Lbuild/lib -lgdrapi -Wl,-rpath,"$PWD/build/lib" -lpthread -ldl -lrt \
        >> "$OUT/gdrcopy_build.log" 2>&1 &
done
wait
for t in sanity copylat copybw apiperf; do
    [ -x "$B/gdrcopy_$t" ] || say "not ok gdrcopy_tests/build_$t: g++ failed (see gdrcopy_build.log)"
done
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip gdrcopy_tests/run: no NVIDIA GPU here (the programs were built)"; exit 0
fi

# sanity: each test in a child of its own; -v prints "&&&& PASSED|FAILED name".
timeout $(tmo 150) env VRAMIO_ENABLE_VULKAN=1 "$B/gdrcopy_sanity" -v > "$OUT/sanity_vmm.log" 2>&1
echo "exit $?" >> "$OUT/sanity_vmm.log"
timeout $(tmo 150) "$RUN" "$B/gdrcopy_sanity" -v > "$OUT/sanity_bridge.log" 2>&1
echo "exit $?" >> "$OUT/sanity_bridge.log"
passed() { grep -q "^&&&& PASSED $2\$" "$1"; }
for t in $(sed -n 's/^&&&& \(PASSED\|FAILED\|WAIVED\) \(.*_cumemalloc\)$/\2/p' "$OUT/sanity_bridge.log" | sort -u); do
    twin=${t%_cumemalloc}_vmmalloc
    if grep -qE "^&&&& (PASSED|FAILED|WAIVED) $twin\$" "$OUT/sanity_vmm.log"; then
        if passed "$OUT/sanity_vmm.log" "$twin" && ! passed "$OUT/sanity_bridge.log" "$t"; then
            say "not ok gdrcopy_tests/sanity/$t: fails under vramio-run; $twin passes"
        else
            say "ok gdrcopy_tests/sanity/$t ($(passed "$OUT/sanity_bridge.log" "$t" && echo passes ||
                echo 'fails, as its twin does'))"
        fi
    else
        say "# sanity $t (no VMM twin) under vramio-run: $(passed "$OUT/sanity_bridge.log" "$t" && echo PASSED || echo FAILED)"
    fi
done
for f in sanity_vmm sanity_bridge; do
    say "# $f: $(grep -c '^&&&& PASSED' "$OUT/$f.log") passed, $(grep -c '^&&&& FAILED' "$OUT/$f.log") failed, $(tail -n1 "$OUT/$f.log")"
done

# copylat, copybw, apiperf: each on both kinds of memory; it must end with status 0.
for t in copylat copybw apiperf; do
    for kind in cuMemCreate cuMemAlloc; do
        case $kind in
            cuMemCreate) pre=(env VRAMIO_ENABLE_VULKAN=1) ;;
            cuMemAlloc) pre=("$RUN") ;;
        esac
        log=$OUT/gdrcopy_perf.log
        echo "== $t -a $kind" >> "$log"
        args=(-a "$kind")
        [ "$t" = copylat ] && args+=(-w 1000 -r 100)
        [ "$t" = apiperf ] && args+=(-n 20)
        timeout $(tmo 60) "${pre[@]}" "$B/gdrcopy_$t" "${args[@]}" > "$OUT/tmp.log" 2>&1
        rc=$?
        cat "$OUT/tmp.log" >> "$log"
        echo "exit $rc" >> "$log"
        eval "rc_$kind=$rc"
        grep -E 'gdr_copy_(to|from)_mapping[[:space:]]+(8|4096|65536)[[:space:]]|BW' "$OUT/tmp.log" | head -6 | sed "s/^/# $t $kind: /" | tee -a "$S"
    done
    if [ "$rc_cuMemCreate" -eq 0 ] && [ "$rc_cuMemAlloc" -ne 0 ]; then
        say "not ok gdrcopy_tests/$t/cuMemAlloc: exit $rc_cuMemAlloc under vramio-run; cuMemCreate passes"
    else
        say "ok gdrcopy_tests/$t/cuMemAlloc (exit $rc_cuMemAlloc; cuMemCreate exit $rc_cuMemCreate)"
    fi
done
rm -f "$OUT/tmp.log"
say "== GDRCopy tests: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok"
