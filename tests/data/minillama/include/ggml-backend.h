/* The C ABI between ggml-base and a backend module (like ggml's backend registry). */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define MINI_EXPORT __declspec(dllexport)
#else
#  define MINI_EXPORT __attribute__((visibility("default")))
#endif
#if defined(_WIN32) && defined(GGML_BUILD)
#  define GGML_API __declspec(dllexport)
#elif defined(_WIN32)
#  define GGML_API __declspec(dllimport)
#else
#  define GGML_API __attribute__((visibility("default")))
#endif

typedef struct ggml_backend_i {
    const char * name;
    int (*device_count)(void);
    /* x[i] *= s for n floats; returns 0 on success (NULL: not provided) */
    int (*scale)(float * x, int n, float s);
    /* the optional members below may be NULL (a backend initialised with the first three) */
    /* device d's description, as ggml_backend_dev_description (llvmpipe (LLVM 15.0.6, 256 bits)) */
    const char * (*device_description)(int d);
    /* device d's memory in MiB */
    int (*device_mib)(int d);
    /* y[m] = A[m x k] (row-major) times x[k], f32, on device d; returns 0 on success */
    int (*mul_mat)(int d, const float * a, const float * x, float * y, int m, int k);
} ggml_backend_i;

typedef ggml_backend_i * (*ggml_backend_init_t)(void);

/* loads <dir>/<prefix>ggml-<name><suffix> and calls its ggml_backend_init; NULL if absent */
GGML_API ggml_backend_i * ggml_backend_load(const char * dir, const char * name);
GGML_API const char * ggml_build_info(void);
/* llama.cpp's common/build-info.cpp.in */
GGML_API int llama_build_number(void);
GGML_API const char * llama_commit(void);
GGML_API const char * llama_compiler(void);
GGML_API const char * llama_build_target(void);
GGML_API void llama_print_build_info(void);

#ifdef __cplusplus
}
#endif
