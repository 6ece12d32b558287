// SPDX-License-Identifier: MIT
/*
 * ucm_like.c - what UCX's memory hooks (UCM) do to the CUDA driver's allocation functions,
 * done by a program of our own against the stand-in driver under vramio-run: the hooks must
 * install, fire on every allocation and free, and the memory must still come from the pool.
 *   bistro  find cuMemAlloc_v2 and cuMemFree_v2 by name (dlsym, as UCM does), check that
 *           their first bytes are instructions that can be moved (the forms UCM's relocator
 *           knows: on x86_64 push reg, mov %rsp,%rbp, sub $imm,%rsp, mov $imm32,%reg; on
 *           AArch64 those of UCX's bistro_aarch64.c, with its handling of adrp and of the
 *           register for the jump back), copy them into a trampoline that jumps back, and
 *           overwrite them with an absolute jump to a hook that counts and calls the
 *           trampoline;
 *   reloc   rewrite every loaded object's GOT entries for those names (dl_iterate_phdr,
 *           DT_JMPREL and DT_RELA) with the hook; the original is what dlsym finds.
 * Then it allocates and frees through each path a program has: a direct call (linked with
 * libcuda), dlsym on the driver's handle, and cuGetProcAddress (the CUDA runtime's way).
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda.h>

#include "t.h"
#include "vramio.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static alloc_fn orig_alloc;
static free_fn orig_free;
static int n_alloc, n_free;

static CUresult hook_alloc(CUdeviceptr *d, size_t s)
{
    n_alloc++;
    return orig_alloc(d, s);
}

static CUresult hook_free(CUdeviceptr d)
{
    n_free++;
    return orig_free(d);
}

static int set_prot(void *addr, size_t len, int prot)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr & ~(pg - 1);

    return mprotect((void *)a, ((uintptr_t)addr + len - a + pg - 1) & ~(pg - 1), prot);
}

#if defined(__x86_64__)
#define PATCH_LEN 13 /* movabs $hook,%r11 (10 bytes); jmp *%r11 (3) */

/* Length of one movable instruction at p, or 0. */
static size_t insn_len(const uint8_t *p)
{
    uint8_t rex = 0;

    if ((p[0] & 0xf0) == 0x40)
        rex = *p++;
    if ((rex == 0 || rex == 0x41) && (p[0] & 0xf8) == 0x50)
        return (rex ? 1 : 0) + 1;                            /* push reg */
    if (rex == 0x48 && p[0] == 0x89 && p[1] == 0xe5)
        return 3;                                            /* mov %rsp,%rbp */
    if (rex == 0x48 && p[0] == 0x83 && p[1] == 0xec)
        return 4;                                            /* sub $imm8,%rsp */
    if (rex == 0x48 && p[0] == 0x81 && p[1] == 0xec)
        return 7;                                            /* sub $imm32,%rsp */
    if (rex == 0 && (p[0] & 0xf8) == 0xb8)
        return 5;                                            /* mov $imm32,%reg */
    return 0;
}

static void put_jump(uint8_t *at, const void *to)
{
    uint64_t a = (uint64_t)(uintptr_t)to;

    at[0] = 0x49;
    at[1] = 0xbb;
    memcpy(at + 2, &a, 8);
    at[10] = 0x41;
    at[11] = 0xff;
    at[12] = 0xe3;
}

/* Patch fn to jump to hook; *orig gets a trampoline that runs the original. */
static int bistro(const char *name, void *fn, void *hook, void **orig)
{
    uint8_t *f = fn, *tramp;
    size_t n = 0, l;

    while (n < PATCH_LEN) {
        l = insn_len(f + n);
        if (!l) {
            t_fail(name, "byte %#x at +%zu of the function dlsym gives cannot be relocated",
                   f[n], n);
            return 0;
        }
        n += l;
    }
    tramp = mmap(NULL, 64, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tramp == MAP_FAILED || set_prot(f, PATCH_LEN, PROT_READ | PROT_WRITE | PROT_EXEC)) {
        t_fail(name, "cannot map a trampoline or unprotect the code");
        return 0;
    }
    memcpy(tramp, f, n);
    put_jump(tramp + n, f + n);
    *orig = tramp;
    put_jump(f, hook);
    set_prot(f, PATCH_LEN, PROT_READ | PROT_EXEC);
    t_ok(name);
    return 1;
}
#elif defined(__aarch64__)
/* UCX's aarch64 bistro (src/ucm/bistro/bistro_aarch64.c, UCX 1.20 and later) overwrites the
 * first 16 bytes with "ldr x15, 8; br x15; .quad hook" and moves the instructions they held
 * into a trampoline, which then jumps back through a register of x9-x15 that none of them
 * wrote. It moves these forms only (A64 encodings), refusing the function otherwise. */
#define PATCH_LEN 16
#define X9_X15 0xfe00u

struct moved { uint32_t code[4]; int n; };

/* One instruction at pc as UCX moves it (into m), the registers it writes added to *used:
 * 0 when UCX refuses it, with why. */
