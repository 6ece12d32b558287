#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/python/test_python.sh - the python/vramio package's tests with this build's library:
# once as is, once over the dma-buf stand-in CUDA driver (tests/fake/fake_cuda_dmabuf.c, from
# make: tests/fake/fake.mk) with the dma-buf backend forced (real pins, maps and copies
# without a GPU). Skips when there is no python3.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
command -v python3 >/dev/null || { t_skip "python/all" "python3 is not installed"; exit 0; }
lib=$(cd "$B/lib" && pwd)/libgdrapi.so.2
dir=$B/tests/python
mkdir -p "$dir"
t_make python/build_fake_cuda "$B/tests/fake/cuda-dmabuf/libcuda.so.1" || exit 1
fake=$(cd "$B/tests/fake/cuda-dmabuf" && pwd)
env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP VRAMIO_LIB="$lib" LD_LIBRARY_PATH="$fake" \
    FAKE_CUDA_VERSION=13000 FAKE_CUDA_INTEGRATED=1 GDRCOPY_USE_DMABUF_MMAP=1 \
    VRAMIO_TEST_FAKE_CUDA="$fake/libcuda.so.1" \
    PYTHONDONTWRITEBYTECODE=1 timeout 120 python3 python/tests/run.py 2>"$dir/stderr.log"
rc=$?
[ $rc -eq 0 ] || tail -n 20 "$dir/stderr.log"

# pip installs the package from the source tree, offline (setuptools and wheel are all the
# build needs), from a copy so that the tree gets no build files.
py=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import setuptools, wheel' 2>/dev/null && "$p" -m pip --version >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
    t_skip "python/pip_install_from_tree" "no python3 with pip, setuptools and wheel"
else
    site=$(cd "$dir" && pwd)/site
    rm -rf "$dir/src" "$site" && cp -r python "$dir/src" && rm -rf "$dir/src/build"
    if timeout 120 "$py" -m pip install -q --no-build-isolation --no-deps --no-index \
            --root-user-action=ignore --target "$site" "$dir/src" > "$dir/pip.log" 2>&1 &&
       out=$(cd / && PYTHONPATH="$site" VRAMIO_LIB="$lib" "$py" -c \
             'import vramio; print(vramio.__version__, vramio.__file__)' 2>&1) &&
       [ "$out" = "2.6 $site/vramio/__init__.py" ]; then
        t_ok "python/pip_install_from_tree"
    else
        t_fail "python/pip_install_from_tree" "${out:-$(tail -n 3 "$dir/pip.log")}"
    fi
fi
exit $rc
