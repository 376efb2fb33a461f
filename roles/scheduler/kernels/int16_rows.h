// Linears of few input rows with int16 activations against the blocks' integer codes (exec.activation_dtype
// int16): the rows of a call with fewer than 16 of them (more: int16_tiles.h) are quantised, each 32 inputs to int16 with their own
// scale, and multiplied with each weight group's codes as integers (vpmaddwd: 16 products per instruction,
// exact). Per group and row one float multiply-add applies both scales; a type's offsets (Q4_1's m, a
// K-quant's mins) meet the sums of the rounded inputs they cover, so each weight, d q + m, meets the same
// rounded input: the inputs are rounded by at most half a step of 1/32767 of their group's largest magnitude.
// (Offsets on the unrounded inputs' sums would leave the rounding's error times the codes uncentred, 0-15
// for Q4_1, instead of times the weights: with int8 inputs that cost 4 points of top-1 agreement,
// bench/activation_rounding.py.)
// The float path widens every code to float32 and applies its scale before the product; here codes stay
// integers: a one-row linear 1.04-1.54x faster by type (docs/weights-and-kernels.md), where the kernels are
// bound by decoding rather than by memory.
// Every row's sum goes the same way whatever the number of rows (one float accumulator per row and output,
// groups in order), so below 16 rows a sequence's logits do not depend on what else is in its step.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "block_decode.h"  // and rs_part, RS_GROUP: included by linear_kernels.h after their declarations

// Calls of fewer rows than this take the row kernels when int16 is on; larger ones the tiles (int16_tiles.h).
constexpr int64_t RS_INT16_MAX_ROWS = 16;

// The quantised input rows: row r's k values in q[r k ..], its groups' scales in scale[r k / 32 ..], and the
// sums of each 16 inputs as rounded (their codes' sum times the step) in sums[r k / 16 ..].
struct rs_int16_rows {
    int16_t* q;
    float* scale;
    float* sums;
    uint8_t* q8;  // the rows as int8 instead (int8_tiles.h: scale then holds their steps), or null
    uint8_t* q8_order;  // with q8, in calls of fewer than 16 rows on avx2: q8 in packed tiles' order (int8_packed_rows.h)
    // With q8: each row's RS_INT8_KEPT channels left out of its int8 groups, and their values (int8_tiles.h);
    int32_t* kept;
    float* kept_value;
    // then, in each thread's own copy (rs_linear_shared), the channels of every row together, each once
    // (kept_union[0] of them from kept_union[1]), and where each row's channel is among them (kept_slot).
    int32_t* kept_slot;
    int32_t* kept_union;
};

// Every quantised type has integer codes; the float tensor types (F32, F16, BF16) have none.
constexpr bool rs_type_has_codes(int type) { return type != RS_F32 && type != RS_F16 && type != RS_BF16; }
template <int TYPE>
constexpr bool rs_has_codes = rs_type_has_codes(TYPE);

// The 32 inputs at xg rounded to the nearest multiple of their largest magnitude / levels (the multiplier and
// the step computed in float32): their integers into q (inputs 8 i .. 8 i + 7 in q[i]); returns the step.
static RS_ALWAYS_INLINE float rs_round_group(const float* xg, float levels, __m256i q[4]) {
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xg + 8 * i);
    const __m256 largest = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], magnitude), _mm256_and_ps(v[1], magnitude)),
                                         _mm256_max_ps(_mm256_and_ps(v[2], magnitude), _mm256_and_ps(v[3], magnitude)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    const float top = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    const __m256 inverse = _mm256_set1_ps(top > 0.0f ? levels / top : 0.0f);
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inverse));
    return top / levels;
}

// The step of the group of 32 inputs from element `at` of the rows, and the sums of its two halves as rounded
// (their integers' sum times the step), into rows.scale and rows.sums.
static RS_ALWAYS_INLINE void rs_store_group_step(const rs_int16_rows& rows, int64_t at, float step, const __m256i q[4]) {
    rows.scale[at / RS_GROUP] = step;
    rows.sums[at / 16] = step * float(rs_hsum_epi32(_mm256_add_epi32(q[0], q[1])));  // exact integers
    rows.sums[at / 16 + 1] = step * float(rs_hsum_epi32(_mm256_add_epi32(q[2], q[3])));
}

// Rows [r0, r1) of x (ldx floats apart), k values each, quantised into rows.
static inline void rs_rows_to_int16(const float* x, int64_t ldx, int64_t r0, int64_t r1, int64_t k,
                                    const rs_int16_rows& rows) {
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < k; c += RS_GROUP) {
            __m256i q[4];
            const float step = rs_round_group(x + r * ldx + c, 32767.0f, q);
            // packs works within 128-bit lanes: [0-3 | 8-11 | 4-7 | 12-15], put back in order.
            const __m256i first = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
            const __m256i second = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2], q[3]), 0xD8);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q + r * k + c), first);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q + r * k + c + 16), second);
            rs_store_group_step(rows, r * k + c, step, q);
        }
}

