#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_reads_on_gpu.sh - what a read through the library returns, on a GPU machine,
# from the repository root; every step has a timeout and BUDGET (seconds, default 560) bounds
# the whole run:
#  1. tests/gpu/stale_read.cu under vramio-run, once per copy kernel this CPU runs
#     (GDRCOPY_COPY_KERNEL): GPU writer and CPU reader with and without a peek, CPU writer and
#     GPU checker, 1 B to 64 KiB at odd offsets, gdr_copy_* and the _auto pair, and the
#     back-to-back check that each read reaches the device. ROUNDS (default 100000) round trips
#     a case, each case bounded by CASE_S seconds (default 2); KERNELS (default all five) the
#     kernels to run.
#  2. With OLD=<dir> (a tree of another revision, e.g. the one before a fix): the same program
#     against that tree's library, the automatic kernel only (OLD_ROUNDS, default 20000): a
#     test that can fail shows it here.
#  3. bench/read_bench.cu: ours, _auto, GDRCopy 2.6's read code (with GDRCOPY_SRC),
#     plain loads and the raw streaming-load sequences, and cudaMemcpy, side by side.
#  4. With GDRCOPY_SRC (GDRCopy 2.6's source, outside the repository: see
#     run_gdrcopy_tests_on_gpu.sh for how to get it): its copylat, built against our
#     library, on cudaMalloc memory under vramio-run.
# STALE=0 leaves out 1 and 2 (the figures alone: bench/run_readme_on_gpu.sh).
# Logs go to $OUT (6 files); result lines and a summary to stdout.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-reads 560 summary.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA=${CUDA_HOME:-/usr/local/cuda}
RUN=build/bin/vramio-run
B=build/gpu/reads
ROUNDS=${ROUNDS:-100000}
CASE_S=${CASE_S:-2}
mkdir -p "$B"

if ! timeout $(tmo 200) make -j16 lib bridge > "$OUT/build.log" 2>&1; then
    say "not ok reads/build: make failed"; tail -20 "$OUT/build.log"; exit 1
fi
nv() { # out src...
    local o=$1; shift
    timeout $(tmo 150) "$NVCC" -O2 -arch=sm_90 -Iinclude -Itests/lib -Itests/gpu/bridge -o "$B/$o" \
        "$@" tests/lib/t.c -Lbuild/lib -lgdrapi -Xlinker -rpath -Xlinker "$PWD/build/lib" \
        -lpthread -ldl >> "$OUT/build.log" 2>&1 || say "not ok reads/build_$o: nvcc failed (see build.log)"
}
STALE=${STALE:-1}
[ "$STALE" = 1 ] && nv stale_read tests/gpu/stale_read.cu &
nv read_bench bench/read_bench.cu &
if [ -n "${OLD:-}" ]; then
    (timeout $(tmo 200) make -C "$OLD" -j8 lib > "$OUT/build_old.log" 2>&1 ||
        say "not ok reads/build_old: make in $OLD failed") &
