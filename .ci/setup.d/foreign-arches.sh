#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/foreign-arches.sh - makes arm64 and ppc64el dpkg architectures and fetches their
# package lists, so that tests/kernel/foreign.sh can download Debian's kernel headers, kernel
# images and busybox-static of those architectures (apt-get download, never installed) for
# the cross-built modules and the arm64 QEMU guests. Idempotent: the lists are fetched only
# when apt does not know those packages yet, and it prints nothing then. Run by ./deps.sh tests,
# which sets SUDO ('sudo' when not root).
set -euo pipefail
SUDO=${SUDO:-}
export DEBIAN_FRONTEND=noninteractive

update=0
for arch in arm64 ppc64el; do
    # Read whole, not piped into grep -q: an early exit of grep would fail the pipe (pipefail).
    if ! grep -qx "$arch" <<<"$(dpkg --print-foreign-architectures)"; then
        $SUDO dpkg --add-architecture "$arch"
        echo "foreign-arches.sh: added $arch as a dpkg architecture"
    fi
    policy=$(apt-cache policy "busybox-static:$arch" 2>/dev/null || true)
    echo "$policy" | grep -q 'Candidate: [0-9]' || update=1
done
[ "$update" = 1 ] || exit 0
$SUDO apt-get update -qq -o DPkg::Lock::Timeout=300
echo "foreign-arches.sh: fetched the package lists"
