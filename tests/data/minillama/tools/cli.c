/* llama-cli stand-in: loads the backends beside the executable and scales a vector with each. */
#include "ggml-backend.h"
#include <stdio.h>
#include <string.h>

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
    printf("build %s\n", ggml_build_info());
    const char * names[] = { "cpu", "cuda" };
    for (int i = 0; i < 2; i++) {
        ggml_backend_i * b = ggml_backend_load(dir, names[i]);
        if (!b) { printf("%s: not available\n", names[i]); continue; }
        float x[4] = { 1, 2, 3, 4 };
        int devices = b->device_count();
        int rc = devices > 0 ? b->scale(x, 4, 2.0f) : -1;
        printf("%s: %d device(s)%s%s\n", b->name, devices, rc == 0 ? ", scale ok: " : "", rc == 0 ? (x[3] == 8.0f ? "8" : "wrong") : "");
    }
    (void) argc;
    return 0;
}
