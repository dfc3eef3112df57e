#include "ggml-backend.h"
#include <stdio.h>
#if defined(_WIN32)
#  include <windows.h>
#else
#  include <dlfcn.h>
#endif

ggml_backend_i * ggml_backend_load(const char * dir, const char * name) {
    char path[4096];
#if defined(_WIN32)
    snprintf(path, sizeof path, "%s\\ggml-%s.dll", dir, name);
    HMODULE h = LoadLibraryA(path);
    if (!h) return NULL;
    ggml_backend_init_t init = (ggml_backend_init_t) GetProcAddress(h, "ggml_backend_init");
#else
    snprintf(path, sizeof path, "%s/libggml-%s.so", dir, name);
    void * h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return NULL; }
    ggml_backend_init_t init = (ggml_backend_init_t) dlsym(h, "ggml_backend_init");
#endif
    return init ? init() : NULL;
}
