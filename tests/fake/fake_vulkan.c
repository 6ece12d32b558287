// SPDX-License-Identifier: MIT
/*
 * fake_vulkan.c - a stand-in libvulkan.so.1 for testing the vulkan backend where no GPU
 * exists, loaded by name through LD_LIBRARY_PATH as the library dlopens the real loader.
 * Its physical devices mirror the GPUs of the stand-in CUDA driver (fake_cuda_vmm.c): the
 * same UUIDs (fake_gpu.h), enumerated in the reverse of CUDA's order, so that a backend which
 * takes physical device i (or 0) for CUDA device i picks a wrong one and is caught.
 *
 * Each has one device-local host-visible coherent memory type (besides a device-only and a
 * host-only one) that accepts VkImportMemoryFdInfoKHR with an opaque fd: an fd exported by the
 * stand-in CUDA, a memfd. The import takes ownership of the fd, vkMapMemory is an mmap of it,
 * so CPU writes through the mapping are seen at the allocation's CUDA address (a host mapping
 * of the same memfd). Memory of another GPU is refused with VK_ERROR_INVALID_EXTERNAL_HANDLE,
 * as a real driver refuses it.
 *
 * Environment: FAKE_VK_GPUS=N (physical devices for CUDA devices 0..N-1; default 1),
 * FAKE_VK_ACCEPT_FOREIGN=1 (import another GPU's memory anyway: lets a test show that its
 * own check of which device served an import catches a wrong choice), FAKE_VK_START_MS=N
 * (vkCreateInstance takes N ms after it has registered its exit handler, as a real driver
 * registers its handlers while it loads and starts), FAKE_VK_BAR_BYTES=N (BAR1 holds N bytes:
 * an import that the live ones leave no room for fails with VK_ERROR_OUT_OF_DEVICE_MEMORY, as
 * when BAR1 is exhausted; without it, no limit).
 * The ways a machine cannot pin through Vulkan (tests/vulkan/test_vulkan_unpinnable.sh):
 * FAKE_VK_NO_ICD=1 (the loader finds no driver: vkCreateInstance says
 * VK_ERROR_INCOMPATIBLE_DRIVER, as the real loader in a container given no graphics driver),
 * FAKE_VK_UUID_OFFSET=K (physical device of GPU i shows the UUID of GPU i + K: a Vulkan device
 * of another GPU, or a software one, and none of the CUDA devices'), FAKE_VK_NO_BAR=1 (no
 * device-local host-visible memory type), FAKE_VK_BAR_MB=N (that type on a heap of its own of
 * N MiB, as a GPU without resizable BAR shows a 256 MiB window).
 * Placed maps (VK_KHR_map_memory2 and VK_EXT_map_memory_placed with memoryMapPlaced, as the
 * NVIDIA driver offers them): offered unless FAKE_VK_NO_PLACED=1, and usable only on a device
 * made with both extensions and the feature enabled; vkMapMemory2KHR with
 * VK_MEMORY_MAP_PLACED_BIT_EXT maps the whole memory (memoryMapRangePlaced is not offered) with
 * mmap MAP_FIXED of its memfd at the place asked, which must be aligned to
 * minPlacedMemoryMapAlignment (FAKE_VK_PLACED_ALIGN bytes, default 64 KiB). A failed placed map
 * leaves the memory unmapped and the place as it was. FAKE_VK_PLACED_FAIL_AT=N (the Nth placed
 * map of the process fails with VK_ERROR_MEMORY_MAP_FAILED), FAKE_VK_PLACED_BROKEN=1 (a placed
 * map succeeds but puts fresh anonymous memory at the place, not the imported memory: a
 * driver whose placed maps cannot be trusted, which the backend's own check must catch).
 * Like the NVIDIA driver, the first vkCreateInstance registers an exit handler that cannot
 * run in a forked child: there it aborts, naming itself.
 * Exported for the tests: fake_vk_served_by(p, uuid) (the UUID of the physical device whose
 * VkDevice imported the memory mapped at p; the CUDA ordinal it mirrors, or -1 when p is in
 * no mapping), fake_vk_imports(), fake_vk_refused(), fake_vk_live() (counts),
 * fake_vk_starting() (1 while a vkCreateInstance is under way), fake_vk_instances()
 * (vkCreateInstance calls that made an instance), fake_vk_import_bytes() (bytes of all the
 * imports made), fake_vk_live_bytes() (of the live ones), fake_vk_placed() (placed maps made),
 * fake_vk_mapped() (live CPU mappings, placed or not).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include "fake_gpu.h"
#include "vk_placed.h"  /* the placed maps, where the Khronos headers predate them */

