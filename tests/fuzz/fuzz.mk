# SPDX-License-Identifier: MIT
# tests/fuzz/fuzz.mk - the fuzz targets (tests/fuzz/README.md). Each is built two ways from the
# same sources: in the fuzz build (CC=clang SANITIZE=fuzz, BUILD=<build>/fuzz: the library
# with ASan, UBSan and libFuzzer's coverage, libFuzzer linked in), and in every other build
# with fuzz_replay.c as its main, which runs a corpus once (the regression inputs of
# tests/fuzz/corpus/TARGET/ where no libFuzzer is at hand). tests/fuzz/test_fuzz.sh asks make
# for both ('make fuzz-progs'). Included by tests/tests.mk.
#
#   fuzz_api_dmabuf  the API as call sequences over the dma-buf stand-in and the gdrdrv one
#   fuzz_api_vulkan  the same over the VMM and Vulkan stand-ins and the gdrdrv one
#   fuzz_env         every environment variable the library reads, through its readers
#   fuzz_vramio_run  vramio-run's environment and arguments, up to the exec of the program

FUZZ_BIN      := $(BUILD)/tests/fuzz
FUZZ_PROGS    := $(addprefix $(FUZZ_BIN)/fuzz_,api_dmabuf api_vulkan env vramio_run)
FUZZ_HDRS     := $(wildcard tests/fuzz/*.h) $(TEST_KIT_HDRS) driver/uapi/gdrdrv.h
FUZZ_COMMON   := tests/fuzz/fuzz_common.c $(TEST_KIT_SRCS)
FUZZ_API_SRCS := tests/fuzz/fuzz_api.c tests/fuzz/fuzz_api_ops.c tests/fuzz/fuzz_api_copy.c \
                 tests/fuzz/fake_gdrdrv.c
# The targets find the stand-in drivers of their own build (fz_start, fuzz_common.c).
FUZZ_CPPFLAGS  = $(TEST_CPPFLAGS) -Itests/fuzz -Idriver $(TEST_CUDA_CPPFLAGS) -DFUZZ_FAKE_DIR='"$(abspath $(FAKE_DIR))"'
# The gdrdrv stand-in (fake_gdrdrv.c) answers the library's system calls on /dev/gdrdrv.
FUZZ_WRAP     := -Wl,--wrap=open,--wrap=close,--wrap=ioctl,--wrap=mmap,--wrap=munmap
FUZZ_MAIN      = $(if $(filter fuzz,$(SANITIZE)),-fsanitize=fuzzer,tests/fuzz/fuzz_replay.c)

$(FUZZ_BIN)/fuzz_api_dmabuf: FUZZ_STANDIN := cuda-dmabuf
$(FUZZ_BIN)/fuzz_api_vulkan: FUZZ_STANDIN := cuda-vmm
$(FUZZ_BIN)/fuzz_api_%: $(FUZZ_API_SRCS) $(FUZZ_COMMON) tests/fuzz/fuzz_replay.c $(FUZZ_HDRS) \
        $(LIB_STATIC) | $(FAKE_LIBS)
	@mkdir -p $(dir $@)
	$(call prog-link,$(FUZZ_CPPFLAGS) -DFUZZ_STANDIN='"$(FUZZ_STANDIN)"',\
	    $(FUZZ_API_SRCS) $(FUZZ_COMMON) $(FUZZ_MAIN) $(LIB_STATIC) -ldl $(FUZZ_WRAP))

# The environment: white-box (wb_*: the library's own headers, and log.c built in, see the
# file), with the VMM and Vulkan stand-ins and the gdrdrv one.
$(FUZZ_BIN)/fuzz_env: tests/fuzz/wb_fuzz_env.c tests/fuzz/fake_gdrdrv.c $(FUZZ_COMMON) \
        tests/fuzz/fuzz_replay.c $(FUZZ_HDRS) src/process/log.c $(LIB_STATIC) | $(FAKE_LIBS)
	@mkdir -p $(dir $@)
	$(call prog-link,$(WB_CPPFLAGS) $(FUZZ_CPPFLAGS),\
	    tests/fuzz/wb_fuzz_env.c tests/fuzz/fake_gdrdrv.c $(FUZZ_COMMON) $(FUZZ_MAIN) \
	    $(LIB_STATIC) -ldl $(FUZZ_WRAP))

# vramio-run: its own sources, its main renamed, its exec of the program caught.
# execvp: the caught exec; getpwuid: the password database's home of this user is the
# sandbox's (run_dir.c falls back to it when the environment names no usable base).
FUZZ_EXEC_WRAP := -Wl,--wrap=execvp,--wrap=getpwuid
FUZZ_RUN_FLAGS := -Ibridge -Iutil -DVRAMIO_VERSION_STRING='"$(VERSION)"' -DVRAMIO_MULTIARCH='""'
$(FUZZ_BIN)/vramio_run_main.o: bridge/vramio_run.c $(wildcard bridge/*.h) | $(BUILD_PREREQS)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $(FUZZ_RUN_FLAGS) -Dmain=vramio_run_main -c $< -o $@
$(FUZZ_BIN)/fuzz_vramio_run: tests/fuzz/fuzz_vramio_run.c bridge/run_dir.c $(FUZZ_COMMON) \
        tests/fuzz/fuzz_replay.c $(FUZZ_BIN)/vramio_run_main.o $(FUZZ_HDRS) $(LIB_STATIC) \
        | $(FAKE_LIBS)
	@mkdir -p $(dir $@)
	$(call prog-link,$(FUZZ_CPPFLAGS) $(FUZZ_RUN_FLAGS),tests/fuzz/fuzz_vramio_run.c \
	    bridge/run_dir.c $(FUZZ_COMMON) $(FUZZ_BIN)/vramio_run_main.o $(FUZZ_MAIN) \
	    $(LIB_STATIC) -ldl $(FUZZ_EXEC_WRAP))

.PHONY: fuzz-progs
fuzz-progs: $(FUZZ_PROGS) $(FAKE_LIBS)
