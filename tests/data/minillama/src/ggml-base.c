#include "ggml-backend.h"
#include <stdio.h>
#if defined(_WIN32)
#  include <windows.h>
#else
#  include <dlfcn.h>
#  include <unistd.h>
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
    if (access(path, F_OK) != 0) return NULL; /* like ggml: only backends that are there */
    void * h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    /* ggml's own messages (ggml/src/ggml-backend-reg.cpp, load_backend) */
    if (!h) { fprintf(stderr, "load_backend: failed to load %s: %s\n", path, dlerror()); return NULL; }
    ggml_backend_init_t init = (ggml_backend_init_t) dlsym(h, "ggml_backend_init");
#endif
    ggml_backend_i * b = init ? init() : NULL;
    if (b) fprintf(stderr, "load_backend: loaded %s backend from %s\n", b->name, path);
    return b;
}
