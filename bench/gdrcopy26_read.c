// SPDX-License-Identifier: MIT
/*
 * gdrcopy26_read.c - GDRCopy 2.6's own read code, for bench/read_bench.cu to run beside ours
 * on the same mapping. GDRCopy's library cannot be used for that (its pins need its module),
 * and its read path is a static function of its src/gdrapi.c: this file includes that file,
 * named at build time (-DGDRCOPY26_GDRAPI_C="<dir>/src/gdrapi.c"), so its CPU feature setup
 * and its read, as GDRCopy compiles them, can be called. Built only from GDRCopy's source
 * outside this repository, by tests/gpu/run_reads_on_gpu.sh, into a shared object of its own
 * (every name hidden but these two, so that its gdr_* names meet ours nowhere).
 */
#include GDRCOPY26_GDRAPI_C

__attribute__((visibility("default"))) void gdrcopy26_init(void)
{
    gdr_init_cpu_flags();
}

/* A read of n bytes from a WC mapping, as gdr_copy_from_mapping does it in GDRCopy 2.6. */
__attribute__((visibility("default"))) int gdrcopy26_read(void *dst, const void *src, size_t n)
{
    return gdr_copy_from_mapping_internal(dst, src, n, GDR_MAPPING_TYPE_WC);
}
