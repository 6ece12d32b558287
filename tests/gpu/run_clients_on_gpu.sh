#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_clients_on_gpu.sh - real GDRCopy clients on a GPU machine, from the repository
# root: UCX's ucx_perftest, tag_lat on CUDA memory (-m cuda: plain cudaMalloc buffers)
# between two processes on this host at 8 B, 4 KiB, 64 KiB and 1 MiB, UCX's default
# settings, without vramio-run (libgdrapi has no backend for cudaMalloc memory: cuda_copy
# and cuda_ipc do the copies) and under it, in alternating rounds; prints the median p50
# latencies side by side, and shows from UCX's data-level trace which transport did the
# copies. Skips, saying why, when UCX_PREFIX is not given. Logs go to $OUT; result lines and a
# summary to stdout. Every step has a timeout.
#
# UCX_PREFIX: a UCX install built with CUDA and gdr_copy against this project, outside the
# repository. From UCX's source release (1.23 was used), on the build machine:
#   make -j2 lib && make install PREFIX=$OURS                 # here: header and library
#   ./autogen.sh                                               # in UCX's source (a git tree)
#   contrib/configure-release --prefix=$UCX --with-cuda=/usr/local/cuda --with-gdrcopy=$OURS \
#     --enable-logging=trace_data --enable-mt --disable-static --without-java --without-go \
#     --disable-doxygen-doc --without-verbs --without-rdmacm --without-knem --without-xpmem \
#     --without-rocm --without-ze --without-ugni --without-mad --without-fuse3 --without-efa \
#     --without-bfd --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90"
#   make -j2 && make install
# (configure needs nvml.h and libnvidia-ml.so, e.g. Debian's non-free libnvidia-ml-dev,
# through CPPFLAGS/LDFLAGS; its summary must say "CUDA modules: < gdrcopy >" and
# "UCM modules: < cuda >"; --enable-logging=trace_data keeps the data-level trace.) The GPU
# machine's driver provides libnvidia-ml.so.1 and libcuda.so.1.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-clients 300 clients_summary.log
if [ -z "${UCX_PREFIX:-}" ] || [ ! -x "${UCX_PREFIX:-}/bin/ucx_perftest" ]; then
    say "skip clients_gpu/ucx: no UCX given (UCX_PREFIX=<a UCX built with --with-gdrcopy against this project>; see this script's header)"
    exit 0
fi
[ -f .gpu/env.sh ] && . .gpu/env.sh
# UCX needs the library and vramio-run only.
if ! timeout $(tmo 200) make -j16 lib bridge > "$OUT/clients_build.log" 2>&1; then
    say "not ok clients_gpu/build: make failed"; tail -20 "$OUT/clients_build.log"; exit 1
fi
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip clients_gpu/ucx: no NVIDIA GPU here"; exit 0
fi
RUN=$PWD/build/bin/vramio-run
PERF=$UCX_PREFIX/bin/ucx_perftest
# UCX's gdr_copy module links libgdrapi.so.2: this build's.
export LD_LIBRARY_PATH=$UCX_PREFIX/lib:$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/ucx.log
: > "$L"

# pair LABEL [vramio-run] -- client args...: a server and a client; the client's output.
pair() {
    local label=$1 pre=() port=$((20000 + RANDOM % 20000)) srv i
    shift
    while [ "$1" != -- ]; do pre+=("$1"); shift; done
    shift
    timeout $(tmo 60) "${pre[@]}" "$PERF" -p $port > "$OUT/srv.tmp" 2>&1 &
    srv=$!
    for i in $(seq 100); do
        grep -q 'Waiting for connection' "$OUT/srv.tmp" 2>/dev/null && break
        sleep 0.1
    done
    timeout $(tmo 60) "${pre[@]}" "$PERF" localhost -p $port "$@" 2>&1
    echo "exit $?"
    wait $srv
    { echo "== $label server"; cat "$OUT/srv.tmp"; } >> "$L"
    rm -f "$OUT/srv.tmp"
}
p50() { awk '/^Final:/ { print $3 }'; }

# SIZES: the message sizes in bytes. ROUNDS: how many times each size is measured, without and
# under vramio-run in turn; the medians of the p50s are compared (one run's p50 moves by a few
# percent from run to run here, with either kind of memory).
SIZES=${SIZES:-8 4096 65536 1048576}
ROUNDS=${ROUNDS:-3}
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
declare -A plain bridged
for size in $SIZES; do
    n=20000; [ $size -ge 65536 ] && n=5000
    pl=(); br=()
    for round in $(seq "$ROUNDS"); do
        for mode in plain bridged; do
            pre=(); [ $mode = bridged ] && pre=("$RUN")
            out=$(pair "$mode $size round $round" "${pre[@]}" -- -t tag_lat -m cuda -s $size -n $n)
            { echo "== $mode $size round $round client"; printf '%s\n' "$out"; } >> "$L"
            v=$(printf '%s\n' "$out" | p50)
            [ $mode = plain ] && pl+=("${v:-?}") || br+=("${v:-?}")
        done
    done
    plain[$size]=$(median "${pl[@]}")
    bridged[$size]=$(median "${br[@]}")
    echo "# $size B: p50 ${plain[$size]:-?} us without vramio-run, ${bridged[$size]:-?} us under it (median of $ROUNDS; each: ${pl[*]} / ${br[*]})" >> "$L"
done

# Who did the copies: a short run at 8 B with UCX's data-level trace, per mode.
for mode in plain bridged; do
    pre=(); [ $mode = bridged ] && pre=("$RUN")
    out=$(UCX_LOG_LEVEL=data pair "trace $mode" "${pre[@]}" -- -t tag_lat -m cuda -s 8 -n 20)
    printf '%s\n' "$out" > "$OUT/trace_$mode.log"
    g=$(grep -c 'gdr_copy_ep' "$OUT/trace_$mode.log"); c=$(grep -c 'cuda_copy_ep' "$OUT/trace_$mode.log")
    say "# $mode: UCX trace lines from gdr_copy_ep $g, from cuda_copy_ep $c; $(grep -m1 -o 'failed to [^"]*' "$OUT/trace_$mode.log" | head -c 120)"
    [ $mode = bridged ] && gdr=$g
done
timeout $(tmo 30) "$RUN" "$UCX_PREFIX/bin/ucx_info" -d > "$OUT/ucx_info.log" 2>&1
grep -E 'Memory domain|Transport|failed to open' "$OUT/ucx_info.log" | head -30 >> "$L"

say "# ucx_perftest tag_lat -m cuda, UCX defaults:"
grep '^# [0-9]* B: p50' "$L" | tee -a "$S"
[ "${gdr:-0}" -gt 0 ] && say "ok clients_gpu/ucx_gdr_copy_does_the_copies ($gdr trace lines)" ||
    say "not ok clients_gpu/ucx_gdr_copy_does_the_copies: no gdr_copy_ep line under vramio-run"
[ -n "${bridged[8]:-}" ] && awk -v b="${bridged[8]}" 'BEGIN { exit !(b + 0 > 0 && b + 0 <= 3.0) }' &&
    say "ok clients_gpu/ucx_tag_lat_8B_p50_at_most_3us (${bridged[8]} us)" ||
    say "not ok clients_gpu/ucx_tag_lat_8B_p50_at_most_3us: ${bridged[8]:-not measured} us"
for size in $(printf '%s\n' $SIZES | sort -nu); do
    [ "$size" -gt 8 ] || continue
    # "No slower": the median within 5% of the median without vramio-run.
    awk -v a="${plain[$size]}" -v b="${bridged[$size]}" 'BEGIN { exit !(a + 0 > 0 && b + 0 > 0 && b + 0 <= (a + 0) * 1.05) }' &&
        say "ok clients_gpu/ucx_tag_lat_${size}B_no_slower (${bridged[$size]} vs ${plain[$size]} us)" ||
        say "not ok clients_gpu/ucx_tag_lat_${size}B_no_slower: ${bridged[$size]} vs ${plain[$size]} us"
done
say "== clients on GPU: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip"
