/* SPDX-License-Identifier: MIT */
/*
 * fake_gdrdrv.c - the stateful /dev/gdrdrv stand-in of the fuzz targets (see fake_gdrdrv.h):
 * the __wrap_ functions of open, close, ioctl, mmap and munmap. A file of the emulated module
 * is a real descriptor (a memfd), so that the library's descriptors count as the process's
 * own and a leaked one shows in /proc/self/fd; its pins and mappings are kept here. Answers
 * follow driver/uapi/gdrdrv.h and the module of driver/: pins in whole 64 KiB GPU pages,
 * handles counted from 1 per file, the mmap offset of a pin its handle in 4 KiB pages,
 * REQ_MAPPING_TYPE refused (EBUSY) while the pin is mapped, a file's pins released when its
 * last reference (the descriptor, or a mapping) goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>
#include "fake_gdrdrv.h"
#include "uapi/gdrdrv.h"

#define FGD_FILES   8
#define FGD_PINS    64
#define FGD_MAPS    64
#define FGD_PAGE    4096u
#define FGD_GPU_PAGE ((uint64_t)1 << 16)
#define FGD_WINDOW  ((size_t)8 << 20)
#define FGD_HUGE    ((uint64_t)1 << 40)

int __real_open(const char *path, int flags, ...);
int __real_close(int fd);
int __real_ioctl(int fd, unsigned long cmd, void *arg);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
int __wrap_open(const char *path, int flags, ...);
int __wrap_close(int fd);
int __wrap_ioctl(int fd, unsigned long cmd, void *arg);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

struct fgd_pin {
    int live, invalid, maps;
    uint64_t handle, va, len;
    uint32_t req_type, granted;
};

struct fgd_file {
    int fd;            /* -1 once closed (a mapping may keep it) */
    int live;
    struct fgd_config cfg;
    uint64_t next_handle;
    struct fgd_pin pins[FGD_PINS];
};

