// Linears of few input rows with int16 activations against the blocks' integer codes (exec.activation_dtype
// int16): the rows of a step with fewer than 16 of them are quantised, each 32 inputs to int16 with their own
// scale, and multiplied with each weight group's codes as integers (vpmaddwd: 16 products per instruction,
// exact). Per group and row one float multiply-add applies both scales; a type's offsets (Q4_1's m, a
// K-quant's mins) meet the float sums of the inputs they cover, so only the inputs are rounded: by at most
// half a step of 1/32767 of their group's largest magnitude.
// The float path widens every code to float32 and applies its scale before the product; here codes stay
// integers, which takes about half the instructions per weight on one row, where the kernels are bound by
// decoding rather than by memory.
// Every row's sum goes the same way whatever the number of rows (one float accumulator per row and output,
// groups in order), so below 16 rows a sequence's logits do not depend on what else is in its step.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "block_decode.h"  // and rs_part, RS_GROUP: included by linear_kernels.h after their declarations

// Steps of fewer rows than this take the int16 path when it is on; larger ones multiply in float32 panels.
constexpr int64_t RS_INT16_MAX_ROWS = 16;

// The quantised input rows: row r's k values in q[r k ..], its groups' scales in scale[r k / 32 ..], and the
// float sums of each 16 inputs in sums[r k / 16 ..].
struct rs_int16_rows {
    int16_t* q;
    float* scale;
    float* sums;
};

template <int TYPE>
constexpr bool rs_has_codes = TYPE != RS_F32 && TYPE != RS_F16 && TYPE != RS_BF16;

// Rows [r0, r1) of x (ldx floats apart), k values each, quantised into rows.
static inline void rs_rows_to_int16(const float* x, int64_t ldx, int64_t r0, int64_t r1, int64_t k,
                                    const rs_int16_rows& rows) {
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < k; c += RS_GROUP) {
            const float* xg = x + r * ldx + c;
            __m256 v[4];
            for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xg + 8 * i);
            const __m256 largest = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], magnitude), _mm256_and_ps(v[1], magnitude)),
                                                 _mm256_max_ps(_mm256_and_ps(v[2], magnitude), _mm256_and_ps(v[3], magnitude)));
            __m128 m = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
            m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            const float top = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
            const float step = top / 32767.0f;
            const __m256 inverse = _mm256_set1_ps(top > 0.0f ? 32767.0f / top : 0.0f);
            __m256i q[4];
            for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inverse));
            // packs works within 128-bit lanes: [0-3 | 8-11 | 4-7 | 12-15], put back in order.
            const __m256i first = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
            const __m256i second = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2], q[3]), 0xD8);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q + r * k + c), first);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q + r * k + c + 16), second);
            rows.scale[(r * k + c) / RS_GROUP] = step;
            rows.sums[(r * k + c) / 16] = rs_hsum(_mm256_add_ps(v[0], v[1]));
            rows.sums[(r * k + c) / 16 + 1] = rs_hsum(_mm256_add_ps(v[2], v[3]));
        }
}

// out[r, n] for ROWS quantised rows (starting at row `first`) and NW weight rows from n, every group's
// codes decoded once for all of them.
template <int TYPE, int ROWS, int NW>
static RS_ALWAYS_INLINE void rs_int16_kernel(const rs_part& p, int64_t blocks, int64_t n, const rs_int16_rows& x,
                                             int64_t first, int64_t k, float* out, int64_t ldo) {
    using R = rs_reader<TYPE>;
    __m256 acc[ROWS][NW];
    float offsets[ROWS][NW];
    for (int r = 0; r < ROWS; ++r)
        for (int w = 0; w < NW; ++w) acc[r][w] = _mm256_setzero_ps(), offsets[r][w] = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
        R reader[NW];
        for (int w = 0; w < NW; ++w) reader[w].begin(p.data + (n + w) * p.row_bytes + b * R::BYTES);
#pragma GCC unroll 8
        for (int j = 0; j < R::GROUPS; ++j) {
            const int64_t g = b * R::GROUPS + j;
            for (int w = 0; w < NW; ++w) {
                float s[2], o[2];
                const __m256i codes = reader[w].codes(j, s, o);
                const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(codes));
                const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(codes, 1));
                for (int r = 0; r < ROWS; ++r) {
                    const int64_t row = first + r;
                    const __m256i* xq = reinterpret_cast<const __m256i*>(x.q + row * k + g * RS_GROUP);
                    const __m256i p_lo = _mm256_madd_epi16(lo, _mm256_loadu_si256(xq));
                    const __m256i p_hi = _mm256_madd_epi16(hi, _mm256_loadu_si256(xq + 1));
                    const float step = x.scale[row * (k / RS_GROUP) + g];
                    if constexpr (R::HALF_SCALES) {
                        acc[r][w] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p_lo), _mm256_set1_ps(s[0] * step), acc[r][w]);
                        acc[r][w] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p_hi), _mm256_set1_ps(s[1] * step), acc[r][w]);
                    } else {
                        acc[r][w] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(p_lo, p_hi)),
                                                    _mm256_set1_ps(s[0] * step), acc[r][w]);
                    }
                    if constexpr (R::OFFSETS) {
                        const float* sums = x.sums + row * (k / 16) + 2 * g;
                        offsets[r][w] = std::fma(o[0], sums[0], offsets[r][w]);
                        offsets[r][w] = std::fma(R::HALF_SCALES ? o[1] : o[0], sums[1], offsets[r][w]);
                    }
                }
            }
        }
    }
    for (int r = 0; r < ROWS; ++r)
        for (int w = 0; w < NW; ++w) out[r * ldo + n + w] = rs_hsum(acc[r][w]) + offsets[r][w];
}

// ROWS quantised rows from `first` against part rows [n0, n1): two weight rows a pass for one or two input
// rows (their codes' decoding shared by the x loads), one for more.
template <int TYPE, int ROWS>
static void rs_int16_rows_block(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int16_rows& x,
                                int64_t first, int64_t k, float* out, int64_t ldo) {
    constexpr int NW = ROWS <= 2 ? 2 : 1;
    int64_t n = n0;
    for (; n + NW <= n1; n += NW) {
        if constexpr (ROWS == 1) rs_prefetch_rows(p, n + RS_PREFETCH_ROWS, NW);
        rs_int16_kernel<TYPE, ROWS, NW>(p, blocks, n, x, first, k, out, ldo);
    }
    for (; n < n1; ++n) rs_int16_kernel<TYPE, ROWS, 1>(p, blocks, n, x, first, k, out, ldo);
}

// Every one of `rows` (< RS_INT16_MAX_ROWS) quantised rows against part rows [n0, n1), four rows at a time.
template <int TYPE>
static void rs_linear_int16(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int16_rows& x,
                            int64_t rows, int64_t k, float* out, int64_t ldo) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) rs_int16_rows_block<TYPE, 4>(p, blocks, n0, n1, x, r, k, out + r * ldo, ldo);
    switch (rows - r) {
        case 1: rs_int16_rows_block<TYPE, 1>(p, blocks, n0, n1, x, r, k, out + r * ldo, ldo); break;
        case 2: rs_int16_rows_block<TYPE, 2>(p, blocks, n0, n1, x, r, k, out + r * ldo, ldo); break;
        case 3: rs_int16_rows_block<TYPE, 3>(p, blocks, n0, n1, x, r, k, out + r * ldo, ldo); break;
        default: break;
    }
}
