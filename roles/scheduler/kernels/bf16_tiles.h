// Whole 8-row tiles of a linear in AVX-512 BF16 dot products (vdpbf16ps), on the avx512bf16 path: each group
// of 32 weights is decoded to float32 as on every path, rounded to one register of 32 bfloat16s, and
// multiplied with the 8 input rows' bfloat16 copies, 32 products per instruction instead of 16 per FMA.
// Products are summed in float32; inputs and weights round to bfloat16 (8 significant bits). Rows after the
// last whole tile, and so a step of one sequence, stay float32: there the rounding costs more time than the
// dot products save (measured in docs/weights-and-kernels.md), and one row is bound by reading the weights.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "block_decode.h"  // and rs_part, RS_GROUP: included by linear_kernels.h after their declarations

constexpr bool RS_HAS_BF16_TILES = true;

// Rows [r0, r1) of x (ldx floats apart) as bfloat16, k values each, into xb (k apart).
static inline void rs_rows_to_bf16(const float* x, int64_t ldx, int64_t r0, int64_t r1, int64_t k, uint16_t* xb) {
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < k; c += 32) {
            const __m512 lo = _mm512_loadu_ps(x + r * ldx + c), hi = _mm512_loadu_ps(x + r * ldx + c + 16);
            _mm512_storeu_si512(xb + r * k + c, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        }
}

// A decoded group of 32 weights (four 8-float registers) as one register of 32 bfloat16s, in order.
static inline __m512bh rs_group_bf16(const __m256 w[4]) {
    const __m512 lo = _mm512_insertf32x8(_mm512_castps256_ps512(w[0]), w[1], 1);
    const __m512 hi = _mm512_insertf32x8(_mm512_castps256_ps512(w[2]), w[3], 1);
    return _mm512_cvtne2ps_pbh(hi, lo);
}

// out[r, n] for the RS_ROW_TILE rows of xb (k bfloat16s apart) and part rows n in [n0, n1); one accumulator
// per row, eight independent chains.
template <int TYPE>
static void rs_linear_tile_bf16(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const uint16_t* xb, int64_t k,
                                float* out, int64_t ldo) {
    using R = rs_reader<TYPE>;
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = p.data + n * p.row_bytes;
        __m512 acc[RS_ROW_TILE];
        for (int r = 0; r < RS_ROW_TILE; ++r) acc[r] = _mm512_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            R reader;
            reader.begin(row + b * R::BYTES);
#pragma GCC unroll 8
            for (int j = 0; j < R::GROUPS; ++j) {
                __m256 w[4];
                reader.group(j, w);
                const __m512bh weights = rs_group_bf16(w);
                const int64_t column = (b * R::GROUPS + j) * RS_GROUP;
                for (int r = 0; r < RS_ROW_TILE; ++r)
                    acc[r] = _mm512_dpbf16_ps(acc[r], weights, (__m512bh)_mm512_loadu_si512(xb + r * k + column));
            }
        }
        for (int r = 0; r < RS_ROW_TILE; ++r) out[r * ldo + n] = _mm512_reduce_add_ps(acc[r]);
    }
}
