// The kernels for AVX-512 (F, BW, DQ, VL) with FMA and F16C: the same code as the baseline, compiled with
// 32 vector registers and EVEX encodings, plus the 512-bit paths written for it (#ifdef __AVX512F__).
#include "isa_prelude.h"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")
#define RS_ENTRY(name) name##_avx512
namespace rs_avx512 {
#include "cpu_kernels.cpp"
}  // namespace rs_avx512
