#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/test_time_bounds.sh - the suite's bounds on slow work go by progress, not by the
# clock: a QEMU guest (tests/kernel/boot_guest.sh, with a stand-in for QEMU) and a script run by
# tests/run.sh ("# run.sh stall: N") run as long as they keep printing, and are stopped, with
# everything they started, once they fall silent for their stall bound.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
. tests/kernel/boot_guest.sh
tmp=$(mktemp -d)
trap 'pkill -KILL -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT

# A stand-in guest: prints "@@" lines as the script given says, console lines end in \r.
guest() {  # guest NAME BODY: writes $tmp/NAME, a bash script, and makes it executable
    printf '#!/usr/bin/env bash\n%s\n' "$2" >"$tmp/$1"
    chmod +x "$tmp/$1"
}
alive() { pgrep -f "$tmp/$1" >/dev/null; }

# A guest that keeps printing outlives its stall bound (3 s) and ends with its own status.
guest steady 'for i in 1 2 3 4 5 6 7 8; do printf "@@ RUNNING g$i at $i s\r\n@@ ok g$i\r\n"; sleep 1; done; exit 33'
t0=$SECONDS
boot_guest steady "$tmp/steady.raw" 3 60 "$tmp/steady" >/dev/null
took=$((SECONDS - t0))
if [ "$BOOT_RC" = 33 ] && [ -z "$BOOT_WHY" ] && [ "$took" -ge 7 ] &&
    [ "$(grep -c '^@@ ok' "$tmp/steady.raw")" = 8 ]; then
    t_ok boot_guest/progress-keeps-it-running
else
    t_fail boot_guest/progress-keeps-it-running "rc $BOOT_RC after $took s, why '$BOOT_WHY'"
fi

# A guest that falls silent in a group is stopped after the stall bound, the group named.
guest silent 'printf "@@ BOOTED\r\n@@ RUNNING np-wedged at 3.0 s\r\n"; sleep 600'
t0=$SECONDS
boot_guest silent "$tmp/silent.raw" 3 30 "$tmp/silent" >/dev/null
took=$((SECONDS - t0))
if [ "$BOOT_RC" = 124 ] && [[ $BOOT_WHY == *"no new result line for 3s"* ]] &&
    [ "$BOOT_GAP_AT" = np-wedged ] && [ "$took" -lt 30 ] && ! alive silent; then
    t_ok boot_guest/silence-stops-it
else
    t_fail boot_guest/silence-stops-it "rc $BOOT_RC after $took s, why '$BOOT_WHY', in '$BOOT_GAP_AT'"
fi

# One that ignores SIGTERM is killed as well.
guest stubborn 'trap "" TERM; printf "@@ BOOTED\r\n"; while :; do sleep 1; done'
t0=$SECONDS
boot_guest stubborn "$tmp/stubborn.raw" 3 30 "$tmp/stubborn" >/dev/null
took=$((SECONDS - t0))
if [ "$BOOT_RC" = 124 ] && [ "$took" -lt 25 ] && ! alive stubborn; then
    t_ok boot_guest/sigterm-ignored-killed
else
    t_fail boot_guest/sigterm-ignored-killed "rc $BOOT_RC after $took s; alive: $(alive stubborn && echo yes || echo no)"
fi

# One that prints forever meets its ceiling.
guest chatty 'while :; do printf "@@ ok again\r\n"; sleep 1; done'
boot_guest chatty "$tmp/chatty.raw" 3 6 "$tmp/chatty" >/dev/null
if [ "$BOOT_RC" = 124 ] && [[ $BOOT_WHY == *"6s ceiling"* ]] && ! alive chatty; then
    t_ok boot_guest/ceiling
else
    t_fail boot_guest/ceiling "rc $BOOT_RC, why '$BOOT_WHY'"
fi

# tests/run.sh: "# run.sh stall: N" lets a script that prints run past N s, stops one that is
# silent for N s (and what it started), and says each bound beside the time taken.
guest slow.sh '# run.sh stall: 4
for i in 1 2 3 4 5 6 7 8 9 10 11; do echo "ok step$i"; sleep 1; done'
nap=9$$1      # a sleep of its own, to find it by name
guest wedged.sh "# run.sh stall: 4
echo 'ok started'; sleep $nap & wait"
t0=$SECONDS
out=$(tests/run.sh "$tmp/slow.sh" "$tmp/wedged.sh" 2>&1)
took=$((SECONDS - t0))
if grep -qE "^PASS .*slow.sh \(11 passed" <<<"$out" &&
    grep -qE "^# .*slow.sh took 1[0-9] s of its 600 s ceiling; longest silence [0-9] s of its stall bound 4 s$" <<<"$out"; then
    t_ok run.sh/progress-keeps-it-running
else
    t_fail run.sh/progress-keeps-it-running "$(tr '\n' '|' <<<"$out")"
fi
if grep -qE "wedged.sh: not ok wedged.sh/progress: no output for 4s, stopped" <<<"$out" &&
    grep -q '^12 passed, 1 failed, 0 skipped$' <<<"$out" && [ "$took" -lt 60 ] && ! alive wedged.sh && ! pgrep -xf "sleep $nap" >/dev/null; then
    t_ok run.sh/silence-stops-it
else
    t_fail run.sh/silence-stops-it "after $took s: $(tr '\n' '|' <<<"$out")"
fi
t_done
