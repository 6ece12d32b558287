#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/arm64.sh - makes arm64 a dpkg architecture and fetches its package lists, so that
# tests/kernel/arm64.sh can download Debian's arm64 kernel headers, kernel images and
# busybox-static (apt-get download, never installed) for the arm64 module builds and QEMU
# guests. Idempotent: the lists are fetched only when apt does not know arm64 packages yet.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    echo "arm64.sh: added arm64 as a dpkg architecture"
fi
policy=$(apt-cache policy busybox-static:arm64 2>/dev/null || true)
if echo "$policy" | grep -q 'Candidate: [0-9]'; then
    echo "arm64.sh: apt already lists arm64 packages"
    exit 0
fi
apt-get update -qq -o DPkg::Lock::Timeout=300
echo "arm64.sh: fetched the arm64 package lists"
