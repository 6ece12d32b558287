# SPDX-License-Identifier: MIT
# tests/gpu/gpu_script.sh - sourced by the run_*_on_gpu.sh scripts: the budget that bounds a
# whole run, its log folder and its summary file.
#   gpu_script_start DEFAULT_OUT DEFAULT_BUDGET SUMMARY_NAME
# sets start, BUDGET and OUT (the caller's environment wins over the defaults; OUT is made)
# and S, the summary file ($OUT/SUMMARY_NAME, emptied).
#   tmo N    a timeout of N seconds, or what is left of the budget when that is less (at
#            least 1), for every step's timeout
#   say ...  a line to stdout and to the summary
#   median V...      the middle of the numbers among V (the lower of the two middle ones)
#   spread V...      how far a measure moved by itself over rounds V: largest / smallest, at
#                    least 1.05
#   within P F S     whether figure F (lower is better) is within S times P

gpu_script_start() {
    start=$(date +%s)
    OUT=${OUT:-$1}
    BUDGET=${BUDGET:-$2}
    mkdir -p "$OUT"
    S=$OUT/$3
    : > "$S"
}

tmo() {
    local left=$((start + BUDGET - $(date +%s)))
    if [ "$left" -lt "$1" ]; then echo $((left > 1 ? left : 1)); else echo "$1"; fi
}

say() { echo "$*" | tee -a "$S"; }

median() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
        awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'
}

# A figure under vramio-run counts as worse than the plain runs' only beyond what those moved
# by themselves: from one process to the next, JAX's step time on an H100 moved between 0.24
# and 0.36 ms plainly, and a fixed 5% called that noise a slowdown.
spread() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
        awk 'NR == 1 { lo = $1 } { hi = $1 } END { s = lo > 0 ? hi / lo : 1; print (s > 1.05 ? s : 1.05) }'
}

within() { awk -v p="$1" -v f="$2" -v s="$3" 'BEGIN { exit !(p + 0 > 0 && f + 0 > 0 && f + 0 <= (p + 0) * s) }'; }