#define FAKE_VK_EXPORT __attribute__((visibility("default")))

struct fake_phys { int gpu; };              /* the CUDA ordinal it mirrors */
struct fake_dev { int magic; int phys; int placed; /* both extensions and the feature */ };
struct fake_mem {
    struct fake_mem *next;
    struct fake_dev *dev;
    int fd, gpu;
    VkDeviceSize size;
    void *map;
};

#define DEV_MAGIC 0x76646576
#define MEMTYPE_BAR 2

static struct fake_phys phys[FAKE_GPU_MAX];
static int instance_dummy;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_mem *mems;
static int n_imports, n_refused, n_live, n_placed, n_placed_calls;
static unsigned long long import_bytes;
static VkDeviceSize live_bytes;       /* the live imports', against FAKE_VK_BAR_BYTES */

static int env_int(const char *name, int dflt)
{
    const char *e = getenv(name);

    return e && *e ? atoi(e) : dflt;
}

static int nphys(void)
{
    int n = env_int("FAKE_VK_GPUS", 1);

    return n < 0 ? 0 : n > FAKE_GPU_MAX ? FAKE_GPU_MAX : n;
}

static int placed_offered(void)
{
    return env_int("FAKE_VK_NO_PLACED", 0) != 1;
}

static VkDeviceSize placed_align(void)
{
    const char *e = getenv("FAKE_VK_PLACED_ALIGN");

    return e && *e ? strtoull(e, NULL, 0) : 64u << 10;
}

static int phys_index(VkPhysicalDevice pd)
{
    struct fake_phys *p = (struct fake_phys *)pd;

    return p >= phys && p < phys + nphys() ? (int)(p - phys) : -1;
}

static struct fake_dev *dev_of(VkDevice d)
{
    struct fake_dev *fd = (struct fake_dev *)d;

    return fd && fd->magic == DEV_MAGIC ? fd : NULL;
}

/* ---- global and instance level ------------------------------------------------------ */
static VkResult VKAPI_CALL fake_EnumerateInstanceVersion(uint32_t *v)
{
    *v = VK_API_VERSION_1_1;
    return VK_SUCCESS;
}

static pid_t driver_pid;
static int starting, n_instances;

/* The driver's teardown: run in a forked child it would use the parent's device. */
static void driver_teardown(void)
{
    static const char msg[] = "fake_vulkan: the driver's exit handler ran in a forked child\n";

    if (getpid() != driver_pid) {
        if (write(2, msg, sizeof(msg) - 1) < 0) {
        }
        abort();
    }
}

static VkResult VKAPI_CALL fake_CreateInstance(const VkInstanceCreateInfo *ci,
                                               const VkAllocationCallbacks *a, VkInstance *inst)
{
    const char *ms = getenv("FAKE_VK_START_MS");
    int i;

    if (!ci || ci->sType != VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (getenv("FAKE_VK_NO_ICD"))
        return VK_ERROR_INCOMPATIBLE_DRIVER; /* the loader's answer: no driver, none loaded */
    pthread_mutex_lock(&lock);
    if (!driver_pid) {
        driver_pid = getpid();
        atexit(driver_teardown);
    }
    pthread_mutex_unlock(&lock);
    if (ms && atoi(ms) > 0) {
        __atomic_store_n(&starting, 1, __ATOMIC_RELEASE);
        usleep((useconds_t)atoi(ms) * 1000);
        __atomic_store_n(&starting, 0, __ATOMIC_RELEASE);
    }
    for (i = 0; i < FAKE_GPU_MAX; i++)
        phys[i].gpu = nphys() - 1 - i;
    *inst = (VkInstance)&instance_dummy;
    __atomic_add_fetch(&n_instances, 1, __ATOMIC_RELAXED);
    return VK_SUCCESS;
}

static void VKAPI_CALL fake_DestroyInstance(VkInstance i, const VkAllocationCallbacks *a)
{
}

static VkResult VKAPI_CALL fake_EnumeratePhysicalDevices(VkInstance inst, uint32_t *n,
                                                         VkPhysicalDevice *out)
{
    uint32_t i, have = (uint32_t)nphys();

    if (inst != (VkInstance)&instance_dummy)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (!out) {
        *n = have;
        return VK_SUCCESS;
    }
    for (i = 0; i < *n && i < have; i++)
        out[i] = (VkPhysicalDevice)&phys[i];
    *n = i;
    return i < have ? VK_INCOMPLETE : VK_SUCCESS;
}

static void VKAPI_CALL fake_GetPhysicalDeviceProperties(VkPhysicalDevice pd,
                                                        VkPhysicalDeviceProperties *p)
{
    memset(p, 0, sizeof(*p));
    p->apiVersion = VK_API_VERSION_1_1;
    p->vendorID = 0x10de;
    p->deviceType = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    if (phys_index(pd) >= 0)
        snprintf(p->deviceName, sizeof(p->deviceName), "fake GPU %d", phys[phys_index(pd)].gpu);
}

static void VKAPI_CALL fake_GetPhysicalDeviceProperties2(VkPhysicalDevice pd,
                                                         VkPhysicalDeviceProperties2 *p2)
{
    VkBaseOutStructure *s;

    fake_GetPhysicalDeviceProperties(pd, &p2->properties);
    for (s = p2->pNext; s && phys_index(pd) >= 0; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES) {
            VkPhysicalDeviceIDProperties *id = (VkPhysicalDeviceIDProperties *)s;

            fake_gpu_uuid(phys[phys_index(pd)].gpu + env_int("FAKE_VK_UUID_OFFSET", 0),
                          id->deviceUUID);
        }
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_PROPERTIES_EXT &&
            placed_offered())
            ((VkPhysicalDeviceMapMemoryPlacedPropertiesEXT *)s)->minPlacedMemoryMapAlignment =
                placed_align();
    }
}

