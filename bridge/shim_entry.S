/* SPDX-License-Identifier: MIT */
/*
 * shim_entry.S - the libcuda.so.1 shim's entry points for the replaced driver functions
 * (bridge_routes.h), on x86_64: each jumps through its slot (shim.c) to the replacement.
 *
 * Why assembly: UCX's memory hooks (UCM, default mode "bistro") patch the first bytes of the
 * function that dlsym returns for cuMemAlloc_v2 & co. with a jump to their hook, after
 * copying those bytes elsewhere to call the original; the copy can only relocate a few
 * instruction forms (push reg, mov %rsp,%rbp, sub $imm,%rsp, mov $imm32,%reg, ...), and
 * when one function cannot be patched UCM gives up every CUDA hook. A bare "jmp *slot" or
 * a compiler's prologue (endbr64, lea, test) is not among them. So each entry starts with
 * 17 bytes of such instructions (more than the 12 of bistro's far jump), undoes them, and
 * then jumps: the arguments reach the replacement untouched (%eax is no argument here).
 * Each entry has a second, hidden name that shim.c uses for cuGetProcAddress's answers.
 */
#include "bridge_routes.h"

#if defined(__x86_64__)
    .text
#define VB_ENTRY(exp, base, since, until, only, impl, ret, params, args)                          \
    .globl exp; .type exp, @function;                                                        \
    .globl vb_entry_##exp; .hidden vb_entry_##exp; .type vb_entry_##exp, @function;          \
    .p2align 4;                                                                              \
exp: ; vb_entry_##exp: ;                                                                     \
    push %rbp; mov %rsp, %rbp; push %rbx; push %r12; mov $0, %eax; mov $0, %eax;             \
    pop %r12; pop %rbx; pop %rbp; jmp *vb_slot_##exp(%rip);                                  \
    .size exp, .-exp; .size vb_entry_##exp, .-vb_entry_##exp;

VB_ROUTES(VB_ENTRY)
#endif

    .section .note.GNU-stack, "", %progbits
