#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_mpi_on_gpu.sh - MPI over UCX through vramio on a GPU machine, from the repository
# root: Open MPI (pml ucx) with the OSU micro-benchmarks, two ranks on one GPU, every rank
# plainly and under vramio-run ('mpirun ... vramio-run osu_latency ...', the README's recipe),
# in alternating rounds. Parts (PARTS, default "proto lat_DD"; split the rest over calls):
#
#   proto    UCX's protocol choice (UCX_PROTO_INFO=y) for 8 B and 64 KiB from GPU memory, with
#            and without vramio-run, into proto_*.log, and the lines that name the transports
#            in the summary; under vramio-run gdr_copy must carry the 8 B message. Also
#            ucx_perftest tag_lat at 8 B under vramio-run (the gdr_copy floor the MPI figure
#            is held to, with UCX_PREFIX).
#   lat_DD lat_HD lat_DH   osu_latency -d cuda with the buffers in GPU (D) or host (H) memory
#   bw_DD bw_HD bw_DH      osu_bw, the same
#            at 1 B-4 MiB (SIZES, OSU's -m): ROUNDS (default 3) rounds of the plain and the
#            vramio-run job in turn; a table of the median per size, plain and under vramio-run,
#            and their ratio. Checks: latency at 1-8 B under vramio-run within 1.2x of
#            ucx_perftest's 8 B figure (proto part of the same call, else PERFTEST_8B us), and
#            no size slower under vramio-run than plainly beyond the plain rounds' own spread
#            (at least 5%).
#
# Every step is bounded (timeout), and the whole call by BUDGET seconds (default 560): a part
# that would start with less than 40 s left is skipped, saying so. Logs in $OUT (default
# /tmp/vramio-mpi), result lines and the tables on stdout (and $OUT/mpi_summary.log).
#
# MPI_PREFIX: Open MPI and the OSU benchmarks, built against UCX_PREFIX's UCX (itself built
# against this project: tests/gpu/run_clients_on_gpu.sh's header), outside the repository and
# pruned to be carried (about 20 MB). Skips, saying why, without it. The recipe, on the build
# machine (Debian 12, 2 cores: Open MPI about 30 min, OSU 2 min), C=/work/main/.clients
# (git-ignored), UCX built and installed in $C/ucx-install as that header says:
#   apt-get install libhwloc-dev libevent-dev flex             # external hwloc and libevent
#   Open MPI v5.0.10 from its source: the search tool's fetch of open-mpi/ompi, openpmix/openpmix,
#   openpmix/prrte and open-mpi/oac; 'git --git-dir=<mirror> archive <commit> | tar -x' of
#   v5.0.10 (less 3rd-party/*.tar.gz, which the mirror lacks) into $C/ompi-src, of the
#   commits it pins (git ls-tree v5.0.10 3rd-party/ config/) into 3rd-party/openpmix,
#   3rd-party/prrte and config/oac, and of oac's pinned commit into each one's config/oac:
#   cd $C/ompi-src && ./autogen.pl --no-3rdparty libevent,hwloc
#   mkdir $C/ompi-build && cd $C/ompi-build && $C/ompi-src/configure --prefix=$C/ompi-install \
#     --with-ucx=$C/ucx-install --with-cuda=/usr/local/cuda \
#     --with-cuda-libdir=/usr/local/cuda/lib64/stubs --with-hwloc=external \
#     --with-libevent=external --with-pmix=internal --with-prrte=internal \
#     --disable-mpi-fortran --disable-oshmem --disable-io-romio --disable-mpi-java \
#     --disable-sphinx
#   (its summary must list "CUDA support: yes" and "Open UCX: yes")
#   nice -n 10 make -j2 && make install
#   OSU micro-benchmarks 7.0 (the fetch of lrbison/osu-micro-benchmarks, a copy of OSU's
#   release; HEAD 4bcf978), in $C/osu-src; CUDA 13 changed cudaMemPrefetchAsync (a location
#   and flags), which OSU calls for managed memory only:
#     sed -i 's/cudaMemPrefetchAsync(buf, length, devid, um_stream)/cudaMemPrefetchAsync(buf,
#       length, (struct cudaMemLocation){ devid < 0 ? cudaMemLocationTypeHost :
#       cudaMemLocationTypeDevice, devid < 0 ? 0 : devid }, 0, um_stream)/' c/util/osu_util_mpi.c
#   ./autogen.sh && ./configure
#     --prefix=$C/ompi-install CC=$C/ompi-install/bin/mpicc CXX=$C/ompi-install/bin/mpicxx
#     --enable-cuda --with-cuda-include=/usr/local/cuda/include
#     --with-cuda-libpath=/usr/local/cuda/lib64 && make -j2 && make install
#   Packed into MPI_PREFIX=$C/mpi from I=$C/ompi-install: bin/ (mpirun, prterun, prted,
#   prte, pmix and prte helpers), lib/ (libmpi, libopen-pal, libpmix, libprrte and their
#   component folders), share/ (help texts), etc/, libexec/osu-micro-benchmarks/mpi/pt2pt/
#   {osu_latency,osu_bw}, and the build machine's libhwloc.so.15, libevent_core-2.1.so.7,
#   libevent_pthreads-2.1.so.7 and libudev.so.1 (the GPU machine may have none); stripped,
#   every RPATH removed (patchelf --remove-rpath: an RPATH into the build tree could
#   come before vramio-run's shim), as .clients/pack-mpi.sh there does. Open MPI finds the
#   moved install through OPAL_PREFIX, PRTE_PREFIX and PMIX_PREFIX (set below).
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-mpi 560 mpi_summary.log
PARTS=${PARTS:-proto lat_DD}
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-1:4194304}
if [ -z "${MPI_PREFIX:-}" ] || [ ! -x "${MPI_PREFIX:-}/bin/mpirun" ]; then
    say "skip mpi_gpu/all: no Open MPI given (MPI_PREFIX=<Open MPI and OSU built against UCX on this project>; see this script's header)"
    exit 0
