// A deliberately slow translation unit: the compiler evaluates MINI_SLOW_STEPS rounds of a
// xorshift generator at compile time (real compiler work, no sleep), so a test can interrupt a
// build while this file is being compiled. Built only with -DMINI_SLOW_TU=<steps>.
#ifndef MINI_SLOW_STEPS
#define MINI_SLOW_STEPS 1000
#endif

static constexpr unsigned long long mini_slow_mix(unsigned long long n) {
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    for (unsigned long long i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

extern "C" unsigned long long mini_slow_value(void) {
    constexpr unsigned long long v = mini_slow_mix(MINI_SLOW_STEPS);
    return v;
}
