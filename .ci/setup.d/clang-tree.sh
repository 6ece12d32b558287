#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/setup.d/clang-tree.sh - prepares the clang-configured kernel tree that
# driver/tests/test_kernel_checks.sh builds gdrdrv against (tests/kernel/clang-tree.sh), unless
# the machine's cache has it. About 2 min on a 2-core machine, once; silent when cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
tests/kernel/clang-tree.sh >/dev/null
