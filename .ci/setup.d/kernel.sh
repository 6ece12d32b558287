#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/kernel.sh - the second kernel series for the QEMU tests: installs the headers of
# the newest Debian 12 6.12 kernel (linux-headers-6.12.*+deb12-amd64), resolved at run time
# because old ABIs leave the mirror. The kernel images themselves are fetched (and cached) by
# tests/kernel/run-qemu.sh. Idempotent: does nothing and prints nothing when that package is
# already installed. Run by ./deps.sh tests, which sets SUDO ('sudo' when not root).
set -euo pipefail
SUDO=${SUDO:-}
export DEBIAN_FRONTEND=noninteractive

newest=$(apt-cache search --names-only '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' |
         awk '{print $1}' | sort -V | tail -n 1)
if [ -z "$newest" ]; then
    echo "kernel.sh: no linux-headers-6.12.*+deb12-amd64 package in the apt lists" \
         "(they come from bookworm-security: is it in apt's sources?)" >&2
    exit 1
fi
dpkg-query -W -f='${Status}' "$newest" 2>/dev/null | grep -q 'install ok installed' && exit 0
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "$newest" >/dev/null
echo "kernel.sh: installed $newest"
