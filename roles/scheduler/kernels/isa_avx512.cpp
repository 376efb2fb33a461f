// The kernels for AVX-512 (F, BW, DQ, VL) with FMA and F16C: the baseline's code compiled with EVEX
// encodings, 32 vector registers and 512-bit vectors where the compiler widens the plain loops.
#include "isa_prelude.h"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")
#define RS_ENTRY(name) name##_avx512
#define RS_VECTOR_REGISTERS 32  // AVX-512's register file: wider register tiles (linear_kernels.h)
#define RS_INT16_ZMM 1  // int16 activations: a group's products in one 512-bit register (int16_rows.h)
namespace rs_avx512 {
#include "cpu_kernels.cpp"
}  // namespace rs_avx512
