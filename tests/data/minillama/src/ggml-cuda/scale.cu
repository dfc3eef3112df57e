#include "common.cuh"

static __global__ void scale_f32(float * x, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

#include <cstdio>

int mini_cuda_scale(float * x, int n, float s) {
    if (n < 0) {  // like ggml's asserts, the object holds the source's path (__FILE__)
        std::fprintf(stderr, "%s:%d: n < 0\n", __FILE__, __LINE__);
        return 1;
    }
    float * d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
    cudaMemcpy(d, x, n * sizeof(float), cudaMemcpyHostToDevice);
    scale_f32<<<(n + 255) / 256, 256>>>(d, n, s);
    cudaError_t e = cudaMemcpy(x, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return e == cudaSuccess ? 0 : 1;
}
