/* SPDX-License-Identifier: MIT */
/* gdrconfig.h - which CPU family the gdrapi headers are being compiled for. */
#ifndef GDRCONFIG_H
#define GDRCONFIG_H

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define GDRAPI_X86 1
#elif defined(__aarch64__)
#define GDRAPI_ARM64 1
#elif defined(__powerpc64__) || defined(__PPC64__)
#define GDRAPI_POWER 1
#else
#error "gdrapi: this CPU architecture is not supported"
#endif

#endif /* GDRCONFIG_H */
