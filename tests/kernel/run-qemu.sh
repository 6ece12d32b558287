#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/run-qemu.sh - proves the gdrdrv module and the library inside QEMU guests running
# Debian's own 6.1 and 6.12 kernels, on top of the emulated NVIDIA p2p provider
# (tests/kernel/emu/provider/, test only). Run by 'make check' through tests/run.sh; prints one
# "ok <kernel>/<name>", "not ok <kernel>/<name>: why" or "skip <kernel>/<name>: why" line per
# guest result. Exits 77 (skip, last line says why) when QEMU or headers are missing, except
# under CI (CI set), where that is a failure: CI installs them (.ci/setup.d/kernel.sh).
#
# Per kernel series it builds, out of copies under $BUILD/kernel/<abi>/ (W=1, warnings fail):
# the provider, a test consumer of its exports (tests/kernel/probe/) and gdrdrv from driver/
# (when driver/ has module sources), the last two with KBUILD_EXTRA_SYMBOLS; takes boot/vmlinuz-<abi> out of the Debian image package (cached with
# the .deb in $VRAMIO_KERNEL_CACHE, default /var/cache/vramio-kernels, else
# $BUILD/kernel/cache); packs busybox-static, the modules, the static guest programs
# (tests/kernel/guest/*_test.c and emuctl.c, built by "make guest-progs": tests/kernel/guest.mk)
# and tests/kernel/guest/init.sh as /init into a gzip'd newc cpio, and boots it under TCG.
# The guest gets an ivshmem-plain PCI device whose 64 MiB memory BAR the provider hands out
# as GPU pages on request (NVP2P_EMU_ALLOC_BAR), so gdrdrv is also run on MMIO pages
# (tests/kernel/guest/bar_test.c, bar_life_test.c), as on a real GPU's BAR1.
#
# Adding guest programs (other areas, e.g. the tools): list them in the one list,
# tests/kernel/guest-extra.list, one per line:
#     NAME  HOST_PATH  [ARGS...]
# HOST_PATH is a statically linked program that make builds (relative to the repository root;
# "$BUILD" in it is replaced by the build folder). It is copied into the guest as /extra/<basename> and run
# there, while gdrdrv (default parameters) and the provider are loaded, as
# "/extra/<basename> ARGS". Its own ok/not ok/skip lines are passed through as
# <kernel>/extra/NAME/<name>; without such lines its exit status counts (0 ok, 77 skip, other
# not ok). A listed program that was not built is reported as "not ok". Blank lines and lines
# starting with # are ignored.
#
# The series "debug" is the rig's debug kernel (tests/kernel/debug-kernel.sh: Debian's 6.1
# source with KASAN, KFENCE, lockdep, UBSAN bounds and DEBUG_VM, built once per machine and
# cached), booted with kasan_multi_shot; modules are built against its tree. Its results are
# named debug-6.1/ (debug-6.1-proprietary/ for GDRDRV_FLAVOUR=proprietary). Where the kernel is not built yet it is
# built first under CI (.ci/setup.d/debug-kernel.sh builds it before), and skipped otherwise.
# Stock 6.12 boots with kfence.sample_interval=1 slub_debug=FZPU. Every run fails on a
# checker's report in the guest's log (KASAN, KFENCE, lockdep, UBSAN, WARNING, BUG, Oops):
# "not ok <kernel>/kernel-log".
#
# Time bounds: a guest's time depends on the host (TCG runs it at the host's speed, and a
# loaded 2-core host takes twice as long), so a boot is bounded by its progress, not by its
# total time. The guest prints a line as each test group starts and one per result; QEMU is
# stopped when no such line came for the stall bound (VRAMIO_QEMU_STALL, default 150 s; on
# the debug kernel VRAMIO_DEBUG_QEMU_STALL, default 300 s: several times the longest group).
# The ceiling (VRAMIO_QEMU_TIMEOUT, default 900 s; VRAMIO_DEBUG_QEMU_TIMEOUT, default 2700 s)
# only stops a guest that prints forever. While a guest runs, a line a minute says how far it
# is (tests/run.sh bounds this script by its output's progress too), and each boot ends with
# its time against its ceiling and its longest silence against its stall bound.
#
# The scripts' own bounds in tests/run.sh (these lines, and the same in the wrappers):
# run.sh timeout: 2400
# run.sh stall: 600
#
# Environment: BUILD (build folder, default build), VRAMIO_KERNELS (space separated series to
# run, default "6.1 6.12"), the bounds above, KEEP_LOGS=1
# (print the whole serial log), VRAMIO_QEMU_BAR=0 (no ivshmem device: the BAR tests skip),
# VRAMIO_GUEST_ONLY (space separated shell patterns of guest groups to run, e.g.
# "np-callback gdrdrv": while iterating; the module loads, unloads and the final leak and
# kernel-log checks always run; default: every group, as CI runs them).
#
# ARCH=arm64 runs the same on Debian's arm64 kernels in a qemu-system-aarch64 "virt" guest
# (TCG, -cpu max): modules and guest programs cross-built with aarch64-linux-gnu-gcc (the
# library and the extras in $BUILD/aarch64), headers, image and busybox taken out of Debian's
# arm64 packages (tests/kernel/foreign.sh). Result names start with "arm64/"; the work folder is
# $BUILD/kernel-arm64. The guest has no exit port: it powers off, and the "@@ DONE failed=N"
# line says how the run went. tests/kernel/run-qemu-arm64.sh is this for 'make check'.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1
. tests/kernel/boot_guest.sh
BUILD=${BUILD:-build}
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd)
ARCH=${ARCH:-x86_64}
case $ARCH in
x86_64|amd64|x86)
    ARCH=x86_64 QEMU=qemu-system-x86_64 GCC=gcc LIBBUILD=$BUILD KROOT=$BUILD/kernel LP= PKG_ARCH=
    KMAKE=() CONSOLE=ttyS0
    # la57=off: with 5-level paging the debug kernel's KASAN printed a spurious early report
    # one boot in two, which turns lockdep off and mutes later reports.
    QEMU_MACHINE=(-machine pc,accel=tcg -cpu max,la57=off
                  -device isa-debug-exit,iobase=0xf4,iosize=0x04) ;;