static int move_insn(const uint32_t *pc, struct moved *m, uint32_t *used, const char **why)
{
    uint32_t i = *pc, rd = i & 31, rn = (i >> 5) & 31;
    uint64_t imm, v;

    m->n = 1;
    m->code[0] = i;
    switch (i & 0xffc00000) {
    case 0xa8800000: /* stp Xt1, Xt2, [Xn], #imm (post-index) */
    case 0xa9800000: /* stp Xt1, Xt2, [Xn, #imm]! (pre-index) */
    case 0xa9000000: /* stp Xt1, Xt2, [Xn, #imm] */
        *used |= 1u << rn;
        return 1;
    }
    if ((i & 0x7fc0001f) == 0x6b00001f) /* cmp (shifted or extended register) */
        return 1;
    if ((i & 0x7f800000) == 0x72800000 || /* movk */
        (i & 0x7f800000) == 0x52800000 || /* movz */
        (i & 0x7fe0ffe0) == 0x2a0003e0 || /* mov Rd, Rm (orr with the zero register) */
        (i & 0x7ffffc00) == 0x11000000 || /* mov to or from sp (add #0) */
        (i & 0xbfe00400) == 0xb8400400 || /* ldr Rt, [Xn, #imm]! or [Xn], #imm */
        (i & 0xbfc00000) == 0xb9400000) { /* ldr Rt, [Xn, #imm] */
        *used |= 1u << rd;
        return 1;
    }
    if ((i & 0x9f000000) == 0x90000000) { /* adrp: becomes movz/movk of the address */
        /* UCX adds the page offset to the instruction's own address, not to its page: the
         * moved copy is right only for an adrp at the start of a page. */
        if ((uintptr_t)pc & 0xfff) {
            *why = "an adrp that UCX would move to a wrong address (not at a page start)";
            return 0;
        }
        imm = ((uint64_t)((i >> 5) & 0x7ffff) << 2 | ((i >> 29) & 3)) << 12;
        v = (uint64_t)(uintptr_t)pc + (uint64_t)((int64_t)(imm << 31) >> 31);
        m->code[0] = 0xd2e00000 | (uint32_t)((v >> 48) & 0xffff) << 5 | rd;
        m->code[1] = 0xf2c00000 | (uint32_t)((v >> 32) & 0xffff) << 5 | rd;
        m->code[2] = 0xf2a00000 | (uint32_t)((v >> 16) & 0xffff) << 5 | rd;
        m->code[3] = 0xf2800000 | (uint32_t)(v & 0xffff) << 5 | rd;
        m->n = 4;
        *used |= 1u << rd;
        return 1;
    }
    *why = "an instruction form that UCX does not move";
    return 0;
}

/* ldr xR, 8; br xR; .quad to */
static uint32_t *put_jump(uint32_t *at, unsigned r, const void *to)
{
    uint64_t a = (uint64_t)(uintptr_t)to;

    at[0] = 0x58000040 | r;
    at[1] = 0xd61f0000 | r << 5;
    memcpy(at + 2, &a, 8);
    return at + 4;
}

static int bistro(const char *name, void *fn, void *hook, void **orig)
{
    uint32_t *f = fn, *tramp, *o, used = 0, free_regs;
    const char *why = NULL;
    struct moved m;
    size_t n;
    int r;

    tramp = mmap(NULL, 256, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
    if (tramp == MAP_FAILED) {
        t_fail(name, "cannot map a trampoline");
        return 0;
    }
    for (n = 0, o = tramp; n < PATCH_LEN / 4; n++) {
        if (!move_insn(f + n, &m, &used, &why)) {
            t_fail(name, "instruction %#010x at +%zu of the function dlsym gives: %s", f[n],
                   4 * n, why);
            return 0;
        }
        memcpy(o, m.code, 4 * (size_t)m.n);
        o += m.n;
    }
    free_regs = X9_X15 & ~used;
    if (!free_regs) {
        t_fail(name, "no register of x9-x15 left for the jump back");
        return 0;
    }
    for (r = 9; !(free_regs & (1u << r)); r++)
        ;
    o = put_jump(o, (unsigned)r, f + PATCH_LEN / 4);
    __builtin___clear_cache((char *)tramp, (char *)o);
    if (set_prot(f, PATCH_LEN, PROT_READ | PROT_WRITE | PROT_EXEC)) {
        t_fail(name, "cannot unprotect the code");
        return 0;
    }
    put_jump(f, 15, hook);
    __builtin___clear_cache((char *)f, (char *)(f + PATCH_LEN / 4));
    set_prot(f, PATCH_LEN, PROT_READ | PROT_EXEC);
    *orig = tramp;
    t_ok(name);
    return 1;
}
#endif

/* reloc: every GOT slot of every object bound to name now holds hook. */
struct reloc_job { const char *name; void *hook; int patched; };

static void patch_table(struct dl_phdr_info *info, const ElfW(Rela) *r, size_t size,
                        const ElfW(Sym) *sym, const char *str, struct reloc_job *job)
{
    size_t i;

    for (i = 0; i < size / sizeof(*r); i++) {
        void **slot = (void **)(info->dlpi_addr + r[i].r_offset);

        if (strcmp(str + sym[ELF64_R_SYM(r[i].r_info)].st_name, job->name))
            continue;
        if (set_prot(slot, sizeof(*slot), PROT_READ | PROT_WRITE))
            continue;
        *slot = job->hook;
        job->patched++;
    }
}

static int reloc_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    size_t njmp = 0, nrela = 0;
    const ElfW(Dyn) *d = NULL;
    int i;

    (void)size;
    for (i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; d && d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)d->d_un.d_ptr; break;
        case DT_PLTRELSZ: njmp = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)d->d_un.d_ptr; break;
        case DT_RELASZ: nrela = d->d_un.d_val; break;
        case DT_SYMTAB: sym = (const ElfW(Sym) *)d->d_un.d_ptr; break;
        case DT_STRTAB: str = (const char *)d->d_un.d_ptr; break;
        }
    }
    if (!sym || !str)
        return 0;
    /* glibc rebases these pointers in place; the vDSO's it leaves as they are. */
    if ((uintptr_t)sym < info->dlpi_addr) {
        sym = (const ElfW(Sym) *)((uintptr_t)sym + info->dlpi_addr);
        str += info->dlpi_addr;
        jmprel = jmprel ? (const ElfW(Rela) *)((uintptr_t)jmprel + info->dlpi_addr) : NULL;
        rela = rela ? (const ElfW(Rela) *)((uintptr_t)rela + info->dlpi_addr) : NULL;
    }
    if (jmprel)
        patch_table(info, jmprel, njmp, sym, str, arg);
    if (rela)
        patch_table(info, rela, nrela, sym, str, arg);
    return 0;
}

