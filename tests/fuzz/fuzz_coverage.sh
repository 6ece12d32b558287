#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/fuzz_coverage.sh - the lines of the code a fuzz target aims at that its corpus
# reaches: builds the targets once more with clang's source coverage (BUILD/fuzzcov: the fuzz
# build plus -fprofile-instr-generate -fcoverage-mapping), runs each corpus once through its
# target (forked children and the re-executed start write their profiles too), and prints
# llvm-cov's report of the target's files and its total line. Not run by 'make check'.
#   tests/fuzz/fuzz_coverage.sh TARGET CORPUS_DIR...      e.g. api_dmabuf tests/fuzz/corpus/api_dmabuf
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
CB=$B/fuzzcov
t=${1:?usage: fuzz_coverage.sh TARGET CORPUS_DIR...}
shift
case $t in
api_dmabuf) files="src/core src/backends/gdrdrv.c src/backends/dmabuf.c src/backends/dmabuf_policy.c src/backends/backend_ops.c src/copy/copy.c src/copy/copy.h src/dma" ;;
api_vulkan) files="src/core src/backends/gdrdrv.c src/backends/vulkan.c src/backends/vulkan_device.c src/backends/vulkan_import_cache.c src/backends/backend_ops.c src/alloc src/copy/copy.c src/copy/copy.h src/dma" ;;
env) files="src/process/log.c src/dma/dma_policy.c src/copy/copy_select.c src/core/instance.c src/backends/backend_ops.c src/process/fork.c src/alloc/alloc.c" ;;
vramio_run) files="bridge/vramio_run.c bridge/run_dir.c" ;;
*) echo "fuzz_coverage.sh: no target $t"; exit 2 ;;
esac
env -u MAKEFLAGS make -s -j2 BUILD="$CB" CC=clang SANITIZE=fuzz \
    CFLAGS="-O1 -g -fprofile-instr-generate -fcoverage-mapping" "$CB/tests/fuzz/fuzz_$t" || exit 1
prof=$(mktemp -d)
trap 'rm -rf "$prof"' EXIT
LLVM_PROFILE_FILE="$prof/%p.profraw" "$CB/tests/fuzz/fuzz_$t" -runs=0 -close_fd_mask=3 "$@" \
    >"$prof/run.log" 2>&1 || { tail -n 20 "$prof/run.log"; exit 1; }
llvm-profdata merge -o "$prof/all.profdata" "$prof"/*.profraw || exit 1
# shellcheck disable=SC2086
llvm-cov report "$CB/tests/fuzz/fuzz_$t" -instr-profile="$prof/all.profdata" $files
