#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/python/test_python.sh - the python/vramio package's tests with this build's library:
# once as is, once over the stand-in CUDA driver of tests/dmabuf with the dma-buf backend
# forced (real pins, maps and copies without a GPU). Skips when there is no python3.
set -u
B=${BUILD:-build}
CC=${CC:-cc}
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
command -v python3 >/dev/null || { echo "skip python/all: python3 is not installed"; exit 0; }
lib=$(cd "$B/lib" && pwd)/libgdrapi.so.2
dir=$B/tests/python
mkdir -p "$dir/fake"
if ! $CC -shared -fPIC -O1 -Wall -Wextra -Werror -I"$CUDA_INC" -Wl,-soname,libcuda.so.1 \
        -o "$dir/fake/libcuda.so.1" tests/dmabuf/fake_cuda.c; then
    echo "not ok python/build_fake_cuda: compiler failed"; exit 1
fi
fake=$(cd "$dir/fake" && pwd)
env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP VRAMIO_LIB="$lib" LD_LIBRARY_PATH="$fake" \
    FAKE_CUDA_VERSION=13000 GDRCOPY_USE_DMABUF_MMAP=1 VRAMIO_TEST_FAKE_CUDA="$fake/libcuda.so.1" \
    PYTHONDONTWRITEBYTECODE=1 timeout 120 python3 python/tests/run.py 2>"$dir/stderr.log"
rc=$?
[ $rc -eq 0 ] || tail -n 20 "$dir/stderr.log"
exit $rc
