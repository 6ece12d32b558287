#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/test_cross_aarch64.sh - library, tools and unit tests built for AArch64 and run
# under qemu-aarch64: the neon copy kernel, the AArch64 store fence (dmb oshst) and copy.mk's
# per-architecture gating, on x86 CI.
exec "$(dirname "$0")/cross_user.sh" aarch64
