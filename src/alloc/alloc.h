/* SPDX-License-Identifier: MIT */
/* alloc.h - what alloc_pluggable.c asks of alloc.c beyond the exported calls. */
#ifndef VRAMIO_ALLOC_H
#define VRAMIO_ALLOC_H

/* The GPU whose pool handed out the live block starting at ptr, or -1. */
int vr_alloc_gpu(unsigned long long ptr);

#endif /* VRAMIO_ALLOC_H */
