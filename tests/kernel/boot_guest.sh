# SPDX-License-Identifier: MIT
# tests/kernel/boot_guest.sh - sourced by run-qemu.sh: one QEMU boot, bounded by the guest's
# progress rather than by its total time (run-qemu.sh's header says why and which bounds).
# tests/kernel/test_boot_guest.sh checks it with a stand-in for QEMU.
#
# boot_guest LABEL RAW STALL CEILING QEMU ARGS...: runs QEMU, its console to RAW, until it exits,
# or until no new "@@ " line came for STALL s, or CEILING s in all. Sets BOOT_RC (QEMU's status;
# 124 when stopped), BOOT_WHY (why it was stopped, else empty), BOOT_GAP (its longest silence,
# in s) and BOOT_GAP_AT (the group that was running then).
boot_guest() {
    local label=$1 raw=$2 stall=$3 ceiling=$4 pid lines=0 now_lines last=$SECONDS t0=$SECONDS
    local group=boot note=$((SECONDS + 60)) i
    shift 4
    BOOT_GAP=0 BOOT_GAP_AT=boot BOOT_WHY=
    "$@" </dev/null >"$raw" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        now_lines=$(grep -c '^@@ ' "$raw")
        if [ "$now_lines" != "$lines" ]; then
            lines=$now_lines last=$SECONDS
            group=$(grep '^@@ RUNNING ' "$raw" | tail -n 1 | cut -d' ' -f3 | tr -d '\r')
        fi
        if [ $((SECONDS - last)) -gt "$BOOT_GAP" ]; then
            BOOT_GAP=$((SECONDS - last)) BOOT_GAP_AT=${group:-boot}
        fi
        if [ $((SECONDS - last)) -ge "$stall" ]; then
            BOOT_WHY="stopped: no new result line for ${stall}s"
        elif [ $((SECONDS - t0)) -ge "$ceiling" ]; then
            BOOT_WHY="stopped: still running at its ${ceiling}s ceiling"
        elif [ "$SECONDS" -ge "$note" ]; then
            echo "# $label: guest at $((SECONDS - t0)) s, $lines result lines, in '${group:-boot}'"
            note=$((SECONDS + 60))
        fi
        [ -z "$BOOT_WHY" ] || break
    done
    if [ -n "$BOOT_WHY" ]; then
        kill -TERM "$pid" 2>/dev/null
        for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null && sleep 1; done
        kill -KILL "$pid" 2>/dev/null
    fi
    { wait "$pid"; } 2>/dev/null     # no "Killed" notice from the shell: the caller says why
    BOOT_RC=$?
    [ -z "$BOOT_WHY" ] || BOOT_RC=124
}

