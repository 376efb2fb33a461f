// The AVX-512 kernels with AVX512_VNNI (Ice Lake, Cascade Lake, Zen 4 and later): as avx512, but the int16
// tiles of many rows (int16_tiles.h) multiply and add in one instruction (vpdpwssd) instead of two.
#include "isa_prelude.h"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
#define RS_ENTRY(name) name##_avx512vnni
#define RS_VECTOR_REGISTERS 32  // AVX-512's register file: wider register tiles (linear_kernels.h)
#define RS_INT16_ZMM 1  // int16 activations: a group's products in one 512-bit register (int16_rows.h)
#define RS_INT16_VNNI 1  // the target pragma defines no __AVX512VNNI__: the paths say what they build
namespace rs_avx512vnni {
#include "cpu_kernels.cpp"
}  // namespace rs_avx512vnni
