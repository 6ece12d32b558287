#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/test_gpu_script.sh - the judges the GPU scripts share (gpu_script.sh: median,
# spread, within) on figures of their kind, without a GPU: a figure under vramio-run is slower
# only beyond what the plain rounds moved by themselves, and never within less than 5%.
set -u
. "$(dirname "$0")/../lib/t.sh"
OUT=$(mktemp -d)
t_at_exit "rm -rf '$OUT'"
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start "$OUT" 60 summary.log >/dev/null

is() { # name got want
    [ "$2" = "$3" ] && t_ok "gpu_script/$1" || t_fail "gpu_script/$1" "'$2', expected '$3'"
}
judge() { # name plain-rounds bridged-rounds want(ok|slower), lower is better
    local p b s got
    p=$(median $2); b=$(median $3); s=$(spread $2)
    within "$p" "$b" "$s" && got=ok || got=slower
    is "$1" "$got (x$s)" "$4"
}
is median_odd "$(median 0.3 0.1 0.2)" 0.2
is median_even_takes_the_lower "$(median 4 1 3 2)" 2
is median_skips_what_is_no_figure "$(median ? 5 '' 7 x 6)" 6
is median_of_nothing "$(median ? '')" ""
is spread_at_least_5pct "$(spread 1.00 1.01)" 1.05
is spread_largest_over_smallest "$(spread 0.30 0.24 0.36)" 1.5

# JAX on an H100 (tests/gpu/run_alloc_probe_on_gpu.sh, five rounds each way): plain step times
# moved 0.24-0.36 ms by themselves; the bridged median 0.3009 is within that.
judge jax_noise_is_not_slower "0.2412 0.2553 0.2476 0.3172 0.3643" \
    "0.2425 0.3009 0.2379 0.3261 0.3609" "ok (x1.51036)"
# A steady workload 10% slower every round is slower, the 5% floor holds for a still one.
judge steady_10pct_is_slower "1.00 1.01 1.00" "1.10 1.11 1.10" "slower (x1.05)"
judge steady_4pct_is_not "1.00 1.01 1.00" "1.04 1.04 1.03" "ok (x1.05)"
# Beyond the spread even when the spread is wide.
judge beyond_a_wide_spread "0.24 0.30 0.36" "0.60 0.62 0.61" "slower (x1.5)"
# No figure on either side is never "within".
judge no_bridged_figure "1.0 1.0" "? ?" "slower (x1.05)"
is higher_is_better_swaps_the_arguments "$(within 900 1000 1.05 && echo ok || echo slower)" "slower"
t_done
