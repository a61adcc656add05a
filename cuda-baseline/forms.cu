// The CUDA C++ baseline: the forms a CUDA C++ programmer writes for the jobs bitexact's
// Rust variants do, measured against them. Not part of the product: nothing in
// `cargo build` compiles this file. `bitexact sass --cxx` and the tests compile it at run
// time with NVRTC (host/wings/cuda_tools/src/baseline.rs), which also pairs each kernel with
// its Rust variant and states what it is expected to get right.
//
// Each FORM(name, In, Bits) line below defines two kernels with the signature of the
// Rust variant's Map kernel, `(const In*, Bits*, unsigned long long n)`, grid-stride:
//   cxx_<name>            output[i] = name(input[i])
//   cxx_<name>_skeleton   output[i] = (Bits)input[i], the same loop without the work,
//                         which the SASS report subtracts as it does for the Rust kernels.
// and the two timing kernels of the Rust variants, `(unsigned long long seed, unsigned
// int iterations, unsigned long long* out)`, with the same chain step as
// kernels-gpu/src/device.rs (`chain_step`): x ^ spread(name(x)), spread taking the
// result's bits r to the input's width as the top bits of r * MIX:
//   cxx_<name>_latency     one thread, one dependent chain; out[0] = its clock64 cycles,
//                          out[1] = its final value
//   cxx_<name>_throughput  every thread four independent chains; out[thread] = their
//                          final values XOR-ed
// Results are stored as bits: bool as one byte, float as its 32 bits, half as 16.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// The timing chains' mixing multiplier, kernels-gpu's MIX: odd, 2^32 / phi.
#define CHAIN_MIX 0x9E3779B9u

// The top bits of the 32-bit mix m, as many as In has (kernels-gpu's FromMixed).
template <typename In> static __device__ __forceinline__ In from_mixed(unsigned int m) {
    return (In)(m >> (32 - 8 * sizeof(In)));
}

#define FORM(name, In, Bits)                                                                    \
    static __device__ __forceinline__ In chain_step_##name(In x) {                             \
        return (In)(x ^ from_mixed<In>((unsigned int)(Bits)name(x) * CHAIN_MIX));               \
    }                                                                                           \
    extern "C" __global__ void cxx_##name##_latency(unsigned long long seed, unsigned int iterations, \
                                                    unsigned long long* out) {                  \
        unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;  \
        In x = (In)(seed ^ thread);                                                             \
        long long start = clock64();                                                            \
        for (unsigned int k = 0; k < iterations; ++k) x = chain_step_##name(x);                 \
        long long cycles = clock64() - start;                                                   \
        out[0] = (unsigned long long)cycles;                                                    \
        out[1] = (unsigned long long)x;                                                         \
    }                                                                                           \
    extern "C" __global__ void cxx_##name##_throughput(unsigned long long seed, unsigned int iterations, \
                                                       unsigned long long* out) {               \
        unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;  \
        unsigned long long base = seed ^ (thread * 0x9E3779B97F4A7C15ull);                      \
        In a = (In)base, b = (In)(base ^ 1), c = (In)(base ^ 2), d = (In)(base ^ 3);             \
        for (unsigned int k = 0; k < iterations; ++k) {                                         \
            a = chain_step_##name(a);                                                           \
            b = chain_step_##name(b);                                                           \
            c = chain_step_##name(c);                                                           \
            d = chain_step_##name(d);                                                           \
        }                                                                                       \
        out[thread] = (unsigned long long)a ^ b ^ c ^ d;                                        \
    }                                                                                           \
    extern "C" __global__ void cxx_##name(const In* input, Bits* output, unsigned long long n) {  \
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;                 \
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;  \
             i < n; i += stride) {                                                              \
            output[i] = (Bits)name(input[i]);                                                   \
        }                                                                                       \
    }                                                                                           \
    extern "C" __global__ void cxx_##name##_skeleton(const In* input, Bits* output,             \
                                                     unsigned long long n) {                    \
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;                 \
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;  \
             i < n; i += stride) {                                                              \
            output[i] = (Bits)input[i];                                                         \
        }                                                                                       \
    }

#define DEVICE static __device__ __forceinline__

// ---- binary16 is-finite: bits in, one byte (0 or 1) out ----

DEVICE bool f16_finite_exp_mask(unsigned short b) { return (b & 0x7C00) != 0x7C00; }
FORM(f16_finite_exp_mask, unsigned short, unsigned char)

DEVICE bool f16_finite_abs_bits_lt_inf(unsigned short b) { return (b & 0x7FFF) < 0x7C00; }
FORM(f16_finite_abs_bits_lt_inf, unsigned short, unsigned char)

DEVICE bool f16_finite_hisinf_hisnan(unsigned short b) {
    __half h = __ushort_as_half(b);
    return !__hisinf(h) && !__hisnan(h);
}
FORM(f16_finite_hisinf_hisnan, unsigned short, unsigned char)

DEVICE bool f16_finite_hlt_habs_inf(unsigned short b) {
    return __hlt(__habs(__ushort_as_half(b)), __ushort_as_half(0x7C00));
}
FORM(f16_finite_hlt_habs_inf, unsigned short, unsigned char)

