/* SPDX-License-Identifier: MIT */
/*
 * gpumem.c - the allocation kinds behind the tools (see gpumem.h): the CUDA kinds, and the
 * dispatch through each kind's table of operations (gpumem_kind.h).
 */
#include "gpumem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_loader.h"
#include "gpumem_kind.h"
#include "vramio.h"

/* Every kind's name is known, so that a tool built without one still names it in errors. */
static const char *const kind_names[GM_KIND_COUNT] = {
    [GM_CUDA] = "cuda", [GM_VMM_RDMA] = "vmm-rdma", [GM_VMM_FD] = "vmm-fd",
    [GM_VRAMIO] = "vramio", [GM_EMU] = "emu",
};

/* The tools allocate as any program does: under vramio-run, cuMemAlloc is the bridge's. */
const int vr_cuda_program_view = 1;

static const struct vr_cuda *cu;
static CUdevice cu_dev;
static CUcontext cu_ctx;

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

static const struct gm_kind_ops *kind_ops(enum gm_kind kind);

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

/* The driver functions the tools call, by kind of memory: the loader leaves a name that the
 * driver lacks NULL, and a tool must say which is missing instead of calling it (0, or ENOSYS
 * with the first one missing in why). */
#define GM_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, why, len);
static int lacks_base(char *why, size_t len)
{
    int rc = 0;

    GM_NEED(cuDeviceGetCount) GM_NEED(cuDeviceGet) GM_NEED(cuDeviceGetAttribute)
    GM_NEED(cuDeviceGetName) GM_NEED(cuDevicePrimaryCtxRetain) GM_NEED(cuCtxSetCurrent)
    GM_NEED(cuCtxSynchronize) GM_NEED(cuMemAlloc) GM_NEED(cuMemFree) GM_NEED(cuMemcpyHtoD)
    GM_NEED(cuMemcpyDtoH) GM_NEED(cuMemsetD8) GM_NEED(cuMemAllocHost) GM_NEED(cuMemFreeHost)
    return rc;
}

static int lacks_vmm(char *why, size_t len)
{
    int rc = 0;

    GM_NEED(cuMemGetAllocationGranularity) GM_NEED(cuMemCreate) GM_NEED(cuMemRelease)
    GM_NEED(cuMemAddressReserve) GM_NEED(cuMemAddressFree) GM_NEED(cuMemMap)
    GM_NEED(cuMemUnmap) GM_NEED(cuMemSetAccess)
    return rc;
}
#undef GM_NEED

static int cuda_setup(int gpu, char *why, size_t len)
{
    int n = 0, rc;
    CUresult cr;

    if (cu_ctx)
        return 0;
    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = lacks_base(why, len);
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

/* The device checks of each CUDA kind, once the context is set up. */
static int vmm_check(int gpu, char *why, size_t len)
{
    if (lacks_vmm(why, len))
        return ENOSYS;
    if (!dev_attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
        snprintf(why, len, "GPU %d does not support CUDA VMM (cuMemCreate)", gpu);
        return EOPNOTSUPP;
    }
    return 0;
}

static int vmm_rdma_init(int gpu, char *why, size_t len)
{
    int rc = cuda_setup(gpu, why, len);

    if (!rc)
        rc = vmm_check(gpu, why, len);
    if (!rc && !dev_attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)) {
        snprintf(why, len, "GPU %d does not support GPUDirect RDMA on CUDA VMM memory", gpu);
        return EOPNOTSUPP;
    }
    return rc;
}

static int vmm_fd_init(int gpu, char *why, size_t len)
{
    int rc = cuda_setup(gpu, why, len);

    if (!rc)
        rc = vmm_check(gpu, why, len);
    if (!rc && !dev_attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)) {
        snprintf(why, len, "GPU %d cannot export CUDA VMM memory as a POSIX fd", gpu);
        return EOPNOTSUPP;
    }
    return rc;
}

static int cuda_ready(void)
{
    return cu != NULL;
}

int gm_init(enum gm_kind kind, int gpu, char *why, size_t len)
{
    const struct gm_kind_ops *ops;

    if ((unsigned)kind >= GM_KIND_COUNT) {
        snprintf(why, len, "unknown allocation kind %d", (int)kind);
        return EINVAL;
    }
    ops = kind_ops(kind);
    if (!ops) {
        snprintf(why, len, "the %s kind is built only into the QEMU guest's sanity program",
                 gm_kind_name(kind));
        return ENODEV;
    }
    return ops->init(gpu, why, len);
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

static int cuda_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    CUresult cr = cu->cuMemAlloc((CUdeviceptr *)&b->dptr, size);

    return cr == CUDA_SUCCESS ? 0 : cuda_fail(cr, "cuMemAlloc", why, len);
}

static int vmm_rdma_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    return vmm_alloc(0, size, b, why, len);
}

static int vmm_fd_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    return vmm_alloc(1, size, b, why, len);
}

static int vramio_kind_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    unsigned long long d = 0;
    int rc = vramio_alloc(gm_cuda_device(), size, &d);

    if (rc) {
        snprintf(why, len, "vramio_alloc failed: %s (%s)", vramio_strerror(rc), vramio_last_error());
        return rc;
    }
    b->dptr = d;
    return 0;
}

