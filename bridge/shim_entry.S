/* SPDX-License-Identifier: MIT */
/*
 * shim_entry.S - the libcuda.so.1 shim's entry points for the replaced driver functions
 * (bridge_routes.h), on x86_64 and AArch64: each jumps through its slot (shim.c) to the
 * replacement.
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
 *
 * Each entry has unwind information (.cfi_*, in .eh_frame; no byte of the code changes): a
 * profiler's sample, a debugger or a crash handler that stops inside an entry finds its
 * callers (without it backtrace() ends at the entry). On x86_64 the rules follow each push
 * and pop: the frame is kept on %rsp throughout (the mov to %rbp makes no frame, the pop
 * undoes it), so the canonical frame address is %rsp plus what is pushed, and the return
 * address stays where the caller's call put it.
 */
#include "bridge_routes.h"

#if defined(__x86_64__)
    .text
#define VB_ENTRY(exp, base, since, until, only, impl, ret, params, args)                          \
    .globl exp; .type exp, @function;                                                        \
    .globl vb_entry_##exp; .hidden vb_entry_##exp; .type vb_entry_##exp, @function;          \
    .p2align 4;                                                                              \
exp: ; vb_entry_##exp: ;                                                                     \
    .cfi_startproc;                                                                          \
    push %rbp; .cfi_adjust_cfa_offset 8; .cfi_rel_offset %rbp, 0;                            \
    mov %rsp, %rbp;                                                                          \
    push %rbx; .cfi_adjust_cfa_offset 8; .cfi_rel_offset %rbx, 0;                            \
    push %r12; .cfi_adjust_cfa_offset 8; .cfi_rel_offset %r12, 0;                            \
    mov $0, %eax; mov $0, %eax;                                                              \
    pop %r12; .cfi_adjust_cfa_offset -8; .cfi_restore %r12;                                  \
    pop %rbx; .cfi_adjust_cfa_offset -8; .cfi_restore %rbx;                                  \
    pop %rbp; .cfi_adjust_cfa_offset -8; .cfi_restore %rbp;                                  \
    jmp *vb_slot_##exp(%rip);                                                                \
    .cfi_endproc;                                                                            \
    .size exp, .-exp; .size vb_entry_##exp, .-vb_entry_##exp;

VB_ROUTES(VB_ENTRY)

#elif defined(__aarch64__)
/*
 * AArch64 (Grace): UCM's bistro writes a 16-byte indirect jump (ldr x15, literal; br x15;
 * the address) over the entry and relocates the instructions it covers into its trampoline:
 * stp of x registers, cmp, movz/movk, mov of registers, add #0, ldr of immediate offsets,
 * adrp, and nothing else (bistro_aarch64.c: no br, no ldr literal, no hint such as bti).
 * Its adrp translation adds the page offset to the instruction's own address, not to its
 * page, which is only right for an adrp at the start of a page; so none goes in the first
 * 16 bytes: four movz of x17 (IP1, free at a call; the bridge's code never reads it) that
 * move anywhere, then the real jump through the slot in x16 (IP0, the register that a BTI
 * landing pad of the target accepts for a br). The trampoline keeps x9-x15 for its own jump
 * back. No BTI note: bistro could not move a bti, and the shim's own code needs none.
 * Unwinding: no entry touches sp or the link register, so the default rules of the CIE
 * (the frame is sp, the return address in x30) hold at every instruction; the .cfi_
 * pair only says that they do.
 */
    .text
#define VB_ENTRY(exp, base, since, until, only, impl, ret, params, args)                         \
    .globl exp; .type exp, %function;                                                        \
    .globl vb_entry_##exp; .hidden vb_entry_##exp; .type vb_entry_##exp, %function;          \
    .p2align 4;                                                                              \
exp: ; vb_entry_##exp: ;                                                                     \
    .cfi_startproc;                                                                          \
    movz x17, 0; movz x17, 0; movz x17, 0; movz x17, 0;                                      \
    adrp x16, vb_slot_##exp; ldr x16, [x16, :lo12:vb_slot_##exp]; br x16;                    \
    .cfi_endproc;                                                                            \
    .size exp, .-exp; .size vb_entry_##exp, .-vb_entry_##exp;

VB_ROUTES(VB_ENTRY)
#endif

    .section .note.GNU-stack, "", %progbits
