# SPDX-License-Identifier: MIT
# bench/bench.mk - the benchmarks. They measure, they do not assert, so none of them is part of
# 'make check' (tests/tools/test_bench_report.sh tests the report generator). Included by the
# top Makefile after the library's, the tools' and the tests' fragments.
#
#   make bench            the suite on a GPU machine (bench/run.sh): copylat, copybw, apiperf
#                         and pplat, then docs/benchmarks.{md,svg} (bench/report.py)
#   make bench-copy       CPU microbenchmark of every usable copy kernel on ordinary memory
#                         [COPY_BENCH_ARGS="-k avx2 -w 64"]
#   make bench-dispatch   what gdr_copy_to_mapping adds over the kernel it dispatches to
#                         [BENCH_DISPATCH_ARGS="-s 2000 -b 1000 -n 8 -t wc"]; with
#                         BENCH_DISPATCH_ARGS=-R: 1-256 B beside the raw loops, copylat's harness
#   make bench-gpu        build $(BUILD)/bench/gpu_bench (a GPU machine runs it: bench/gpu_bench.c,
#                         tests/gpu/run_on_gpu.sh, bench/run_bench_on_gpu.sh GPU_BENCH=1)
# Scripts: run_bench_on_gpu.sh and run_readme_on_gpu.sh (README's figures, one run) on a GPU
# machine; copy_path_compare.sh OLD_TREE, the copy path's own cost in two trees side by side
# (copy_path_bench.c; no GPU).

COPY_BENCH     := $(BUILD)/bench/copy_bench
BENCH_DISPATCH := $(BUILD)/bench/bench_dispatch
GPU_BENCH      := $(BUILD)/bench/gpu_bench
.PHONY: bench bench-copy bench-dispatch bench-gpu

bench: lib tools
	BUILD=$(BUILD) bench/run.sh

bench-copy: $(COPY_BENCH)
	$(COPY_BENCH) $(COPY_BENCH_ARGS)

bench-dispatch: $(BENCH_DISPATCH)
	$(BENCH_DISPATCH) $(BENCH_DISPATCH_ARGS)

# White-box, as the copy engine's tests: the kernels' objects and the library's log.c; the
# wrap shows it the kernel table (tests/unit/copy_table.h).
COPY_BENCH_WRAP := -Wl,--wrap=vr_copy_choose_from
$(COPY_BENCH): bench/copy_bench.c tests/unit/copy_table.h $(patsubst %.c,$(BUILD)/obj/%.o,$(COPY_SRCS) $(ARCH_SRCS) src/process/log.c)
	@mkdir -p $(dir $@)
	$(call prog-link,-Iinclude -Isrc -Isrc/copy -Iutil -Itests/unit,$(filter-out %.h,$^) $(COPY_BENCH_WRAP))

# White-box: links the static library and the test hooks (tests/unit/wb/) for the insert, and
# the tools' harness and raw loops for -R.
BENCH_DISPATCH_TOOLS := tools/common/measure.c tools/common/stats.c tools/common/rawcopy.c
$(BENCH_DISPATCH): bench/bench_dispatch.c $(WB_HOOK_SRCS) $(BENCH_DISPATCH_TOOLS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call prog-link,$(WB_CPPFLAGS) -Itools,$< $(WB_HOOK_SRCS) $(BENCH_DISPATCH_TOOLS) $(LIB_STATIC) -ldl -lm)

# Against the CUDA driver API and the GPU tests' helpers (tests/gpu/gpu.mk's GPU_COMMON), as
# the GPU test programs are.
bench-gpu: $(GPU_BENCH)
$(GPU_BENCH): bench/gpu_bench.c $(GPU_COMMON) tests/gpu/gpu_common.h $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -Itests/gpu -I$(CUDA_HOME)/include,$< $(GPU_COMMON) \
	    $(LINK_LIBGDRAPI) -L$(CUDA_STUBS) -lcuda)
