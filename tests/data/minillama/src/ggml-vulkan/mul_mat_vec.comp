// y = A x for a row-major f32 matrix A (m rows, k columns) and a vector x of k floats: one
// invocation per row. Compiled to SPIR-V by glslc at build time and embedded in ggml-vulkan
// (cmake/embed.cmake), as ggml-vulkan compiles and embeds its shaders.
#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Dims { uint m; uint k; } p;

void main() {
    uint row = gl_GlobalInvocationID.x;
    if (row >= p.m) return;
    float sum = 0.0;
    for (uint i = 0; i < p.k; i++) sum += a[row * p.k + i] * x[i];
    y[row] = sum;
}
