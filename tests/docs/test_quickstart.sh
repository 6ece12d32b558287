#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_quickstart.sh - the README's quick start is what CI runs: its two commands are written
# as expected, .ci/run runs the second one as written, and, run in a copy of the tree with
# apt-get, dpkg, sudo and make replaced by recorders, the README's test command and .ci/run
# make the same calls, installing every package of .ci/packages.d/*.txt; the build command
# installs .ci/packages.d/build.txt. With everything installed deps.sh prints nothing and calls
# no apt-get; without apt-get it names the spec's BuildRequires and 'make' is not reached.
# And 'make' without the Vulkan headers or a compiler says what to install (deps.sh
# check-build) instead of failing in the compiler.
set -u
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
. tests/lib/t.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the README's commands, as written --------------------------------------------------
mapfile -t cmds < <(sed -n '/^## Quick start$/,/^## /s/^    //p' README.md)
build_cmd=${cmds[0]:-} tests_cmd=${cmds[1]:-}
if [ "${#cmds[@]}" = 2 ] && [[ $build_cmd == './deps.sh && make && build/bin/gdrcopy_info' ]] &&
   [[ $tests_cmd =~ ^'./deps.sh tests && make '(-j[^ ]+ )?check$ ]]; then
    t_ok "quickstart/readme_commands"
else
    t_fail "quickstart/readme_commands" \
        "expected './deps.sh && make && build/bin/gdrcopy_info' and './deps.sh tests && make check' in Quick start, found: $(printf '[%s] ' "${cmds[@]}")"
fi
if grep -qxF -- "$tests_cmd" .ci/run; then
    t_ok "quickstart/ci_runs_readme_command"
else
    t_fail "quickstart/ci_runs_readme_command" ".ci/run does not run the README's '$tests_cmd'"
fi

# ---- recorders: a PATH of the system's commands, with the package tools replaced ---------
# STATE=fresh: nothing installed, no foreign architectures; STATE=present: every package
# installed. apt-cache answers as after an update in both.
mkbin() {  # mkbin DIR: links to the system's commands, less the ones recorded here
    mkdir -p "$1"
    find /usr/local/bin /usr/bin /usr/sbin /bin /sbin -maxdepth 1 ! -type d 2>/dev/null |
        awk -F/ '!seen[$NF]++' | grep -vE '/(id|sudo|make|apt-get|apt-cache|dpkg|dpkg-query)$' |
        xargs ln -s -t "$1"
}
stub() { printf '#!/bin/bash\n%s\n' "$2" >"$1" && chmod +x "$1"; }
mkbin "$tmp/bin"
stub "$tmp/bin/id" 'echo 1000'
stub "$tmp/bin/sudo" 'echo "sudo $*" >>"$LOG"; exec "$@"'
stub "$tmp/bin/make" 'echo "make $*" >>"$LOG"'
stub "$tmp/bin/apt-get" 'echo "apt-get $*" >>"$LOG"'
stub "$tmp/bin/apt-cache" 'case $1 in search) echo "linux-headers-6.12.99+deb12-amd64 - headers" ;; policy) echo "  Candidate: 1.0" ;; esac'
stub "$tmp/bin/dpkg" 'case $1 in
--print-foreign-architectures) [ "$STATE" = present ] && printf "arm64\nppc64el\n" ;;
*) echo "dpkg $*" >>"$LOG" ;;
esac; exit 0'
stub "$tmp/bin/dpkg-query" '[ "$STATE" = present ] || exit 1
fmt=; for a; do case $a in -f=*) fmt=${a#-f=} ;; -*) ;; *) case $fmt in
*Package*) echo "$a install ok installed" ;; *) echo "install ok installed" ;; esac ;; esac; done'
mkdir -p "$tmp/noapt" && cp -P "$tmp/bin"/* "$tmp/noapt/" && rm "$tmp/noapt/apt-get"

# A copy of the tree's files that deps.sh reads, with a recorder for build/bin/gdrcopy_info.
tree=$tmp/tree
mkdir -p "$tree/packaging/rpm" "$tree/build/bin"
cp -r deps.sh .ci "$tree/" && cp packaging/rpm/vramio.spec "$tree/packaging/rpm/"
stub "$tree/build/bin/gdrcopy_info" 'echo "gdrcopy_info $*" >>"$LOG"'
# The debug kernel's build (.ci/setup.d/debug-kernel.sh runs it): recorded on a fresh machine,
# silent where its cache is full, as the real one is.
mkdir -p "$tree/tests/kernel"
stub "$tree/tests/kernel/debug-kernel.sh" '[ "$STATE" = present ] || echo "debug-kernel.sh" >>"$LOG"; echo /cache/debug'
# The clang-configured kernel tree (.ci/setup.d/clang-tree.sh): the same, recorded when fresh.
stub "$tree/tests/kernel/clang-tree.sh" '[ "$STATE" = present ] || echo "clang-tree.sh" >>"$LOG"; echo /cache/clang'

run() {  # run NAME STATE BIN COMMAND: its output in $tmp/NAME.out, its calls in $tmp/NAME.log
    local name=$1 state=$2 bin=$3
    shift 3
    (cd "$tree" && LOG=$tmp/$name.log STATE=$state PATH=$tmp/$bin timeout 60 "$@") \
        >"$tmp/$name.out" 2>&1
    touch "$tmp/$name.log"
}
installs() { grep -E '^apt-get .* install ' "$tmp/$1.log" | sed 's/.*--no-install-recommends //' |
             tr ' ' '\n' | sed '/^$/d' | sort -u; }
listed() { sed 's/#.*//' "$@" | tr -s ' \t' '\n\n' | sed '/^$/d' | sort -u; }