fi
MPI_PREFIX=$(cd "$MPI_PREFIX" && pwd)
UCX_PREFIX=${UCX_PREFIX:+$(cd "$UCX_PREFIX" && pwd)}
[ -f .gpu/env.sh ] && . .gpu/env.sh
if ! timeout $(tmo 200) make -j16 lib bridge > "$OUT/mpi_build.log" 2>&1; then
    say "not ok mpi_gpu/build: make failed"; tail -20 "$OUT/mpi_build.log"; exit 1
fi
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip mpi_gpu/all: no NVIDIA GPU here"; exit 0
fi
RUN=$PWD/build/bin/vramio-run
OSU=$MPI_PREFIX/libexec/osu-micro-benchmarks/mpi/pt2pt
export OPAL_PREFIX=$MPI_PREFIX PRTE_PREFIX=$MPI_PREFIX PMIX_PREFIX=$MPI_PREFIX
export LD_LIBRARY_PATH=$MPI_PREFIX/lib${UCX_PREFIX:+:$UCX_PREFIX/lib:$UCX_PREFIX/lib/ucx}:$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$MPI_PREFIX/bin:$PATH
# Two ranks on this host, UCX for point-to-point; the ranks get the library path and the
# Vulkan loader's settings (.gpu/env.sh) by name. Open MPI's pml ucx disqualifies itself on a
# host without InfiniBand unless told that any transport and device will do (the same on this
# build machine: "No components were able to be opened in the pml framework"; with these,
# osu_latency ran over UCX's shared memory, plainly and under vramio-run).
MPI=(mpirun -np 2 --bind-to none --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
     -x LD_LIBRARY_PATH -x PATH)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
for v in VK_DRIVER_FILES VK_ICD_FILENAMES VK_LOADER_LAYERS_DISABLE; do
    [ -n "${!v+set}" ] && MPI+=(-x "$v")
done
MPI+=(-x UCX_PROTO_INFO -x UCX_LOG_LEVEL)   # job() sets both
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/# GPU: /' | tee -a "$S"
say "# Open MPI: $(mpirun --version 2>&1 | head -1); $(date -u '+%Y-%m-%d %H:%M UTC'); main at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# job MODE PROGRAM ARGS...: the MPI job, plainly or with each rank under vramio-run.
job() {
    local mode=$1 pre=()
    shift
    [ "$mode" = vramio ] && pre=("$RUN")
    env UCX_PROTO_INFO=${UCX_PROTO_INFO:-n} UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-warn} \
        timeout -k 5 $(tmo 150) "${MPI[@]}" "${pre[@]}" "$@" 2>&1
}
left() { echo $((start + BUDGET - $(date +%s))); }

