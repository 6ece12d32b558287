/* SPDX-License-Identifier: MIT */
/*
 * dlopen_client.c - what UCX, NCCL and libfabric do: dlopen the library by name (both names
 * they use) and look up every gdr_* entry point; then call two that need no GPU.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {
    "gdr_open", "gdr_close", "gdr_pin_buffer", "gdr_pin_buffer_v2", "gdr_unpin_buffer",
    "gdr_get_callback_flag", "gdr_get_info", "gdr_get_info_v2", "gdr_map", "gdr_map_v2",
    "gdr_unmap", "gdr_copy_to_mapping", "gdr_copy_from_mapping", "gdr_runtime_get_version",
    "gdr_driver_get_version", "gdr_get_attribute", "gdr_get_mapping_type_string",
};

int main(void)
{
    static const char *const libs[] = { "libgdrapi.so", "libgdrapi.so.2" };
    unsigned i, j, missing;
    int fails = 0;

    for (i = 0; i < 2; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);

        if (!h) {
            printf("not ok dlopen_%s: %s\n", libs[i], dlerror());
            fails++;
            continue;
        }
        printf("ok dlopen_%s\n", libs[i]);
        missing = 0;
        for (j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
            if (!dlsym(h, names[j])) {
                printf("# %s: %s not found\n", libs[i], names[j]);
                missing++;
            }
        }
        printf("%s dlsym_all_gdr_%s%s\n", missing ? "not ok" : "ok", libs[i],
               missing ? ": symbols missing" : "");
        fails += missing != 0;
        if (i == 0) {
            void (*ver)(int *, int *) = (void (*)(int *, int *))dlsym(h, "gdr_runtime_get_version");
            int (*str)(int, const char **) =
                (int (*)(int, const char **))dlsym(h, "gdr_get_mapping_type_string");
            int major = 0, minor = 0;
            const char *s = NULL;

            if (ver)
                ver(&major, &minor);
            if (str)
                str(1, &s);
            printf("%s call_through_dlsym\n",
                   major == 2 && minor == 6 && s && !strcmp(s, "Write Combining") ? "ok" : "not ok");
            /* Linked -z nodelete: after dlclose the code stays, so pins, mappings, fork and
             * exit handlers that point into it (a program may dlclose with pins live) do not
             * dangle. */
            dlclose(h);
            h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
            major = 0;
            if (h && ver)
                ver(&major, &minor);
            printf("%s dlclose_keeps_library%s\n", h && major == 2 ? "ok" : "not ok",
                   h ? "" : ": unloaded by dlclose (not linked with -z nodelete)");
            fails += !h || major != 2;
            if (!h)
                continue;
        }
        dlclose(h);
    }
    return fails ? 1 : 0;
}