arm64|aarch64)
    ARCH=arm64 QEMU=qemu-system-aarch64 GCC=aarch64-linux-gnu-gcc LIBBUILD=$BUILD/aarch64
    KROOT=$BUILD/kernel-arm64 LP=arm64/ PKG_ARCH=:arm64
    CONSOLE=ttyAMA0
    # pauth-impdef: QEMU's own pointer-authentication hash, much cheaper under TCG than QARMA.
    QEMU_MACHINE=(-machine virt,accel=tcg -cpu max,pauth-impdef=on)
    . "$REPO/tests/kernel/foreign.sh" && foreign_arch arm64 && KMAKE=("${FA_KMAKE[@]}") ;;
*) echo "run-qemu.sh: ARCH=$ARCH: only x86_64 and arm64 guests exist"; exit 2 ;;
esac
SERIES=${VRAMIO_KERNELS:-6.1 6.12}
t_start=$(date +%s)

unavailable() {
    if [ -n "${CI:-}" ]; then
        echo "not ok kernel/prerequisites: $1 (CI must install them: .ci/setup.d/kernel.sh)"
        exit 1
    fi
    echo "$1"
    exit 77
}

for tool in $QEMU cpio gzip $GCC dpkg-query dpkg-deb apt-get flock; do
    command -v "$tool" >/dev/null ||
        unavailable "kernel tests need $tool (qemu-system-x86 or qemu-system-arm, cpio, gcc-aarch64-linux-gnu)"
done
BUSYBOX=/bin/busybox
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' &&
    [ -x "$BUSYBOX" ] || unavailable "kernel tests need busybox-static"
[ -f "$($GCC -print-file-name=libc.a)" ] || unavailable "kernel tests need a static libc (libc6-dev)"

CACHE=${VRAMIO_KERNEL_CACHE:-/var/cache/vramio-kernels}
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || CACHE=$KROOT/cache
mkdir -p "$CACHE" "$KROOT"
if [ "$ARCH" = arm64 ]; then
    why=$(foreign_ready)
    [ -z "$why" ] || unavailable "arm64 kernel tests: $why"
    BUSYBOX=$(foreign_busybox "$CACHE") || unavailable "could not fetch busybox-static:arm64"
fi