fi
G=${GDRCOPY_SRC:-}
if [ -n "$G" ]; then
    # GDRCopy 2.6's read code as its own Makefile builds it (one -m flag per ISA file).
    (
        o=$B/gdrcopy26; mkdir -p "$o"
        f="-O2 -fPIC -fvisibility=hidden -I$G/include -I$G/src -I$G/src/gdrdrv -I$CUDA/include"
        ok=1
        for isa in sse:-msse avx:-mavx sse41:-msse4.1 avx2:-mavx2 avx512:-mavx512f movdir64b:-mmovdir64b; do
            timeout $(tmo 60) cc $f ${isa#*:} -c "$G/src/memcpy_${isa%%:*}.c" -o "$o/m_${isa%%:*}.o" || ok=0
        done
        timeout $(tmo 60) cc $f -DCOMPILED_MOVDIR64B=1 -DGDRCOPY26_GDRAPI_C="\"$G/src/gdrapi.c\"" \
            -c bench/gdrcopy26_read.c -o "$o/shim.o" || ok=0
        timeout $(tmo 60) cc $f -c "$G/src/cuda_wrapper.c" -o "$o/cw.o" || ok=0
        [ $ok = 1 ] && timeout $(tmo 60) cc -shared -Wl,-Bsymbolic -o "$B/libgdrcopy26_read.so" \
            "$o"/*.o -ldl -lpthread || say "not ok reads/build_gdrcopy26: see build.log"
        timeout $(tmo 120) g++ -O2 -Iinclude -I"$G/src" -I"$CUDA/include" -o "$B/gdrcopy_copylat" \
            "$G/tests/copylat.cpp" "$G/tests/common.cpp" -L"$CUDA/lib64/stubs" -lcuda \
            -Lbuild/lib -lgdrapi -Wl,-rpath,"$PWD/build/lib" -lpthread -ldl -lrt ||
            say "not ok reads/build_copylat: see build.log"
    ) >> "$OUT/build.log" 2>&1 &
fi
wait
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip reads/all: no NVIDIA GPU here (the programs were built)"; exit 0
fi
results() { # log label
    say "== $2: $(grep -c '^ok ' "$1") ok, $(grep -c '^not ok ' "$1") not ok, $(grep -c '^skip ' "$1") skip"
    grep -E '^(not ok|skip) ' "$1" | head -30 | tee -a "$S"
}

# 2 first, while the machine is as fresh for it as for the rest.
if [ "$STALE" = 1 ] && [ -n "${OLD:-}" ] && [ -e "$OLD/build/lib/libgdrapi.so.2" ]; then
    LD_LIBRARY_PATH=$PWD/$OLD/build/lib timeout $(tmo 120) "$RUN" "$B/stale_read" \
        "${OLD_ROUNDS:-20000}" 1 > "$OUT/stale_old.log" 2>&1
    echo "exit $?" >> "$OUT/stale_old.log"
    results "$OUT/stale_old.log" "stale reads, $OLD's library (automatic kernel)"
    grep -E '^# .*(back_to_back|plain)' "$OUT/stale_old.log" | head -12 | tee -a "$S"
fi

# 1. Every kernel this CPU runs (the library warns and falls back for one it cannot).
: > "$OUT/stale_new.log"
[ "$STALE" = 1 ] || KERNELS=none
for k in ${KERNELS:-avx512 avx2 sse41 movdir64b c}; do
    [ "$k" = none ] && continue
    case $k in avx512) flag=avx512f ;; sse41) flag=sse4_1 ;; *) flag=$k ;; esac
    [ $k = c ] || grep -qw "$flag" /proc/cpuinfo || { say "skip reads/$k: this CPU lacks $flag"; continue; }
    echo "== kernel $k" >> "$OUT/stale_new.log"
    GDRCOPY_COPY_KERNEL=$k timeout $(tmo 150) "$RUN" "$B/stale_read" "$ROUNDS" "$CASE_S" \
        > "$OUT/stale_$k.tmp" 2>&1
    echo "exit $?" >> "$OUT/stale_$k.tmp"
    results "$OUT/stale_$k.tmp" "stale reads, kernel $k"
    grep -E '^# .*(back_to_back|plain)' "$OUT/stale_$k.tmp" | head -12 | tee -a "$S"
    cat "$OUT/stale_$k.tmp" >> "$OUT/stale_new.log"; rm -f "$OUT/stale_$k.tmp"
done

# 3. Side by side.
so=; [ -e "$B/libgdrcopy26_read.so" ] && so=$PWD/$B/libgdrcopy26_read.so
timeout $(tmo 120) "$RUN" "$B/read_bench" "$so" > "$OUT/read_bench.log" 2>&1
echo "exit $?" >> "$OUT/read_bench.log"
grep -vE '^ok ' "$OUT/read_bench.log" | tee -a "$S"

# 4. GDRCopy 2.6's copylat on our library (reads: each size's median and minimum, us).
if [ -x "$B/gdrcopy_copylat" ]; then
    timeout $(tmo 90) "$RUN" "$B/gdrcopy_copylat" -a cuMemAlloc -s 65536 -w 10000 -r 10000 \
        > "$OUT/copylat.log" 2>&1
    echo "exit $?" >> "$OUT/copylat.log"
    grep -E '^gdr_copy_(to|from)_mapping' "$OUT/copylat.log" | sed 's/^/# copylat: /' | tee -a "$S"
fi
say "== reads: $(grep -c '^ok ' "$OUT"/stale_new.log) ok, $(grep -c '^not ok ' "$OUT"/stale_new.log) not ok in the stale-read runs; $(($(date +%s) - start)) s"
