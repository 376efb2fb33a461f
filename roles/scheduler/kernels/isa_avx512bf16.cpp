// The AVX-512 kernels with BF16 dot products (AVX512_BF16, which every CPU that has it pairs with AVX512_VNNI:
// Zen 4 and later, Cooper Lake, Sapphire Rapids): as avx512vnni, and whole 8-row tiles of a linear whose
// weights are not integer codes (float tensor types, or every type with float32 activations) multiply in
// bfloat16 with float32 sums (bf16_tiles.h).
#include "isa_prelude.h"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16")
#define RS_ENTRY(name) name##_avx512bf16
#define RS_VECTOR_REGISTERS 32  // AVX-512's register file: wider register tiles (linear_kernels.h)
#define RS_INT16_ZMM 1  // int16 activations: a group's products in one 512-bit register (int16_rows.h)
#define RS_INT16_VNNI 1  // int16 tiles in vpdpwssd (int16_tiles.h)
#define RS_BF16_TILES 1  // the target pragma defines no __AVX512BF16__: the paths say what they build
namespace rs_avx512bf16 {
#include "cpu_kernels.cpp"
}  // namespace rs_avx512bf16
