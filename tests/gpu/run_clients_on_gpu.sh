#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_clients_on_gpu.sh - real GDRCopy clients on a GPU machine, from the repository
# root, in two parts (PARTS, default "perftest gtest"):
#
# perftest: UCX's ucx_perftest, tag_lat on CUDA memory (-m cuda: plain cudaMalloc buffers)
# between two processes on this host at 8 B, 4 KiB, 64 KiB and 1 MiB, UCX's default settings,
# without vramio-run (libgdrapi has no backend for cudaMalloc memory: cuda_copy and cuda_ipc do
# the copies) and under it, in alternating rounds; prints the median p50 latencies side by
# side, and shows from UCX's data-level trace which transport did the copies.
#
# gtest: UCX's own test program on the suites that use gdr_copy (SUITES, gtest filters: by
# default gdr_copy/*, shm_ib/test_ucp_tag_mem_type.*, shm_ib/test_ucp_am_nbx_eager_memtype.*,
# shm_ib/test_ucp_am*, shm_ib/test_ucp_rma*, shm_ib/test_ucp_mmap*, shm_ib/test_ucp_atomic*)
# in three modes (MODES, default "baseline vulkan novulkan"): without vramio-run (baseline),
# under vramio-run with NVIDIA's Vulkan driver (VK_DRIVER_FILES from .gpu/env.sh: vulkan), and
# under vramio-run with no Vulkan driver for the loader to find (VK_DRIVER_FILES and
# VK_ICD_FILENAMES naming a file that does not exist: novulkan, the machine of a container
# started with NVIDIA_DRIVER_CAPABILITIES=compute,utility, where vramio must stand aside). A
# summary line per suite and mode (tests run, passed, failed, skipped, how it ended); then
# vulkan must fail no test that passes in baseline, novulkan must run the same tests as
# baseline and fail none that passes there, and gdr_copy's tests must exist under vulkan
# (UCX instantiates them only where gdr_open works) and not under novulkan. The comparisons
# read the baseline of the same OUT (an earlier call's, while the machine stays warm, or this
# call's). Every run is bounded: GTEST_TIMEOUT seconds per suite and mode (default 300), UCX's
# watchdog GTEST_WATCHDOG seconds per test (default 300: on an H100 test_ucp_rma.put_blocking/0
# took 178 s without vramio-run beside three other suites; at 120 s the watchdog aborted every
# rma and atomic suite in all three modes at their first test), and the whole call by BUDGET (default
# 560: a device call may last 600 s); a run that would start with less than 30 s left is
# skipped, saying so, so that a call always ends with its summary. Split a long round by
# SUITES and MODES over several calls, or run every suite and mode at once (GTEST_PARALLEL=1:
# one gtest process each, judged when all have ended; for results only, since they share the
# GPU and the CPUs, and what was slow serially then fits one call).
#
# The gtest round in four calls of less than 10 minutes (carry .clients/ucx and .gpu):
#   UCX_PREFIX=.clients/ucx PARTS=gtest SUITES='gdr_copy/* shm_ib/test_ucp_tag_mem_type.*
#     shm_ib/test_ucp_am_nbx_eager_memtype.*' bash tests/gpu/run_clients_on_gpu.sh
#   the same with SUITES='shm_ib/test_ucp_am*', then with SUITES='shm_ib/test_ucp_rma*
#     shm_ib/test_ucp_mmap*' (GTEST_PARALLEL=1), then with VRAMIO_ATOMIC_ITERS=200
#     SUITES='shm_ib/test_ucp_atomic32.* shm_ib/test_ucp_atomic64.*' (GTEST_PARALLEL=1)
# The rma tests' times move with what runs beside them (H100, 2026-12-07): put_nonblocking/2
# and get_nonblocking/0,1,2, eight processes (baseline and vulkan) with six atomic ones beside
# them, were all stopped by the 300 s watchdog; the eight alone took 232-262 s under
# vramio-run and baseline's were stopped at 285 s, at the ninth of their ten memory-type pairs
# (baseline's rma suite had passed whole in an earlier call). Run rma with no other suite, its
# long tests with GTEST_WATCHDOG near what the call allows. The atomic tests make 32,000 operations per
# operation and memory-type pair: a test took 118 s at 1,600 (all modes alike), so UCX's count
# does not fit a call. UCX lowers it only in Valgrind or ASan builds; the recipe below makes
# it an environment variable, VRAMIO_ATOMIC_ITERS (unset: UCX's own count).
#
# Skips, saying why, when UCX_PREFIX is not given (perftest) or has no bin/ucx_gtest (gtest).
# Logs go to $OUT (default /tmp/vramio-clients); result lines and a summary to stdout.
#
# UCX_PREFIX: a UCX built with CUDA and gdr_copy against this project, with its gtest program,
# outside the repository, pruned to be carried. From UCX's source (9466d10 was used: the
# search tool's fetch of openucx/ucx, then git --git-dir=<mirror> archive 9466d10 | tar -x),
# on the build machine (Debian 12, 2 shared cores: UCX and its gtest about 25 min under
# nice); C=/work/main/.clients (git-ignored), OURS=$C/vramio-prefix:
#   apt-get install libtool-bin libnuma-dev                    # autogen.sh's and configure's
#   NVML for configure only (the GPU machine's driver has libnvidia-ml.so.1): Debian's
#   non-free libnvidia-ml-dev and libnvidia-ml1, 'apt-get download' through a scratch
#   sources list with 'deb http://deb.debian.org/debian bookworm main non-free' (apt-get
#   -o Dir::Etc::SourceList=... -o Dir::State::Lists=... update / download), 'dpkg -x' each
#   into NVML=$C/scratch/nvml/root
#   ./deps.sh && make -j2 lib && make install PREFIX=$OURS     # here: header and library
#     (deps.sh first: on a fresh machine make lib stops for want of the Vulkan headers)
#   cd $C/ucx-src && ./autogen.sh
#   mkdir $C/ucx-build && cd $C/ucx-build && $C/ucx-src/contrib/configure-release \
#     --prefix=$C/ucx-install --with-cuda=/usr/local/cuda --with-gdrcopy=$OURS --enable-gtest \
#     --enable-logging=trace_data --enable-mt --disable-static --without-java --without-go \
#     --disable-doxygen-doc --without-verbs --without-rdmacm --without-knem --without-xpmem \
#     --without-rocm --without-ze --without-ugni --without-mad --without-fuse3 --without-efa \
#     --without-bfd --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" \
#     CPPFLAGS=-I$NVML/usr/include LDFLAGS=-L$NVML/usr/lib/x86_64-linux-gnu/nvidia/current
#   (its summary must say "CUDA modules: < gdrcopy >" and "UCM modules: < cuda >")
#   In $C/ucx-src/test/gtest/ucp/test_ucp_atomic.cc, default_num_iters() first returns
#   ucs_max(atoi(getenv("VRAMIO_ATOMIC_ITERS")), 1) when that variable is set (a change to
#   UCX's test made in this copy only, and the one change: the rest is UCX's as it is)
#   nice -n 10 make -j2 && make install && nice -n 10 make -j2 -C test/gtest gtest
#   Packed into UCX_PREFIX=$C/ucx (24 MB; 'apt-get install patchelf'), from I=$C/ucx-install:
#     mkdir -p $C/ucx/bin $C/ucx/lib/ucx
#     cp -L $I/bin/ucx_perftest $I/bin/ucx_info $C/ucx/bin/
#     cp -L $C/ucx-build/test/gtest/gtest $C/ucx/bin/ucx_gtest
#     for l in libucs libucs_signal libuct libucp libucm; do cp -L $I/lib/$l.so.0 $C/ucx/lib/; done
#     cp -L $I/lib/ucx/*.so.0 $C/ucx/lib/ucx/          # the modules, named as libucs's suffix
#     cp -L /usr/local/cuda/lib64/libcudart.so.13 /lib/x86_64-linux-gnu/libgomp.so.1 $C/ucx/lib/
#     strip --strip-unneeded $C/ucx/bin/* $C/ucx/lib/*.so* $C/ucx/lib/ucx/*.so*
#     for f in $C/ucx/bin/* $C/ucx/lib/*.so* $C/ucx/lib/ucx/*.so*; do patchelf --remove-rpath $f; done
#   The last step matters: gtest's RPATH names the build tree, and an RPATH that held a
#   libcuda.so.1 would come before vramio-run's shim (ucx_gtest links libcuda.so.1 itself);
#   LD_LIBRARY_PATH (below) finds lib/, lib/ucx (ucx_gtest links libuct_cuda.so.0 too) and
#   this build's libgdrapi.so.2. Carry .clients/ucx (and .gpu for the Vulkan driver).
# The GPU machine has glibc 2.39 (the build needs 2.34) and the driver's libcuda.so.1 and
# libnvidia-ml.so.1.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-clients 560 clients_summary.log
PARTS=${PARTS:-perftest gtest}
if [ -z "${UCX_PREFIX:-}" ] || [ ! -d "${UCX_PREFIX:-}/lib" ]; then
    say "skip clients_gpu/ucx: no UCX given (UCX_PREFIX=<a UCX built with --with-gdrcopy against this project>; see this script's header)"
    exit 0