struct fgd_map {
    int live, file, pin;
    uintptr_t addr;
    size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fgd_config next_cfg = { .open_errno = ENOENT };
static struct fgd_file files[FGD_FILES];
static struct fgd_map maps[FGD_MAPS];
static unsigned long fail_cmd;
static int fail_err, fail_count, mmap_err, mmap_count;
static int window_fd = -1;
static uintptr_t window;

/* What the library did that no module allows: a finding, reported and ended here. */
__attribute__((noreturn, format(printf, 1, 2))) static void broken(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fake_gdrdrv: the library broke the module's ABI: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void fgd_config(const struct fgd_config *c)
{
    pthread_mutex_lock(&lock);
    next_cfg = *c;
    pthread_mutex_unlock(&lock);
}

void fgd_fail_ioctl(unsigned long cmd, int err, int count)
{
    pthread_mutex_lock(&lock);
    fail_cmd = cmd;
    fail_err = err;
    fail_count = count;
    pthread_mutex_unlock(&lock);
}

void fgd_fail_mmap(int err, int count)
{
    pthread_mutex_lock(&lock);
    mmap_err = err;
    mmap_count = count;
    pthread_mutex_unlock(&lock);
}

void fgd_invalidate_all(void)
{
    pthread_mutex_lock(&lock);
    for (int f = 0; f < FGD_FILES; f++)
        for (int p = 0; p < FGD_PINS; p++)
            if (files[f].pins[p].live)
                files[f].pins[p].invalid = 1;
    pthread_mutex_unlock(&lock);
}

/* The window: a memfd mapped at a GPU-page-aligned address (the lock held). */
static int window_make(void)
{
    uintptr_t r;
    void *p;

    if (window)
        return 0;
    window_fd = memfd_create("fake-gdrdrv-window", MFD_CLOEXEC);
    if (window_fd < 0 || ftruncate(window_fd, (off_t)FGD_WINDOW))
        return -1;
    p = __real_mmap(NULL, FGD_WINDOW + FGD_GPU_PAGE, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    r = ((uintptr_t)p + FGD_GPU_PAGE - 1) & ~(uintptr_t)(FGD_GPU_PAGE - 1);
    if (__real_mmap((void *)r, FGD_WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                    window_fd, 0) == MAP_FAILED)
        return -1;
    window = r;
    return 0;
}

void fgd_window(uintptr_t *base, size_t *len)
{
    pthread_mutex_lock(&lock);
    if (window_make())
        broken("cannot make the GPU window: %s", strerror(errno));
    *base = window;
    *len = FGD_WINDOW;
    pthread_mutex_unlock(&lock);
}

static int count_live(int what)
{
    int n = 0;

    pthread_mutex_lock(&lock);
    for (int f = 0; f < FGD_FILES; f++) {
        n += what == 0 && files[f].live;
        for (int p = 0; what == 1 && p < FGD_PINS; p++)
            n += files[f].live && files[f].pins[p].live;
    }
    for (int m = 0; what == 2 && m < FGD_MAPS; m++)
        n += maps[m].live;
    pthread_mutex_unlock(&lock);
    return n;
}

int fgd_live_files(void) { return count_live(0); }
int fgd_live_pins(void) { return count_live(1); }
int fgd_live_maps(void) { return count_live(2); }

/* The open file of fd, or -1 (the lock held). */
static int file_of(int fd)
{
    for (int f = 0; f < FGD_FILES; f++)
        if (files[f].live && files[f].fd == fd && fd >= 0)
            return f;
    return -1;
}

/* The file's last reference went: its pins are dropped (the module's release). */
static void file_release_if_unused(int f)
{
    for (int m = 0; m < FGD_MAPS; m++)
        if (maps[m].live && maps[m].file == f)
            return;
    if (files[f].fd < 0)
        memset(&files[f], 0, sizeof(files[f]));
}

int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    va_list ap;
    int f, fd;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (!path || strcmp(path, "/dev/gdrdrv") != 0)
        return __real_open(path, flags, mode);
    pthread_mutex_lock(&lock);
    if (next_cfg.open_errno) {
        errno = next_cfg.open_errno;
        pthread_mutex_unlock(&lock);
        return -1;
    }
    for (f = 0; f < FGD_FILES && files[f].live; f++)
        ;
    fd = f < FGD_FILES ? memfd_create("fake-gdrdrv", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0) : -1;
    if (fd >= 0) {
        memset(&files[f], 0, sizeof(files[f]));
        files[f] = (struct fgd_file){ .fd = fd, .live = 1, .cfg = next_cfg, .next_handle = 1 };
        if (next_cfg.huge_handles)
            files[f].next_handle = FGD_HUGE;
    } else if (f == FGD_FILES) {
        errno = EMFILE;
    }
    pthread_mutex_unlock(&lock);
    return fd;
}

int __wrap_close(int fd)
{
    int f;

    pthread_mutex_lock(&lock);
    f = file_of(fd);
    if (f >= 0) {
        files[f].fd = -1;
        file_release_if_unused(f);
    }
    pthread_mutex_unlock(&lock);
    return __real_close(fd);
}

static struct fgd_pin *pin_of(struct fgd_file *file, uint64_t handle)
{
    for (int p = 0; p < FGD_PINS; p++)
        if (file->pins[p].live && file->pins[p].handle == handle)
            return &file->pins[p];
    return NULL;
}

/* PIN_BUFFER and PIN_BUFFER_V2: whole GPU pages inside the window, else EINVAL (not GPU
 * memory), as the NVIDIA driver refuses memory it does not own. */
static int do_pin(struct fgd_file *file, uint64_t addr, uint64_t size, __u64 *handle)
{
    uint64_t va = addr & ~(FGD_GPU_PAGE - 1), end;
    int p;

    if (size == 0 || addr + size < addr || !window)
        return EINVAL;
    end = (addr + size + FGD_GPU_PAGE - 1) & ~(FGD_GPU_PAGE - 1);
    if (end == 0 || va < window || end > window + FGD_WINDOW)
        return EINVAL;
    for (p = 0; p < FGD_PINS && file->pins[p].live; p++)
        ;
    if (p == FGD_PINS)
        return ENOSPC;          /* the module's max_pins_per_file */
    file->pins[p] = (struct fgd_pin){ .live = 1, .handle = file->next_handle++, .va = va,
                                      .len = end - va };
    *handle = file->pins[p].handle;
    return 0;
}

/* The type a default mapping gets, or the one asked for when the module can give it. */
static int grant(const struct fgd_file *file, uint32_t req, uint32_t *type)
{
    switch (req) {
    case GDRDRV_MAPPING_TYPE_NONE:
        *type = file->cfg.coherent ? GDRDRV_MAPPING_TYPE_CACHING : GDRDRV_MAPPING_TYPE_WC;
        return 0;
    case GDRDRV_MAPPING_TYPE_WC:
    case GDRDRV_MAPPING_TYPE_DEVICE:
        *type = req;
        return 0;
    case GDRDRV_MAPPING_TYPE_CACHING:
        *type = req;
        return file->cfg.coherent ? 0 : EINVAL;
    }
    return EINVAL;
}

static int do_ioctl(struct fgd_file *file, unsigned long cmd, void *arg)
{
    uint32_t v = file->cfg.version;
    struct fgd_pin *pin;
    uint32_t type;

    switch (cmd) {
    case GDRDRV_IOC_GET_VERSION: {
        struct gdrdrv_get_version *g = arg;
        if (file->cfg.version_errno)
            return file->cfg.version_errno;
        g->gdrdrv_version = v;
        g->minimum_gdr_api_version = file->cfg.min_api;
        return 0;
    }
    case GDRDRV_IOC_PIN_BUFFER: {
        struct gdrdrv_pin_buffer *b = arg;
        return do_pin(file, b->addr, b->size, &b->handle);
    }
    case GDRDRV_IOC_PIN_BUFFER_V2: {
        struct gdrdrv_pin_buffer_v2 *b = arg;
        if (v < GDRDRV_VERSION_WITH_PIN_BUFFER_V2)
            broken("PIN_BUFFER_V2 sent to a %u.%u module", v >> 16, v & 0xffff);
        if (b->flags & ~GDRDRV_PIN_FLAG_FORCE_PCIE)
            return EINVAL;
        if ((b->flags & GDRDRV_PIN_FLAG_FORCE_PCIE) && !file->cfg.force_pcie)
            return EOPNOTSUPP;
        return do_pin(file, b->addr, b->size, &b->handle);
    }
    case GDRDRV_IOC_UNPIN_BUFFER: {
        struct gdrdrv_unpin_buffer *u = arg;
        pin = pin_of(file, u->handle);
        if (!pin)
            broken("UNPIN_BUFFER of handle %#llx, which this file does not hold",
                   (unsigned long long)u->handle);
        if (pin->maps)
            broken("UNPIN_BUFFER of handle %#llx while %d mappings of it are live",
                   (unsigned long long)u->handle, pin->maps);
        pin->live = 0;
        return 0;
    }
    case GDRDRV_IOC_GET_CB_FLAG: {
        struct gdrdrv_get_cb_flag *c = arg;
        pin = pin_of(file, c->handle);
        if (!pin)
            broken("GET_CB_FLAG of handle %#llx, which this file does not hold",
                   (unsigned long long)c->handle);
        c->flag = (uint32_t)pin->invalid;
        return 0;
    }
    case GDRDRV_IOC_GET_INFO:
    case GDRDRV_IOC_GET_INFO_V2: {
        struct gdrdrv_get_info_v2 *i = arg;   /* the same layout up to mapped / mapping_type */
        if (cmd == GDRDRV_IOC_GET_INFO_V2 && v < GDRDRV_VERSION_WITH_GET_INFO_V2)
            broken("GET_INFO_V2 sent to a %u.%u module", v >> 16, v & 0xffff);
        pin = pin_of(file, i->handle);
        if (!pin)
            broken("GET_INFO of handle %#llx, which this file does not hold",
                   (unsigned long long)i->handle);
        i->va = pin->va;
        i->mapped_size = pin->len;
        i->page_size = (uint32_t)FGD_GPU_PAGE;
        i->tsc_khz = 1000000;
        i->tm_cycles = 1234;
        if (cmd == GDRDRV_IOC_GET_INFO_V2) {
            i->mapping_type = pin->maps ? pin->granted : GDRDRV_MAPPING_TYPE_NONE;
            i->pad = 0;
        } else {
            struct gdrdrv_get_info *o = arg;
            o->mapped = pin->maps > 0;
            o->wc_mapping = pin->maps > 0 && pin->granted == GDRDRV_MAPPING_TYPE_WC;
        }
        return 0;
    }
    case GDRDRV_IOC_GET_ATTR: {
        struct gdrdrv_get_attr *a = arg;
        if (v < GDRDRV_VERSION_WITH_GET_ATTR)
            broken("GET_ATTR sent to a %u.%u module", v >> 16, v & 0xffff);
        if (a->attr == GDRDRV_ATTR_USE_PERSISTENT_MAPPING)
            a->val = (uint32_t)file->cfg.persistent;
        else if (a->attr == GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE)
            a->val = (uint32_t)file->cfg.force_pcie;
        else
            return EINVAL;
        return 0;
    }
    case GDRDRV_IOC_REQ_MAPPING_TYPE: {
        struct gdrdrv_req_mapping_type *r = arg;
        if (v < GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE)
            broken("REQ_MAPPING_TYPE sent to a %u.%u module", v >> 16, v & 0xffff);
        pin = pin_of(file, r->handle);
        if (!pin)
            broken("REQ_MAPPING_TYPE of handle %#llx, which this file does not hold",
                   (unsigned long long)r->handle);
        if (pin->maps)
            return EBUSY;
        if (grant(file, r->mapping_type, &type))
            return EINVAL;
        pin->req_type = r->mapping_type;
        return 0;
    }
    }
    return ENOTTY;
}

int __wrap_ioctl(int fd, unsigned long cmd, void *arg)
{
    int f, rc;

    pthread_mutex_lock(&lock);
    f = file_of(fd);
    if (f < 0) {
        pthread_mutex_unlock(&lock);
        return __real_ioctl(fd, cmd, arg);
    }
    if (fail_count > 0 && (fail_cmd == 0 || fail_cmd == cmd) && cmd != GDRDRV_IOC_UNPIN_BUFFER) {
        fail_count--;
        rc = fail_err;
    } else {
        rc = do_ioctl(&files[f], cmd, arg);
    }
    pthread_mutex_unlock(&lock);
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    struct fgd_file *file;
    struct fgd_pin *pin = NULL;
    uint32_t type = 0;
    void *p = MAP_FAILED;
    int f, m, err = 0;

    pthread_mutex_lock(&lock);
    f = fd >= 0 ? file_of(fd) : -1;
    if (f < 0) {
        pthread_mutex_unlock(&lock);
        return __real_mmap(addr, len, prot, flags, fd, off);
    }
    file = &files[f];
    if (off < 0 || (off % FGD_PAGE) != 0)
        broken("mmap of /dev/gdrdrv at offset %lld, not a whole page", (long long)off);
    pin = pin_of(file, (uint64_t)off / FGD_PAGE);
    if (!pin)
        broken("mmap of /dev/gdrdrv at offset %#llx, which names no pin of this file",
               (unsigned long long)off);
    for (m = 0; m < FGD_MAPS && maps[m].live; m++)
        ;
    if (mmap_count > 0) {
        mmap_count--;
        err = mmap_err;
    } else if (len == 0 || len > pin->len || !(flags & MAP_SHARED) || m == FGD_MAPS) {
        err = EINVAL;
    } else if (pin->invalid) {
        err = EINVAL;               /* the memory is gone: the module refuses to map it */
    } else if ((err = grant(file, pin->req_type, &type)) == 0) {
        p = __real_mmap(addr, len, prot, flags, window_fd, (off_t)(pin->va - window));
        if (p == MAP_FAILED)
            err = errno;
    }
    if (p != MAP_FAILED) {
        maps[m] = (struct fgd_map){ .live = 1, .file = f, .pin = (int)(pin - file->pins),
                                    .addr = (uintptr_t)p, .len = len };
        pin->maps++;
        pin->granted = type;
    }
    pthread_mutex_unlock(&lock);
    if (p == MAP_FAILED)
        errno = err;
    return p;
}

int __wrap_munmap(void *addr, size_t len)
{
    int m, f;

    pthread_mutex_lock(&lock);
    for (m = 0; m < FGD_MAPS; m++) {
        if (!maps[m].live)
            continue;
        if (maps[m].addr == (uintptr_t)addr && maps[m].len == len)
            break;
        if ((uintptr_t)addr < maps[m].addr + maps[m].len &&
            maps[m].addr < (uintptr_t)addr + len)
            broken("munmap(%p, %zu) cuts the gdrdrv mapping %#lx+%zu", addr, len,
                   (unsigned long)maps[m].addr, maps[m].len);
    }
    if (m < FGD_MAPS) {
        f = maps[m].file;
        files[f].pins[maps[m].pin].maps--;
        maps[m].live = 0;
        file_release_if_unused(f);
    }
    pthread_mutex_unlock(&lock);
    return __real_munmap(addr, len);
}
