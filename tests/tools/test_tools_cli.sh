#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tools_cli.sh - every gdrcopy_* tool's --help lists its options and exits 0, and bad
# options or values are usage errors (exit 2, a message naming the problem, a hint to -h),
# never a crash; gdrcopy_sanity -l lists what its test files register and -t selects it.
# Runs anywhere: no GPU needed.
set -u
BIN=${BUILD:-build}/bin

. "$(dirname "$0")/../lib/t.sh"

# tool: the options its help must list
declare -A OPTS=(
    [gdrcopy_sanity]="-h -v -s -l -t -d -e --kind"
    [gdrcopy_copybw]="-h -s -c -o -l -w -r -d -a -M --json"
    [gdrcopy_copylat]="-h -s -w -r -c -C -d -a -M --json"
    [gdrcopy_apiperf]="-h -s -n -w -d -a --json"
    [gdrcopy_pplat]="-h -t -u -s -B -T -m -G -C -D -d --json"
    [gdrcopy_info]="-h --json"
)

for tool in gdrcopy_sanity gdrcopy_copybw gdrcopy_copylat gdrcopy_apiperf gdrcopy_pplat gdrcopy_info; do
    exe=$BIN/$tool
    if [ ! -x "$exe" ]; then t_fail "$tool/built" "$exe is missing"; continue; fi
    for flag in -h --help; do
        out=$("$exe" "$flag" 2>&1); rc=$?
        if [ $rc -ne 0 ]; then t_fail "$tool/help$flag" "exit $rc"; continue; fi
        if ! grep -q "^Usage: $tool" <<<"$out"; then t_fail "$tool/help$flag" "no 'Usage: $tool' line"; continue; fi
        t_ok "$tool/help$flag"
    done
    missing=""
    for o in ${OPTS[$tool]}; do
        # an option is listed when it starts an option line of the help ("  -s SIZE ...")
        grep -qE "^  (-., )?$o([ ,=]|$)" <<<"$out" || missing="$missing $o"
    done
    [ -z "$missing" ] && t_ok "$tool/help-lists-options" || t_fail "$tool/help-lists-options" "missing:$missing"

    out=$("$exe" --no-such-option 2>&1); rc=$?
    if [ $rc -eq 2 ] && grep -q "Try '$tool -h'" <<<"$out"; then t_ok "$tool/bad-option"
    else t_fail "$tool/bad-option" "exit $rc, output: $(head -c 200 <<<"$out")"; fi

    out=$("$exe" stray-argument 2>&1); rc=$?
    if [ $rc -eq 2 ] && grep -q "unexpected argument 'stray-argument'" <<<"$out"; then t_ok "$tool/stray-argument"
    else t_fail "$tool/stray-argument" "exit $rc, output: $(head -c 200 <<<"$out")"; fi
done

# Bad values: each must be refused before anything is opened.
bad_value() {  # name tool args... (expects exit 2 and the tool's name in the message)
    local name=$1 tool=$2; shift 2
    local out rc
    out=$("$BIN/$tool" "$@" 2>&1); rc=$?
    if [ $rc -eq 2 ] && grep -q "^$tool: " <<<"$out"; then t_ok "$tool/bad-value/$name"
    else t_fail "$tool/bad-value/$name" "exit $rc, output: $(head -c 200 <<<"$out")"; fi
}
bad_value size-not-a-number gdrcopy_copylat -s abc
bad_value size-bad-suffix   gdrcopy_copylat -s 4X
bad_value zero-iterations   gdrcopy_copylat -w 0
bad_value unknown-kind      gdrcopy_copylat -a bogus
bad_value unknown-maptype   gdrcopy_copylat -M fancy
bad_value negative-size     gdrcopy_copybw -s -5
bad_value unaligned-offset  gdrcopy_copybw -s 4096 -o 2
bad_value past-the-end      gdrcopy_copybw -s 4096 -c 4096 -o 4
bad_value small-size        gdrcopy_apiperf -s 4096
bad_value unknown-mode      gdrcopy_pplat -m sideways
bad_value size-too-large    gdrcopy_pplat -s 100000
bad_value emu-not-cuda      gdrcopy_pplat -G emu
bad_value unknown-kind      gdrcopy_sanity --kind nothing
bad_value gpu-not-a-number  gdrcopy_sanity -d x

