#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/test_cross_ppc64le.sh - library, tools and unit tests built for POWER (ppc64le)
# and run under qemu-ppc64le: the portable copy kernel and the POWER store fence (sync).
exec "$(dirname "$0")/cross_user.sh" ppc64le
