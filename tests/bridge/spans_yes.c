// SPDX-License-Identifier: MIT
/*
 * spans_yes.c - built into a copy of libgdrapi.so.2 for the bridge's tests
 * ($(BUILD)/tests/bridge/spans/, tests/bridge/bridge.mk), linked with
 * -Wl,--wrap=vr_pins_can_span: the backends' answer to whether a pin may span several VMM
 * allocations (src/core/pins.h) is yes on every GPU, so that vramio_alloc's pool makes large
 * requests of chunks under vramio-run with the stand-in drivers, whatever the stand-in Vulkan
 * offers. What the bridge answers for such blocks (ranges, attributes, CUDA IPC) is tested
 * with it; the backends' own answer is theirs to test.
 */
int __wrap_vr_pins_can_span(int gpu);

int __wrap_vr_pins_can_span(int gpu)
{
    (void)gpu;
    return 1;
}