static void VKAPI_CALL fake_GetPhysicalDeviceFeatures2(VkPhysicalDevice pd,
                                                       VkPhysicalDeviceFeatures2 *f2)
{
    VkBaseOutStructure *s;

    memset(&f2->features, 0, sizeof(f2->features));
    for (s = f2->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT) {
            VkPhysicalDeviceMapMemoryPlacedFeaturesEXT *pf =
                (VkPhysicalDeviceMapMemoryPlacedFeaturesEXT *)s;

            pf->memoryMapPlaced = placed_offered() ? VK_TRUE : VK_FALSE;
            pf->memoryMapRangePlaced = VK_FALSE;
            pf->memoryUnmapReserve = VK_FALSE;
        }
    }
}

static void VKAPI_CALL fake_GetPhysicalDeviceMemoryProperties(VkPhysicalDevice pd,
                                                              VkPhysicalDeviceMemoryProperties *m)
{
    memset(m, 0, sizeof(*m));
    m->memoryHeapCount = 2;
    m->memoryHeaps[0].size = 64ull << 30;
    m->memoryHeaps[0].flags = VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    m->memoryHeaps[1].size = 16ull << 30;
    m->memoryTypeCount = 3;
    m->memoryTypes[0].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    m->memoryTypes[0].heapIndex = 0;
    m->memoryTypes[1].propertyFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    m->memoryTypes[1].heapIndex = 1;
    m->memoryTypes[MEMTYPE_BAR].propertyFlags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    m->memoryTypes[MEMTYPE_BAR].heapIndex = 0;
    if (getenv("FAKE_VK_NO_BAR"))
        m->memoryTypeCount = MEMTYPE_BAR;
    if (getenv("FAKE_VK_BAR_MB")) {
        m->memoryHeaps[2].size = (VkDeviceSize)env_int("FAKE_VK_BAR_MB", 0) << 20;
        m->memoryHeaps[2].flags = VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        m->memoryHeapCount = 3;
        m->memoryTypes[MEMTYPE_BAR].heapIndex = 2;
    }
}

static void VKAPI_CALL fake_GetPhysicalDeviceQueueFamilyProperties(VkPhysicalDevice pd,
                                                                   uint32_t *n,
                                                                   VkQueueFamilyProperties *q)
{
    if (q && *n) {
        memset(q, 0, sizeof(*q));
        q->queueFlags = VK_QUEUE_TRANSFER_BIT;
        q->queueCount = 1;
    }
    *n = 1;
}

static const char *const dev_exts[] = {
    VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
    VK_KHR_MAP_MEMORY_2_EXTENSION_NAME, VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME,
};

/* The extensions offered: the placed-map pair (last) only where placed maps are. */
static uint32_t n_dev_exts(void)
{
    return sizeof(dev_exts) / sizeof(dev_exts[0]) - (placed_offered() ? 0 : 2);
}

