# SPDX-License-Identifier: MIT
# tests/bench/bench.mk - the dispatch microbenchmark (not part of 'make check': timings are
# measurements, not tests). Included by tests/tests.mk.
#
#   make bench-dispatch [BENCH_DISPATCH_ARGS="-s 2000 -b 1000 -n 8 -t wc"]

BENCH_DISPATCH := $(BUILD)/bench/bench_dispatch
.PHONY: bench-dispatch
bench-dispatch: $(BENCH_DISPATCH)
	$(BENCH_DISPATCH) $(BENCH_DISPATCH_ARGS)

# White-box: links the static library and includes src/ headers for the test-only insert.
$(BENCH_DISPATCH): tests/bench/bench_dispatch.c $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARNINGS) -pthread -Iinclude -Isrc -D_GNU_SOURCE $(SAN_FLAGS) $(CFLAGS) \
	    -o $@ $< $(LIB_STATIC) -ldl $(ALL_LDFLAGS)