fi
UCX_PREFIX=$(cd "$UCX_PREFIX" && pwd)
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
GTEST=$UCX_PREFIX/bin/ucx_gtest
# UCX's gdr_copy module links libgdrapi.so.2: this build's.
export LD_LIBRARY_PATH=$UCX_PREFIX/lib:$UCX_PREFIX/lib/ucx:$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- perftest ---------------------------------------------------------------------------
part_perftest() {
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

    # SIZES: the message sizes in bytes. ROUNDS: how many times each size is measured,
    # without and under vramio-run in turn; the medians of the p50s are compared (one run's
    # p50 moves by a few percent from run to run here, with either kind of memory).
    SIZES=${SIZES:-8 4096 65536 1048576}
    ROUNDS=${ROUNDS:-3}
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
}

# ---- gtest ------------------------------------------------------------------------------
SUITES=${SUITES:-gdr_copy/* shm_ib/test_ucp_tag_mem_type.* shm_ib/test_ucp_am_nbx_eager_memtype.* shm_ib/test_ucp_am* shm_ib/test_ucp_rma* shm_ib/test_ucp_mmap* shm_ib/test_ucp_atomic*}
MODES=${MODES:-baseline vulkan novulkan}
GTEST_TIMEOUT=${GTEST_TIMEOUT:-300}
GTEST_WATCHDOG=${GTEST_WATCHDOG:-300}
G=$OUT/gtest
mkdir -p "$G"

# A suite's file name: its filter with every character but letters, digits and _ as _.
key() { printf '%s' "$1" | tr -c 'A-Za-z0-9_' '_'; }

# gtest_run MODE FILTER: UCX's gtest on FILTER in MODE; its output in $G/MODE.KEY.log, what
# it ran in MODE.KEY.{ran,failed} (test names) and MODE.KEY.sum (one line).
gtest_run() {
    local mode=$1 filter=$2 k log left rc pre=() env=()
    k=$(key "$filter")
    log=$G/$mode.$k.log
    left=$((start + BUDGET - $(date +%s)))
    if [ "$left" -lt 30 ]; then
        say "skip clients_gpu/gtest/$filter/$mode: the call's budget is spent (${left}s left; run it again with SUITES='$filter' MODES=$mode)"
        return
    fi
    case $mode in
        baseline) ;;
        vulkan) pre=("$RUN") ;;
        novulkan) pre=("$RUN")
                  env=(VK_DRIVER_FILES=/nonexistent/no-vulkan-driver.json
                       VK_ICD_FILENAMES=/nonexistent/no-vulkan-driver.json VK_ADD_DRIVER_FILES=) ;;
    esac
    # UCX's defaults for gtest, but a failure prints its backtrace instead of freezing.
    env "${env[@]}" UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_LOG_PRINT_ENABLE=y \
        timeout --kill-after=10 $(tmo "$GTEST_TIMEOUT") "${pre[@]}" "$GTEST" -t "$GTEST_WATCHDOG" \
        --gtest_filter="$filter" > "$log" 2>&1 </dev/null
    rc=$?
    # Googletest's lines: "[       OK ] NAME (N ms)", "[  FAILED  ] NAME, where GetParam() = ...
    # (N ms)" (again in the list at the end, and "[  FAILED  ] N tests, listed below:").
    sed -n 's/^\[ *\(OK\|FAILED\|SKIPPED\) *\] \([^ ,]*\).*/\2/p' "$log" | grep -v '^[0-9]*$' |
        sort -u > "$G/$mode.$k.ran"
    sed -n 's/^\[ *FAILED *\] \([^ ,]*\).*/\1/p' "$log" | grep -v '^[0-9]*$' |
        sort -u > "$G/$mode.$k.failed"
    # A test that was running when the program died or was killed: the last one started.
    if [ "$rc" -ne 0 ] && ! grep -q '^\[==========\] .* ran\.' "$log"; then
        sed -n 's/^\[ RUN *\] \([^ ]*\).*/\1/p' "$log" | tail -n 1 >> "$G/$mode.$k.failed"
        sort -u -o "$G/$mode.$k.failed" "$G/$mode.$k.failed"
    fi
    local ran passed failed skipped how
    ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' "$log" | tail -n 1)
    passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    # UCX's own skips ("[     SKIP ] (why)") end as passed tests in googletest's count.
    skipped=$(grep -c '^\[ *SKIP *\]' "$log")
    failed=$(sort -u "$G/$mode.$k.failed" | grep -c .)
    case $rc in
        0) how="exit 0" ;;
        124|137) how="killed after ${GTEST_TIMEOUT}s (or the budget)" ;;
        *) how="exit $rc$( [ "$rc" -gt 128 ] && echo " (signal $((rc - 128)))")" ;;
    esac
    echo "${ran:-?} ran, ${passed:-0} passed, $failed failed, ${skipped:-0} skipped; $how" \
        > "$G/$mode.$k.sum"
    say "# gtest $filter $mode: $(cat "$G/$mode.$k.sum")"
    [ "$failed" -gt 0 ] && sed 's/^/#     failed: /' "$G/$mode.$k.failed" | head -n 20 | tee -a "$S"
    [ "$rc" -ne 0 ] && grep -m 3 -E 'Fatal|Assertion|Segmentation|Aborted|SIGABRT|killed' "$log" |
        cut -c1-200 | sed 's/^/#     /' | tee -a "$S"
    return 0
}