static int ext_offered(const char *name)
{
    uint32_t i;

    for (i = 0; i < n_dev_exts(); i++)
        if (strcmp(name, dev_exts[i]) == 0)
            return 1;
    return 0;
}

static VkResult VKAPI_CALL fake_EnumerateDeviceExtensionProperties(VkPhysicalDevice pd,
                                                                   const char *layer, uint32_t *n,
                                                                   VkExtensionProperties *out)
{
    uint32_t i, have = n_dev_exts();

    if (layer)
        return VK_ERROR_LAYER_NOT_PRESENT;
    if (!out) {
        *n = have;
        return VK_SUCCESS;
    }
    for (i = 0; i < *n && i < have; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].extensionName, sizeof(out[i].extensionName), "%s", dev_exts[i]);
        out[i].specVersion = 1;
    }
    *n = i;
    return i < have ? VK_INCOMPLETE : VK_SUCCESS;
}

static VkResult VKAPI_CALL fake_CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo *ci,
                                             const VkAllocationCallbacks *a, VkDevice *out)
{
    const VkBaseInStructure *s;
    struct fake_dev *d;
    int p = phys_index(pd), fdext = 0, map2 = 0, placed_ext = 0, feature = 0;
    uint32_t i;

    if (p < 0 || !ci || ci->sType != VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO)
        return VK_ERROR_INITIALIZATION_FAILED;
    for (i = 0; i < ci->enabledExtensionCount; i++) {
        const char *e = ci->ppEnabledExtensionNames[i];

        if (!ext_offered(e))
            return VK_ERROR_EXTENSION_NOT_PRESENT;
        fdext |= strcmp(e, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) == 0;
        map2 |= strcmp(e, VK_KHR_MAP_MEMORY_2_EXTENSION_NAME) == 0;
        placed_ext |= strcmp(e, VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME) == 0;
    }
    for (s = ci->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT)
            feature = ((const VkPhysicalDeviceMapMemoryPlacedFeaturesEXT *)s)->memoryMapPlaced;
    if (!fdext)
        return VK_ERROR_FEATURE_NOT_PRESENT; /* imports need the extension enabled */
    if ((feature && !placed_offered()) || (placed_ext && !map2))
        return VK_ERROR_FEATURE_NOT_PRESENT; /* the feature needs its extensions */
    d = calloc(1, sizeof(*d));
    if (!d)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    d->magic = DEV_MAGIC;
    d->phys = p;
    d->placed = map2 && placed_ext && feature;
    *out = (VkDevice)d;
    return VK_SUCCESS;
}

/* ---- device level ------------------------------------------------------------------- */
static void VKAPI_CALL fake_DestroyDevice(VkDevice dev, const VkAllocationCallbacks *a)
{
    struct fake_dev *d = dev_of(dev);

    if (d) {
        d->magic = 0;
        free(d);
    }
}

static VkResult VKAPI_CALL fake_AllocateMemory(VkDevice dev, const VkMemoryAllocateInfo *ai,
                                               const VkAllocationCallbacks *a, VkDeviceMemory *out)
{
    struct fake_dev *d = dev_of(dev);
    const VkImportMemoryFdInfoKHR *imp = NULL;
    const VkBaseInStructure *s;
    struct fake_mem *m;
    struct stat st;
    int gpu;

    if (!d || !ai || ai->sType != VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO)
        return VK_ERROR_INITIALIZATION_FAILED;
    for (s = ai->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR)
            imp = (const VkImportMemoryFdInfoKHR *)s;
    if (!imp || ai->memoryTypeIndex != MEMTYPE_BAR)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY; /* only imports into the BAR type are modelled */
    gpu = imp->handleType == VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT ?
          fake_gpu_of_fd(imp->fd) : -1;
    if (gpu < 0 || fstat(imp->fd, &st) || (VkDeviceSize)st.st_size < ai->allocationSize ||
        !ai->allocationSize || (gpu != phys[d->phys].gpu && !getenv("FAKE_VK_ACCEPT_FOREIGN"))) {
        __atomic_add_fetch(&n_refused, 1, __ATOMIC_RELAXED);
        return VK_ERROR_INVALID_EXTERNAL_HANDLE;
    }
    m = calloc(1, sizeof(*m));
    if (!m)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&lock);
    if (getenv("FAKE_VK_BAR_BYTES") &&
        live_bytes + ai->allocationSize > strtoull(getenv("FAKE_VK_BAR_BYTES"), NULL, 0)) {
        pthread_mutex_unlock(&lock);
        free(m);
        return VK_ERROR_OUT_OF_DEVICE_MEMORY;   /* BAR1 is full: the fd stays the caller's */
    }
    live_bytes += ai->allocationSize;
    pthread_mutex_unlock(&lock);
    m->dev = d;
    m->fd = imp->fd; /* the import owns it now */
    m->gpu = gpu;
    m->size = ai->allocationSize;
    pthread_mutex_lock(&lock);
    m->next = mems;
    mems = m;
    n_imports++;
    n_live++;
    import_bytes += ai->allocationSize;
    pthread_mutex_unlock(&lock);
    *out = (VkDeviceMemory)m;
    return VK_SUCCESS;
}

