# SPDX-License-Identifier: MIT
# tests/bridge/bridge.mk - the programs that the bridge's script tests run against the VMM
# stand-in driver and the stand-in Vulkan loader (tests/fake/fake.mk). Included by
# tests/tests.mk.
#   make bridge-progs     tests/bridge/test_bridge.sh's clients (bridge_client.c, ipc_client.c),
#                         and its clients of NVIDIA's runtime where the CUDA toolkit has it
#                         (shared and static); test_bridge_alloc.sh's (alloc_client.c)
#   make users-progs      tests/bridge/test_bridge_users.sh's: users_client.c (no libcuda
#                         link: it dlopens what the loader gives) and the library that the
#                         second user plants (evil_cuda.c)
#   make interpose-progs  tests/bridge/test_interpose.sh's programs and the libraries they
#                         load ($(BUILD)/tests/interpose/lib/)
#   make fuzz-ipc         tests/bridge/test_fuzz_ipc_handle.sh's fuzzer (fuzz_ipc_handle.c)
#   make shim-progs       tests/bridge/test_shim.sh's: shim_client.c (-rdynamic: dladdr names
#                         its functions in a backtrace) and a stand-in bridge whose
#                         replacements answer at once (unwind_bridge.c)
#   make fork-progs       tests/bridge/test_bridge_fork.sh's: fork_client.c
#   make mpi-progs        tests/bridge/test_bridge_mpi.sh's: mpi_client.c, by the MPI compiler wrapper

BRIDGE_CLIENT := $(BUILD)/tests/bridge/bridge_client $(BUILD)/tests/bridge/ipc_client \
                 $(BUILD)/tests/bridge/alloc_client
$(BRIDGE_CLIENT): $(BUILD)/tests/bridge/%: tests/bridge/%.c tests/lib/hex.h tests/lib/ucx_attrs.h tests/bridge/fdpass.h $(SCRIPT_CLIENT_DEPS) \
    $(FAKE_DIR)/cuda-vmm/libcuda.so tests/fake/fake_gpu.h
	@mkdir -p $(dir $@)
	$(call script-client,-Itests/fake,$(FAKE_CUDA_VMM_LINK))

# tests/bridge/test_bridge_fork.sh's client: its own poll, sendmsg and listen hold a thread
# inside the bridge while another forks; -rdynamic exports them, so that they come before
# libc's for the bridge (loaded later by the shim) too.
FORK_CLIENT := $(BUILD)/tests/bridge/fork_client
$(FORK_CLIENT): tests/bridge/fork_client.c tests/lib/hex.h $(SCRIPT_CLIENT_DEPS) \
    $(FAKE_DIR)/cuda-vmm/libcuda.so tests/fake/fake_gpu.h
	@mkdir -p $(dir $@)
	$(call script-client,-Itests/fake -rdynamic,$(FAKE_CUDA_VMM_LINK) -lpthread)

# NVIDIA's runtime, shared and static, asking the bridge's shim for the driver's functions.
CUDA_LIB ?= $(CUDA_HOME)/lib64
BRIDGE_RUNTIME := $(BUILD)/tests/bridge/runtime_shared $(BUILD)/tests/bridge/runtime_static
$(BUILD)/tests/bridge/runtime_shared: RUNTIME_LINK = -L$(CUDA_LIB) -lcudart -Wl,-rpath,$(CUDA_LIB)
$(BUILD)/tests/bridge/runtime_static: RUNTIME_LINK = $(CUDA_LIB)/libcudart_static.a -ldl -lpthread -lrt
$(BRIDGE_RUNTIME): tests/bridge/runtime_client.c
	@mkdir -p $(dir $@)
	$(call prog-link,-I$(CUDA_HOME)/include,$< $(RUNTIME_LINK))
# Not when cross-compiling (tests/cross/): the toolkit's runtime is this machine's.
BRIDGE_CROSS := $(filter-out $(shell uname -m)-%,$(shell $(CC) -dumpmachine 2>/dev/null))
BRIDGE_RUNTIME_HERE := $(if $(BRIDGE_CROSS),,\
    $(if $(wildcard $(CUDA_LIB)/libcudart.so),$(BUILD)/tests/bridge/runtime_shared) \
    $(if $(wildcard $(CUDA_LIB)/libcudart_static.a),$(BUILD)/tests/bridge/runtime_static))

