/* SPDX-License-Identifier: MIT */
/*
 * reason.h - the one line a step that failed gives its caller for the user to read: why a
 * driver does not load, why a backend cannot serve, why a pin failed.
 *
 * Reasons wrap one another ("the pin ... spans 2 allocations: " around the export's own), and
 * what the user acts on stands at the end ("raise it with ulimit -n"). So a buffer holds the
 * longest reason composed of ours (VR_REASON_LEN), and a reason that is still too long, for
 * what it quotes from outside (a dlerror() with a long path) or for a caller's small buffer,
 * is cut in its middle, marked "...", never at its end (vr_reason). In util/: the CUDA
 * loader's reasons are the first of such chains, and the library and the tools share it.
 * Inline, as clock.h and nocancel.h: util/cuda_loader.c is also compiled with nothing else of
 * util/ (tests/bridge/bridge.mk's fuzz target).
 */
#ifndef VRAMIO_REASON_H
#define VRAMIO_REASON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size of a reason: what a step is given to write its (why, len) into, and what a reason
 * kept for later takes. It holds the longest the library composes with room to spare: the
 * vulkan backend's for a pin across allocations, around the check's or the export's reason
 * (under 500 bytes with the driver's own texts and 64-bit numbers). */
#define VR_REASON_LEN 1024

/* The size of a line that joins reasons: a failed call's last error, which names the reason
 * of each backend it tried (three at most), and a log line that carries one. */
#define VR_LINE_LEN (4 * VR_REASON_LEN)

/* Where a reason was cut. */
#define VR_REASON_MARK     "..."
#define VR_REASON_MARK_LEN (sizeof(VR_REASON_MARK) - 1)

/* 1 for a byte inside a UTF-8 character, not its first: a cut there would split it (a path
 * that dlerror() quotes may have such characters). */
static inline int vr_reason_inside_char(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

/* text (n bytes, more than len - 1) into why: its first third and its end around the mark. The
 * beginning says what failed, the end holds the reasons wrapped in it and their advice: the
 * end gets the larger part. */
static inline void vr_reason_cut(char *why, size_t len, const char *text, size_t n)
{
    size_t room = len - 1 - VR_REASON_MARK_LEN, head = room / 3, from = n - (room - head);

    while (head > 0 && vr_reason_inside_char(text[head]))
        head--;
    while (from < n && vr_reason_inside_char(text[from]))
        from++;
    memcpy(why, text, head);
    memcpy(why + head, VR_REASON_MARK, VR_REASON_MARK_LEN);
    memcpy(why + head + VR_REASON_MARK_LEN, text + from, n - from);
    why[head + VR_REASON_MARK_LEN + (n - from)] = '\0';
}

/* snprintf into why (len bytes; nothing when why is NULL or len 0), except that text longer
 * than len - 1 keeps its first third and its end around "...", cut between characters. It is
 * formatted again whole, for its end, only when it does not fit; a buffer too small for the
 * mark and a character each side keeps the beginning, and so does one for which there is no
 * memory, marked as cut at its end. */
__attribute__((format(printf, 3, 0)))
static inline void vr_reason_v(char *why, size_t len, const char *fmt, va_list ap)
{
    char *whole;
    va_list again;
    int n;

    if (!why || !len)
        return;
    va_copy(again, ap);
    n = vsnprintf(why, len, fmt, ap);
    if (n >= 0 && (size_t)n >= len && len > 2 * VR_REASON_MARK_LEN) {
        n = vasprintf(&whole, fmt, again);
        if (n >= 0) {
            vr_reason_cut(why, len, whole, (size_t)n);
            free(whole);
        } else {
            memcpy(why + len - 1 - VR_REASON_MARK_LEN, VR_REASON_MARK, VR_REASON_MARK_LEN + 1);
        }
    }
    va_end(again);
}

__attribute__((format(printf, 3, 4)))
static inline void vr_reason(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vr_reason_v(why, len, fmt, ap);
    va_end(ap);
}

#endif /* VRAMIO_REASON_H */
