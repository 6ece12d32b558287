# SPDX-License-Identifier: MIT
# tests/fake/fake.mk - the stand-in drivers (TEST ONLY), loaded by name through LD_LIBRARY_PATH
# by the script tests that run without a GPU, one folder per family so that a test puts on its
# library path only the stand-ins it means to:
#   $(FAKE_CUDA_DMABUF)  libcuda.so.1 for the dma-buf backend (fake_cuda_dmabuf.c), with
#                        $(FAKE_MMAP), its exports' mmap (fake_mmap.c, preloaded)
#   $(FAKE_CUDA_VMM)     libcuda.so.1 for the bridge and the vulkan backend (fake_cuda_vmm.c,
#                        fake_cuda_ptr.c, fake_cuda_pool.c), and libcuda.so beside it for -lcuda
#   $(FAKE_VULKAN)       libvulkan.so.1 (fake_vulkan.c), its GPUs those of FAKE_CUDA_VMM
# 'make fake-drivers' builds them. Included by tests/tests.mk before the areas that use them.
# Never built with sanitizers: the ASan runs load them beside the sanitized library.

FAKE_DIR         := $(BUILD)/tests/fake
FAKE_CUDA_DMABUF := $(FAKE_DIR)/cuda-dmabuf/libcuda.so.1
FAKE_MMAP        := $(FAKE_DIR)/cuda-dmabuf/libfake_mmap.so
FAKE_CUDA_VMM    := $(FAKE_DIR)/cuda-vmm/libcuda.so.1
FAKE_VULKAN      := $(FAKE_DIR)/vulkan/libvulkan.so.1
FAKE_LIBS        := $(FAKE_CUDA_DMABUF) $(FAKE_MMAP) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
# Linking a client against the VMM stand-in: -lcuda finds libcuda.so.
FAKE_CUDA_VMM_LINK = -L$(FAKE_DIR)/cuda-vmm -lcuda

# <cuda.h> for the stand-ins and their clients: the toolkit's where one is installed, else the
# project's own declarations (tests/fake/cuda/cuda.h over util/), so no toolkit is needed.
TEST_CUDA_CPPFLAGS := $(if $(wildcard $(CUDA_HOME)/include/cuda.h),-I$(CUDA_HOME)/include,\
                      -Itests/fake/cuda -Iutil)

# The one recipe of the script tests' shared objects: the sources among the prerequisites,
# then SO_FLAGS (target-specific: include paths, soname, symbol binding, visibility, libraries).
test-so = $(CC) $(C_FLAGS) $(CFLAGS) $(TEST_CUDA_CPPFLAGS) -shared -fPIC -o $@ \
    $(filter %.c,$^) $(SO_FLAGS)

# Both libcuda.so.1 stand-ins are built on one base (fake_cuda_base.[ch]).
FAKE_CUDA_BASE   := tests/fake/fake_cuda_base.c tests/fake/fake_cuda_base.h
$(FAKE_CUDA_DMABUF): tests/fake/fake_cuda_dmabuf.c $(FAKE_CUDA_BASE)
$(FAKE_CUDA_DMABUF): SO_FLAGS = -Wl,-soname,libcuda.so.1
$(FAKE_MMAP): tests/fake/fake_mmap.c
$(FAKE_MMAP): SO_FLAGS = -ldl
# -Bsymbolic: the table of cuGetProcAddress holds the stand-in's own functions, not the
# bridge shim's of the same names (as in the real driver).
$(FAKE_CUDA_VMM): tests/fake/fake_cuda_vmm.c tests/fake/fake_cuda_ptr.c tests/fake/fake_cuda_pool.c \
    tests/fake/fake_cuda_vmm.h $(FAKE_CUDA_BASE)
$(FAKE_CUDA_VMM): SO_FLAGS = -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic
# -Itests/lib: vk_placed.h, the placed-map extensions, declared once for it and chunk_probe.cu.
$(FAKE_VULKAN): tests/fake/fake_vulkan.c tests/lib/vk_placed.h
$(FAKE_VULKAN): SO_FLAGS = -Itests/lib -fvisibility=hidden -Wl,-soname,libvulkan.so.1 -Wl,-z,defs \
    -lpthread

$(FAKE_LIBS): tests/fake/fake_gpu.h | $(BUILD_PREREQS)
	@mkdir -p $(dir $@)
	$(test-so)

$(FAKE_DIR)/cuda-vmm/libcuda.so: $(FAKE_CUDA_VMM)
	ln -sf $(notdir $<) $@

.PHONY: fake-drivers
fake-drivers: $(FAKE_LIBS) $(FAKE_DIR)/cuda-vmm/libcuda.so
SCRIPT_PROGS += $(FAKE_LIBS) $(FAKE_DIR)/cuda-vmm/libcuda.so
