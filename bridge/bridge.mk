# SPDX-License-Identifier: MIT
# bridge/bridge.mk - the allocation bridge: libvramio_cuda.so (the libcuda.so.1 shim, shim.c
# and shim_entry.S), libvramio_bridge.so (the replacements, bridge_*.c) and the vramio-run
# launcher. Included by the top Makefile; built by 'make all'.
#
# The shim links nothing but libc and VB_REAL_DRIVER (bridge.h: "libcuda.so.1.real", the
# link to the real driver that vramio-run makes beside the shim's own link); a stub of that
# name gives the link its DT_NEEDED. It exports what its objects make global (the replaced
# names, cuGetProcAddress(_v2), vramio_cuda_shim_driver): the C is built hidden.
# The bridge links libgdrapi.so.2 (its pool) and finds it beside itself ($ORIGIN: the build
# tree) or one level up (installs put it in $(libdir)/vramio/, see packaging/install.mk); it
# never links libcuda (the driver is reached with dlopen, as in the library). Only the names
# in bridge/bridge.map are exported.

BRIDGE_LIB  := $(BUILD)/lib/libvramio_bridge.so
BRIDGE_SHIM := $(BUILD)/lib/libvramio_cuda.so
BRIDGE_RUN  := $(BUILD)/bin/vramio-run
BRIDGE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard bridge/bridge_*.c))
SHIM_OBJS   := $(BUILD)/obj/bridge/shim.o $(BUILD)/obj/bridge/shim_entry.o
SHIM_STUB   := $(BUILD)/obj/bridge/stub/libcuda.so.1.real

.PHONY: bridge
all: bridge
bridge: $(BRIDGE_LIB) $(BRIDGE_SHIM) $(BRIDGE_RUN)

$(BUILD)/obj/bridge/%.o: bridge/%.S
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BRIDGE_LIB): $(BRIDGE_OBJS) bridge/bridge.map bridge/bridge.mk $(LIB_REAL) $(BUILD)/lib/libgdrapi.so $(UTIL_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=bridge/bridge.map -Wl,-z,defs -Wl,-z,relro -Wl,-z,now \
	    $(ALL_LDFLAGS) -o $@ $(BRIDGE_OBJS) $(UTIL_LIB) -L$(BUILD)/lib -lgdrapi \
	    -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..' -ldl -lpthread

$(SHIM_STUB): bridge/bridge.mk
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(notdir $@) -o $@ -x c /dev/null

# -z nodelete: the entries and the answers of cuGetProcAddress live as long as the process.
$(BRIDGE_SHIM): $(SHIM_OBJS) $(SHIM_STUB) bridge/bridge.mk
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(notdir $@) -Wl,-z,defs -Wl,-z,nodelete -Wl,-z,relro -Wl,-z,now \
	    $(ALL_LDFLAGS) -o $@ $(SHIM_OBJS) -Wl,--no-as-needed $(SHIM_STUB) -ldl

# Where distributions put libraries (x86_64-linux-gnu): one of the places vramio-run looks.
OBJ_CFLAGS_bridge/vramio_run := -DVRAMIO_MULTIARCH='"$(shell $(CC) -print-multiarch 2>/dev/null)"'

$(BRIDGE_RUN): $(BUILD)/obj/bridge/vramio_run.o $(BUILD)/obj/bridge/run_dir.o $(UTIL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl
