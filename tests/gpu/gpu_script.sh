# SPDX-License-Identifier: MIT
# tests/gpu/gpu_script.sh - sourced by the run_*_on_gpu.sh scripts: the budget that bounds a
# whole run, its log folder and its summary file.
#   gpu_script_start DEFAULT_OUT DEFAULT_BUDGET SUMMARY_NAME
# sets start, BUDGET and OUT (the caller's environment wins over the defaults; OUT is made)
# and S, the summary file ($OUT/SUMMARY_NAME, emptied).
#   tmo N    a timeout of N seconds, or what is left of the budget when that is less (at
#            least 1), for every step's timeout
#   say ...  a line to stdout and to the summary

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
