#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/run-qemu-debug-proprietary.sh - run-qemu-debug.sh for the module's proprietary
# flavour (no GPL-only kernel exports: a misc device node, its own WC and decryption helpers).
# run.sh timeout: 3600
# run.sh stall: 600
export GDRDRV_FLAVOUR=proprietary
exec "$(dirname "$0")/run-qemu-debug.sh" "$@"
