// SPDX-License-Identifier: MIT
/*
 * wb_dmabuf_policy.c - the dma-buf backend's decisions, without a GPU: which CUDA driver may
 * mmap exports, what a failed mmap (errno 524 above all) is reported as, which export flags a
 * pin asks for and when a refused PCIE flag is retried without it, the mapping type of a pin,
 * the host-page rounding, what a refused export is reported as, and the
 * GDRCOPY_USE_DMABUF_MMAP switch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "backends/backend.h"
#include "backends/dmabuf_policy.h"
#include "gdrapi.h"
#include "t.h"

int main(void)
{
    char why[320];
    int rc;

    why[0] = '\0';
    rc = vr_dmabuf_driver_check(13000, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "13.0") && strstr(why, "13.3") && strstr(why, "610"),
             "wb_dmabuf/driver_13_0_too_old", "rc %d why '%s'", rc, why);
    rc = vr_dmabuf_driver_check(12080, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "12.8"), "wb_dmabuf/driver_12_8_too_old", "rc %d why '%s'", rc, why);
    why[0] = '\0';
    rc = vr_dmabuf_driver_check(13030, why, sizeof(why));
    t_check(rc == 0, "wb_dmabuf/driver_13_3_ok", "rc %d why '%s'", rc, why);
    t_check(vr_dmabuf_driver_check(14000, why, sizeof(why)) == 0, "wb_dmabuf/driver_14_0_ok", "refused");

    rc = vr_dmabuf_mmap_error(VR_KERNEL_ENOTSUPP, 13000, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "524") && strstr(why, "13.0"), "wb_dmabuf/mmap_524_explained",
             "rc %d why '%s'", rc, why);
    rc = vr_dmabuf_mmap_error(EACCES, 13030, why, sizeof(why));
    t_check(rc == EACCES && strstr(why, "errno 13"), "wb_dmabuf/mmap_other_errno_kept", "rc %d why '%s'",
             rc, why);
    rc = vr_dmabuf_mmap_error(0, 13030, why, sizeof(why));
    t_check(rc == EIO, "wb_dmabuf/mmap_no_errno_is_eio", "rc %d", rc);

    t_check(vr_dmabuf_export_flags(GDR_PIN_FLAG_DEFAULT) == 0, "wb_dmabuf/flags_default", "%llu",
             vr_dmabuf_export_flags(GDR_PIN_FLAG_DEFAULT));
    t_check(vr_dmabuf_export_flags(GDR_PIN_FLAG_FORCE_PCIE) ==
                 CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, "wb_dmabuf/flags_force_pcie", "%llu",
             vr_dmabuf_export_flags(GDR_PIN_FLAG_FORCE_PCIE));
    t_check(!vr_dmabuf_retry_without_pcie(0), "wb_dmabuf/no_retry_without_flag", "retries");
#if defined(__x86_64__)
    t_check(vr_dmabuf_retry_without_pcie(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE),
             "wb_dmabuf/x86_retries_pcie_refusal", "no retry");
#else
    t_check(!vr_dmabuf_retry_without_pcie(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE),
             "arm_pcie_refusal_final", "wb_dmabuf/retries");
#endif

    /* GDRCopy's rule for GDRCOPY_USE_DMABUF_MMAP: forced by exactly "1". */
    {
        static const struct vr_backend_ops ops = { .force_env = "GDRCOPY_USE_DMABUF_MMAP" };
        static const char *const no[] = { "0", "2", "01", "1 ", "yes", "" };

        unsetenv("GDRCOPY_USE_DMABUF_MMAP");
        t_check(!vr_backend_forced(&ops), "wb_dmabuf/not_forced_unset", "forced");
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
            setenv("GDRCOPY_USE_DMABUF_MMAP", no[i], 1);
            t_check(!vr_backend_forced(&ops), "wb_dmabuf/not_forced_other", "'%s' forces", no[i]);
        }
        setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
        t_check(vr_backend_forced(&ops), "wb_dmabuf/forced_1", "not forced");
        unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    }

    t_check(vr_dmabuf_map_type(0, 0) == GDR_MAPPING_TYPE_WC &&
                vr_dmabuf_map_type(0, GDR_PIN_FLAG_FORCE_PCIE) == GDR_MAPPING_TYPE_WC &&
                vr_dmabuf_map_type(1, 0) == GDR_MAPPING_TYPE_CACHING &&
                vr_dmabuf_map_type(1, GDR_PIN_FLAG_FORCE_PCIE) == GDR_MAPPING_TYPE_WC,
            "wb_dmabuf/map_type_coherent_caching_force_pcie_wc", "wrong type");
    {
        uint64_t va = 0, len = 0;

        t_check(vr_dmabuf_host_range(0x13064, 5000, 4096, &va, &len) == 0 && va == 0x13000 &&
                    len == 8192, "wb_dmabuf/host_range_4k", "va %#llx len %llu",
                (unsigned long long)va, (unsigned long long)len);
        t_check(vr_dmabuf_host_range(0x30000, 65536, 65536, &va, &len) == 0 && va == 0x30000 &&
                    len == 65536, "wb_dmabuf/host_range_64k", "va %#llx len %llu",
                (unsigned long long)va, (unsigned long long)len);
        t_check(vr_dmabuf_host_range(UINT64_MAX - 10, 5, 4096, &va, &len) == EINVAL &&
                    vr_dmabuf_host_range(1, 0, 4096, &va, &len) == EINVAL,
                "wb_dmabuf/host_range_wrap_einval", "accepted");
    }
    t_check(vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, EMFILE) == EMFILE &&
                vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, ENFILE) == ENFILE &&
                vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, 0) == ENOTSUP &&
                vr_dmabuf_export_errno(CUDA_ERROR_OUT_OF_MEMORY, 0) == ENOMEM &&
                vr_dmabuf_export_errno(CUDA_ERROR_INVALID_VALUE, EMFILE) == ENOTSUP,
            "wb_dmabuf/export_errno", "wrong errno");
    rc = vr_dmabuf_mmap_error(VR_KERNEL_ENOTSUPP, 13030, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "13.3") && strstr(why, "this buffer"),
            "wb_dmabuf/mmap_524_on_13_3_is_this_buffers", "rc %d why '%s'", rc, why);
    t_check(vr_dmabuf_trial_settled(0) && vr_dmabuf_trial_settled(ENOTSUP) &&
                vr_dmabuf_trial_settled(EINVAL) && !vr_dmabuf_trial_settled(ENOMEM) &&
                !vr_dmabuf_trial_settled(EMFILE) && !vr_dmabuf_trial_settled(EAGAIN),
            "wb_dmabuf/trial_kept_only_when_settled", "wrong verdict");
    return t_status();
}
