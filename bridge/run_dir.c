/* SPDX-License-Identifier: MIT */
/*
 * run_dir.c - vramio-run's private directory, made so that no other user can change what its
 * path names, at any time while the program runs.
 *
 * The path that goes on LD_LIBRARY_PATH is resolved again by the loader of every process of
 * the program, and by every dlopen, long after vramio-run has exec'd. So no directory on that
 * path may be one in which another user can make or remove a name, ever:
 * - checking only the directory itself let the owner of a parent rename it away and plant a
 *   libcuda.so.1 of theirs (root running vramio-run with HOME or XDG_RUNTIME_DIR in another
 *   user's directory loaded that user's library);
 * - a parent that is sticky and writable by all (/tmp, /var/tmp, /dev/shm) keeps others from
 *   removing what is there, but not from making the name again once it is gone: tmp cleaners
 *   remove old directories, and the next dlopen of root's long-running job searched the one
 *   that another user had made in its place.
 * So every directory from "/" to the base is owned by this user or root and writable by no
 * one else (group or others, sticky or not); the base is this user's. Then only this user or
 * root can ever change a name on the path, whoever removes what.
 * - the base is made canonical (the realpath of the part that exists: no symlink, "." or
 *   ".." left) and walked from "/" one component at a time, each directory opened with
 *   O_NOFOLLOW through its parent's descriptor and checked on that descriptor. A missing
 *   component is made (0700) through its parent's descriptor; a component swapped for a
 *   symlink fails the walk.
 * - the links' directory is read, made and renamed into place through the base's descriptor
 *   (readlinkat, mkdirat, symlinkat, renameat), and its path is checked at the end to name
 *   the directory that was checked (device and inode).
 * Names in such a base need not be secret: no other user can make one first.
 * The bases, first usable wins: those the environment names (XDG_RUNTIME_DIR, XDG_CACHE_HOME
 * or HOME, TMPDIR), then the user's home from the password database (a service or a cron job
 * may have no HOME), then /run/vramio for root (a home that cannot be written: a read-only
 * root file system). /tmp is only ever the last, refused, reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bridge.h"
#include "run_dir.h"

#define DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static const char *const link_names[] = { "libcuda.so.1", "libcuda.so", VB_REAL_DRIVER };

/* snprintf that says whether the whole text fit (a cut path must never be used). */
__attribute__((format(printf, 3, 4))) static int put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

/* put, then 0: a refusal with its reason. */
__attribute__((format(printf, 3, 4))) static int say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return 0;
}

/* A path LD_LIBRARY_PATH can hold as one entry: no separator, no $ORIGIN-style token. */
static int path_ok(const char *p)
{
    return p[0] == '/' && !strpbrk(p, ":;$");
}

/* The directory open at fd (path) may be on the way: 1, or 0 with the reason. A parent may
 * be root's; the base (last) must be this user's. None may be writable by group or others,
 * sticky or not (an ACL granting another user write shows in the group bits, its mask). */
static int dir_safe(int fd, const char *path, int last, char *why, size_t len)
{
    struct stat st;

    if (fstat(fd, &st) != 0)
        return say(why, len, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return say(why, len, "%s: not a directory", path);
    if (st.st_uid != geteuid() && (last || st.st_uid != 0))
        return say(why, len, "%s: owned by uid %u, not by this user%s", path,
                   (unsigned)st.st_uid, last ? "" : " or root");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return say(why, len, "%s: other users can write to it (mode %04o%s)", path,
                   (unsigned)(st.st_mode & 07777),
                   st.st_mode & S_ISVTX ? ": they can make a name there again once it is "
                                          "removed" : "");
    return 1;
}

/* The subdirectory name of the directory at fd (never through a symlink), made when missing
 * and make is set: its descriptor, or -1 with errno. */
static int open_child(int fd, const char *name, int make)
{
    int c = openat(fd, name, DIR_FLAGS);

    if (c < 0 && errno == ENOENT && make) {
        if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST)
            return -1;
        c = openat(fd, name, DIR_FLAGS);
    }
    return c;
}

/* base without symlinks, "." or "..": the realpath of its longest existing part, then the
 * rest (which may hold no ".."). 1, or 0 with the reason. */
