/* One small shared library of llama.cpp's shape (llama, ggml, llama-common, mtmd, the *-impl
   tool libraries): MINI_PART names it; it exports <name>_version() and calls into its dependency
   so the dynamic links are real. */
#include "ggml-backend.h"

#ifndef MINI_DEP
#define MINI_DEP ggml_build_info
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

MINI_EXPORT const char * CAT(MINI_PART, _version)(void) { return MINI_DEP(); }