# gtest_judge FILTER: the result lines of FILTER against its baseline.
gtest_judge() {
    local filter=$1 k base mode new
    k=$(key "$filter")
    base=$G/baseline.$k
    for mode in vulkan novulkan; do
        [ -f "$G/$mode.$k.sum" ] || continue
        if ! [ -f "$base.sum" ]; then
            [ -s "$G/$mode.$k.failed" ] &&
                say "not ok clients_gpu/gtest/$filter/$mode: $(grep -c . "$G/$mode.$k.failed") failed (no baseline in $G to compare with)" ||
                say "ok clients_gpu/gtest/$filter/$mode: $(cat "$G/$mode.$k.sum") (no baseline to compare with)"
            continue
        fi
        # Failing here but not in the baseline (a test the baseline did not run counts).
        new=$(comm -23 "$G/$mode.$k.failed" "$base.failed" | head -n 5 | tr '\n' ' ')
        if [ -n "$new" ]; then
            say "not ok clients_gpu/gtest/$filter/${mode}_no_worse_than_baseline: fails $new"
        elif grep -q 'exit 0' "$base.sum" && ! grep -q 'exit 0' "$G/$mode.$k.sum"; then
            say "not ok clients_gpu/gtest/$filter/${mode}_no_worse_than_baseline: $(cat "$G/$mode.$k.sum")"
        else
            say "ok clients_gpu/gtest/$filter/${mode}_no_worse_than_baseline ($(cat "$G/$mode.$k.sum"); baseline $(cat "$base.sum"))"
        fi
        # Without a Vulkan driver vramio-run must leave the program as it is without it:
        # the same tests (gdr_copy's only where gdr_open works, so none here either).
        if [ "$mode" = novulkan ]; then
            if cmp -s "$G/$mode.$k.ran" "$base.ran"; then
                say "ok clients_gpu/gtest/$filter/novulkan_same_tests_as_baseline ($(grep -c . "$base.ran"))"
            else
                local here only missing
                here=$(grep -c . "$G/$mode.$k.ran")
                only=$(comm -23 "$G/$mode.$k.ran" "$base.ran" | head -n 3 | tr '\n' ' ')
                missing=$(comm -13 "$G/$mode.$k.ran" "$base.ran" | head -n 3 | tr '\n' ' ')
                say "not ok clients_gpu/gtest/$filter/novulkan_same_tests_as_baseline: $here tests, baseline $(grep -c . "$base.ran"); only here: ${only:-none}; missing: ${missing:-none}"
            fi
        fi
    done
    # gdr_copy's tests exist where gdr_open works: under vramio-run with the Vulkan driver.
    if [ "$filter" = 'gdr_copy/*' ] && [ -f "$G/vulkan.$k.ran" ]; then
        [ -s "$G/vulkan.$k.ran" ] &&
            say "ok clients_gpu/gtest/gdr_copy_tests_exist_under_vramio_run ($(grep -c . "$G/vulkan.$k.ran"))" ||
            say "not ok clients_gpu/gtest/gdr_copy_tests_exist_under_vramio_run: none ran (gdr_open failed in the test process?)"
    fi
}

