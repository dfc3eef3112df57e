#include "ggml-backend.h"
#include "common.cuh"

static int cuda_count(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
static int cuda_scale(float * x, int n, float s) { return mini_cuda_scale(x, n, s); }
static ggml_backend_i cuda = { "CUDA", cuda_count, cuda_scale };

extern "C" MINI_EXPORT ggml_backend_i * ggml_backend_init(void) { return &cuda; }
