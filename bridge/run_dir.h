/* SPDX-License-Identifier: MIT */
/*
 * run_dir.h - vramio-run's private directory (run_dir.c): the directory that holds the
 * libcuda.so.1 shim's links, in a place where no other user can ever change what its path
 * names.
 */
#ifndef VRAMIO_RUN_DIR_H
#define VRAMIO_RUN_DIR_H

#include <stddef.h>

/* Reasons and notes go here (one line each); NULL: none. */
typedef void (*vr_note_fn)(const char *line);

/*
 * The directory for the pair (shim, driver) in the first usable base (VRAMIO_RUN_DIR alone
 * when set; else $XDG_RUNTIME_DIR/vramio, ${XDG_CACHE_HOME:-$HOME/.cache}/vramio,
 * ${TMPDIR:-/tmp}/vramio-UID, the passwd home's .cache/vramio, and /run/vramio for root),
 * usable when every directory from "/" to it is this user's or root's and writable by no one
 * else: 1 with its path in out (PATH_MAX), 0 with every base's reason in why. note gets the
 * bases passed over.
 */
int vr_run_dir(const char *shim, const char *driver, char *out, char *why, size_t len,
               vr_note_fn note);

#endif /* VRAMIO_RUN_DIR_H */
