/* llama-cli stand-in: loads the backends beside the executable and computes with each, saying
   which backend and device ran (a GPU backend that loads but finds no device shows as such, so a
   fallback to the CPU is visible). `--list-devices` also prints llama.cpp's device list
   (common/arg.cpp, common_print_available_devices: every device that is not the CPU). */
#include "ggml-backend.h"
#include <stdio.h>
#include <string.h>

#define M 8
#define K 16

int main(int argc, char ** argv) {
    char dir[4096];
    strncpy(dir, argv[0], sizeof dir - 1);
    dir[sizeof dir - 1] = 0;
    char * slash = strrchr(dir, '/');
#if defined(_WIN32)
    char * bs = strrchr(dir, '\\');
    if (!slash || (bs && bs > slash)) slash = bs;
#endif
    if (slash) *slash = 0; else strcpy(dir, ".");
    if (argc > 1 && strcmp(argv[1], "--version") == 0) { /* llama_print_build_info's lines */
        llama_print_build_info();
        return 0;
    }
    int list = argc > 1 && strcmp(argv[1], "--list-devices") == 0;
    printf("build %s\n", ggml_build_info());
    /* the reference product, computed here */
    float a[M * K], x[K], want[M];
    for (int i = 0; i < M * K; i++) a[i] = (float) ((i * 7) % 11) - 5.0f;
    for (int i = 0; i < K; i++) x[i] = 0.25f * (float) (i % 5);
    for (int r = 0; r < M; r++) {
        want[r] = 0.0f;
        for (int i = 0; i < K; i++) want[r] += a[r * K + i] * x[i];
    }
    const char * names[] = { "cpu", "cuda", "vulkan" };
    ggml_backend_i * gpu[3];
    int ngpu = 0, wrong = 0;
    for (int i = 0; i < 3; i++) {
        ggml_backend_i * b = ggml_backend_load(dir, names[i]);
        if (!b) { printf("%s: not available\n", names[i]); continue; }
        int devices = b->device_count();
        if (b->scale) {
            float v[4] = { 1, 2, 3, 4 };
            int rc = devices > 0 ? b->scale(v, 4, 2.0f) : -1;
            printf("%s: %d device(s)%s%s\n", b->name, devices, rc == 0 ? ", scale ok: " : "", rc == 0 ? (v[3] == 8.0f ? "8" : "wrong") : "");
        } else {
            printf("%s: %d device(s)\n", b->name, devices);
        }
        for (int d = 0; b->mul_mat && d < devices && i > 0; d++) {
            float y[M];
            int ok = b->mul_mat(d, a, x, y, M, K) == 0;
            for (int r = 0; ok && r < M; r++) ok = y[r] - want[r] <= 1e-4f && want[r] - y[r] <= 1e-4f;
            printf("%s: mul_mat ran on %s%d (%s): %s\n", b->name, b->name, d,
                   b->device_description ? b->device_description(d) : "?", ok ? "ok" : "WRONG");
            wrong += !ok;
        }
        if (i > 0 && devices > 0) gpu[ngpu++] = b;
    }
    if (list) {
        printf("Available devices:\n");
        if (ngpu == 0) printf("  (none)\n");
        for (int g = 0; g < ngpu; g++) {
            for (int d = 0; d < gpu[g]->device_count(); d++) {
                int mib = gpu[g]->device_mib ? gpu[g]->device_mib(d) : 0;
                printf("  %s%d: %s (%d MiB, %d MiB free)\n", gpu[g]->name, d,
                       gpu[g]->device_description ? gpu[g]->device_description(d) : gpu[g]->name, mib, mib);
            }
        }
    }
    return wrong ? 1 : 0;
}
