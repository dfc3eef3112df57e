/* llama-server / llama-quantize stand-ins: each entry point calls its *-impl library (the upstream
   split since b9283) and prints the build, like `--version`. */
#include <stdio.h>

const char * MINI_IMPL(void);

int main(void) {
    printf("%s build %s\n", MINI_NAME, MINI_IMPL());
    return 0;
}