# Runs sharing a build folder (several 'make check' at once) take turns: they rebuild the
# same copies. The kernel builds must not see the calling make's jobserver either.
exec 9>"$KROOT/.lock"
flock -n 9 || { echo "# waiting for another kernel test run in $BUILD"; flock 9; }
echo "# started after $(( $(date +%s) - t_start )) s of waiting"
t_start=$(date +%s)
unset MAKEFLAGS MFLAGS MAKELEVEL

# ---- which kernels: "label abi version" lines, derived from the installed headers ---------
resolve_kernel() {
    case "$1" in
    6.1)
        dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null |
            sed -nE 's/.*linux-headers-([^ ,]+) \(= ([^)]+)\).*/6.1 \1 \2/p' | head -n 1 ;;
    6.12)
        dpkg-query -W -f='${Package} ${Version} ${Status}\n' 'linux-headers-6.12.*+deb12-amd64' \
            2>/dev/null | awk '/ok installed/ {sub("linux-headers-", "", $1); print $1, $2}' |
            sort -V | tail -n 1 | sed 's/^/6.12 /' ;;
    debug)
        local dir
        [ "$ARCH" = x86_64 ] || return 0
        if ! dir=$(tests/kernel/debug-kernel.sh --path); then
            [ -n "${CI:-}" ] || return 0
            dir=$(tests/kernel/debug-kernel.sh 2>"$KROOT/debug-kernel.log") || return 0
        fi
        set -- $(cat "$dir/VERSION")
        echo "debug-6.1${GDRDRV_FLAVOUR:+-$GDRDRV_FLAVOUR} $2 $1 $dir/build $dir/bzImage" ;;
    esac
}

# ---- the kernel image: boot/vmlinuz-<abi> out of the image package, cached -----------------
fetch_image() {  # fetch_image ABI VERSION -> prints the vmlinuz path
    local abi=$1 ver=$2 img=$CACHE/vmlinuz-$1_$2 dl pkg deb
    [ -s "$img" ] && { echo "$img"; return 0; }
    dl=$CACHE/deb && mkdir -p "$dl"
    for pkg in "linux-image-$abi-unsigned" "linux-image-$abi"; do
        deb=$(ls "$dl/${pkg}_"*.deb 2>/dev/null | head -n 1)
        # A cached package of another version (a rebuild with the same ABI) is replaced.
        if [ -n "$deb" ] && [ "$(dpkg-deb -f "$deb" Version)" != "$ver" ]; then
            rm -f "$deb"
            deb=
        fi
        if [ -z "$deb" ]; then
            (cd "$dl" && apt-get download -q "$pkg$PKG_ARCH=$ver" >/dev/null 2>&1) || continue
            deb=$(ls "$dl/${pkg}_"*.deb 2>/dev/null | head -n 1)
        fi
        [ -n "$deb" ] || continue
        dpkg-deb --fsys-tarfile "$deb" | tar -xO "./boot/vmlinuz-$abi" >"$img.tmp" 2>/dev/null &&
            [ -s "$img.tmp" ] && mv "$img.tmp" "$img" && { echo "$img"; return 0; }
        rm -f "$img.tmp"
    done
    return 1
}

# ---- modules: built out of copies so the source tree stays clean ---------------------------
build_module() {  # build_module KDIR DEST SRC_DIR "EXTRA FILES" [make args...]; log: DEST.log
    local kdir=$1 dest=$2 src=$3 extra=$4
    shift 4
    rm -rf "$dest" && mkdir -p "$dest" && cp -r "$src"/. "$dest"/ || return 1
    if [ -n "$extra" ]; then cp $extra "$dest"/ || return 1; fi
    if ! make -j"$(nproc)" -C "$kdir" M="$dest" W=1 "${KMAKE[@]}" "$@" modules >"$dest.log" 2>&1; then
        return 1
    fi
    # Warnings fail the build: the compiler's (W=1 ones are not errors) and modpost's.
    ! grep -vE '^make(\[[0-9]+\])?: ' "$dest.log" | grep -qE 'warning:|^WARNING:'
}

