// SPDX-License-Identifier: MIT
/*
 * fake_mmap.c - preloaded beside the stand-in driver (fake_cuda_dmabuf.c): mmap of its exports
 * as a real dma-buf exporter does it, where a plain file cannot.
 *
 * An export of a range that does not start at an allocation's base is an empty memfd named
 * "fake-dmabuf:<address>:<size>"; mapped here, it becomes the memory of that range, piece by
 * piece from the allocations' own memfds (a range may span two allocations), so the mapping and
 * the "device memory" are the same pages. An export that is a pipe is one whose CPU mapping
 * the driver refuses: mmap fails with the kernel's ENOTSUPP (524), as driver 580 answers. Any
 * other mmap is passed to the kernel unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What fake_cuda_dmabuf.c looks for to know that its sub-range exports can be mapped. */
int fake_mmap_interposed;

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int piece(unsigned long long va, int *fd, size_t *off, size_t *avail)
{
    static int (*fn)(unsigned long long, int *, size_t *, size_t *);
    void *lib;

    if (!fn) {
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        fn = lib ? (int (*)(unsigned long long, int *, size_t *, size_t *))
                       dlsym(lib, "fake_cuda_piece") : NULL;
    }
    return fn ? fn(va, fd, off, avail) : -1;
}

/* Map len bytes of the exported range [va, va + size) from off. */
static void *map_export(void *addr, size_t len, int prot, int flags, unsigned long long va,
                        size_t size, off_t off)
{
    char *base;
    size_t pos, n, at, avail;
    int fd;

    if (off < 0 || (off & 4095) || len == 0 || (size_t)off > size || len > size - (size_t)off) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    base = raw_mmap(addr, len, PROT_NONE,
                    (flags & MAP_FIXED) | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return MAP_FAILED;
    for (pos = 0; pos < len; pos += n) {
        if (piece(va + (size_t)off + pos, &fd, &at, &avail)) {
            munmap(base, len);
            errno = ENODEV;
            return MAP_FAILED;
        }
        n = avail < len - pos ? avail : len - pos;
        if (raw_mmap(base + pos, n, prot, MAP_SHARED | MAP_FIXED, fd, (off_t)at) == MAP_FAILED) {
            munmap(base, len);
            return MAP_FAILED;
        }
    }
    return base;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    char link[64], target[128];
    unsigned long long va, size;
    struct stat st;
    ssize_t n;

    if (fd >= 0 && fstat(fd, &st) == 0) {
        if (S_ISFIFO(st.st_mode)) {
            errno = 524; /* the kernel's ENOTSUPP */
            return MAP_FAILED;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = 0;
            if (sscanf(target, "/memfd:fake-dmabuf:%llx:%llx", &va, &size) == 2)
                return map_export(addr, len, prot, flags, va, (size_t)size, off);
        }
    }
    return raw_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));