static void VKAPI_CALL fake_FreeMemory(VkDevice dev, VkDeviceMemory mem,
                                       const VkAllocationCallbacks *a)
{
    struct fake_mem *m = (struct fake_mem *)mem, **pp;

    if (!m)
        return;
    pthread_mutex_lock(&lock);
    for (pp = &mems; *pp && *pp != m; pp = &(*pp)->next)
        ;
    if (*pp) {
        *pp = m->next;
        n_live--;
        live_bytes -= m->size;
    }
    pthread_mutex_unlock(&lock);
    if (m->map)
        munmap(m->map, (size_t)m->size);
    close(m->fd);
    free(m);
}

static VkResult VKAPI_CALL fake_MapMemory(VkDevice dev, VkDeviceMemory mem, VkDeviceSize off,
                                          VkDeviceSize size, VkMemoryMapFlags f, void **out)
{
    struct fake_mem *m = (struct fake_mem *)mem;
    void *p;

    if (!m || m->map || off || (size != VK_WHOLE_SIZE && size > m->size))
        return VK_ERROR_MEMORY_MAP_FAILED;
    p = mmap(NULL, (size_t)m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (p == MAP_FAILED)
        return VK_ERROR_MEMORY_MAP_FAILED;
    m->map = p;
    *out = p;
    return VK_SUCCESS;
}

/* A placed map at info's place: the checks a real driver's validation makes, then mmap
 * MAP_FIXED of the memfd there (FAKE_VK_PLACED_BROKEN: anonymous memory instead). */
static VkResult map_placed(struct fake_dev *d, struct fake_mem *m, const VkMemoryMapInfoKHR *mi,
                           void **out)
{
    const VkMemoryMapPlacedInfoEXT *pi = NULL;
    const VkBaseInStructure *s;
    int fail_at = env_int("FAKE_VK_PLACED_FAIL_AT", 0), n;
    void *p;

    for (s = mi->pNext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_MEMORY_MAP_PLACED_INFO_EXT)
            pi = (const VkMemoryMapPlacedInfoEXT *)s;
    if (!d->placed || !pi || !pi->pPlacedAddress || mi->offset || mi->size != VK_WHOLE_SIZE ||
        (uintptr_t)pi->pPlacedAddress % placed_align())
        return VK_ERROR_MEMORY_MAP_FAILED;  /* the spec's validity rules, broken */
    n = __atomic_add_fetch(&n_placed_calls, 1, __ATOMIC_RELAXED);
    if (fail_at > 0 && n == fail_at)
        return VK_ERROR_MEMORY_MAP_FAILED;
    if (getenv("FAKE_VK_PLACED_BROKEN"))
        p = mmap(pi->pPlacedAddress, (size_t)m->size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    else
        p = mmap(pi->pPlacedAddress, (size_t)m->size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, m->fd, 0);
    if (p == MAP_FAILED)
        return VK_ERROR_MEMORY_MAP_FAILED;
    m->map = p;
    *out = p;
    __atomic_add_fetch(&n_placed, 1, __ATOMIC_RELAXED);
    return VK_SUCCESS;
}

static VkResult VKAPI_CALL fake_MapMemory2KHR(VkDevice dev, const VkMemoryMapInfoKHR *mi,
                                              void **out)
{
    struct fake_dev *d = dev_of(dev);
    struct fake_mem *m;

    if (!d || !mi || mi->sType != VK_STRUCTURE_TYPE_MEMORY_MAP_INFO_KHR || !mi->memory)
        return VK_ERROR_INITIALIZATION_FAILED;
    m = (struct fake_mem *)mi->memory;
    if (m->map)
        return VK_ERROR_MEMORY_MAP_FAILED;  /* mapped already: a memory maps once */
    if (mi->flags & VK_MEMORY_MAP_PLACED_BIT_EXT)
        return map_placed(d, m, mi, out);
    return fake_MapMemory(dev, mi->memory, mi->offset, mi->size, 0, out);
}

static void VKAPI_CALL fake_UnmapMemory(VkDevice dev, VkDeviceMemory mem)
{
    struct fake_mem *m = (struct fake_mem *)mem;

    if (m && m->map) {
        munmap(m->map, (size_t)m->size);
        m->map = NULL;
    }
}

/* ---- lookup ------------------------------------------------------------------------- */
#define FAKE_VK_FUNCS(X)                                                             \
    X(EnumerateInstanceVersion) X(CreateInstance) X(DestroyInstance)                 \
    X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties)                       \
    X(GetPhysicalDeviceProperties2) X(GetPhysicalDeviceMemoryProperties)             \
    X(GetPhysicalDeviceQueueFamilyProperties) X(EnumerateDeviceExtensionProperties)  \
    X(CreateDevice) X(DestroyDevice) X(AllocateMemory) X(FreeMemory) X(MapMemory)    \
    X(UnmapMemory) X(GetPhysicalDeviceFeatures2) X(MapMemory2KHR)

FAKE_VK_EXPORT PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice d, const char *name);

