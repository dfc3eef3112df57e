#include "ggml-backend.h"

static int cpu_count(void) { return 1; }
static int cpu_scale(float * x, int n, float s) { for (int i = 0; i < n; i++) x[i] *= s; return 0; }
static const char * cpu_description(int d) { (void) d; return "CPU"; }
static int cpu_mul_mat(int d, const float * a, const float * x, float * y, int m, int k) {
    (void) d;
    for (int r = 0; r < m; r++) {
        float sum = 0.0f;
        for (int i = 0; i < k; i++) sum += a[r * k + i] * x[i];
        y[r] = sum;
    }
    return 0;
}
static ggml_backend_i cpu = { "CPU", cpu_count, cpu_scale, cpu_description, 0, cpu_mul_mat };

MINI_EXPORT ggml_backend_i * ggml_backend_init(void) { return &cpu; }