static int reloc(const char *name, void *hook, void **orig)
{
    struct reloc_job job = { name, hook, 0 };
    char tname[80];

    *orig = dlsym(RTLD_DEFAULT, name);
    dl_iterate_phdr(reloc_one, &job);
    snprintf(tname, sizeof(tname), "ucm/reloc_%s_patched", name);
    return t_check(*orig && job.patched > 0, tname, "orig %p, %d slots", *orig, job.patched);
}

static int from_pool(CUdeviceptr d)
{
    unsigned long long base = 0;

    return vramio_alloc_range(d, &base, NULL) == 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "bistro";
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    CUdriverProcAddressQueryResult st;
    alloc_fn by_dlsym, by_gpa = NULL;
    free_fn free_gpa = NULL;
    CUdeviceptr d[3] = { 0, 0, 0 };
    int pooled = 0, ok, i;
    char name[80];

    if (!gpa) {
        t_fail("ucm/driver_loads", "no cuGetProcAddress_v2");
        return t_status();
    }
    if (!strcmp(mode, "reloc")) {
        ok = reloc("cuMemAlloc_v2", (void *)hook_alloc, (void **)&orig_alloc) &
             reloc("cuMemFree_v2", (void *)hook_free, (void **)&orig_free);
    } else {
#if defined(__x86_64__) || defined(__aarch64__)
        ok = bistro("ucm/bistro_cuMemAlloc_v2_patched", dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"),
                    (void *)hook_alloc, (void **)&orig_alloc) &
             bistro("ucm/bistro_cuMemFree_v2_patched", dlsym(RTLD_DEFAULT, "cuMemFree_v2"),
                    (void *)hook_free, (void **)&orig_free);
#else
        /* POWER: UCX's bistro refuses every patch that must call the original (the CUDA
         * hooks' kind): UCX hooks the driver by reloc alone there. */
        t_skip("ucm/bistro", "UCX's bistro hooks no CUDA function on this architecture");
        return t_status();
#endif
    }
    if (!ok)
        return t_status();
    by_dlsym = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    gpa("cuMemAlloc", (void **)&by_gpa, 13000, 0, &st);
    gpa("cuMemFree", (void **)&free_gpa, 13000, 0, &st);
    if (cuMemAlloc_v2(&d[0], 1000) == CUDA_SUCCESS)
        pooled += from_pool(d[0]);
    if (by_dlsym && by_dlsym(&d[1], 2000) == CUDA_SUCCESS)
        pooled += from_pool(d[1]);
    if (by_gpa && by_gpa(&d[2], 3000) == CUDA_SUCCESS)
        pooled += from_pool(d[2]);
    snprintf(name, sizeof(name), "ucm/%s_allocations_from_pool", mode);
    t_check(pooled == 3, name, "%d of 3", pooled);
    /* The GOT holds what the program calls directly; dlsym and cuGetProcAddress answers are
     * the entry itself, which only bistro patches. */
    snprintf(name, sizeof(name), "ucm/%s_alloc_hook_fired", mode);
    t_check(n_alloc == (strcmp(mode, "reloc") ? 3 : 1), name, "%d calls", n_alloc);
    cuMemFree_v2(d[0]);
    for (i = 1; i < 3; i++)
        if (free_gpa && d[i])
            free_gpa(d[i]);
    snprintf(name, sizeof(name), "ucm/%s_free_hook_fired", mode);
    t_check(n_free == (strcmp(mode, "reloc") ? 3 : 1), name, "%d calls", n_free);
    return t_status();
}
