/* SPDX-License-Identifier: MIT */
/*
 * export.h - what every file that defines an entry point needs and no more: the export
 * macro and the per-thread last error its failures are recorded in (errors.c). No object of
 * the core is visible through it (core.h has those).
 */
#ifndef VRAMIO_EXPORT_H
#define VRAMIO_EXPORT_H

#include <stddef.h>
#include "process/log.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */

#ifndef VR_EXPORT
#define VR_EXPORT __attribute__((visibility("default")))
#endif

/* Record a failure as this thread's last error, log it at level, and return err. */
__attribute__((format(printf, 3, 4)))
int vr_fail_at(enum vr_log_level level, int err, const char *fmt, ...);
/* Bad arguments are the caller's business: logged at debug level only. */
#define vr_fail(err, ...)     vr_fail_at(VR_LOG_DEBUG, err, __VA_ARGS__)
#define vr_fail_err(err, ...) vr_fail_at(VR_LOG_ERROR, err, __VA_ARGS__)

/* Copy a reason into a caller's buffer (NUL-terminated when len > 0; dst may be NULL), cut in
 * its middle where the buffer is too small (vr_reason). */
void vr_copy_reason(char *dst, size_t len, const char *src);

#endif /* VRAMIO_EXPORT_H */
