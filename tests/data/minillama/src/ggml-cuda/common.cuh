#pragma once
#include <cuda_runtime.h>
int mini_cuda_scale(float * x, int n, float s);
