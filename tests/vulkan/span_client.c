// SPDX-License-Identifier: MIT
/*
 * span_client.c - pins across several CUDA allocations mapped side by side in one reservation
 * (the vulkan backend's spans op and spanning pins, src/backends/vulkan_span.c), against the
 * stand-in CUDA driver and Vulkan loader of tests/fake/: run by test_vulkan_span.sh, one mode
 * per process, with the backend chosen by name. Linked with the static library, so that it can
 * ask what vramio_alloc's pool asks (core/pins.h, vr_pins_can_span); every pin goes through
 * the public API. The stand-ins' records (fake_vk_*, fake_vmm_live) say what was imported,
 * mapped and kept; /proc/self/maps what is mapped.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/pins.h"
#include "t.h"
#include "vramio.h"

#define MIB (1ull << 20)
#define CHUNK (2 * MIB)   /* the stand-in's granularity */

/* A setup step that fails ends the mode: nothing after it would mean anything. */
#define CU_MUST(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
        t_fail("setup", "line %d: %s failed: %d", __LINE__, #call, (int)r_); exit(1); } \
    } while (0)

/* The stand-ins' records. */
static int (*vk_live)(void), (*vk_imports)(void), (*vk_placed)(void), (*vk_mapped)(void);
static unsigned long long (*vk_import_bytes)(void);
static int (*vmm_live)(void);

static void setup(void)
{
    void *vk = dlopen("libvulkan.so.1", RTLD_NOW), *cu = dlopen("libcuda.so.1", RTLD_NOW);

#define SYM(lib, var, name) *(void **)&var = lib ? dlsym(lib, name) : NULL; \
    if (!var) { t_fail("setup", "%s: not the stand-in (tests/fake/)", name); exit(1); }
    SYM(vk, vk_live, "fake_vk_live") SYM(vk, vk_imports, "fake_vk_imports")
    SYM(vk, vk_placed, "fake_vk_placed") SYM(vk, vk_mapped, "fake_vk_mapped")
    SYM(vk, vk_import_bytes, "fake_vk_import_bytes") SYM(cu, vmm_live, "fake_vmm_live")
#undef SYM
    CU_MUST(cuInit(0));
    CUcontext c;
    CU_MUST(cuDevicePrimaryCtxRetain(&c, 0));
    CU_MUST(cuCtxSetCurrent(c));
}

/* ---- modes -------------------------------------------------------------------------- */

/* spans: what the pool asks, and what the check left behind (nothing). want: 1 or 0. */
static int mode_spans(int want, const char *name)
{
    int vmm0 = vmm_live(), got, again;
    char n2[128];

    got = vr_pins_can_span(0);
    t_check(got == want, name, "vr_pins_can_span(0) = %d, %d expected", got, want);
    again = vr_pins_can_span(0);
    snprintf(n2, sizeof(n2), "%s/same_again", name);
    t_check(again == got, n2, "%d, then %d", got, again);
    snprintf(n2, sizeof(n2), "%s/check_leaves_nothing", name);
    t_check(vk_live() == 0 && vk_mapped() == 0 && vmm_live() == vmm0, n2,
            "%d imports, %d mappings, %d VMM handles (%d before)", vk_live(), vk_mapped(),
            vmm_live(), vmm0);
    return 0;
}

static int mode_spans_yes(void) { return mode_spans(1, "spans/offered"); }
static int mode_spans_none(void) { return mode_spans(0, "spans/not_offered"); }
static int mode_spans_broken(void) { return mode_spans(0, "spans/broken_placed_maps"); }

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(void); } modes[] = {
        { "spans", mode_spans_yes }, { "spans_none", mode_spans_none },
        { "spans_broken", mode_spans_broken },
    };
    size_t i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s MODE\n", argv[0]);
        return 2;
    }
    setup();
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            return modes[i].fn() | t_status();
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
