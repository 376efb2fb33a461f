// The kernels for AVX2 + FMA + F16C: the baseline, which every CPU the kernels run on has.
#include "isa_prelude.h"
#pragma GCC target("avx2,fma,f16c")
#define RS_ENTRY(name) name##_avx2
namespace rs_avx2 {
#include "cpu_kernels.cpp"
}  // namespace rs_avx2
