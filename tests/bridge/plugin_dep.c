// SPDX-License-Identifier: MIT
/* plugin_dep.c - the dependency of plugin.c: a symbol that only the plugin's scope holds. */
__attribute__((visibility("default"))) int plugin_dep_value(void)
{
    return 4242;
}