# ---- guest programs: static, built once for all kernels, by make (tests/kernel/guest.mk) ----
# The tests of tests/kernel/guest/ and the extras of the one list, tests/kernel/guest-extra.list
# ("NAME HOST_PATH [ARGS...]": each HOST_PATH a make target, "$BUILD" its build folder).
GUEST=$LIBBUILD/guest/tests
EXTRA_LIST=$KROOT/extra.list
build_guest() {  # builds them; writes "name<TAB>command" lines for the guest, copies the extras
    local name path args log=$KROOT/guest-build.log rc=0 src prog
    local targets=(guest-progs) names=() paths=() argv=()
    while read -r name path args; do
        case "$name" in ''|'#'*) continue ;; esac
        path=${path//\$BUILD/$LIBBUILD}
        names+=("$name") paths+=("$path") argv+=("$args") targets+=("$path")
    done <tests/kernel/guest-extra.list
    # -k: one program that does not build must not keep the others out of the guest.
    make -k -C "$REPO" -j2 CC="$GCC" BUILD="$LIBBUILD" \
        "${targets[@]}" >"$log" 2>&1 || rc=1
    for src in tests/kernel/guest/*.c; do
        prog=$GUEST/$(basename "$src" .c)
        case $src in */mmio.c) continue ;; esac      # a helper, linked into all
        if [ ! -x "$prog" ]; then      # guest-link removes what it could not build
            echo "not ok guest-build/$(basename "$src" .c): $(grep -m1 -E 'error|undefined' "$log")"
            rc=1
        fi
    done
    [ "$rc" = 0 ] || grep -E 'error|undefined|\*\*\*' "$log" | head -n 30 | sed 's/^/    /'
    : >"$EXTRA_LIST"
    rm -rf "$KROOT/extra" && mkdir -p "$KROOT/extra"
    for i in "${!names[@]}"; do
        if [ ! -f "${paths[$i]}" ]; then
            EXTRA_MISSING+=("${names[$i]}: ${paths[$i]} was not built")
            continue
        fi
        cp "${paths[$i]}" "$KROOT/extra/" &&
            printf '%s\t/extra/%s %s\n' "${names[$i]}" "$(basename "${paths[$i]}")" "${argv[$i]}" \
                >>"$EXTRA_LIST"
    done
    return $rc
}

