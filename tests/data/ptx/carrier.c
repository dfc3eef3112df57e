/* A CUDA backend library's shape for verify: the fatbin that fatbinary embedded (in .nv_fatbin,
   as nvcc's host stub does) and ggml's backend entry point. */
#include "fatbin.c"
void *ggml_backend_init(void) { return (void *)&__fatDeviceText; }
