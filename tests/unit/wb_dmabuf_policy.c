// SPDX-License-Identifier: MIT
/*
 * wb_dmabuf_policy.c - the dma-buf backend's decisions, without a GPU: which CUDA driver may
 * mmap exports, what a failed mmap (errno 524 above all) is reported as, which export flags a
 * pin asks for and when a refused PCIE flag is retried without it, and the
 * GDRCOPY_USE_DMABUF_MMAP switch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
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

    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    t_check(!vr_dmabuf_forced(), "wb_dmabuf/not_forced_unset", "forced");
    setenv("GDRCOPY_USE_DMABUF_MMAP", "0", 1);
    t_check(!vr_dmabuf_forced(), "wb_dmabuf/not_forced_0", "forced");
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    t_check(vr_dmabuf_forced(), "wb_dmabuf/forced_1", "not forced");
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    return t_status();
}
