# SPDX-License-Identifier: MIT
# tests/packaging/common.sh - sourced by the packaging tests: the test kit's result lines
# (tests/lib/t.sh), the project's version, and a clean clone of the committed tree.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/tests/packaging

. "$REPO/tests/lib/t.sh"

# The one version source: the top Makefile.
project_version() {
    local maj min
    maj=$(sed -n 's/^VERSION_MAJOR *:= *//p' "$REPO/Makefile")
    min=$(sed -n 's/^VERSION_MINOR *:= *//p' "$REPO/Makefile")
    echo "$maj.$min"
}

# The tools that 'make install' installs, from its one list in packaging/install.mk.
tool_names() {
    sed -n '/^INSTALL_TOOLS *:=/,/^[^ ]/p' "$REPO/packaging/install.mk" | grep -oE 'gdrcopy_[a-z]+'
}

# vramio-run (the allocation bridge's launcher), from install.mk's INSTALL_RUNNERS, and its
# libraries (the libcuda.so.1 shim and the bridge), from INSTALL_BRIDGE_LIBS.
runner_names() {
    sed -n 's/^INSTALL_RUNNERS *:= *//p' "$REPO/packaging/install.mk"
}
bridge_lib_names() {
    sed -n 's/^INSTALL_BRIDGE_LIBS *:= *//p' "$REPO/packaging/install.mk"
}

# shim_of_vramio_run RUNNER WORKDIR: the libcuda.so.1 that RUNNER puts first on the library
# path (the link in its directory), run against an empty stand-in driver library made in
# WORKDIR. Its directory goes in the kit's private T_RUN_DIR (WORKDIR is in /tmp, where
# vramio-run refuses to make one): the script calls t_run_dir first (tests/lib/t.sh).
shim_of_vramio_run() {
    [ -n "$T_RUN_DIR" ] || { echo "no private directory for vramio-run (t_run_dir)"; return 1; }
    mkdir -p "$2/drv" &&
        ${CC:-cc} -shared -o "$2/drv/libcuda.so.1" -x c /dev/null 2>/dev/null &&
        env LD_LIBRARY_PATH="$2/drv" VRAMIO_RUN_DIR="$T_RUN_DIR" timeout 60 "$1" \
            sh -c 'readlink "${LD_LIBRARY_PATH%%:*}/libcuda.so.1"' 2>&1
}

# clean_clone DIR: the committed HEAD of this repository, with nothing from the work tree.
clean_clone() {
    git clone -q --no-hardlinks "$REPO" "$1" 2>&1
}

# The ABI of Debian's default kernel headers, from the package linux-headers-<arch>. Never
# uname -r: the running kernel is not the one whose headers are installed.
debian_headers_abi() {
    dpkg-query -W -f='${Depends}' "linux-headers-$(dpkg --print-architecture)" 2>/dev/null |
        grep -o 'linux-headers-[^ ,]*' | head -n 1 | sed 's/^linux-headers-//'
}
