#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh - installs what this tree needs on Debian or Ubuntu, and only what is missing: the
# README's quick start and CI (.ci/run) both start here, so CI proves what the README says.
#
#   ./deps.sh          the main job ('make'): the packages of .ci/packages.d/build.txt
#   ./deps.sh tests    'make check': every .ci/packages.d/*.txt, then every .ci/setup.d/*.sh
#
# Those two folders are the one place where packages and set-up steps are listed: one list per
# area, one package a line, '#' starts a comment (a comment after a name says why that package
# is needed; a file's opening comment says why its list is). What is installed already
# (dpkg-query) is left alone: with everything present deps.sh prints nothing, needs no root
# and no network. Otherwise it says what it installs and why, refreshes apt's lists, and
# installs with apt-get (through sudo when not root). The set-up scripts run as the caller
# with SUDO in their environment ('sudo' or empty) to put before what needs root; each one
# does nothing and prints nothing when its step is done already.
#
# Without apt-get (RPM distributions, ...) it prints the names to install and stops.
#
#   ./deps.sh check-build    used by the Makefile before the first object: is there a C
#                            compiler ($CC) and <vulkan/vulkan.h>? Else says what to install.
set -euo pipefail
cd "$(dirname "$0")"
PKGS=.ci/packages.d
SETUP=.ci/setup.d
SPEC=packaging/rpm/vramio.spec

die() { echo "deps.sh: $*" >&2; exit 1; }

# The package names of list files, one a line, each once, comments left out.
list_names() { sed 's/#.*//' "$@" | tr -s ' \t' '\n\n' | sed '/^$/d' | awk '!seen[$0]++'; }

# What is installed and why, per list: a package's own comment ("name  # why"), else the
# list's opening comment. A package in several lists is shown with the first.
explain() {  # explain MISSING LIST...
    local missing=" $1 " f p why names shown=" "
    shift
    for f in "$@"; do
        names=
        for p in $(list_names "$f"); do
            [[ $missing == *" $p "* && $shown != *" $p "* ]] || continue
            shown+="$p "
            why=$(sed -n "s/^[[:space:]]*${p}[[:space:]]*#[[:space:]]*//p; T; q" "$f")
            if [ -n "$why" ]; then printf '  %-24s %s\n' "$p" "$why"; else names+=" $p"; fi
        done
        [ -n "$names" ] || continue
        echo " $names"
        sed -n '/^#/!q; s/^#[[:space:]]*/      /p' "$f"
    done
}

# The packages the RPM build asks for (the spec's BuildRequires), for the message below.
rpm_names() { sed -n 's/^BuildRequires:[[:space:]]*//p' "$SPEC" | xargs; }

how_to_install() {
    echo "  Debian, Ubuntu: ./deps.sh (or: apt-get install $(list_names "$PKGS/build.txt" | xargs))"
    echo "  RPM distributions: dnf install $(rpm_names)"
}

check_build() {
    local cc=${CC:-cc}
    if ! command -v "${cc%% *}" >/dev/null || ! $cc -E -x c - </dev/null >/dev/null 2>&1; then
        echo "vramio: cannot build: no working C compiler ('$cc'). Install one, then run make again:"
        how_to_install
        exit 1
    fi
    if ! printf '#include <vulkan/vulkan.h>\n' | $cc -E -x c - >/dev/null 2>&1; then
        echo "vramio: cannot build: <vulkan/vulkan.h> is missing (the vulkan backend is compiled"
        echo "against the Khronos headers; the library loads libvulkan.so.1 only at run time)."
        echo "Install the Vulkan headers, then run make again:"
        how_to_install
        exit 1
    fi
}

mode=${1:-build}
case $mode in
build) lists=("$PKGS/build.txt") scripts=() ;;
tests) lists=("$PKGS"/*.txt) scripts=("$SETUP"/*.sh) ;;
check-build) check_build; exit 0 ;;
*) die "usage: ./deps.sh [tests]   (no argument: what 'make' needs; tests: what 'make check' needs)" ;;
esac
[ -e "${lists[0]}" ] || die "no package lists in $PKGS"

if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    if [ "$mode" = build ]; then
        echo "deps.sh: this system has no apt-get. Install the build's packages with your package"
        echo "manager (the names of $SPEC), then run make:"
        echo "    $(rpm_names)"
    else
        echo "deps.sh: this system has no apt-get. The tests' packages are listed by their Debian"
        echo "names in $PKGS/*.txt (and the steps of $SETUP/*.sh); install their equivalents:"
        echo "    $(list_names "${lists[@]}" | xargs)"
    fi
    exit 1
fi

wanted=$(list_names "${lists[@]}")
# One dpkg-query for all: the names it reports as installed; the rest are missing.
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $wanted 2>/dev/null |
            awk '$NF == "installed" {print $1}' || true)
missing=$(comm -23 <(echo "$wanted" | sort -u) <(echo "$installed" | sort -u))

SUDO=
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
export SUDO
need_root() {
    [ -z "$SUDO" ] || command -v sudo >/dev/null ||
        die "installing needs root: run ./deps.sh $* as root, or install sudo"
}

# A fresh machine's apt lists are empty: the set-up steps look packages up in them.
lists_empty() { ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
apt() {  # apt ARGS...: quiet apt-get as root; its output is shown only when it fails
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300 "$@" \
            >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "apt-get $1 failed (above)"
    fi
}

# The time of a step that took 10 s or more (none when everything is present).
took() { [ $((SECONDS - t0)) -lt 10 ] || echo "deps.sh: $1 took $((SECONDS - t0)) s"; }

t0=$SECONDS
if [ -n "$missing" ]; then
    need_root "$@"
    echo "deps.sh: installing with ${SUDO:+sudo }apt-get (from $PKGS/):"
    explain "$(echo $missing)" "${lists[@]}"
    apt update
    apt install -y --no-install-recommends $missing
    echo "deps.sh: installed $(echo $missing | wc -w) packages"
elif [ ${#scripts[@]} -gt 0 ] && lists_empty; then
    need_root "$@"
    apt update
fi
took "installing packages"

for s in "${scripts[@]}"; do
    [ -e "$s" ] || continue
    t0=$SECONDS
    bash "$s" || die "$s failed"
    took "$s"
done
