// SPDX-License-Identifier: MIT
/*
 * plugin.c - a plugin loaded RTLD_LOCAL (as Python loads an extension) that looks up its own
 * dependency's symbol with dlsym(RTLD_DEFAULT): glibc searches from the caller's scope, which
 * holds the plugin's dependencies.
 */
#include <dlfcn.h>

__attribute__((visibility("default"))) int plugin_probe(void)
{
    int (*dep)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "plugin_dep_value");

    return dep ? dep() : -1;
}