# vramio-run against a second local user.
USERS_CLIENT := $(BUILD)/tests/bridge/users_client
USERS_EVIL   := $(BUILD)/tests/bridge/evil/libcuda.so.1
$(USERS_CLIENT): tests/bridge/users_client.c tests/lib/hex.h tests/fake/fake_gpu.h
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CUDA_CPPFLAGS) -Itests/fake -Itests/lib,$< -ldl)
$(USERS_EVIL): tests/bridge/evil_cuda.c
$(USERS_EVIL): SO_FLAGS = -Wl,-soname,libcuda.so.1
$(USERS_EVIL):
	@mkdir -p $(dir $@)
	$(test-so)

# The shim seen from inside a program.
SHIM_CLIENT := $(BUILD)/tests/bridge/shim_client
SHIM_UNWIND := $(BUILD)/tests/bridge/unwind/libvramio_bridge.so
$(SHIM_CLIENT): tests/bridge/shim_client.c
	@mkdir -p $(dir $@)
	$(call prog-link,-rdynamic,$< -ldl -lpthread)
$(SHIM_UNWIND): tests/bridge/unwind_bridge.c
$(SHIM_UNWIND): SO_FLAGS = -fvisibility=hidden
$(SHIM_UNWIND):
	@mkdir -p $(dir $@)
	$(test-so)

# vramio-run against interposers, plugins, UCX's hooks and a second copy of the library.
INTERPOSE_DIR   := $(BUILD)/tests/interpose
INTERPOSE_PROGS := $(addprefix $(INTERPOSE_DIR)/,client client_wrap ucm_like second_copy)
INTERPOSE_LIBS  := $(addprefix $(INTERPOSE_DIR)/lib/,libfsyncwrap.so libplugindep.so plugin.so)
INTERPOSE_LINK   = $(FAKE_CUDA_VMM_LINK) -ldl -lpthread
INTERPOSE_FLAGS  = $(TEST_CPPFLAGS) $(TEST_CUDA_CPPFLAGS)

$(INTERPOSE_PROGS): $(FAKE_DIR)/cuda-vmm/libcuda.so $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
$(INTERPOSE_DIR)/client: tests/bridge/interpose_client.c
	@mkdir -p $(dir $@)
	$(call prog-link,$(INTERPOSE_FLAGS),$< $(LINK_LIBGDRAPI) $(INTERPOSE_LINK))
# The interposer linked into the program itself, its symbols exported for RTLD_NEXT lookups.
$(INTERPOSE_DIR)/client_wrap: tests/bridge/interpose_client.c tests/bridge/fsync_wrap.c
	@mkdir -p $(dir $@)
	$(call prog-link,$(INTERPOSE_FLAGS) -DWRAP_IN_PROGRAM -Itests/bridge -rdynamic,$< \
	    $(LINK_LIBGDRAPI) $(INTERPOSE_LINK))
$(INTERPOSE_DIR)/ucm_like: tests/bridge/ucm_like.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS)
	@mkdir -p $(dir $@)
	$(call prog-link,$(INTERPOSE_FLAGS),$< $(TEST_KIT_SRCS) $(LINK_LIBGDRAPI) $(INTERPOSE_LINK))
# The static library in the program, the shared one loaded by vramio-run: two copies.
$(INTERPOSE_DIR)/second_copy: tests/bridge/second_copy.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call prog-link,$(INTERPOSE_FLAGS),$< $(TEST_KIT_SRCS) $(LIB_STATIC) $(INTERPOSE_LINK))

$(INTERPOSE_DIR)/lib/libfsyncwrap.so: tests/bridge/fsync_wrap.c
$(INTERPOSE_DIR)/lib/libfsyncwrap.so: SO_FLAGS = -ldl
$(INTERPOSE_DIR)/lib/libplugindep.so: tests/bridge/plugin_dep.c
$(INTERPOSE_DIR)/lib/libplugindep.so: SO_FLAGS = -Wl,-soname,libplugindep.so
# The plugin reaches its dependency only through dlsym: without --no-as-needed the linker
# would drop it from the plugin's needed libraries.
$(INTERPOSE_DIR)/lib/plugin.so: tests/bridge/plugin.c $(INTERPOSE_DIR)/lib/libplugindep.so
$(INTERPOSE_DIR)/lib/plugin.so: SO_FLAGS = -L$(INTERPOSE_DIR)/lib -Wl,--no-as-needed -lplugindep \
    -Wl,--as-needed -Wl,-rpath,$(abspath $(INTERPOSE_DIR)/lib) -ldl