static int canonical(const char *base, char *canon, char *why, size_t len)
{
    char head[PATH_MAX], tail[PATH_MAX] = "", t2[PATH_MAX], *slash;
    size_t n;

    if (!put(head, sizeof(head), "%s", base))
        return say(why, len, "%s: too long a path", base);
    for (;;) {
        n = strlen(head);
        while (n > 1 && head[n - 1] == '/')
            head[--n] = '\0';
        if (realpath(head, canon))
            break;
        slash = strrchr(head, '/');
        if (errno != ENOENT || !slash)
            return say(why, len, "%s: %s", base, strerror(errno));
        if (!strcmp(slash + 1, "..") || !strcmp(slash + 1, "."))
            return say(why, len, "%s: '.' or '..' after a missing directory", base);
        if (!put(t2, sizeof(t2), "%s%s", slash, tail))
            return say(why, len, "%s: too long a path", base);
        memcpy(tail, t2, sizeof(tail));
        if (slash == head)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    if (!put(t2, sizeof(t2), "%s%s", strcmp(canon, "/") ? canon : "", tail))
        return say(why, len, "%s: too long a path", base);
    memcpy(canon, t2, PATH_MAX);
    if (!*canon)
        strcpy(canon, "/");
    return 1;
}

/* Walk canon from "/", making what is missing, every directory checked (the last as the
 * base): the base's descriptor, or -1 with the reason. */
static int walk(const char *canon, char *why, size_t len)
{
    char copy[PATH_MAX], sofar[PATH_MAX] = "", *save = NULL, *c, *next;
    int fd = open("/", DIR_FLAGS), sub;
    size_t at = 0;

    if (fd < 0)
        return say(why, len, "/: %s", strerror(errno)) - 1;
    put(copy, sizeof(copy), "%s", canon);
    c = strtok_r(copy, "/", &save);
    if (!dir_safe(fd, "/", !c, why, len)) {
        close(fd);
        return -1;
    }
    for (; c; c = next) {
        next = strtok_r(NULL, "/", &save);
        at += (size_t)snprintf(sofar + at, sizeof(sofar) - at, "/%s", c);
        sub = open_child(fd, c, 1);
        if (sub < 0) {
            put(why, len, "%s: %s", sofar,
                errno == ENOTDIR || errno == ELOOP ? "not a directory (a symlink?)"
                                                   : strerror(errno));
            close(fd);
            return -1;
        }
        close(fd);
        fd = sub;
        if (!dir_safe(fd, sofar, !next, why, len)) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* dir's links point where they should. */
static int links_right(int dfd, const char *shim, const char *driver)
{
    char target[PATH_MAX];
    size_t i;
    ssize_t n;

    for (i = 0; i < 3; i++) {
        n = readlinkat(dfd, link_names[i], target, sizeof(target) - 1);
        if (n <= 0)
            return 0;
        target[n] = '\0';
        if (strcmp(target, i < 2 ? shim : driver))
            return 0;
    }
    return 1;
}

/* FNV-1a of the two targets: one directory per pair, shared by every run that needs it. */
static uint64_t pair_hash(const char *a, const char *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *s;

    for (s = a; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (s = b; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t random64(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v ^ (uint64_t)time(NULL);
    return v;
}

/* The pair's directory in bfd is there, this user's alone, with the right links: 1. */
static int pair_ok(int bfd, const char *name, const char *path, const char *shim,
                   const char *driver, char *why, size_t len)
{
    int pd = openat(bfd, name, DIR_FLAGS), ok;
    struct stat a, b;

    if (pd < 0)
        return 0;
    ok = dir_safe(pd, path, 1, why, len) && links_right(pd, shim, driver) &&
         fstat(pd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
    close(pd);
    return ok;
}

/* Make the pair's directory in bfd: a new directory with the three links, renamed into
 * place whole (another run may do the same at once: the rename onto a full one fails). */
static void pair_make(int bfd, const char *name, const char *shim, const char *driver,
                      char *why, size_t len)
{
    char tmp[32];
    int tfd, tries;
    size_t i;

    for (tries = 0; tries < 16; tries++) {
        snprintf(tmp, sizeof(tmp), ".new-%016llx", (unsigned long long)random64());
        if (mkdirat(bfd, tmp, 0700) == 0 || errno != EEXIST)
            break;
    }
    tfd = openat(bfd, tmp, DIR_FLAGS);
    if (tfd < 0) {
        put(why, len, "cannot make a directory there: %s", strerror(errno));
        return;
    }
    for (i = 0; i < 3; i++)
        if (symlinkat(i < 2 ? shim : driver, tfd, link_names[i]) != 0) {
            put(why, len, "cannot make a link there: %s", strerror(errno));
            break;
        }
    if (i == 3 && renameat(bfd, tmp, bfd, name) == 0) {
        close(tfd);
        return;
    }
    for (i = 0; i < 3; i++)
        unlinkat(tfd, link_names[i], 0);
    close(tfd);
    unlinkat(bfd, tmp, AT_REMOVEDIR);
}

/* The pair's directory in the base open at bfd (canonical path canon): 1 with out. */
static int pair_dir(int bfd, const char *canon, const char *shim, const char *driver,
                    char *out, char *why, size_t len)
{
    char name[32];

    snprintf(name, sizeof(name), "cuda-%016llx", (unsigned long long)pair_hash(shim, driver));
    if (!put(out, PATH_MAX, "%s/%s", canon, name))
        return say(why, len, "%s: too long a path", canon);
    why[0] = '\0';
    if (pair_ok(bfd, name, out, shim, driver, why, len))
        return 1;
    pair_make(bfd, name, shim, driver, why, len);
    if (pair_ok(bfd, name, out, shim, driver, why, len))
        return 1;
    if (!*why)
        put(why, len, "%s exists with other contents", out);
    return 0;
}

/* One base: 1 with out, or 0 with the reason in one. */
static int try_base(const char *base, const char *shim, const char *driver, char *out,
                    char *one, size_t len)
{
    char canon[PATH_MAX];
    int fd, ok;

    if (!canonical(base, canon, one, len))
        return 0;
    if (!path_ok(canon))
        return say(one, len, "%s: LD_LIBRARY_PATH cannot hold it (':', ';', '$' or not "
                   "absolute)", canon);
    fd = walk(canon, one, len);
    if (fd < 0)
        return 0;
    ok = pair_dir(fd, canon, shim, driver, out, one, len);
    close(fd);
    return ok;
}

/* Base n of the list (from 0) in base (PATH_MAX): 1, 0 when there is none of that kind
 * here, -1 past the end. */
static int nth_base(unsigned n, char *base)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR"), *cache = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME"), *tmp = getenv("TMPDIR");
    struct passwd *pw;

    switch (n) {
    case 0:
        return xdg && *xdg && put(base, PATH_MAX, "%s/vramio", xdg);
    case 1:
        if (cache && *cache)
            return put(base, PATH_MAX, "%s/vramio", cache);
        return home && *home && put(base, PATH_MAX, "%s/.cache/vramio", home);
    case 2:
        /* The shared /tmp is refused (dir_safe says why); a private TMPDIR may serve. */
        return put(base, PATH_MAX, "%s/vramio-%u", tmp && *tmp == '/' ? tmp : "/tmp",
                   (unsigned)geteuid());
    case 3:
        /* No HOME (services, cron), or one that failed: the home the system knows. */
        pw = getpwuid(geteuid());
        return pw && pw->pw_dir && pw->pw_dir[0] == '/' &&
               put(base, PATH_MAX, "%s/.cache/vramio", pw->pw_dir);
    case 4:
        /* Root's own where its home cannot be written (a read-only root file system). */
        return geteuid() == 0 && put(base, PATH_MAX, "/run/vramio");
    default:
        return -1;
    }
}

#define NBASES 5

int vr_run_dir(const char *shim, const char *driver, char *out, char *why, size_t len,
               vr_note_fn note)
{
    const char *env = getenv("VRAMIO_RUN_DIR");
    char bases[NBASES][PATH_MAX], one[PATH_MAX + 256];
    size_t used = 0;
    unsigned n, i;
    int r;

    if (env && *env)
        return try_base(env, shim, driver, out, why, len);
    why[0] = '\0';
    for (n = 0; n < NBASES && (r = nth_base(n, bases[n])) >= 0; n++) {
        for (i = 0; r && i < n; i++)
            if (!strcmp(bases[i], bases[n]))
                r = 0; /* tried already (HOME is the passwd home) */
        if (!r) {
            bases[n][0] = '\0';
            continue;
        }
        one[0] = '\0';
        if (try_base(bases[n], shim, driver, out, one, sizeof(one)))
            return 1;
        if (note)
            note(one);
        used += (size_t)snprintf(why + used, used < len ? len - used : 0, "%s%s",
                                 used ? "; " : "", one);
        if (used >= len)
            used = len - 1;
    }
    return 0;
}
