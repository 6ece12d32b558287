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
# python/README.md's offline install, as a user on Debian 12 follows it: in a virtual
# environment (Debian's own python3 refuses 'pip install' outside one), made the way the README
# says (plain 'python3 -m venv' where it names no other way), the README's offline command run
# from a copy of the tree's parent, no index, and the package imports from that environment.
sys_py=/usr/bin/python3
if ! [ -x "$sys_py" ] || ! "$sys_py" -c 'import venv, ensurepip, setuptools, wheel' 2>/dev/null; then
    t_skip "python/readme_offline_install" "no $sys_py with venv, ensurepip, setuptools and wheel"
else
    vdir=$(cd "$dir" && pwd)/readme
    rm -rf "$vdir" && mkdir -p "$vdir" && cp -r python "$vdir/python" && rm -rf "$vdir/python/build"
    mkvenv=$(grep -o '`python3 -m venv[^`]*`' python/README.md | head -n 1 | tr -d '`')
    offline=$(grep -o 'offline: `[^`]*`' python/README.md | head -n 1 | sed 's/^offline: `//; s/`$//')
    mkvenv=${mkvenv:-python3 -m venv VENV}
    if [ -z "$offline" ]; then
        t_fail "python/readme_offline_install" "python/README.md names no 'offline: \`COMMAND\`'"
    elif ! (cd "$vdir" && PATH=/usr/bin:/bin && ${mkvenv//VENV/venv} && . venv/bin/activate &&
            PIP_NO_INDEX=1 PIP_ROOT_USER_ACTION=ignore timeout 120 $offline) >"$vdir/log" 2>&1; then
        why=$(grep -o 'error: .*' "$vdir/log" | grep -v -m1 'subprocess-exited' || tail -n 1 "$vdir/log")
        t_fail "python/readme_offline_install" "'$mkvenv' then '$offline': $why"
    elif ! out=$(cd / && VRAMIO_LIB="$lib" "$vdir/venv/bin/python" -c \
                 'import vramio; print(vramio.__version__)' 2>&1) || [ "$out" != 2.6 ]; then
        t_fail "python/readme_offline_install" "import vramio from the environment: $out"
    else
        t_ok "python/readme_offline_install"
    fi
fi
[ "$(t_status)" = 0 ] || rc=1
exit $rc
