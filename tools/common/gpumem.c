/* SPDX-License-Identifier: MIT */
/* gpumem.c - the allocation kinds behind the tools (see gpumem.h). */
#include "gpumem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cuda_loader.h"
#include "vramio.h"
#include "../../tests/kernel/nvp2p_emu.h"

static const char *const kind_names[GM_KIND_COUNT] = {
    [GM_CUDA] = "cuda", [GM_VMM_RDMA] = "vmm-rdma", [GM_VMM_FD] = "vmm-fd",
    [GM_VRAMIO] = "vramio", [GM_EMU] = "emu",
};

static const struct vr_cuda *cu;
static CUdevice cu_dev;
static CUcontext cu_ctx;
static int emu_fd = -1;

const char *gm_kind_name(enum gm_kind kind)
{
    return (unsigned)kind < GM_KIND_COUNT ? kind_names[kind] : "?";
}

int gm_kind_parse(const char *name, enum gm_kind *kind)
{
    for (int k = 0; k < GM_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *kind = (enum gm_kind)k;
            return 0;
        }
    }
    if (strcmp(name, "cuMemAlloc") == 0) {
        *kind = GM_CUDA;
        return 0;
    }
    if (strcmp(name, "cuMemCreate") == 0) {
        *kind = GM_VMM_RDMA;
        return 0;
    }
    return EINVAL;
}

const char *gm_kind_help(void)
{
    return "cuda (cuMemAlloc), vmm-rdma (cuMemCreate, RDMA capable; alias cuMemCreate), "
           "vmm-fd (cuMemCreate with a POSIX-fd handle), vramio (vramio_alloc), "
           "emu (emulated provider, QEMU guest)";
}

int gm_kind_is_cuda(enum gm_kind kind)
{
    return kind != GM_EMU;
}

const struct vr_cuda *gm_cuda(void)
{
    return cu;
}

int gm_cuda_device(void)
{
    return (int)cu_dev;
}

static int cuda_fail(CUresult rc, const char *what, char *why, size_t len)
{
    snprintf(why, len, "%s failed: %s", what, vr_cuda_errstr(rc));
    return vr_cuda_errno(rc) ? vr_cuda_errno(rc) : EIO;
}