DEVICE bool f16_finite_isfinite_half2float(unsigned short b) {
    return isfinite(__half2float(__ushort_as_half(b)));
}
FORM(f16_finite_isfinite_half2float, unsigned short, unsigned char)

// The negative control: the unordered compare is true for NaN.
DEVICE bool f16_finite_hltu_habs_inf(unsigned short b) {
    return __hltu(__habs(__ushort_as_half(b)), __ushort_as_half(0x7C00));
}
FORM(f16_finite_hltu_habs_inf, unsigned short, unsigned char)

// ---- UNORM8 -> f32: a byte in, the float's 32 bits out ----

DEVICE unsigned int unorm8_div(unsigned char x) { return __float_as_uint((float)x / 255.0f); }
FORM(unorm8_div, unsigned char, unsigned int)

DEVICE unsigned int unorm8_mul_recip(unsigned char x) { return __float_as_uint((float)x * (1.0f / 255.0f)); }
FORM(unorm8_mul_recip, unsigned char, unsigned int)

DEVICE unsigned int unorm8_via_double(unsigned char x) { return __float_as_uint((float)((double)x * (1.0 / 255.0))); }
FORM(unorm8_via_double, unsigned char, unsigned int)

// k0 = (1 + 2^8 + 2^16) / 2^24, k1 = k0 / 2^24: both exact in float.
#define UNORM8_K0 (65793.0f / 16777216.0f)
#define UNORM8_K1 (UNORM8_K0 / 16777216.0f)

DEVICE unsigned int unorm8_series(unsigned char x) {
    float t = (float)x;
    return __float_as_uint(t * UNORM8_K0 + t * UNORM8_K1);
}
FORM(unorm8_series, unsigned char, unsigned int)

DEVICE unsigned int unorm8_series_fmaf(unsigned char x) {
    float t = (float)x;
    return __float_as_uint(fmaf(t, UNORM8_K0, t * UNORM8_K1));
}
FORM(unorm8_series_fmaf, unsigned char, unsigned int)

DEVICE unsigned int unorm8_times3_float(unsigned char x) {
    return __float_as_uint(((float)x * 3.0f) * (1.0f / 765.0f));
}
FORM(unorm8_times3_float, unsigned char, unsigned int)

DEVICE unsigned int unorm8_times3_int(unsigned char x) {
    return __float_as_uint((float)(x * 3u) * (1.0f / 765.0f));
}
FORM(unorm8_times3_int, unsigned char, unsigned int)

// ---- f32 -> binary16 / bfloat16 / FP8: the float's 32 bits in, the narrow bits out ----

DEVICE unsigned short f32_to_f16_rn(unsigned int b) { return __half_as_ushort(__float2half_rn(__uint_as_float(b))); }
FORM(f32_to_f16_rn, unsigned int, unsigned short)

DEVICE unsigned short f32_to_bf16_rn(unsigned int b) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(__uint_as_float(b)));
}
FORM(f32_to_bf16_rn, unsigned int, unsigned short)

DEVICE unsigned char f32_to_e4m3_nosat(unsigned int b) {
    return __nv_cvt_float_to_fp8(__uint_as_float(b), __NV_NOSAT, __NV_E4M3);
}
FORM(f32_to_e4m3_nosat, unsigned int, unsigned char)

DEVICE unsigned char f32_to_e4m3_satfinite(unsigned int b) {
    return __nv_cvt_float_to_fp8(__uint_as_float(b), __NV_SATFINITE, __NV_E4M3);
}
FORM(f32_to_e4m3_satfinite, unsigned int, unsigned char)

DEVICE unsigned char f32_to_e5m2_nosat(unsigned int b) {
    return __nv_cvt_float_to_fp8(__uint_as_float(b), __NV_NOSAT, __NV_E5M2);
}
FORM(f32_to_e5m2_nosat, unsigned int, unsigned char)

DEVICE unsigned char f32_to_e5m2_satfinite(unsigned int b) {
    return __nv_cvt_float_to_fp8(__uint_as_float(b), __NV_SATFINITE, __NV_E5M2);
}
FORM(f32_to_e5m2_satfinite, unsigned int, unsigned char)

// ---- binary16 / bfloat16 / FP8 -> f32: the narrow bits in, the float's 32 bits out ----

DEVICE unsigned int f16_to_f32_half2float(unsigned short b) { return __float_as_uint(__half2float(__ushort_as_half(b))); }
FORM(f16_to_f32_half2float, unsigned short, unsigned int)

DEVICE unsigned int bf16_to_f32_bfloat162float(unsigned short b) {
    return __float_as_uint(__bfloat162float(__ushort_as_bfloat16(b)));
}
FORM(bf16_to_f32_bfloat162float, unsigned short, unsigned int)

DEVICE unsigned int e4m3_to_f32_via_halfraw(unsigned char b) {
    return __float_as_uint(__half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3))));
}
FORM(e4m3_to_f32_via_halfraw, unsigned char, unsigned int)

DEVICE unsigned int e5m2_to_f32_via_halfraw(unsigned char b) {
    return __float_as_uint(__half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E5M2))));
}
FORM(e5m2_to_f32_via_halfraw, unsigned char, unsigned int)
