#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/debug-kernel.sh - builds the QEMU tests' debug kernel (KASAN, KFENCE, lockdep,
# UBSAN bounds: tests/kernel/debug-kernel.sh) unless the machine's cache already holds the one
# that the installed linux-source-6.1 and tests/kernel/debug-kernel.config make. About 11 min
# on a 2-core machine, once; the 'make check' runs that follow boot it
# (tests/kernel/run-qemu-debug*.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$SECONDS
dir=$(tests/kernel/debug-kernel.sh)
echo "debug-kernel.sh: $dir ready after $((SECONDS - t0)) s"