static int dev_attr(CUdevice_attribute attr)
{
    int v = 0;

    if (cu->cuDeviceGetAttribute(&v, attr, cu_dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

static int cuda_setup(int gpu, char *why, size_t len)
{
    int n = 0, rc;
    CUresult cr;

    if (cu_ctx)
        return 0;
    rc = vr_cuda_init(&cu, why, len);
    if (rc)
        return rc;
    cr = cu->cuDeviceGetCount(&n);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuDeviceGetCount", why, len);
    if (gpu < 0 || gpu >= n) {
        snprintf(why, len, "GPU %d does not exist (%d CUDA device%s)", gpu, n, n == 1 ? "" : "s");
        return ENODEV;
    }
    cr = cu->cuDeviceGet(&cu_dev, gpu);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuDeviceGet", why, len);
    cr = cu->cuDevicePrimaryCtxRetain(&cu_ctx, cu_dev);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuDevicePrimaryCtxRetain", why, len);
    cr = cu->cuCtxSetCurrent(cu_ctx);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuCtxSetCurrent", why, len);
    return 0;
}

static int emu_setup(char *why, size_t len)
{
    if (emu_fd >= 0)
        return 0;
    emu_fd = open(NVP2P_EMU_DEVICE, O_RDWR | O_CLOEXEC);
    if (emu_fd < 0) {
        int e = errno;
        snprintf(why, len, "the emulated p2p provider is not available (%s: %s)",
                 NVP2P_EMU_DEVICE, strerror(e));
        return e == ENOENT ? ENODEV : e;
    }
    return 0;
}

int gm_init(enum gm_kind kind, int gpu, char *why, size_t len)
{
    int rc;

    if ((unsigned)kind >= GM_KIND_COUNT) {
        snprintf(why, len, "unknown allocation kind %d", (int)kind);
        return EINVAL;
    }
    if (kind == GM_EMU)
        return emu_setup(why, len);
    rc = cuda_setup(gpu, why, len);
    if (rc)
        return rc;
    if ((kind == GM_VMM_RDMA || kind == GM_VMM_FD) &&
        !dev_attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
        snprintf(why, len, "GPU %d does not support CUDA VMM (cuMemCreate)", gpu);
        return EOPNOTSUPP;
    }
    if (kind == GM_VMM_RDMA && !dev_attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)) {
        snprintf(why, len, "GPU %d does not support GPUDirect RDMA on CUDA VMM memory", gpu);
        return EOPNOTSUPP;
    }
    if (kind == GM_VMM_FD && !dev_attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)) {
        snprintf(why, len, "GPU %d cannot export CUDA VMM memory as a POSIX fd", gpu);
        return EOPNOTSUPP;
    }
    return 0;
}

void gm_thread_attach(void)
{
    if (cu && cu_ctx)
        cu->cuCtxSetCurrent(cu_ctx);
}

/* cuMemCreate + reserve + map + access: the recipe every VMM user follows. */
static int vmm_alloc(int with_fd, size_t size, struct gm_buf *b, char *why, size_t len)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    size_t gran = 0;
    CUresult cr;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)cu_dev;
    prop.requestedHandleTypes = with_fd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    prop.allocFlags.gpuDirectRDMACapable =
        dev_attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) ? 1 : 0;
    cr = cu->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuMemGetAllocationGranularity", why, len);
    b->alloc_size = (size + gran - 1) / gran * gran;
    cr = cu->cuMemCreate(&h, b->alloc_size, &prop, 0);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(cr, "cuMemCreate", why, len);
    cr = cu->cuMemAddressReserve(&va, b->alloc_size, gran, 0, 0);
    if (cr != CUDA_SUCCESS)
        goto release;
    cr = cu->cuMemMap(va, b->alloc_size, 0, h, 0);
    if (cr != CUDA_SUCCESS)
        goto unreserve;
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cr = cu->cuMemSetAccess(va, b->alloc_size, &access, 1);
    if (cr != CUDA_SUCCESS)
        goto unmap;
    b->dptr = va;
    b->priv = h;
    return 0;
unmap:
    cu->cuMemUnmap(va, b->alloc_size);
unreserve:
    cu->cuMemAddressFree(va, b->alloc_size);
release:
    cu->cuMemRelease(h);
    return cuda_fail(cr, "CUDA VMM map", why, len);
}

int gm_alloc(enum gm_kind kind, size_t size, struct gm_buf *b, char *why, size_t len)
{
    CUresult cr;
    int rc;

    memset(b, 0, sizeof(*b));
    b->kind = kind;
    b->size = size;
    b->alloc_size = size;
    if (size == 0) {
        snprintf(why, len, "cannot allocate 0 bytes");
        return EINVAL;
    }
    switch (kind) {
    case GM_CUDA:
        if (!cu) break;
        cr = cu->cuMemAlloc((CUdeviceptr *)&b->dptr, size);
        return cr == CUDA_SUCCESS ? 0 : cuda_fail(cr, "cuMemAlloc", why, len);
    case GM_VMM_RDMA:
    case GM_VMM_FD:
        if (!cu) break;
        return vmm_alloc(kind == GM_VMM_FD, size, b, why, len);
    case GM_VRAMIO: {
        unsigned long long d = 0;

        if (!cu) break;
        rc = vramio_alloc(gm_cuda_device(), size, &d);
        if (rc) {
            snprintf(why, len, "vramio_alloc failed: %s (%s)", vramio_strerror(rc), vramio_last_error());
            return rc;
        }
        b->dptr = d;
        return 0;
    }
    case GM_EMU: {
        struct nvp2p_emu_alloc a = { .size = size, .page_kind = 1 };

        if (emu_fd < 0) break;
        if (ioctl(emu_fd, NVP2P_EMU_IOC_ALLOC, &a) < 0) {
            rc = errno;
            snprintf(why, len, "NVP2P_EMU_IOC_ALLOC(%zu) failed: %s", size, strerror(rc));
            return rc;
        }
        b->dptr = a.va;
        b->alloc_size = (size + 0xffff) & ~(size_t)0xffff;
        return 0;
    }
    default:
        break;
    }
    snprintf(why, len, "allocation kind %s is not initialised (gm_init)", gm_kind_name(kind));
    return EINVAL;
}