# ---- a fresh machine ---------------------------------------------------------------------
run build fresh bin bash -c "$build_cmd"
if grep -q '^apt-get .* update' "$tmp/build.log" && grep -q '^sudo ' "$tmp/build.log" &&
   [ "$(installs build)" = "$(listed .ci/packages.d/build.txt)" ] &&
   grep -q '^make $' "$tmp/build.log" && grep -q '^gdrcopy_info' "$tmp/build.log" &&
   grep -q 'libvulkan-dev .*Khronos' "$tmp/build.out"; then
    t_ok "quickstart/fresh/build_installs_build_txt"
else
    t_fail "quickstart/fresh/build_installs_build_txt" \
        "calls: $(tr '\n' ';' <"$tmp/build.log") output: $(head -c 600 "$tmp/build.out")"
fi
run readme fresh bin bash -c "$tests_cmd"
run ci fresh bin ./.ci/run
if cmp -s "$tmp/readme.log" "$tmp/ci.log" && [ -s "$tmp/ci.log" ]; then
    t_ok "quickstart/fresh/readme_and_ci_same_calls"
else
    t_fail "quickstart/fresh/readme_and_ci_same_calls" \
        "$(diff "$tmp/readme.log" "$tmp/ci.log" | head -n 10 | tr '\n' ';')"
fi
missing=$(comm -23 <(listed .ci/packages.d/*.txt) <(installs ci) | xargs)
if [ -z "$missing" ] && grep -q '^make .*check$' "$tmp/ci.log"; then
    t_ok "quickstart/fresh/ci_installs_every_list"
else
    t_fail "quickstart/fresh/ci_installs_every_list" \
        "not installed: [$missing]; calls: $(tr '\n' ';' <"$tmp/ci.log" | head -c 600)"
fi
# The set-up steps ran, with sudo for what needs root.
if grep -q '^sudo dpkg --add-architecture arm64' "$tmp/ci.log" &&
   grep -q '^debug-kernel.sh$' "$tmp/ci.log" &&
   grep -q '^clang-tree.sh$' "$tmp/ci.log" &&
   grep -q '^apt-get .*install .*linux-headers-6\.12\.99+deb12-amd64' "$tmp/ci.log"; then
    t_ok "quickstart/fresh/setup_steps_run"
else
    t_fail "quickstart/fresh/setup_steps_run" "calls: $(tr '\n' ';' <"$tmp/ci.log" | head -c 600)"
fi

# ---- everything installed: silent, no root, no apt-get ----------------------------------
for c in build readme; do
    cmd=$build_cmd && [ "$c" = readme ] && cmd=$tests_cmd
    run "present_$c" present bin bash -c "$cmd"
    if [ ! -s "$tmp/present_$c.out" ] && ! grep -qvE '^(make|gdrcopy_info)' "$tmp/present_$c.log" &&
       grep -q '^make' "$tmp/present_$c.log"; then
        t_ok "quickstart/present/${c}_quiet"
    else
        t_fail "quickstart/present/${c}_quiet" \
            "printed [$(head -c 300 "$tmp/present_$c.out")], calls: $(tr '\n' ';' <"$tmp/present_$c.log")"
    fi
done

# ---- no apt-get: the spec's names, and a stop before make --------------------------------
run noapt fresh noapt bash -c "$build_cmd"
rpm=$(sed -n 's/^BuildRequires:[[:space:]]*//p' packaging/rpm/vramio.spec | xargs)
if [ -n "$rpm" ] && grep -qF "$rpm" "$tmp/noapt.out" && [ ! -s "$tmp/noapt.log" ]; then
    t_ok "quickstart/no_apt/names_rpm_packages"
else
    t_fail "quickstart/no_apt/names_rpm_packages" \
        "expected '$rpm' and no make; printed [$(head -c 300 "$tmp/noapt.out")], calls: $(tr '\n' ';' <"$tmp/noapt.log")"
fi

# ---- make without the Vulkan headers, or without a compiler ------------------------------
# A compiler that sees /usr/include without its vulkan/ folder.
mkdir -p "$tmp/inc"
for f in /usr/include/*; do [ "${f##*/}" = vulkan ] || ln -s "$f" "$tmp/inc/"; done
gcc_inc=$(gcc -print-file-name=include)
stub "$tmp/cc" "exec gcc -nostdinc -isystem $gcc_inc -isystem /usr/include/$(gcc -print-multiarch) -isystem $tmp/inc \"\$@\""
check_make() {  # check_make NAME CC EXPECTED
    make -C "$REPO" --no-print-directory BUILD="$tmp/b_$1" CC="$2" lib >"$tmp/make_$1.out" 2>&1
    local rc=$?
    if [ "$rc" != 0 ] && grep -qF "$3" "$tmp/make_$1.out" && grep -qF 'libvulkan-dev' "$tmp/make_$1.out" &&
       ! grep -q 'error:' "$tmp/make_$1.out" && [ ! -d "$tmp/b_$1/obj" ]; then
        t_ok "quickstart/make/$1"
    else
        t_fail "quickstart/make/$1" "make exited $rc: $(tail -n 5 "$tmp/make_$1.out" | tr '\n' ';')"
    fi
}
if [ -e /usr/include/vulkan/vulkan.h ] && command -v gcc >/dev/null; then
    check_make no_vulkan_headers "$tmp/cc" '<vulkan/vulkan.h> is missing'
else
    t_skip "quickstart/make/no_vulkan_headers" "needs gcc and /usr/include/vulkan/vulkan.h"
fi
check_make no_compiler "$tmp/no-such-cc" 'no working C compiler'
t_done
