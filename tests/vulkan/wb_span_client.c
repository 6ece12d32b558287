// SPDX-License-Identifier: MIT
/*
 * wb_span_client.c - pins across several CUDA allocations mapped side by side in one
 * reservation (the vulkan backend's spans op and spanning pins, src/backends/vulkan_span.c),
 * against the stand-in CUDA driver and Vulkan loader of tests/fake/: run by
 * test_vulkan_span.sh, one mode per process, with the backend chosen by name. Linked with
 * the static library, so that it can ask what vramio_alloc's pool asks (core/pins.h,
 * vr_pins_can_span); every pin goes through the public API. The stand-ins' records (fake_vk_*, fake_vmm_live) say what was imported,
 * mapped and kept; /proc/self/maps what is mapped.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* ---- memory: allocations side by side in one reservation ---------------------------- */

struct run {
    CUdeviceptr base;               /* of the reservation */
    size_t size;                    /* of the reservation */
    int n;
    CUmemGenericAllocationHandle h[8];
    size_t at[8], len[8];           /* each allocation's offset and size */
};

static void alloc_one(struct run *r, int i, size_t off, size_t len, int dev, unsigned types)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .requestedHandleTypes = types,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
    CUmemAccessDesc acc = { .location = prop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };

    CU_MUST(cuMemCreate(&r->h[i], len, &prop, 0));
    CU_MUST(cuMemMap(r->base + off, len, 0, r->h[i], 0));
    CU_MUST(cuMemSetAccess(r->base + off, len, &acc, 1));
    r->at[i] = off;
    r->len[i] = len;
}

/* n allocations of CHUNK * sizes[i] side by side from the reservation's start, all POSIX-fd
 * on device 0, but for allocation odd (-1: none), which gets types / dev instead; a gap of
 * gap bytes before allocation 1 when gap is not 0. */
