#include "common.cuh"

static __global__ void scale_f32(float * x, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

int mini_cuda_scale(float * x, int n, float s) {
    float * d = nullptr;
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess) return 1;
    cudaMemcpy(d, x, n * sizeof(float), cudaMemcpyHostToDevice);
    scale_f32<<<(n + 255) / 256, 256>>>(d, n, s);
    cudaError_t e = cudaMemcpy(x, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return e == cudaSuccess ? 0 : 1;
}
