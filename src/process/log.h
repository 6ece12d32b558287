/* SPDX-License-Identifier: MIT */
/*
 * log.h - the library's one logging function.
 *
 * Errors go to stderr by default; GDRCOPY_ENABLE_LOGGING (any value) turns on the levels
 * from GDRCOPY_LOG_LEVEL (1 debug, 2 info, 3 warning, 4 error; default 2). Never used in
 * copy loops.
 */
#ifndef VRAMIO_LOG_H
#define VRAMIO_LOG_H

enum vr_log_level {
    VR_LOG_DEBUG = 1,
    VR_LOG_INFO  = 2,
    VR_LOG_WARN  = 3,
    VR_LOG_ERROR = 4,
};

__attribute__((format(printf, 2, 3)))
void vr_log(enum vr_log_level level, const char *fmt, ...);

#define vr_dbg(...)  vr_log(VR_LOG_DEBUG, __VA_ARGS__)
#define vr_info(...) vr_log(VR_LOG_INFO, __VA_ARGS__)
#define vr_warn(...) vr_log(VR_LOG_WARN, __VA_ARGS__)
#define vr_err(...)  vr_log(VR_LOG_ERROR, __VA_ARGS__)

#endif /* VRAMIO_LOG_H */