# sanity -l lists every test that the test files register (T_CASE in tools/sanity/*.c), each
# once, with a description: the program's own list against its sources, no list kept here.
# A failing -l is a failure, never silence.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
out=$("$BIN/gdrcopy_sanity" -l 2>&1); rc=$?
listed=$(sed -nE 's/^([a-z0-9_]+) +[a-zA-Z].*/\1/p' <<<"$out")
registered=$(sed -nE 's/^T_CASE\(([a-z0-9_]+),.*/\1/p' "$SRC"/tools/sanity/*.c | sort)
twice=$(sort <<<"$listed" | uniq -d)
if [ $rc -ne 0 ]; then
    t_fail "gdrcopy_sanity/list" "-l exited $rc: $(head -c 200 <<<"$out")"
elif [ -z "$registered" ]; then
    t_fail "gdrcopy_sanity/list" "no T_CASE( in $SRC/tools/sanity/*.c"
elif [ -n "$twice" ]; then
    t_fail "gdrcopy_sanity/list" "listed more than once: $(echo $twice)"
elif [ "$(sort <<<"$listed")" != "$registered" ]; then
    t_fail "gdrcopy_sanity/list" "registered but not listed: $(echo $(comm -23 <(echo "$registered") \
        <(sort <<<"$listed"))); listed but not registered: $(echo $(comm -13 <(echo "$registered") \
        <(sort <<<"$listed")))"
else
    t_ok "gdrcopy_sanity/list"
fi

sel() { "$BIN/gdrcopy_sanity" -l "$@" 2>&1 | tr '\n' ' '; }  # the runs that args select

# Each listed test: -t NAME selects its runs and no other test's (none without -e when it is
# marked extended), and each upstream name listed beside it selects its runs on the right kinds.
bad=
for t in $listed; do
    ext=; grep -qE "^$t .*\[extended: -e\]$" <<<"$out" && ext=-e
    runs=$("$BIN/gdrcopy_sanity" -l $ext -t "$t" 2>&1)
    [ -n "$runs" ] && ! grep -qvE "^$t(\.[a-z-]+)?$" <<<"$runs" || bad="$bad $t"
    [ -z "$ext" ] || [ -z "$(sel -t "$t")" ] || bad="$bad $t(runs-without--e)"
    up=$(grep -A1 -E "^$t +" <<<"$out" | sed -nE 's/^ +upstream: (.*)/\1/p' | tr -d ,)
    for u in $up; do
        case $u in
        "${t}_cumemalloc") want="$t.cuda" ;;
        "${t}_vmmalloc") want="$t.vmm-rdma $t.vmm-fd" ;;
        *) bad="$bad $u(unknown-suffix)"; continue ;;
        esac
        [ "$(sel $ext -t "$u")" = "$want " ] || bad="$bad $u"
    done
done
[ -n "$listed" ] && [ -z "$bad" ] && t_ok "gdrcopy_sanity/select-each-listed" ||
    t_fail "gdrcopy_sanity/select-each-listed" "wrong selection for:${bad:- (nothing listed)}"

# Upstream's names are listed beside ours, and upstream's extended test is marked.
for u in basic_cumemalloc basic_vmmalloc invalidation_fork_map_and_free_vmmalloc; do
    grep -qE "upstream:.*\b$u\b" <<<"$out" && t_ok "gdrcopy_sanity/list-upstream-$u" ||
        t_fail "gdrcopy_sanity/list-upstream-$u" "upstream name $u not listed"
done
grep -qE '^leakage_pin_pages_fork .*\[extended: -e\]' <<<"$out" &&
    t_ok "gdrcopy_sanity/list-extended" ||
    t_fail "gdrcopy_sanity/list-extended" "leakage_pin_pages_fork not marked extended"

# Upstream's names select the same runs: NAME_cumemalloc is kind cuda, NAME_vmmalloc the VMM
# kinds; an extended test runs only with -e.
check_sel() { # name want args...
    local name=$1 want=$2 got; shift 2
    got=$(sel "$@")
    [ "$got" = "$want" ] && t_ok "gdrcopy_sanity/select-$name" ||
        t_fail "gdrcopy_sanity/select-$name" "'$*' selected '$got', want '$want'"
}
check_sel cumemalloc "basic.cuda " -t basic_cumemalloc
check_sel vmmalloc "data_validation.vmm-rdma data_validation.vmm-fd " -t data_validation_vmmalloc
check_sel ours "basic.vmm-fd " -t basic.vmm-fd
check_sel tokens "invalidation_fork_child_gdr_pin_parent_with_tokens.cuda " \
    -t invalidation_fork_child_gdr_pin_parent_with_tokens_cumemalloc
check_sel not-extended "" -t leakage_pin_pages_fork
check_sel extended "leakage_pin_pages_fork.emu " -e --kind emu -t leakage_pin_pages_fork
t_done
