# SPDX-License-Identifier: MIT
# tests/lib/t.sh - the test kit of the shell tests (sourced), the same protocol as the C kit
# (tests/lib/t.h) and tests/run.sh: one line per result,
#   t_ok NAME            "ok NAME"
#   t_fail NAME WHY      "not ok NAME: WHY", and the script's status becomes a failure
#   t_skip NAME WHY      "skip NAME: WHY"
# and the exit codes: t_skip_all WHY says why nothing can be tested here and exits T_SKIP (77);
# "exit $(t_status)" (or t_done) ends a script that printed its own result lines: 1 when any
# t_fail ran, else 0.
T_SKIP=77
T_FAILED=0

t_ok()   { echo "ok $1"; }
t_fail() { echo "not ok $1: $2"; T_FAILED=1; }
t_skip() { echo "skip $1: $2"; }
t_status() { echo "$T_FAILED"; }
t_done() { exit "$T_FAILED"; }
t_skip_all() { echo "$1"; exit "$T_SKIP"; }

# t_cuda_cflags INCLUDE_DIR: the flags that give the stand-in CUDA drivers and their clients a
# <cuda.h>: the toolkit's in INCLUDE_DIR where it has one, else the project's own declarations
# (tests/fake/cuda/cuda.h over util/), so these tests need no CUDA toolkit. From the top.
t_cuda_cflags() {
    if [ -f "$1/cuda.h" ]; then echo "-I$1"; else echo "-Itests/fake/cuda -Iutil"; fi
}