int gm_free(struct gm_buf *b)
{
    int rc = 0;

    if (!b->dptr)
        return 0;
    switch (b->kind) {
    case GM_CUDA:
        rc = vr_cuda_errno(cu->cuMemFree((CUdeviceptr)b->dptr));
        break;
    case GM_VMM_RDMA:
    case GM_VMM_FD:
        rc = vr_cuda_errno(cu->cuMemUnmap((CUdeviceptr)b->dptr, b->alloc_size));
        cu->cuMemAddressFree((CUdeviceptr)b->dptr, b->alloc_size);
        cu->cuMemRelease((CUmemGenericAllocationHandle)b->priv);
        break;
    case GM_VRAMIO:
        rc = vramio_free(b->dptr);
        break;
    case GM_EMU: {
        struct nvp2p_emu_free f = { .va = b->dptr };

        rc = ioctl(emu_fd, NVP2P_EMU_IOC_FREE, &f) < 0 ? errno : 0;
        break;
    }
    default:
        rc = EINVAL;
    }
    b->dptr = 0;
    return rc;
}

static int emu_rw(unsigned long cmd, uint64_t va, void *p, size_t n)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = n, .user_ptr = (uintptr_t)p };

    return ioctl(emu_fd, cmd, &rw) < 0 ? errno : 0;
}

int gm_write(const struct gm_buf *b, size_t off, const void *src, size_t n)
{
    if (off > b->alloc_size || n > b->alloc_size - off)
        return EINVAL;
    if (n == 0)
        return 0;
    if (b->kind == GM_EMU)
        return emu_rw(NVP2P_EMU_IOC_WRITE, b->dptr + off, (void *)src, n);
    if (cu->cuMemcpyHtoD((CUdeviceptr)(b->dptr + off), src, n) != CUDA_SUCCESS)
        return EIO;
    return vr_cuda_errno(cu->cuCtxSynchronize());
}

int gm_read(const struct gm_buf *b, size_t off, void *dst, size_t n)
{
    if (off > b->alloc_size || n > b->alloc_size - off)
        return EINVAL;
    if (n == 0)
        return 0;
    if (b->kind == GM_EMU)
        return emu_rw(NVP2P_EMU_IOC_READ, b->dptr + off, dst, n);
    /* CPU stores through a WC mapping must be flushed before the GPU reads them. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (cu->cuCtxSynchronize() != CUDA_SUCCESS)
        return EIO;
    return vr_cuda_errno(cu->cuMemcpyDtoH(dst, (CUdeviceptr)(b->dptr + off), n));
}

int gm_fill(const struct gm_buf *b, uint8_t byte)
{
    unsigned char chunk[4096];
    size_t off;
    int rc = 0;

    if (b->kind != GM_EMU) {
        if (cu->cuMemsetD8((CUdeviceptr)b->dptr, byte, b->alloc_size) != CUDA_SUCCESS)
            return EIO;
        return vr_cuda_errno(cu->cuCtxSynchronize());
    }
    memset(chunk, byte, sizeof(chunk));
    for (off = 0; off < b->alloc_size && !rc; off += sizeof(chunk)) {
        size_t n = b->alloc_size - off < sizeof(chunk) ? b->alloc_size - off : sizeof(chunk);
        rc = gm_write(b, off, chunk, n);
    }
    return rc;
}

int gm_live_pins(uint64_t *pins)
{
    struct nvp2p_emu_stats st;

    if (emu_fd < 0)
        return ENOTSUP;
    if (ioctl(emu_fd, NVP2P_EMU_IOC_STATS, &st) < 0)
        return errno;
    *pins = st.live_pins;
    return 0;
}