# ---- proto ------------------------------------------------------------------------------
PERF8=${PERFTEST_8B:-}
part_proto() {
    local mode size f
    for mode in plain vramio; do
        for size in 8 65536; do
            f=$OUT/proto_${mode}_$size.log
            UCX_PROTO_INFO=y job $mode "$OSU/osu_latency" -d cuda -m $size:$size -i 100 -x 10 D D > "$f"
            echo "exit $?" >> "$f"
            say "# $mode, $size B from GPU memory, UCX's protocol lines (UCX_PROTO_INFO=y):"
            # Each table whose title (the line after "ucp_context") names GPU memory, with
            # its rows, once (every rank prints its own), without UCX's time stamps.
            sed 's/^\[[^]]*\] \[[^]]*\] *//' "$f" |
                awk '/^\| *ucp_context/ { hdr = $0; getline; show = /cuda/; if (show) print hdr }
                     show && /^\|/ { print }' | awk '!seen[$0]++' | sed 's/^/#   /' |
                head -40 | tee -a "$S"
            tail -n 1 "$f" | grep -q 'exit 0' ||
                say "not ok mpi_gpu/proto/$mode/$size: the job failed ($(grep -m1 -iE 'error|abort' "$f" | cut -c1-160))"
        done
    done
    # Who copies the 8 B message out of and into GPU memory (the protocol line names the
    # transport between the ranks, sysv/memory; the copies in and out are memory-type copies):
    # a short run with UCX's data-level trace, lines from gdr_copy's and cuda_copy's endpoints.
    local g c
    for mode in plain vramio; do
        f=$OUT/trace_${mode}_8.log
        UCX_LOG_LEVEL=data job $mode "$OSU/osu_latency" -d cuda -m 8:8 -i 20 -x 2 D D > "$f"
        g=$(grep -c 'gdr_copy_ep' "$f"); c=$(grep -c 'cuda_copy_ep' "$f")
        say "# $mode, 8 B: UCX trace lines from gdr_copy_ep $g, from cuda_copy_ep $c"
        [ $mode = vramio ] || continue
        [ "$g" -gt 0 ] && say "ok mpi_gpu/gdr_copy_carries_8B_under_vramio_run ($g trace lines)" ||
            say "not ok mpi_gpu/gdr_copy_carries_8B_under_vramio_run: no gdr_copy_ep line ($f)"
        gzip -f "$f"
    done
    gzip -f "$OUT/trace_plain_8.log"
    # The floor: ucx_perftest between two processes of this host at 8 B, under vramio-run.
    if [ -n "$UCX_PREFIX" ] && [ -x "$UCX_PREFIX/bin/ucx_perftest" ]; then
        local port=$((20000 + RANDOM % 20000)) srv i vals=()
        for i in 1 2 3; do
            timeout $(tmo 40) "$RUN" "$UCX_PREFIX/bin/ucx_perftest" -p $port > "$OUT/perf_srv.log" 2>&1 &
            srv=$!
            for _ in $(seq 100); do grep -q 'Waiting for connection' "$OUT/perf_srv.log" 2>/dev/null && break; sleep 0.1; done
            vals+=("$(timeout $(tmo 40) "$RUN" "$UCX_PREFIX/bin/ucx_perftest" localhost -p $port \
                      -t tag_lat -m cuda -s 8 -n 20000 2>&1 | awk '/^Final:/ { print $3 }')")
            wait $srv
            port=$((port + 1))
        done
        PERF8=$(median "${vals[@]}")
        say "# ucx_perftest tag_lat -m cuda 8 B under vramio-run: p50 ${PERF8:-?} us (median of ${vals[*]})"
    fi
}

