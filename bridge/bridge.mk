# SPDX-License-Identifier: MIT
# bridge/bridge.mk - libvramio_bridge.so (LD_PRELOAD) and the vramio-run launcher. Included
# by the top Makefile; built by 'make all'.
#
# The bridge links libgdrapi.so.2 (its pool) and finds it beside itself ($ORIGIN: the build
# tree) or one level up (installs put it in $(libdir)/vramio/, see packaging/install.mk); it never
# links libcuda (the driver is reached with dlopen, as in the library). Only the names in
# bridge/bridge.map are exported.

BRIDGE_LIB  := $(BUILD)/lib/libvramio_bridge.so
BRIDGE_RUN  := $(BUILD)/bin/vramio-run
BRIDGE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,bridge/bridge_resolve.c bridge/bridge_mem.c \
                                             bridge/bridge_attr.c)

.PHONY: bridge
all: bridge
bridge: $(BRIDGE_LIB) $(BRIDGE_RUN)

$(BRIDGE_LIB): $(BRIDGE_OBJS) bridge/bridge.map bridge/bridge.mk $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--version-script=bridge/bridge.map -Wl,-z,defs -Wl,-z,relro -Wl,-z,now \
	    $(ALL_LDFLAGS) -o $@ $(BRIDGE_OBJS) -L$(BUILD)/lib -lgdrapi -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..' \
	    -ldl -lpthread

# Where distributions put libraries (x86_64-linux-gnu): one of the places vramio-run looks.
OBJ_CFLAGS_bridge/vramio_run := -DVRAMIO_MULTIARCH='"$(shell $(CC) -print-multiarch 2>/dev/null)"'

$(BRIDGE_RUN): $(BUILD)/obj/bridge/vramio_run.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^