part_gtest() {
    local filter mode env md why
    if [ ! -x "$GTEST" ]; then
        say "skip clients_gpu/gtest: no $GTEST (UCX built with --enable-gtest, packed as this script's header says)"
        return
    fi
    # What UCX sees in each mode under vramio-run: the gdr_copy memory domain with the Vulkan
    # driver; without one, none, and libgdrapi's reason (gdr_open NULL, as upstream without
    # its module) or the bridge's (it leaves the memory to the driver).
    for mode in $MODES; do
        case $mode in
            vulkan) env=() ;;
            novulkan) env=(VK_DRIVER_FILES=/nonexistent/no-vulkan-driver.json
                           VK_ICD_FILENAMES=/nonexistent/no-vulkan-driver.json VK_ADD_DRIVER_FILES=) ;;
            *) continue ;;
        esac
        env "${env[@]}" timeout $(tmo 60) "$RUN" "$UCX_PREFIX/bin/ucx_info" -d \
            > "$G/${mode}_ucx_info.log" 2>&1
        md=$(grep -c 'Memory domain: gdr_copy' "$G/${mode}_ucx_info.log")
        why=$(grep -o -m 1 -E "vulkan: cannot pin: .*|the vulkan backend cannot pin this program's memory .*" \
              "$G/${mode}_ucx_info.log" | head -n 1 | cut -c1-160)
        if [ "$mode" = vulkan ]; then
            [ "$md" -gt 0 ] && say "ok clients_gpu/gtest/vulkan_gdr_copy_domain_opens" ||
                say "not ok clients_gpu/gtest/vulkan_gdr_copy_domain_opens: not in ucx_info -d ($G/vulkan_ucx_info.log)"
        else
            [ "$md" -eq 0 ] && [ -n "$why" ] && say "ok clients_gpu/gtest/novulkan_no_gdr_copy_with_reason ($why)" ||
                say "not ok clients_gpu/gtest/novulkan_no_gdr_copy_with_reason: gdr_copy domains $md, reason '${why:-none}' ($G/novulkan_ucx_info.log)"
        fi
    done
    set -f # the filters are gtest's patterns, not file names
    if [ "${GTEST_PARALLEL:-0}" = 1 ]; then
        for filter in $SUITES; do
            for mode in $MODES; do
                gtest_run "$mode" "$filter" &
            done
        done
        wait
        for filter in $SUITES; do gtest_judge "$filter"; done
    else
        for filter in $SUITES; do
            for mode in $MODES; do
                gtest_run "$mode" "$filter"
            done
            gtest_judge "$filter"
        done
    fi
    set +f
}

for part in $PARTS; do
    case $part in
        perftest) if [ -x "$PERF" ]; then part_perftest; else say "skip clients_gpu/ucx_perftest: no $PERF"; fi ;;
        gtest) part_gtest ;;
        *) say "not ok clients_gpu/parts: unknown part '$part' (perftest, gtest)" ;;
    esac
done
say "== clients on GPU: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip"
