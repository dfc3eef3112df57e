#include "ggml-backend.h"

static int cpu_count(void) { return 1; }
static int cpu_scale(float * x, int n, float s) { for (int i = 0; i < n; i++) x[i] *= s; return 0; }
static ggml_backend_i cpu = { "CPU", cpu_count, cpu_scale };

MINI_EXPORT ggml_backend_i * ggml_backend_init(void) { return &cpu; }
