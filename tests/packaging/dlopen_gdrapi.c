/* SPDX-License-Identifier: MIT */
/*
 * dlopen_gdrapi.c - what clients such as UCX and NCCL do: dlopen the library by each name given
 * on the command line and resolve every gdr_* symbol of the GDRCopy 2.6 ABI. All names must
 * lead to the same file. Exit 0 when everything resolves.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const symbols[] = {
    "gdr_open", "gdr_close", "gdr_pin_buffer", "gdr_pin_buffer_v2", "gdr_unpin_buffer",
    "gdr_get_callback_flag", "gdr_get_info", "gdr_get_info_v2", "gdr_map", "gdr_map_v2",
    "gdr_unmap", "gdr_copy_to_mapping", "gdr_copy_from_mapping", "gdr_runtime_get_version",
    "gdr_driver_get_version", "gdr_get_attribute", "gdr_get_mapping_type_string",
};

/* The real path of the file that defines sym, for comparing the names' targets. */
static int file_of(void *sym, char *path)
{
    Dl_info info;
    return dladdr(sym, &info) && info.dli_fname && realpath(info.dli_fname, path) ? 0 : -1;
}

int main(int argc, char **argv)
{
    char first[PATH_MAX] = "", path[PATH_MAX];
    int bad = 0;

    for (int i = 1; i < argc; i++) {
        void *lib = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            printf("dlopen(%s): %s\n", argv[i], dlerror());
            bad = 1;
            continue;
        }
        unsigned found = 0;
        strcpy(path, "?");
        for (size_t s = 0; s < sizeof(symbols) / sizeof(symbols[0]); s++) {
            void *p = dlsym(lib, symbols[s]);
            if (p)
                found++;
            else
                printf("%s: %s unresolved\n", argv[i], symbols[s]);
            if (p && s == 0 && file_of(p, path) == 0) {
                if (!first[0])
                    strcpy(first, path);
                else if (strcmp(first, path) != 0)
                    printf("%s is %s, not %s\n", argv[i], path, first), bad = 1;
            }
        }
        printf("%s: %u of %zu symbols from %s\n", argv[i], found,
               sizeof(symbols) / sizeof(symbols[0]), path);
        if (found != sizeof(symbols) / sizeof(symbols[0]))
            bad = 1;
        dlclose(lib);
    }
    return bad;
}
