# SPDX-License-Identifier: MIT
# tests/bench/bench.mk - the dispatch microbenchmark (not part of 'make check': timings are
# measurements, not tests). Included by tests/tests.mk.
#
#   make bench-dispatch [BENCH_DISPATCH_ARGS="-s 2000 -b 1000 -n 8 -t wc"]
#   make bench-dispatch BENCH_DISPATCH_ARGS=-R    1-256 B beside the raw loops, copylat's harness

BENCH_DISPATCH := $(BUILD)/bench/bench_dispatch
.PHONY: bench-dispatch
bench-dispatch: $(BENCH_DISPATCH)
	$(BENCH_DISPATCH) $(BENCH_DISPATCH_ARGS)

# White-box: links the static library and the test hooks (tests/unit/wb/) for the insert, and
# the tools' harness and raw loops for -R.
BENCH_DISPATCH_TOOLS := tools/common/measure.c tools/common/stats.c tools/common/rawcopy.c
$(BENCH_DISPATCH): tests/bench/bench_dispatch.c $(WB_HOOK_SRCS) $(BENCH_DISPATCH_TOOLS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call prog-link,$(WB_CPPFLAGS) -Itools,$< $(WB_HOOK_SRCS) $(BENCH_DISPATCH_TOOLS) $(LIB_STATIC) -ldl -lm)