static PFN_vkVoidFunction lookup(const char *name)
{
    static const struct { const char *name; PFN_vkVoidFunction fn; } table[] = {
#define FAKE_VK_ENTRY(f) { "vk" #f, (PFN_vkVoidFunction)fake_##f },
        FAKE_VK_FUNCS(FAKE_VK_ENTRY)
#undef FAKE_VK_ENTRY
        { "vkGetDeviceProcAddr", (PFN_vkVoidFunction)vkGetDeviceProcAddr },
    };
    size_t i;

    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].fn;
    return NULL;
}

FAKE_VK_EXPORT PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance i, const char *name)
{
    return name ? lookup(name) : NULL;
}

FAKE_VK_EXPORT PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice d, const char *name)
{
    /* As the real loader: an extension's function only from a device that enabled it. */
    if (dev_of(d) && name && strcmp(name, "vkMapMemory2KHR") == 0 && !dev_of(d)->placed)
        return NULL;
    return dev_of(d) && name ? lookup(name) : NULL;
}

/* ---- for the tests ------------------------------------------------------------------ */
FAKE_VK_EXPORT int fake_vk_served_by(const void *p, unsigned char uuid[16])
{
    const char *c = p;
    struct fake_mem *m;
    int gpu = -1;

    pthread_mutex_lock(&lock);
    for (m = mems; m; m = m->next) {
        if (m->map && c >= (const char *)m->map && c < (const char *)m->map + m->size) {
            gpu = phys[m->dev->phys].gpu;
            fake_gpu_uuid(gpu, uuid);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return gpu;
}

FAKE_VK_EXPORT int fake_vk_imports(void) { return __atomic_load_n(&n_imports, __ATOMIC_RELAXED); }
FAKE_VK_EXPORT int fake_vk_refused(void) { return __atomic_load_n(&n_refused, __ATOMIC_RELAXED); }
FAKE_VK_EXPORT int fake_vk_live(void) { return __atomic_load_n(&n_live, __ATOMIC_RELAXED); }
FAKE_VK_EXPORT int fake_vk_starting(void) { return __atomic_load_n(&starting, __ATOMIC_ACQUIRE); }
FAKE_VK_EXPORT unsigned long long fake_vk_import_bytes(void)
{
    return __atomic_load_n(&import_bytes, __ATOMIC_RELAXED);
}
FAKE_VK_EXPORT unsigned long long fake_vk_live_bytes(void)
{
    return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}
FAKE_VK_EXPORT int fake_vk_placed(void) { return __atomic_load_n(&n_placed, __ATOMIC_RELAXED); }
FAKE_VK_EXPORT int fake_vk_mapped(void)
{
    struct fake_mem *m;
    int n = 0;

    pthread_mutex_lock(&lock);
    for (m = mems; m; m = m->next)
        n += m->map != NULL;
    pthread_mutex_unlock(&lock);
    return n;
}
FAKE_VK_EXPORT int fake_vk_instances(void)
{
    return __atomic_load_n(&n_instances, __ATOMIC_RELAXED);
}
