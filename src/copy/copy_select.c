// SPDX-License-Identifier: MIT
/*
 * copy_select.c - which copy kernels this CPU runs (its features: arch/cpu_features.c), and
 * the choice of one from the table it is given (automatic, or forced by
 * GDRCOPY_COPY_KERNEL=<name>). Runs once per
 * process, from copy.c's constructor; the copy loops never look at CPU features.
 */
#include <stdint.h>
#include <string.h>

#include "copy_kernels.h"
#include "process/log.h"

int vr_copy_kernel_usable(const struct vr_copy_kernel *k, unsigned features)
{
    return (k->needs & features) == k->needs;
}

const struct vr_copy_kernel *vr_copy_choose_from(const struct vr_copy_kernel *ks, size_t count,
                                                 unsigned features, const char *forced)
{
    size_t i;
    const struct vr_copy_kernel *best = NULL;

    for (i = 0; i < count && !best; i++)
        if (vr_copy_kernel_usable(&ks[i], features))
            best = &ks[i];
    if (!forced || !*forced)
        return best;
    for (i = 0; i < count; i++) {
        if (strcmp(ks[i].name, forced) != 0)
            continue;
        if (vr_copy_kernel_usable(&ks[i], features))
            return &ks[i];
        vr_warn("GDRCOPY_COPY_KERNEL=%s: this CPU cannot run it; using %s", forced, best->name);
        return best;
    }
    vr_warn("GDRCOPY_COPY_KERNEL=%s: no such copy kernel here; using %s", forced, best->name);
    return best;
}