$(INTERPOSE_LIBS):
	@mkdir -p $(dir $@)
	$(test-so)

# The IPC handle fuzzer (test_fuzz_ipc_handle.sh): libFuzzer, so clang (FUZZ_CC) with its
# runtime (Debian: libclang-rt-14-dev), under ASan and UBSan; the bridge's IPC sources and
# util's driver loader are built into it (it stands in for the rest of the bridge and the pool
# itself). Not part of 'make check's builds: the script asks for it, and says why not where
# clang cannot build it.
FUZZ_CC       ?= clang
FUZZ_IPC      := $(BUILD)/tests/bridge/fuzz_ipc_handle
FUZZ_IPC_SRCS := tests/bridge/fuzz_ipc_handle.c tests/bridge/fuzz_ipc_world.c \
                 bridge/bridge_ipc.c bridge/bridge_ipc_open.c bridge/bridge_ipc_server.c \
                 bridge/bridge_attr.c bridge/bridge_block_id.c bridge/bridge_fork.c \
                 util/cuda_loader.c
$(FUZZ_IPC): $(FUZZ_IPC_SRCS) bridge/bridge.h bridge/bridge_ipc.h tests/bridge/fdpass.h \
    tests/bridge/fuzz_ipc.h tests/fake/fake_gpu.h tests/bridge/bridge.mk
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(C_FLAGS) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	    -fno-omit-frame-pointer $(CPPFLAGS_ALL) -Ibridge -Iutil -Itests/fake -Itests/bridge \
	    -o $@ $(FUZZ_IPC_SRCS) -ldl

# An MPI program's ranks started by a real launcher (test_bridge_mpi.sh): compiled by the MPI
# compiler wrapper (MPICC, Open MPI's or MPICH's mpicc). Not part of 'make check's builds:
# the script asks for it where an MPI is installed, and skips saying why where none is.
MPICC      ?= mpicc
MPI_CLIENT := $(BUILD)/tests/bridge/mpi_client
$(MPI_CLIENT): tests/bridge/mpi_client.c $(SCRIPT_CLIENT_DEPS) $(FAKE_DIR)/cuda-vmm/libcuda.so
	@mkdir -p $(dir $@)
	$(MPICC) $(PROG_CFLAGS) $(TEST_CPPFLAGS) $(TEST_CUDA_CPPFLAGS) -Itests/fake -o $@ $< \
	    $(TEST_KIT_SRCS) $(FAKE_CUDA_VMM_LINK) $(LINK_LIBGDRAPI) -ldl $(ALL_LDFLAGS)

.PHONY: bridge-progs interpose-progs users-progs shim-progs fuzz-ipc fork-progs mpi-progs
mpi-progs: $(MPI_CLIENT) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
fork-progs: $(FORK_CLIENT) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
fuzz-ipc: $(FUZZ_IPC) $(FAKE_CUDA_VMM)
users-progs: $(USERS_CLIENT) $(USERS_EVIL) $(FAKE_CUDA_VMM)
shim-progs: $(SHIM_CLIENT) $(SHIM_UNWIND) $(FAKE_CUDA_VMM)
bridge-progs: $(BRIDGE_CLIENT) $(BRIDGE_RUNTIME_HERE) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
interpose-progs: $(INTERPOSE_PROGS) $(INTERPOSE_LIBS) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
SCRIPT_PROGS += $(BRIDGE_CLIENT) $(FORK_CLIENT) $(BRIDGE_RUNTIME_HERE) $(INTERPOSE_PROGS) \
                $(INTERPOSE_LIBS) $(USERS_CLIENT) $(USERS_EVIL) $(SHIM_CLIENT) $(SHIM_UNWIND)