// One group's products for one row, added to a float accumulator: codes (32 int8) times the row's 32 int16
// inputs, exact in int32, then times s0 (weights 0-15) and s1 (16-31; the same unless HALF_SCALES).
#ifdef RS_INT16_ZMM
// AVX-512: the group's 32 products in one 512-bit register, lanes 0-7 from weights 0-15, 8-15 from 16-31.
using rs_int16_acc = __m512;
static RS_ALWAYS_INLINE __m512 rs_int16_zero() { return _mm512_setzero_ps(); }
static RS_ALWAYS_INLINE float rs_int16_sum(__m512 acc) { return _mm512_reduce_add_ps(acc); }
template <bool HALF_SCALES>
static RS_ALWAYS_INLINE __m512 rs_int16_group(__m512 acc, __m512i codes, const int16_t* xq, float s0, float s1) {
    const __m512i products = _mm512_madd_epi16(codes, _mm512_loadu_si512(xq));
    const __m512 scale = HALF_SCALES ? _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1) : _mm512_set1_ps(s0);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(products), scale, acc);
}
static RS_ALWAYS_INLINE __m512i rs_int16_codes(__m256i codes) { return _mm512_cvtepi8_epi16(codes); }
#else
// AVX2: the halves' products in two registers, added in int32 where the halves share a scale.
using rs_int16_acc = __m256;
struct rs_int16_halves {
    __m256i lo, hi;
};
static RS_ALWAYS_INLINE __m256 rs_int16_zero() { return _mm256_setzero_ps(); }
static RS_ALWAYS_INLINE float rs_int16_sum(__m256 acc) { return rs_hsum(acc); }
template <bool HALF_SCALES>
static RS_ALWAYS_INLINE __m256 rs_int16_group(__m256 acc, const rs_int16_halves& codes, const int16_t* xq, float s0,
                                              float s1) {
    const __m256i* x = reinterpret_cast<const __m256i*>(xq);
    const __m256i lo = _mm256_madd_epi16(codes.lo, _mm256_loadu_si256(x));
    const __m256i hi = _mm256_madd_epi16(codes.hi, _mm256_loadu_si256(x + 1));
    if constexpr (!HALF_SCALES) return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), _mm256_set1_ps(s0), acc);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_set1_ps(s0), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_set1_ps(s1), acc);
}
static RS_ALWAYS_INLINE rs_int16_halves rs_int16_codes(__m256i codes) {
    return {_mm256_cvtepi8_epi16(_mm256_castsi256_si128(codes)), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(codes, 1))};
}
#endif

// out[r, n] for ROWS quantised rows (starting at row `first`) and NW weight rows from n, every group's
// codes decoded once for all of them.
template <int TYPE, int ROWS, int NW>
static RS_ALWAYS_INLINE void rs_int16_kernel(const rs_part& p, int64_t blocks, int64_t n, const rs_int16_rows& x,
                                             int64_t first, int64_t k, float* out, int64_t ldo) {
    using R = rs_reader<TYPE>;
    rs_int16_acc acc[ROWS][NW];
    float offsets[ROWS][NW];
    for (int r = 0; r < ROWS; ++r)
        for (int w = 0; w < NW; ++w) acc[r][w] = rs_int16_zero(), offsets[r][w] = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
        R reader[NW];
        for (int w = 0; w < NW; ++w) reader[w].begin(p.data + (n + w) * p.row_bytes + b * R::BYTES);
#pragma GCC unroll 8
        for (int j = 0; j < R::GROUPS; ++j) {
            const int64_t g = b * R::GROUPS + j;
            for (int w = 0; w < NW; ++w) {
                float s[2], o[2];
                const auto codes = rs_int16_codes(reader[w].codes(j, s, o));
                if constexpr (!R::HALF_SCALES) s[1] = s[0], o[1] = o[0];
                for (int r = 0; r < ROWS; ++r) {
                    const int64_t row = first + r;
                    const float step = x.scale[row * (k / RS_GROUP) + g];
                    acc[r][w] = rs_int16_group<R::HALF_SCALES>(acc[r][w], codes, x.q + row * k + g * RS_GROUP, s[0] * step, s[1] * step);
                    if constexpr (R::OFFSETS) {
                        const float* sums = x.sums + row * (k / 16) + 2 * g;
                        offsets[r][w] = std::fma(o[0], sums[0], offsets[r][w]);
                        offsets[r][w] = std::fma(o[1], sums[1], offsets[r][w]);
                    }
                }
            }
        }
    }
    for (int r = 0; r < ROWS; ++r)
        for (int w = 0; w < NW; ++w) out[r * ldo + n + w] = rs_int16_sum(acc[r][w]) + offsets[r][w];
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
