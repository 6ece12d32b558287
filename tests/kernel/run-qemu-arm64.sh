#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/run-qemu-arm64.sh - the QEMU kernel tests in aarch64 guests (run-qemu.sh with
# ARCH=arm64), for 'make check'. VRAMIO_ARM64_KERNELS picks the series (default "6.1 6.12",
# about 45 s each on the 2-core CI machine). Bounded by progress (run-qemu.sh says how):
# run.sh timeout: 2400
# run.sh stall: 600
export ARCH=arm64 VRAMIO_KERNELS=${VRAMIO_ARM64_KERNELS:-6.1 6.12}
exec "$(dirname "$0")/run-qemu.sh" "$@"