# ---- one kernel: build, pack, boot, report ----------------------------------------------------
run_kernel() {  # run_kernel LABEL ABI VERSION [KDIR IMAGE]
    local label=$1 abi=$2 ver=$3 kdir=${4:-} out img=${5:-} root serial rc line have_driver=0
    local append="console=$CONSOLE panic=-1 oops=panic panic_on_warn=1 init_on_free=1 quiet"
    local ceiling=${VRAMIO_QEMU_TIMEOUT:-900} stall=${VRAMIO_QEMU_STALL:-150}
    case $label in
    debug*)   # loglevel=5: lockdep's reports are warnings, which quiet keeps off the console
        append="$append kasan_multi_shot loglevel=5 hung_task_panic=1"
        ceiling=${VRAMIO_DEBUG_QEMU_TIMEOUT:-2700} stall=${VRAMIO_DEBUG_QEMU_STALL:-300} ;;
    6.12)  append="$append kfence.sample_interval=1 slub_debug=FZPU" ;;
    esac
    [ -n "$kdir" ] || kdir=/usr/lib/modules/$abi/build
    if [ "$ARCH" = arm64 ] && ! kdir=$(foreign_headers "$CACHE" "$abi" "$ver" 2>"$KROOT/headers.log"); then
        echo "not ok $label/headers: linux-headers-$abi:arm64=$ver: $(tail -n 1 "$KROOT/headers.log")"
        return
    fi
    out=$KROOT/$abi
    mkdir -p "$out"
    if [ ! -d "$kdir" ]; then
        echo "not ok $label/headers: $kdir missing"; return
    fi
    echo "# $label: kernel $abi ($ver)"

    local tb=$SECONDS
    if ! build_module "$kdir" "$out/provider" tests/kernel/emu/provider \
        "driver/nv_p2p.h tests/kernel/emu/nvp2p_emu.h"; then
        echo "not ok $label/build/provider: see below"
        tail -n 30 "$out/provider.log" | sed 's/^/    /'
        return
    fi
    echo "ok $label/build/provider"

    if build_module "$kdir" "$out/probe" tests/kernel/probe "driver/nv_p2p.h" \
        KBUILD_EXTRA_SYMBOLS="$out/provider/Module.symvers"; then
        echo "ok $label/build/probe"
    else
        echo "not ok $label/build/probe: build failed or warned (W=1)"
        tail -n 20 "$out/probe.log" | sed 's/^/    /'
    fi

    if ls driver/*.c >/dev/null 2>&1; then
        have_driver=1
        # The debug kernel has KUnit: the module's suite (driver/gdrdrv_kunit.c) goes in.
        kunit=()
        case $label in debug*) kunit=(GDRDRV_KUNIT=1) ;; esac
        if build_module "$kdir" "$out/driver" driver "" "${kunit[@]}" \
            KBUILD_EXTRA_SYMBOLS="$out/provider/Module.symvers"; then
            echo "ok $label/build/gdrdrv"
        else
            echo "not ok $label/build/gdrdrv: build failed or warned (W=1)"
            grep -E 'warning:|error:' "$out/driver.log" | head -n 20 | sed 's/^/    /'
            tail -n 10 "$out/driver.log" | sed 's/^/    /'
            have_driver=0
        fi
    fi

    echo "# $label: modules built in $((SECONDS - tb)) s"
    tb=$SECONDS
    if [ -z "$img" ] && ! img=$(fetch_image "$abi" "$ver"); then
        echo "not ok $label/image: could not download linux-image-$abi[-unsigned]=$ver"
        return
    fi

    echo "# $label: kernel image ready in $((SECONDS - tb)) s"
    root=$out/initramfs
    rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,tmp,modules,tests,extra}
    cp "$BUSYBOX" "$root/bin/busybox"
    cp tests/kernel/guest/init.sh "$root/init" && chmod 755 "$root/init"
    cp "$out/provider/nvp2p_emu.ko" "$root/modules/"
    [ -f "$out/probe/nvp2p_probe.ko" ] && cp "$out/probe/nvp2p_probe.ko" "$root/modules/"
    [ "$have_driver" = 1 ] && cp "$out/driver/gdrdrv.ko" "$root/modules/"
    find "$GUEST" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/tests/" \;
    cp "$KROOT/extra/." "$root/extra/" -r 2>/dev/null
    [ -s "$EXTRA_LIST" ] && cp "$EXTRA_LIST" "$root/extra.list"
    [ -n "${VRAMIO_GUEST_ONLY:-}" ] && printf '%s\n' "$VRAMIO_GUEST_ONLY" >"$root/only"
    (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"

    serial=$out/serial.log
    local t0=$SECONDS bar=()
    # Shared memory behind the BAR: an anonymous memfd, nothing left on disk.
    [ "${VRAMIO_QEMU_BAR:-1}" = 0 ] ||
        bar=(-object memory-backend-memfd,id=bar,size=64M,share=on -device ivshmem-plain,memdev=bar)
    # init_on_free=1: freed memory reads as zeros, so a use after free shows (e.g. a handle
    # read from a freed pin comes back 0: pin_race_test).
    # A guest that dies before /init says "@@ BOOTED" has not loaded or run anything of ours
    # (seen once: an int3 Oops in sched_clock_cpu during a TCG boot of 6.12): it is booted once
    # more, and says so. Anything after BOOTED counts as it is.
    for attempt in 1 2; do
        boot_guest "$label" "$serial.raw" "$stall" "$ceiling" $QEMU "${QEMU_MACHINE[@]}" \
            -m 512 -smp 2 -nodefaults -display none -serial stdio -no-reboot \
            "${bar[@]}" \
            -kernel "$img" -initrd "$out/initramfs.cpio.gz" \
            -append "$append"
        rc=$BOOT_RC
        tr -d '\r' <"$serial.raw" >"$serial"
        # No exit port on arm64: a power-off after "@@ DONE failed=N" stands for x86's 2N+33.
        if [ "$ARCH" = arm64 ] && [ "$rc" = 0 ] && grep -qE '^@@ DONE failed=[01]$' "$serial"; then
            rc=$((33 + 2 * $(sed -nE 's/^@@ DONE failed=([01])$/\1/p' "$serial" | tail -n 1)))
        fi
        echo "# $label: qemu exited $rc after $((SECONDS - t0)) s of its ${ceiling} s ceiling;" \
            "longest silence ${BOOT_GAP} s (in '$BOOT_GAP_AT') of its ${stall} s stall bound"
        grep -q '^@@ BOOTED' "$serial" || [ "$attempt" = 2 ] && break
        echo "# $label: the guest died before /init started; its last lines, then one more boot:"
        tail -n 15 "$serial" | sed 's/^/#     /'
    done

    sed -nE 's#^@@ (ok|not ok|skip) (.*)$#\1 '"$label"'/\2#p' "$serial"
    if [ "${KEEP_LOGS:-0}" = 1 ]; then sed 's/^/    | /' "$serial"; fi
    if grep -q '^@@ DONE' "$serial" && [ "$rc" -eq 33 -o "$rc" -eq 35 ]; then
        [ "$rc" -eq 33 ] && echo "ok $label/boot: complete run" ||
            echo "ok $label/boot: complete run (failures above)"
    else
        line=$(grep '^@@ RUNNING' "$serial" | tail -n 1 | cut -d' ' -f3-)
        why=${BOOT_WHY:-qemu exited $rc without a final result line}
        if grep -qE 'Kernel panic|Oops|BUG:|WARNING:' "$serial"; then
            why="kernel panic/oops/warning at $(grep -m1 -oE 'RIP: 0010:[^ ]+|pc : [^ ]+' "$serial" |
                sed -E 's/^(RIP: 0010:|pc : )//') ($why)"
        fi
        echo "not ok $label/boot: $why, during '${line:-boot}'"
        grep -v '^@@ ' "$serial" | tail -n 60 | sed 's/^/    /'
    fi
    grep '^## ' "$serial" | sed 's/^/    /' | head -n 200
    # The kernel's own checkers, on the console (not the guest's result lines).
    line=$(grep -vE '^(@@|##) ' "$serial" | grep -m1 -nE "$CHECKER_RE")
    if [ -n "$line" ]; then
        echo "not ok $label/kernel-log: ${line#*:}"
        grep -vE '^(@@|##) ' "$serial" | sed -n "$((${line%%:*} > 5 ? ${line%%:*} - 5 : 1)),+60p" |
            sed 's/^/    | /'
    else
        echo "ok $label/kernel-log: no checker report"
    fi
}
CHECKER_RE='KASAN:|KFENCE:|UBSAN:|ODEBUG:|list_(add|del) corruption|blocked for more than|possible circular locking|inconsistent lock state|sleeping function called from invalid context|WARNING:|BUG:|Oops'


main() {
    local s k a found=0 t0
    EXTRA_MISSING=()
    t0=$SECONDS
    build_guest
    echo "# guest programs built in $((SECONDS - t0)) s"
    for m in "${EXTRA_MISSING[@]}"; do echo "not ok guest-extra/${m%%:*}:${m#*:}"; done

    for s in $SERIES; do
        k=$(resolve_kernel "$s")
        if [ -z "$k" ] && [ "$s" = debug ]; then
            why="the debug kernel is not built (tests/kernel/debug-kernel.sh, ~11 min on 2 cores)"
            [ -f "$KROOT/debug-kernel.log" ] && why="$why: $(tail -n 1 "$KROOT/debug-kernel.log")"
            [ -n "${CI:-}" ] && echo "not ok debug/kernel: $why" || echo "skip debug/kernel: $why"
            continue
        fi
        if [ -z "$k" ]; then
            [ -n "${CI:-}" ] && echo "not ok $LP$s/headers: no installed headers for the $s series" ||
                echo "skip $LP$s/headers: no installed headers for the $s series"
            continue
        fi
        if [ "$ARCH" = arm64 ]; then        # the arm64 build of the same kernel
            set -- $k
            a=$(foreign_abi "$2" "$3")
            if [ -z "$a" ]; then
                echo "not ok $LP$s/headers: apt knows no linux-headers-${2%-amd64}-arm64:arm64=$3"
                continue
            fi
            k="$LP$s $a $3"
        fi
        found=1
        run_kernel $k
    done
    [ "$found" = 1 ] || { echo "no Debian kernel headers installed (linux-headers-amd64)"; return 77; }
    echo "# kernel tests took $(( $(date +%s) - t_start )) s"
}

# The exit status agrees with the result lines: 1 when any "not ok" was printed.
main | tee "$KROOT/results.log"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 77 ]; then
    [ -n "${CI:-}" ] && { echo "not ok kernel/prerequisites: no kernel headers (CI must install them)"; exit 1; }
    exit 77
fi
! grep -q '^not ok ' "$KROOT/results.log"
