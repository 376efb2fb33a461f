// Whole 8-row tiles of a linear in AVX-512 BF16 dot products (vdpbf16ps), on the avx512bf16 path: each group
// of 32 weights is decoded to float32 as on every path and rounded to one register of 32 bfloat16s, once per
// call into a panel of a work item's weight rows, and multiplied with the tiles' bfloat16 copies of the
// input rows, 32 products per instruction instead of 16 per FMA.
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

// Part rows [n0, n1) decoded once into panel as bfloat16, k apart: each weight is widened once per call
// instead of once per 8-row tile.
template <int TYPE>
static void rs_decode_panel_bf16(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, int64_t k, uint16_t* panel) {
    for (int64_t n = n0; n < n1; ++n) {
        uint16_t* out = panel + (n - n0) * k;
        rs_for_each_group<TYPE>(p, blocks, n, [&](int64_t column, const __m256* weights) {
            _mm512_storeu_si512(out + column, (__m512i)rs_group_bf16(weights));
        });
    }
}

// out[m, n] for M rows of xb and N rows of the panel (both k bfloat16s apart): M x N accumulators, each
// summing its products in the same order as a lone row against a lone weight row would.
template <int M, int N>
static inline void rs_panel_kernel_bf16(const uint16_t* xb, const uint16_t* panel, int64_t k, float* out, int64_t ldo) {
    __m512 acc[M][N];
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) acc[m][n] = _mm512_setzero_ps();
    for (int64_t c = 0; c < k; c += RS_GROUP) {
        __m512bh weights[N];
        for (int n = 0; n < N; ++n) weights[n] = (__m512bh)_mm512_loadu_si512(panel + n * k + c);
        for (int m = 0; m < M; ++m) {
            const __m512bh x = (__m512bh)_mm512_loadu_si512(xb + m * k + c);
            for (int n = 0; n < N; ++n) acc[m][n] = _mm512_dpbf16_ps(acc[m][n], weights[n], x);
        }
    }
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) out[m * ldo + n] = _mm512_reduce_add_ps(acc[m][n]);
}

// out[r, n] for the first `rows` rows of xb (whole tiles, k bfloat16s apart) and part rows n in [n0, n1): the
// panel is decoded once, then multiplied 4 input rows by 4 weight rows at a time (16 accumulators, 8 loads
// per 16 dot products).
template <int TYPE>
static void rs_linear_tiles_bf16(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const uint16_t* xb,
                                 int64_t rows, int64_t k, float* out, int64_t ldo) {
    constexpr int M = 4;  // divides RS_ROW_TILE
    uint16_t* panel = rs_panel_buffer<uint16_t>((n1 - n0) * k);
    rs_decode_panel_bf16<TYPE>(p, blocks, n0, n1, k, panel);
    const int64_t count = n1 - n0;
    for (int64_t m = 0; m < rows; m += M) {
        const uint16_t* x = xb + m * k;
        float* o = out + m * ldo + n0;
        int64_t n = 0;
        for (; n + 4 <= count; n += 4) rs_panel_kernel_bf16<M, 4>(x, panel + n * k, k, o + n, ldo);
        switch (count - n) {
            case 1: rs_panel_kernel_bf16<M, 1>(x, panel + n * k, k, o + n, ldo); break;
            case 2: rs_panel_kernel_bf16<M, 2>(x, panel + n * k, k, o + n, ldo); break;
            case 3: rs_panel_kernel_bf16<M, 3>(x, panel + n * k, k, o + n, ldo); break;
            default: break;
        }
    }
}