# ---- lat_* and bw_* ---------------------------------------------------------------------
part_osu() {
    local part=$1 kind=${1%_*} bufs=${1#*_} prog round mode out a b
    local -A vals
    case $kind in lat) prog=$OSU/osu_latency ;; bw) prog=$OSU/osu_bw ;; esac
    local args=(-d cuda -m "$SIZES" ${bufs:0:1} ${bufs:1:1})
    [ $kind = lat ] && args=(-i 2000 -x 200 "${args[@]}")
    for round in $(seq "$ROUNDS"); do
        for mode in plain vramio; do
            out=$(job $mode "$prog" "${args[@]}")
            printf '== %s %s round %s\n%s\n' "$part" "$mode" "$round" "$out" >> "$OUT/osu_$part.log"
            # OSU's rows: size and figure, after the header.
            while read -r a b; do vals[$mode,$a]+="$b "; done < <(printf '%s\n' "$out" | awk '/^[0-9]+ +[0-9.]+$/')
        done
    done
    local unit="us, lower is better"; [ $kind = bw ] && unit="MB/s, higher is better"
    say "# $part: osu_$( [ $kind = lat ] && echo latency || echo bw) ${args[*]}, 2 ranks, 1 GPU; median of $ROUNDS rounds ($unit)"
    say "#   size        plain   vramio-run   ratio   (plain rounds; vramio-run rounds)"
    local sizes size p v r slow=() missing=() sp
    sizes=$(printf '%s\n' "${!vals[@]}" | cut -d, -f2 | sort -nu)
    for size in $sizes; do
        p=$(median ${vals[plain,$size]:-}); v=$(median ${vals[vramio,$size]:-})
        r=$(awk -v p="$p" -v v="$v" 'BEGIN { if (p + 0 > 0 && v + 0 > 0) printf "%.2f", v / p; else print "?" }')
        say "$(printf '#   %-9s %9s %11s %7s   (%s; %s)' "$size" "${p:-?}" "${v:-?}" "$r" "${vals[plain,$size]:-}" "${vals[vramio,$size]:-}")"
        if [ -z "$p" ] || [ -z "$v" ]; then missing+=("$size"); continue; fi
        # Slower: beyond the plain rounds' own spread (max/min), at least 5%.
        sp=$(spread ${vals[plain,$size]:-})
        if [ $kind = lat ]; then
            within "$p" "$v" "$sp" || slow+=("$size")
        else
            within "$v" "$p" "$sp" || slow+=("$size")
        fi
    done
    if [ -z "$sizes" ]; then
        say "not ok mpi_gpu/$part/ran: no figures (the log: $OUT/osu_$part.log)"; return
    fi
    [ ${#missing[@]} -eq 0 ] ||
        say "not ok mpi_gpu/$part/measured_both_ways: no figure at ${missing[*]} B plainly or under vramio-run (the log: $OUT/osu_$part.log)"
    [ ${#slow[@]} -eq 0 ] && say "ok mpi_gpu/$part/no_size_slower_under_vramio_run" ||
        say "not ok mpi_gpu/$part/no_size_slower_under_vramio_run: slower at ${slow[*]} B"
    if [ $kind = lat ] && [ "$bufs" = DD ]; then
        local floor=${PERF8:-} worst=0
        if [ -z "$floor" ]; then
            say "skip mpi_gpu/$part/small_at_the_gdr_copy_floor: no ucx_perftest figure (run the proto part first in the same call, or PERFTEST_8B=us)"
        else
            for size in 1 2 4 8; do
                v=$(median ${vals[vramio,$size]:-})
                worst=$(awk -v w="$worst" -v v="$v" 'BEGIN { print (v + 0 > w + 0 ? v : w) }')
            done
            awk -v w="$worst" -v f="$floor" 'BEGIN { exit !(w + 0 > 0 && w + 0 <= f * 1.2) }' &&
                say "ok mpi_gpu/$part/small_at_the_gdr_copy_floor (1-8 B at most $worst us; ucx_perftest 8 B $floor us)" ||
                say "not ok mpi_gpu/$part/small_at_the_gdr_copy_floor: 1-8 B up to $worst us against ucx_perftest's $floor us (1.2x allowed)"
        fi
    fi
}

for part in $PARTS; do
    if [ "$(left)" -lt 40 ]; then
        say "skip mpi_gpu/$part: the call's budget is spent ($(left) s left; run again with PARTS=$part)"; continue
    fi
    case $part in
        proto) part_proto ;;
        lat_DD|lat_HD|lat_DH|bw_DD|bw_HD|bw_DH) part_osu "$part" ;;
        *) say "not ok mpi_gpu/$part: no such part" ;;
    esac
done
echo "== mpi_gpu: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip ($(( $(date +%s) - start )) s)"
