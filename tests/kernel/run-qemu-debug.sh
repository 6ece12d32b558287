#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/run-qemu-debug.sh - every guest suite of the module on the rig's debug kernel
# (run-qemu.sh with VRAMIO_KERNELS=debug: KASAN, KFENCE, lockdep, UBSAN bounds, DEBUG_VM),
# both pin modes, for 'make check'; a checker's report in the guest's log fails it. The
# module's flavour is GDRDRV_FLAVOUR's (open by default); run-qemu-debug-proprietary.sh runs
# the proprietary one. Skips where the kernel is not built yet, except under CI
# (tests/kernel/debug-kernel.sh builds it).
# run.sh timeout: 3600
# run.sh stall: 600
export VRAMIO_KERNELS=debug
exec "$(dirname "$0")/run-qemu.sh" "$@"