static void run_make(struct run *r, int n, const int *sizes, int odd, unsigned odd_types,
                     int odd_dev, size_t gap)
{
    size_t off = 0;
    int i;

    memset(r, 0, sizeof(*r));
    for (i = 0; i < n; i++)
        r->size += sizes[i] * CHUNK;
    r->size += gap;
    CU_MUST(cuMemAddressReserve(&r->base, r->size, 0, 0, 0));
    for (i = 0; i < n; i++) {
        int odd_one = i == odd;

        if (i == 1)
            off += gap;
        alloc_one(r, i, off, sizes[i] * CHUNK, odd_one ? odd_dev : 0,
                  odd_one ? odd_types : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        off += sizes[i] * CHUNK;
    }
    r->n = n;
}

static void run_free(struct run *r)
{
    int i;

    for (i = 0; i < r->n; i++) {
        cuMemUnmap(r->base + r->at[i], r->len[i]);
        cuMemRelease(r->h[i]);
    }
    cuMemAddressFree(r->base, r->size);
    r->n = 0;
}

struct pin { gdr_mh_t mh; char *win, *map; size_t len; };  /* win: gdr_map's, map: at addr */

/* Pin [addr, addr + size) and map it: 0, or the errno of the pin (the map must work). */
static int pin_map(gdr_t g, CUdeviceptr addr, size_t size, struct pin *p)
{
    gdr_info_t info;
    int rc;

    memset(p, 0, sizeof(*p));
    rc = gdr_pin_buffer(g, (unsigned long)addr, size, 0, 0, &p->mh);
    if (rc)
        return rc;
    CU_MUST(gdr_get_info(g, p->mh, &info) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    CU_MUST(gdr_map(g, p->mh, (void **)&p->win, info.mapped_size) ? CUDA_ERROR_UNKNOWN
                                                                   : CUDA_SUCCESS);
    p->len = info.mapped_size;
    /* The mapping starts at the pinned range's first page, as gdr_get_info says. */
    p->map = p->win + (addr - info.va);
    return 0;
}

static void unpin(gdr_t g, struct pin *p)
{
    gdr_unmap(g, p->mh, p->win, p->len);
    gdr_unpin_buffer(g, p->mh);
}

/* Whether any line of /proc/self/maps overlaps [p, p + len). */
static int mapped_anywhere(const void *p, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo, hi, a = (unsigned long)(uintptr_t)p;
    char line[512];
    int hit = 0;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < a + len && a < hi)
            hit = 1;
    if (f)
        fclose(f);
    return hit;
}

/* Through the mapping at map (the GPU bytes from d on), n bytes written by the CPU are what
 * CUDA reads, and what CUDA writes is what the CPU reads. 1 when both hold, else 0 and why. */
static int both_ways(const struct pin *p, const char *map, CUdeviceptr d, size_t n, int seed,
                     char *why, size_t len)
{
    unsigned char *a = malloc(n), *b = malloc(n);
    int ok = a && b;

    if (ok) {
        t_pattern(a, n, seed);
        gdr_copy_to_mapping(p->mh, (void *)map, a, n);
        CU_MUST(cuMemcpyDtoH(b, d, n));
        if (memcmp(a, b, n) != 0) {
            snprintf(why, len, "a CPU write through the mapping is not what CUDA reads");
            ok = 0;
        }
    }
    if (ok) {
        t_pattern(a, n, seed + 1000);
        CU_MUST(cuMemcpyHtoD(d, a, n));
        CU_MUST(cuCtxSynchronize());
        gdr_copy_from_mapping(p->mh, b, map, n);
        if (memcmp(a, b, n) != 0) {
            snprintf(why, len, "what CUDA wrote is not what the mapping shows");
            ok = 0;
        }
    }
    free(a);
    free(b);
    return ok;
}

/* What the stand-ins hold, to compare before and after. */
struct held { int live, mapped, vmm, fds; };

static struct held held_now(void)
{
    return (struct held){ vk_live(), vk_mapped(), vmm_live(), t_count_fds() };
}

/* Nothing more held than at before: name's result. */
static void nothing_left(const struct held *before, const char *name)
{
    struct held now = held_now();

    t_check(now.live == before->live && now.mapped == before->mapped &&
            now.vmm == before->vmm && now.fds == before->fds, name,
            "imports %d (%d before), mappings %d (%d), VMM handles %d (%d), fds %d (%d)",
            now.live, before->live, now.mapped, before->mapped, now.vmm, before->vmm,
            now.fds, before->fds);
}

/* gdr_open, or the mode ends: nothing after it would mean anything. */
static gdr_t opened(const char *mode)
{
    gdr_t g = gdr_open();
    char name[64];

    if (!g) {
        snprintf(name, sizeof(name), "%s/open", mode);
        t_fail(name, "gdr_open: %s", vramio_last_error());
        exit(1);
    }
    return g;
}

/* What the stand-in Vulkan has imported and placed so far. */
struct made { int imports, placed; unsigned long long bytes; };

static struct made made_now(void)
{
    return (struct made){ vk_imports(), vk_placed(), vk_import_bytes() };
}

/* Since m: n imports of bytes in all, and placed placed maps: name's result. */
static void made_since(const struct made *m, int n, unsigned long long bytes, int placed,
                       const char *name)
{
    struct made now = made_now();

    t_check(now.imports - m->imports == n && now.bytes - m->bytes == bytes &&
            now.placed - m->placed == placed, name,
            "%d imports of %llu bytes, %d placed maps (%d of %llu bytes, %d expected)",
            now.imports - m->imports, now.bytes - m->bytes, now.placed - m->placed, n, bytes,
            placed);
}

/* The end of a mode: its run freed, its gdr_t closed. */
static int finish(gdr_t g, struct run *r)
{
    run_free(r);
    gdr_close(g);
    return 0;
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

/* Three allocations of 2, 4 and 2 MiB side by side. */
static const int three[] = { 1, 2, 1 };

/* span3: a pin from inside the first allocation to inside the third, and one of the whole
 * run: each imports the three once, maps them as one window, the data crosses both seams
 * both ways, and unpin leaves nothing. */
static int mode_span3(void)
{
    gdr_t g = opened("span3");
    struct held before;
    struct run r;
    struct pin p;
    char why[256] = "";
    struct made m;
    int rc;
    /* From 1 MiB + 100 into the first to 512 KiB before the end of the third. */
    CUdeviceptr a;
    size_t n;

    int vmm0 = vmm_live();

    run_make(&r, 3, three, -1, 0, 0, 0);
    a = r.base + MIB + 100;
    n = r.size - MIB - 100 - MIB / 2;
    before = held_now();
    m = made_now();
    rc = pin_map(g, a, n, &p);
    if (!t_check(rc == 0, "span3/pin_across_both_seams", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    made_since(&m, 3, r.size, 3, "span3/imports_each_allocation_once");
    t_check(both_ways(&p, p.map, a, n, 3, why, sizeof(why)), "span3/data_across_both_seams",
            "%s", why);
    /* Right at each seam, a few bytes each way (the copies above cover them too). */
    t_check(both_ways(&p, p.map + (2 * MIB - (MIB + 100)) - 8, r.base + 2 * MIB - 8, 16, 5,
                      why, sizeof(why)) &&
            both_ways(&p, p.map + (6 * MIB - (MIB + 100)) - 8, r.base + 6 * MIB - 8, 16, 6,
                      why, sizeof(why)), "span3/bytes_at_each_seam", "%s", why);
    {
        char *win = p.win;
        size_t len = p.len;
        int flag = -1;

        gdr_get_callback_flag(g, p.mh, &flag);
        t_check(flag == 0, "span3/callback_flag_0_while_allocated", "flag %d", flag);
        unpin(g, &p);
        nothing_left(&before, "span3/unpin_leaves_nothing");
        t_check(!mapped_anywhere(win, len), "span3/window_unmapped",
                "/proc/self/maps still has a mapping in [%p, +%zu)", (void *)win, len);
    }
    /* The whole run, from its first byte to its last. */
    rc = pin_map(g, r.base, r.size, &p);
    if (t_check(rc == 0, "span3/pin_whole_run", "rc %d: %s", rc, vramio_last_error())) {
        t_check(both_ways(&p, p.map, r.base, r.size, 7, why, sizeof(why)),
                "span3/whole_run_data", "%s", why);
        unpin(g, &p);
        nothing_left(&before, "span3/whole_run_unpin_leaves_nothing");
    }
    /* The allocations live on while the run is mapped: their handles go only now, with no
     * reference of a pin left on them. */
    run_free(&r);
    t_check(vmm_live() == vmm0, "span3/no_handle_reference_left", "%d VMM handles, %d before",
            vmm_live(), vmm0);
    t_check(gdr_close(g) == 0, "span3/close", "%s", vramio_last_error());
    return 0;
}

/* inside: a pin inside one allocation of the run imports that one alone, as before. */
static int mode_inside(void)
{
    gdr_t g = opened("inside");
    struct held before;
    struct run r;
    struct pin p;
    char why[256] = "";
    struct made m;
    int rc;

    run_make(&r, 3, three, -1, 0, 0, 0);
    before = held_now();
    m = made_now();
    rc = pin_map(g, r.base + r.at[2] + 4096, MIB, &p);
    if (!t_check(rc == 0, "inside/pin_in_third", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    made_since(&m, 1, r.len[2], 0, "inside/imports_that_allocation_alone");
    t_check(both_ways(&p, p.map, r.base + r.at[2] + 4096, MIB, 9, why, sizeof(why)),
            "inside/data", "%s", why);
    unpin(g, &p);
    nothing_left(&before, "inside/unpin_leaves_nothing");
    return finish(g, &r);
}

/* one_moved: only the last allocation of a span is unmapped by CUDA: the callback flag is 1
 * already (the pin's memory is not all where it was). */
static int mode_one_moved(void)
{
    gdr_t g = opened("one_moved");
    struct pin p;
    struct run r;
    int rc, flag = -1;

    run_make(&r, 3, three, -1, 0, 0, 0);
    rc = pin_map(g, r.base, r.size, &p);
    if (!t_check(rc == 0, "one_moved/pin", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    CU_MUST(cuMemUnmap(r.base + r.at[2], r.len[2]));
    gdr_get_callback_flag(g, p.mh, &flag);
    t_check(flag == 1, "one_moved/callback_flag_1_when_the_last_is_unmapped", "flag %d", flag);
    unpin(g, &p);
    /* run_free unmaps it again: map it back first. */
    CU_MUST(cuMemMap(r.base + r.at[2], r.len[2], 0, r.h[2], 0));
    return finish(g, &r);
}

/* mixed: a pin inside the second allocation (the import cache's whole mapping of it) and a
 * spanning pin over all three (an import of its own) live together: what one writes, the
 * other shows, and each goes on its own. */
static int mode_mixed(void)
{
    gdr_t g = opened("mixed");
    struct held before;
    struct pin one, span;
    struct run r;
    char a[4096], b[4096];
    int rc;

    run_make(&r, 3, three, -1, 0, 0, 0);
    before = held_now();
    rc = pin_map(g, r.base + r.at[1], r.len[1], &one);
    if (!t_check(rc == 0, "mixed/pin_inside", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    rc = pin_map(g, r.base, r.size, &span);
    if (!t_check(rc == 0, "mixed/pin_span_over_it", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    t_pattern(a, sizeof(a), 31);
    gdr_copy_to_mapping(span.mh, span.map + r.at[1] + 8192, a, sizeof(a));
    gdr_copy_from_mapping(one.mh, b, one.map + 8192, sizeof(b));
    t_check(memcmp(a, b, sizeof(a)) == 0, "mixed/span_write_seen_by_single_pin",
            "the bytes differ");
    unpin(g, &span);
    gdr_copy_from_mapping(one.mh, b, one.map + 8192, sizeof(b));
    t_check(memcmp(a, b, sizeof(a)) == 0, "mixed/single_pin_outlives_span", "the bytes differ");
    unpin(g, &one);
    nothing_left(&before, "mixed/nothing_left");
    return finish(g, &r);
}

/* A pin of [a, a + n) is refused with want (or works: 0) and a reason that holds reason;
 * nothing is left of the try, and it made imports imports (-1: not counted). */
static void refused_after(gdr_t g, CUdeviceptr a, size_t n, int want, const char *reason,
                          int imports_made, const char *name)
{
    struct held before = held_now();
    int imports = vk_imports(), rc;
    struct pin p;
    char n2[128];

    rc = pin_map(g, a, n, &p);
    t_check(rc == want && strstr(vramio_last_error(), reason), name,
            "rc %d (%d expected), reason '%s' (should hold '%s')", rc, want,
            vramio_last_error(), reason);
    if (!rc)
        unpin(g, &p);
    snprintf(n2, sizeof(n2), "%s/nothing_left", name);
    nothing_left(&before, n2);
    snprintf(n2, sizeof(n2), "%s/imports_made", name);
    if (imports_made >= 0)
        t_check(vk_imports() - imports == imports_made, n2, "%d imports made, %d expected",
                vk_imports() - imports, imports_made);
}

/* The same, for a refusal that comes before any import. */
static void refused(gdr_t g, CUdeviceptr a, size_t n, int want, const char *reason,
                    const char *name)
{
    refused_after(g, a, n, want, reason, want ? 0 : -1, name);
}

static int mode_neighbours(void)
{
    static const int two[] = { 1, 1 };
    gdr_t g = opened("neighbours");
    struct run r;
    void *host;

    /* A gap of one chunk (reserved, nothing mapped) between the two. */
    run_make(&r, 2, two, -1, 0, 0, CHUNK);
    refused(g, r.base + MIB, r.size - 2 * MIB, EINVAL, "right after it, is not CUDA memory",
            "neighbours/gap_refused");
    run_free(&r);
    /* The second made without the POSIX-fd handle type. */
    run_make(&r, 2, two, 1, 0, 0, 0);
    refused(g, r.base + MIB, r.size - 2 * MIB, ENOTSUP,
            "created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR",
            "neighbours/no_posix_fd_refused");
    run_free(&r);
    /* The second on another GPU. */
    run_make(&r, 2, two, 1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1, 0);
    refused(g, r.base + MIB, r.size - 2 * MIB, EINVAL, "is memory of CUDA device 1",
            "neighbours/other_device_refused");
    run_free(&r);
    /* Plain host memory right after the allocation, in the rest of its reservation. */
    run_make(&r, 1, two, -1, 0, 0, CHUNK);
    host = mmap((void *)(uintptr_t)(r.base + CHUNK), CHUNK, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CU_MUST(host == MAP_FAILED ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS);
    refused(g, r.base + MIB, CHUNK, EINVAL, "right after it, is not CUDA memory",
            "neighbours/plain_memory_after_refused");
    return finish(g, &r);
}

/* no_placed (FAKE_VK_NO_PLACED=1): spans 0, a spanning pin refused with the reason, a pin
 * inside one allocation as before. */
static int mode_no_placed(void)
{
    gdr_t g = opened("no_placed");
    struct run r;
    struct pin p;
    char why[256] = "";
    int rc;

    t_check(vr_pins_can_span(0) == 0, "no_placed/spans_0", "spans says 1");
    run_make(&r, 3, three, -1, 0, 0, 0);
    refused(g, r.base + MIB, r.size - 2 * MIB, ENOTSUP, "does not offer placed maps",
            "no_placed/spanning_pin_refused");
    rc = pin_map(g, r.base + r.at[1], r.len[1], &p);
    if (t_check(rc == 0, "no_placed/single_pin_works", "rc %d: %s", rc, vramio_last_error())) {
        t_check(both_ways(&p, p.map, r.base + r.at[1], r.len[1], 11, why, sizeof(why)),
                "no_placed/single_pin_data", "%s", why);
        unpin(g, &p);
    }
    return finish(g, &r);
}

/* free_while_pinned: CUDA frees the run under a spanning pin: the callback flag says so, the
 * mapping still shows the pinned pages, and unpin then lets the last of them go. */
static int mode_free_while_pinned(void)
{
    gdr_t g = opened("free_while_pinned");
    struct held before;
    struct run r;
    struct pin p;
    unsigned char *a, *b;
    int rc, flag = -1, vmm0 = vmm_live();

    before = held_now();
    run_make(&r, 3, three, -1, 0, 0, 0);
    rc = pin_map(g, r.base, r.size, &p);
    if (!t_check(rc == 0, "free_while_pinned/pin", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    a = malloc(r.size);
    b = malloc(r.size);
    t_pattern(a, r.size, 21);
    gdr_copy_to_mapping(p.mh, p.map, a, r.size);
    run_free(&r);
    gdr_get_callback_flag(g, p.mh, &flag);
    t_check(flag == 1, "free_while_pinned/callback_flag_1", "flag %d", flag);
    t_check(vmm_live() == vmm0 + 3, "free_while_pinned/pin_holds_the_allocations",
            "%d VMM handles live, %d expected", vmm_live(), vmm0 + 3);
    gdr_copy_from_mapping(p.mh, b, p.map, r.size);
    t_check(memcmp(a, b, r.size) == 0, "free_while_pinned/mapping_still_shows_the_pages",
            "the bytes differ");
    unpin(g, &p);
    before.vmm = vmm0;
    nothing_left(&before, "free_while_pinned/unpin_lets_them_go");
    free(a);
    free(b);
    gdr_close(g);
    return 0;
}

/* Both threads pin the same range; each checks the data of its own page of it (across the
 * first seam), so that they do not race on the bytes. */
struct racer { gdr_t g; CUdeviceptr a; size_t n, off; int rounds, bad; char why[256]; };

static void *race(void *arg)
{
    struct racer *x = arg;
    struct pin p;
    int i, rc;

    for (i = 0; i < x->rounds && !x->bad; i++) {
        rc = pin_map(x->g, x->a, x->n, &p);
        if (rc) {
            x->bad = 1;
            snprintf(x->why, sizeof(x->why), "round %d: rc %d: %s", i, rc, vramio_last_error());
            break;
        }
        if (!both_ways(&p, p.map + x->off, x->a + x->off, 4096, x->off, x->why,
                       sizeof(x->why)) && !x->bad)
            x->bad = 2;
        unpin(x->g, &p);
    }
    return NULL;
}

/* threads: two threads pin, map and unpin the same span at once, many times. */
static int mode_threads(void)
{
    gdr_t g = opened("threads");
    struct racer x[2];
    pthread_t th[2];
    struct held before;
    struct run r;
    int i;

    run_make(&r, 3, three, -1, 0, 0, 0);
    before = held_now();
    for (i = 0; i < 2; i++) {
        x[i] = (struct racer){ .g = g, .a = r.base + MIB, .n = r.size - 2 * MIB, .rounds = 50,
                               .off = MIB - 2048 + i * 4096 };
        pthread_create(&th[i], NULL, race, &x[i]);
    }
    for (i = 0; i < 2; i++)
        if (t_join_within(th[i], 30000, NULL)) {
            t_fail("threads/joined", "thread %d hung", i);
            return 1;
        }
    t_check(!x[0].bad && !x[1].bad, "threads/two_threads_pin_the_same_span", "%s%s",
            x[0].why, x[1].why);
    nothing_left(&before, "threads/nothing_left");
    run_free(&r);
    t_check(vmm_live() == before.vmm - 3, "threads/no_handle_reference_left",
            "%d VMM handles, %d expected", vmm_live(), before.vmm - 3);
    gdr_close(g);
    return 0;
}

/* fork: a forked child does not reach the span's window (MADV_DONTFORK). */
static int mode_fork(void)
{
    gdr_t g = opened("fork");
    struct run r;
    struct pin p;
    int status, rc;
    pid_t pid;

    run_make(&r, 3, three, -1, 0, 0, 0);
    rc = pin_map(g, r.base, r.size, &p);
    if (!t_check(rc == 0, "fork/pin", "rc %d: %s", rc, vramio_last_error()))
        return 1;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        alarm(30);
        /* Each allocation's part of the window, not only the first. */
        _exit(t_touch_faults(p.map) && t_touch_faults(p.map + r.at[1]) &&
              t_touch_faults(p.map + r.at[2]) ? 0 : 3);
    }
    if (t_wait_bounded(pid, &status, 60) != 0)
        t_fail("fork/child_faults_on_the_window", "the child hung");
    else
        t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork/child_faults_on_the_window",
                "child status %#x (3: it read the parent's window)", status);
    unpin(g, &p);
    return finish(g, &r);
}

/* A pin from the middle of the first to the middle of the last of three allocations of
 * sizes (chunks) refused with want and reason after imports imports (-1: not counted). */
static int run3_refused(const int *sizes, int want, const char *reason, int imports,
                        const char *name)
{
    gdr_t g = opened(name);
    struct run r;

    run_make(&r, 3, sizes, -1, 0, 0, 0);
    refused_after(g, r.base + MIB, r.size - 2 * MIB, want, reason, imports, name);
    return finish(g, &r);
}

/* oom (FAKE_VK_BAR_BYTES below the run's size): the import that BAR1 does not hold fails
 * mid-way; the imports made before it are undone, with the reason and its note. */
static int mode_oom(void)
{
    int rc = run3_refused(three, ENOMEM, "VK_ERROR_OUT_OF_DEVICE_MEMORY", 2,
                          "oom/third_import_fails");

    t_check(strstr(vramio_last_error(), "spans 3 allocations") &&
            strstr(vramio_last_error(), "(a pin imports all of each allocation it touches: "
                   "6291456 of 8388608 bytes were asked for)"),
            "oom/reason_says_whole_allocations", "'%s'", vramio_last_error());
    return rc;
}

/* place_fail (FAKE_VK_PLACED_FAIL_AT: the third placed map of the pin fails): undone too. */
static int mode_place_fail(void)
{
    return run3_refused(three, ENOMEM, "the placed map of the CUDA allocation", 3,
                        "place_fail/third_placed_map_fails");
}

/* bar_precheck (FAKE_VK_BAR_MB=32768): a span larger than the heap is refused before any
 * import, in the wording of an import that BAR1 does not hold. */
static int mode_bar_precheck(void)
{
    static const int big[] = { 6144, 6144, 6144 };  /* 3 x 12 GiB, sparse */

    return run3_refused(big, ENOMEM, "larger than the host-visible heap (BAR1", 0,
                        "bar_precheck/refused_before_import");
}

/* too_many: one allocation more than a pin may touch. */
static int mode_too_many(void)
{
    enum { N = 1025 };
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    static CUmemGenericAllocationHandle h[N];
    gdr_t g = opened("too_many");
    CUdeviceptr base;
    int i;

    CU_MUST(cuMemAddressReserve(&base, N * CHUNK, 0, 0, 0));
    for (i = 0; i < N; i++) {
        CU_MUST(cuMemCreate(&h[i], CHUNK, &prop, 0));
        CU_MUST(cuMemMap(base + i * CHUNK, CHUNK, 0, h[i], 0));
    }
    refused(g, base, N * CHUNK, ENOTSUP, "more than 1024 CUDA allocations",
            "too_many/1025_allocations_refused");
    refused(g, base, (N - 1) * CHUNK, 0, "", "too_many/1024_allocations_pinned");
    for (i = 0; i < N; i++) {
        cuMemUnmap(base + i * CHUNK, CHUNK);
        cuMemRelease(h[i]);
    }
    cuMemAddressFree(base, N * CHUNK);
    gdr_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(void); } modes[] = {
        { "spans", mode_spans_yes }, { "spans_none", mode_spans_none },
        { "spans_broken", mode_spans_broken }, { "span3", mode_span3 },
        { "inside", mode_inside }, { "neighbours", mode_neighbours },
        { "no_placed", mode_no_placed }, { "free_while_pinned", mode_free_while_pinned },
        { "threads", mode_threads }, { "fork", mode_fork }, { "oom", mode_oom },
        { "place_fail", mode_place_fail }, { "bar_precheck", mode_bar_precheck },
        { "too_many", mode_too_many }, { "mixed", mode_mixed },
        { "one_moved", mode_one_moved },
    };
    size_t i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s MODE\n", argv[0]);
        return 2;
    }
    setup();
    /* The check of the spans op, once per process, before the modes count imports (the spans
     * modes ask themselves). */
    if (strncmp(argv[1], "spans", 5) != 0)
        vr_pins_can_span(0);
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            return modes[i].fn() | t_status();
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
