#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_bridge_mpi.sh - an MPI job's ranks under vramio-run, started by a real
# launcher (MPIRUN, default mpirun: Open MPI's or MPICH's), against the stand-in driver: each
# rank's device memory must come from vramio's pool, pin, and carry a message through the
# mappings (mpi_client.c), whichever way a job puts vramio-run in:
#   each_rank       mpirun -np N vramio-run PROGRAM   (the README's recipe; also srun's form)
#   fresh_dir       the same with N ranks making vramio-run's directory at the same moment
#   launcher        vramio-run mpirun -np N PROGRAM    (the launcher, its daemons and every
#                   rank start with the shim first on the library path)
#   plain           mpirun -np N PROGRAM               (the control: nothing pooled, no pin)
# The launcher's own environment handling is what is tried: mpirun passes the variables it is
# told to (-x for Open MPI, every one for MPICH's Hydra) and may put its own directories on
# the ranks' library path. Skips, saying why, where no MPI (mpicc and mpirun) is installed.
# The program comes from make (bridge.mk, MPICC).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
fakes=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
run=$B/bin/vramio-run
MPIRUN=${MPIRUN:-mpirun}
MPICC=${MPICC:-mpicc}
for f in "$B/lib/libvramio_bridge.so" "$B/lib/libvramio_cuda.so" "$run"; do
    [ -e "$f" ] || { t_fail "bridge/mpi/built" "$f is not built"; exit 1; }
done
if ! command -v "$MPIRUN" >/dev/null || ! command -v "$MPICC" >/dev/null; then
    t_skip_all "skip bridge/mpi/all: no MPI here (mpirun and mpicc: Debian's openmpi-bin and libopenmpi-dev, or MPIRUN and MPICC)"
fi
t_make bridge/mpi/build MPICC="$MPICC" mpi-progs || exit 1
t_run_dir bridge/mpi/run_dir || t_done
client=$(realpath "$B/tests/bridge/mpi_client")
run=$(realpath "$run")

# Open MPI wants to be told that root may run it, and that two ranks may share a core; what
# it passes to the ranks is named with -x. MPICH's Hydra passes the whole environment.
mpi=("$MPIRUN")
if "$MPIRUN" --version 2>&1 | grep -q 'Open MPI'; then
    [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
    mpi+=(--oversubscribe -x LD_LIBRARY_PATH -x VRAMIO_RUN_DIR)
fi
# mpi_job NAME NP [VRAMIO_RUN_DIR] -- COMMAND...: the job's result lines; a launcher that fails
# with no result line to say why, or never ends (120 s), fails NAME.
mpi_job() {
    local name=$1 np=$2 dir=$3 out rc
    shift 4
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
          VRAMIO_RUN_DIR="$dir" timeout -k 5 120 "$@" 2>&1)
    rc=$?
    t_relay "bridge/mpi/$name/exit" $rc "$out"
    if [ "$rc" -eq 0 ] && ! printf '%s\n' "$out" | grep -q "^# $np ranks$"; then
        t_fail "bridge/mpi/$name/ranks" "not every rank answered: $(printf '%s' "$out" | tail -n 3)"
    fi
}

mpi_job each_rank 2 "$T_RUN_DIR" -- "${mpi[@]}" -np 2 "$run" "$client" bridged each_rank
# Four ranks' vramio-run make the same new directory at once.
mkdir -m 700 "$T_RUN_DIR/fresh"
mpi_job fresh_dir 4 "$T_RUN_DIR/fresh" -- "${mpi[@]}" -np 4 "$run" "$client" bridged fresh_dir
mpi_job launcher 2 "$T_RUN_DIR" -- "$run" "${mpi[@]}" -np 2 "$client" bridged launcher
mpi_job plain 2 "$T_RUN_DIR" -- "${mpi[@]}" -np 2 "$client" plain
t_done
