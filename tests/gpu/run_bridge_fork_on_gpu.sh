#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_bridge_fork_on_gpu.sh - on a GPU machine, from the repository root, in about
# 2 minutes (every step has a timeout): the bridge's fork program (tests/bridge/fork_client.c,
# whose runs against the stand-in driver are tests/bridge/test_bridge_fork.sh) under vramio-run
# against the real driver. A program forks while another of its threads is inside the bridge
# (an IPC open waiting for the exporter, the first IPC handle made during the fork, a loop of
# opens, allocations and handles); each child opens, allocates, frees and makes a handle, then
# leaves by exit() or _exit(). What the driver answers in a child is its own business: a
# child fails only by hanging (killed after 10 s), dying of a signal, or being told that
# something worked that did not. The parent's threads must not be harmed. Logs go to $OUT;
# result lines and a count to stdout. BUDGET (seconds, default 300) bounds the whole run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-bridge-fork 300 summary.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
B=build

if ! timeout $(tmo 200) make -j16 lib bridge "$B/gpu/bridge_fork_client" > "$OUT/build.log" 2>&1; then
    say "not ok bridge_fork_gpu/build: make failed"; tail -20 "$OUT/build.log"; exit 1
fi
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip bridge_fork_gpu/all: no NVIDIA GPU here (the program was built)"; exit 0
fi
env -u GDRCOPY_BACKEND timeout $(tmo 240) "$B/bin/vramio-run" "$B/gpu/bridge_fork_client" \
    > "$OUT/fork_client.log" 2>&1
rc=$?
grep -E '^(ok|not ok|skip) |^# ' "$OUT/fork_client.log" | tee -a "$S"
[ "$rc" -eq 0 ] || say "not ok bridge_fork_gpu/exit: status $rc (the log: $OUT/fork_client.log)"
echo "== bridge_fork_gpu: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok"