int gm_alloc(enum gm_kind kind, size_t size, struct gm_buf *b, char *why, size_t len)
{
    const struct gm_kind_ops *ops = kind_ops(kind);

    memset(b, 0, sizeof(*b));
    b->kind = kind;
    b->size = size;
    b->alloc_size = size;
    if (size == 0) {
        snprintf(why, len, "cannot allocate 0 bytes");
        return EINVAL;
    }
    if (ops && ops->ready())
        return ops->alloc(size, b, why, len);
    snprintf(why, len, "allocation kind %s is not initialised (gm_init)", gm_kind_name(kind));
    return EINVAL;
}

static int cuda_free(struct gm_buf *b)
{
    return vr_cuda_errno(cu->cuMemFree((CUdeviceptr)b->dptr));
}

static int vmm_free(struct gm_buf *b)
{
    int rc = vr_cuda_errno(cu->cuMemUnmap((CUdeviceptr)b->dptr, b->alloc_size));

    cu->cuMemAddressFree((CUdeviceptr)b->dptr, b->alloc_size);
    cu->cuMemRelease((CUmemGenericAllocationHandle)b->priv);
    return rc;
}

static int vramio_kind_free(struct gm_buf *b)
{
    return vramio_free(b->dptr);
}

int gm_free(struct gm_buf *b)
{
    const struct gm_kind_ops *ops;
    int rc;

    if (!b->dptr)
        return 0;
    ops = kind_ops(b->kind);
    rc = ops ? ops->free(b) : EINVAL;
    b->dptr = 0;
    return rc;
}

static int cuda_write(const struct gm_buf *b, size_t off, const void *src, size_t n)
{
    if (cu->cuMemcpyHtoD((CUdeviceptr)(b->dptr + off), src, n) != CUDA_SUCCESS)
        return EIO;
    return vr_cuda_errno(cu->cuCtxSynchronize());
}

static int cuda_read(const struct gm_buf *b, size_t off, void *dst, size_t n)
{
    /* CPU stores through a WC mapping must be flushed before the GPU reads them. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (cu->cuCtxSynchronize() != CUDA_SUCCESS)
        return EIO;
    return vr_cuda_errno(cu->cuMemcpyDtoH(dst, (CUdeviceptr)(b->dptr + off), n));
}

static int cuda_fill(const struct gm_buf *b, uint8_t byte)
{
    if (cu->cuMemsetD8((CUdeviceptr)b->dptr, byte, b->alloc_size) != CUDA_SUCCESS)
        return EIO;
    return vr_cuda_errno(cu->cuCtxSynchronize());
}

int gm_write(const struct gm_buf *b, size_t off, const void *src, size_t n)
{
    const struct gm_kind_ops *ops = kind_ops(b->kind);

    if (!ops || off > b->alloc_size || n > b->alloc_size - off)
        return EINVAL;
    return n ? ops->write(b, off, src, n) : 0;
}

int gm_read(const struct gm_buf *b, size_t off, void *dst, size_t n)
{
    const struct gm_kind_ops *ops = kind_ops(b->kind);

    if (!ops || off > b->alloc_size || n > b->alloc_size - off)
        return EINVAL;
    return n ? ops->read(b, off, dst, n) : 0;
}

int gm_fill(const struct gm_buf *b, uint8_t byte)
{
    const struct gm_kind_ops *ops = kind_ops(b->kind);

    return ops ? ops->fill(b, byte) : EINVAL;
}

int gm_live_pins(uint64_t *pins)
{
    const struct gm_kind_ops *ops = kind_ops(GM_EMU);

    return ops && ops->live_pins ? ops->live_pins(pins) : ENOTSUP;
}

#define CUDA_KIND(init_fn, alloc_fn, free_fn)                                            \
    { .init = init_fn, .ready = cuda_ready, .alloc = alloc_fn, .free = free_fn,         \
      .write = cuda_write, .read = cuda_read, .fill = cuda_fill }

static const struct gm_kind_ops cuda_kinds[] = {
    [GM_CUDA]     = CUDA_KIND(cuda_setup, cuda_alloc, cuda_free),
    [GM_VMM_RDMA] = CUDA_KIND(vmm_rdma_init, vmm_rdma_alloc, vmm_free),
    [GM_VMM_FD]   = CUDA_KIND(vmm_fd_init, vmm_fd_alloc, vmm_free),
    [GM_VRAMIO]   = CUDA_KIND(cuda_setup, vramio_kind_alloc, vramio_kind_free),
};

static const struct gm_kind_ops *kind_ops(enum gm_kind kind)
{
    static const struct gm_kind_ops *const table[GM_KIND_COUNT] = {
        [GM_CUDA] = &cuda_kinds[GM_CUDA], [GM_VMM_RDMA] = &cuda_kinds[GM_VMM_RDMA],
        [GM_VMM_FD] = &cuda_kinds[GM_VMM_FD], [GM_VRAMIO] = &cuda_kinds[GM_VRAMIO],
        [GM_EMU] = &gm_emu_kind,        /* NULL unless the guest build links it in */
    };

    return (unsigned)kind < GM_KIND_COUNT ? table[kind] : NULL;
}
