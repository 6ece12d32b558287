#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/debug-kernel.sh - builds the QEMU tests' debug kernel (KASAN, KFENCE, lockdep,
# UBSAN bounds: tests/kernel/debug-kernel.sh) unless the machine's cache already holds the one
# that the installed linux-source-6.1 and tests/kernel/debug-kernel.config make. About 11 min
# on a 2-core machine, once; the 'make check' runs that follow boot it
# (tests/kernel/run-qemu-debug*.sh). Silent when the cache has it (deps.sh prints how long a
# step took when it took 10 s or more; the build says what it does on stderr).
set -euo pipefail
cd "$(dirname "$0")/../.."
tests/kernel/debug-kernel.sh >/dev/null
