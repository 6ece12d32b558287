#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/copy/test_copy_aarch64.sh - the copy engine's white-box tests (tests/unit/copy_*.c)
# cross-built for AArch64 and run under qemu-user, so the neon kernel, the AArch64 fence and
# copy.mk's per-architecture gating run on x86 CI too. Result names get an "aarch64/" prefix.
# Skips without the cross compiler or the emulator (.ci/packages.d/copy.txt installs both).
set -u
cc=aarch64-linux-gnu-gcc
command -v "$cc" >/dev/null || { echo "no $cc (Debian: gcc-aarch64-linux-gnu)"; exit 77; }
command -v qemu-aarch64 >/dev/null || { echo "no qemu-aarch64 (Debian: qemu-user)"; exit 77; }

out=${BUILD:-build}/aarch64
tests="copy_choice copy_guardpage copy_matrix"
mkdir -p "$out"
if ! make -s --no-print-directory CC="$cc" BUILD="$out" \
        $(for t in $tests; do echo "$out/tests/$t"; done) >"$out.log" 2>&1; then
    echo "not ok aarch64/build: cross build failed"
    tail -n 20 "$out.log"
    exit 1
fi
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
rc=0
for t in $tests; do
    qemu-aarch64 "$out/tests/$t" 2>/dev/null | sed -E 's#^(ok|not ok|skip) #\1 aarch64/#'
    st=${PIPESTATUS[0]}
    [ "$st" -eq 0 ] || { echo "not ok aarch64/$t: exited $st"; rc=1; }
done
exit $rc
