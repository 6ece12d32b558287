/* SPDX-License-Identifier: MIT */
/*
 * errors.c - the per-thread "last error" line and error strings (vramio_last_error,
 * vramio_strerror).
 */
#include <stdarg.h>
#include <string.h>
#include "export.h"
#include "vramio.h"

/* Per thread, so that a failure in one thread never overwrites another's explanation. A line:
 * it names the reason of each backend a pin was offered to (core.h, VR_REASONS_LEN). */
static __thread char last_error[VR_LINE_LEN];

int vr_fail_at(enum vr_log_level level, int err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vr_reason_v(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    vr_log(level, "%s", last_error);
    return err;
}

void vr_copy_reason(char *dst, size_t len, const char *src)
{
    vr_reason(dst, len, "%s", src);
}

VR_EXPORT const char *vramio_last_error(void)
{
    return last_error;
}

VR_EXPORT const char *vramio_strerror(int err)
{
    const char *s;

    if (err == 0)
        return "Success";
    if (err < 0)
        return "Unknown error (negative value: gdrapi returns positive errno values)";
    s = strerrordesc_np(err);
    return s ? s : "Unknown error";
}
