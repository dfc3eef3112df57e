/* test-backend-ops stand-in (llama.cpp's tests/test-backend-ops.cpp, its `test` mode): runs the
   op cases on each device of the backends beside the executable and compares each result with
   the CPU backend's, printing llama.cpp's lines ("  MUL_MAT(<params>): OK", "  k/n tests passed",
   "  Backend <dev>: OK"). The stand-in has one op, MUL_MAT, with f32 cases only (its shader's).
   Usage: test-backend-ops [test] [-o OP[,OP]] [-b DEV] [-p PARAMS_REGEX] [-j N]. */
#include "ggml-backend.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#  include <regex.h>
#endif

static const int CASES[][2] = { { 16, 256 }, { 1, 1 }, { 33, 7 }, { 64, 256 } }; /* m, k */

static int wanted(const char * list, const char * op) {
    if (!list) return 1;
    size_t n = strlen(op);
    for (const char * s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
        if (strncmp(s, op, n) == 0 && (s[n] == 0 || s[n] == ',')) return 1;
    }
    return 0;
}

static int params_match(const char * regex, const char * params) {
    if (!regex) return 1;
#if defined(_WIN32)
    return strstr(params, regex) != NULL;
#else
    regex_t re;
    if (regcomp(&re, regex, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "invalid params regex: %s\n", regex);
        exit(1);
    }
    int ok = regexec(&re, params, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
#endif
}

int main(int argc, char ** argv) {
    const char *ops = NULL, *dev = NULL, *params = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "test") == 0) continue;
        if (i + 1 < argc && strcmp(argv[i], "-o") == 0) ops = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-b") == 0) dev = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-p") == 0) params = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-j") == 0) ++i;
        else { fprintf(stderr, "usage: %s [test] [-o OP] [-b DEV] [-p REGEX] [-j N]\n", argv[0]); return 1; }
    }
    char dir[4096];
    strncpy(dir, argv[0], sizeof dir - 1);
    dir[sizeof dir - 1] = 0;
    char * slash = strrchr(dir, '/');
#if defined(_WIN32)
    char * bs = strrchr(dir, '\\');
    if (!slash || (bs && bs > slash)) slash = bs;
#endif
    if (slash) *slash = 0; else strcpy(dir, ".");
    ggml_backend_i * cpu = ggml_backend_load(dir, "cpu");
    if (!cpu || !cpu->mul_mat) { fprintf(stderr, "no CPU backend beside %s\n", argv[0]); return 1; }
    const char * names[] = { "cuda", "vulkan" };
    ggml_backend_i * b[2];
    int count = 0;
    for (int i = 0; i < 2; i++) {
        if ((b[i] = ggml_backend_load(dir, names[i]))) count += b[i]->device_count();
    }
    printf("Testing %d devices\n\n", count + 1);
    int idx = 0, backends_ok = 0, backends = 0, failed = 0;
    for (int i = 0; i < 2; i++) {
        for (int d = 0; b[i] && d < b[i]->device_count(); d++) {
            char name[64];
            snprintf(name, sizeof name, "%s%d", b[i]->name, d);
            printf("Backend %d/%d: %s\n", ++idx, count + 1, name);
            if (dev && strcmp(dev, name) != 0) { printf("  Skipping\n"); continue; }
            printf("  Device description: %s\n", b[i]->device_description ? b[i]->device_description(d) : name);
            int passed = 0, total = 0;
            for (size_t c = 0; b[i]->mul_mat && wanted(ops, "MUL_MAT") && c < sizeof CASES / sizeof CASES[0]; c++) {
                int m = CASES[c][0], k = CASES[c][1];
                char p[192];
                /* llama.cpp's params string of a plain MUL_MAT case (tests/test-backend-ops.cpp, test_mul_mat::vars) */
                snprintf(p, sizeof p,
                         "type_a=f32,type_b=f32,m=%d,n=1,k=%d,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1,src_overlap=0,m_v=0,pad=0",
                         m, k);
                if (!params_match(params, p)) continue;
                float * a = malloc(sizeof(float) * m * k), * x = malloc(sizeof(float) * k);
                float * y = malloc(sizeof(float) * m), * ref = malloc(sizeof(float) * m);
                for (int j = 0; j < m * k; j++) a[j] = (float) ((j * 13) % 17) / 8.0f - 1.0f;
                for (int j = 0; j < k; j++) x[j] = (float) ((j * 5) % 9) / 4.0f - 1.0f;
                int ok = cpu->mul_mat(0, a, x, ref, m, k) == 0 && b[i]->mul_mat(d, a, x, y, m, k) == 0;
                double err = 0, norm = 0; /* NMSE, as test-backend-ops judges MUL_MAT */
                for (int r = 0; ok && r < m; r++) { err += (y[r] - ref[r]) * (y[r] - ref[r]); norm += ref[r] * ref[r]; }
                ok = ok && (norm == 0 ? err == 0 : err / norm <= 5e-4);
                printf("  MUL_MAT(%s): %s\n", p, ok ? "OK" : "FAIL");
                passed += ok;
                total++;
                free(a); free(x); free(y); free(ref);
            }
            printf("  %d/%d tests passed\n", passed, total);
            printf("  Backend %s: %s\n", name, passed == total ? "OK" : "FAIL");
            backends++;
            backends_ok += passed == total;
            failed += passed != total;
        }
    }
    printf("Backend %d/%d: CPU\n  Skipping CPU backend\n", count + 1, count + 1);
    printf("%d/%d backends passed\n%s\n", backends_ok + 1, backends + 1, failed ? "FAIL" : "OK");
    return failed ? 1 : 0;
}
