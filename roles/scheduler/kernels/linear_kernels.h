// Weight-only quantised linears on AVX2/FMA: y[m, n] = sum_k x[m, k] * W[n, k].
//
// A weight is stored in groups of 32 input columns per output row, in one of three formats:
//   Q4  codes (N, K/2) uint8, the GGUF nibble order: byte j of a group holds column j (low nibble) and
//       column j + 16 (high nibble); w = scale * code + min, scales and mins (N, K/32) float32.
//       (GGUF Q4_0 is the case min = -8 * scale.)
//   Q8  codes (N, K) int8; w = scale * code, scales (N, K/32) float32.
//   F32 (N, K) float32.
// Each group is widened to four 8-float registers once and used for every input row of a tile, so the
// weight is read from memory once per step however many rows the step has.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "vector_math.h"

extern "C" {
struct rs_linear {
    int32_t kind;  // RS_Q4, RS_Q8 or RS_F32
    int32_t n;     // out features
    int32_t k;     // in features, a multiple of 32
    int32_t reserved;
    const void* codes;
    const float* scales;
    const float* mins;
};
}

enum { RS_Q4 = 0, RS_Q8 = 1, RS_F32 = 2 };
constexpr int RS_GROUP = 32;
constexpr int RS_ROW_TILE = 8;  // input rows per pass over a weight block (8 accumulators + 4 weights + temps)
constexpr int RS_COL_BLOCK = 16;  // output rows per work item

template <int KIND>
static inline void rs_group_weights(const rs_linear& w, int64_t row, int64_t group, __m256 out[4]) {
    const int64_t groups = w.k / RS_GROUP;
    if constexpr (KIND == RS_Q4) {
        const uint8_t* codes = static_cast<const uint8_t*>(w.codes) + row * (w.k / 2) + group * 16;
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
        const __m128i nibble = _mm_set1_epi8(0x0F);
        const __m128i low = _mm_and_si128(packed, nibble);                         // columns 0..15
        const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), nibble);     // columns 16..31
        const __m256 scale = _mm256_set1_ps(w.scales[row * groups + group]);
        const __m256 min = _mm256_set1_ps(w.mins[row * groups + group]);
        out[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(low)), scale, min);
        out[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(low, 8))), scale, min);
        out[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(high)), scale, min);
        out[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8))), scale, min);
    } else if constexpr (KIND == RS_Q8) {
        const int8_t* codes = static_cast<const int8_t*>(w.codes) + row * w.k + group * RS_GROUP;
        const __m256 scale = _mm256_set1_ps(w.scales[row * groups + group]);
        for (int i = 0; i < 4; ++i) {
            const __m128i eight = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 8 * i));
            out[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(eight)), scale);
        }
    } else {
        const float* values = static_cast<const float*>(w.codes) + row * w.k + group * RS_GROUP;
        for (int i = 0; i < 4; ++i) out[i] = _mm256_loadu_ps(values + 8 * i);
    }
}

// One row is bound by memory latency, not bandwidth: ask for the weight rows a few rows ahead.
constexpr int64_t RS_PREFETCH_ROWS = 8;

template <int KIND>
static inline void rs_prefetch_rows(const rs_linear& w, int64_t row, int64_t count) {
    if (row + count > w.n) return;
    const int64_t groups = w.k / RS_GROUP;
    const int64_t code_bytes = KIND == RS_Q4 ? w.k / 2 : (KIND == RS_Q8 ? w.k : 4 * w.k);
    const char* codes = static_cast<const char*>(w.codes) + row * code_bytes;
    for (int64_t offset = 0; offset < count * code_bytes; offset += 64) _mm_prefetch(codes + offset, _MM_HINT_T0);
    if constexpr (KIND != RS_F32) {
        const char* scales = reinterpret_cast<const char*>(w.scales + row * groups);
        for (int64_t offset = 0; offset < count * groups * 4; offset += 64) _mm_prefetch(scales + offset, _MM_HINT_T0);
    }
    if constexpr (KIND == RS_Q4) {
        const char* mins = reinterpret_cast<const char*>(w.mins + row * groups);
        for (int64_t offset = 0; offset < count * groups * 4; offset += 64) _mm_prefetch(mins + offset, _MM_HINT_T0);
    }
}

// out[r, n] for r < ROWS and n in [n0, n1). One input row gets four accumulators (one per weight
// register) so the FMA chain is not latency bound; several rows interleave their own chains.
template <int KIND, int ROWS>
static void rs_linear_tile(const rs_linear& w, int64_t n0, int64_t n1, const float* x, int64_t ldx, float* out,
                           int64_t ldo) {
    constexpr int CHAINS = ROWS == 1 ? 4 : (ROWS == 2 ? 2 : 1);
    const int64_t groups = w.k / RS_GROUP;
    for (int64_t n = n0; n < n1; ++n) {
        __m256 acc[ROWS][CHAINS];
        for (int r = 0; r < ROWS; ++r)
            for (int c = 0; c < CHAINS; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t g = 0; g < groups; ++g) {
            __m256 weights[4];
            rs_group_weights<KIND>(w, n, g, weights);
            for (int r = 0; r < ROWS; ++r) {
                const float* xr = x + r * ldx + g * RS_GROUP;
                for (int i = 0; i < 4; ++i)
                    acc[r][i % CHAINS] = _mm256_fmadd_ps(weights[i], _mm256_loadu_ps(xr + 8 * i), acc[r][i % CHAINS]);
            }
        }
        for (int r = 0; r < ROWS; ++r) {
            __m256 sum = acc[r][0];
            for (int c = 1; c < CHAINS; ++c) sum = _mm256_add_ps(sum, acc[r][c]);
            out[r * ldo + n] = rs_hsum(sum);
        }
    }
}

// One input row: two output rows per pass share the x loads, and eight independent accumulator chains
// keep the FMA units busy (one row alone would wait on FMA latency at every group).
template <int KIND>
static void rs_linear_single_row(const rs_linear& w, int64_t n0, int64_t n1, const float* x, float* out) {
    const int64_t groups = w.k / RS_GROUP;
    int64_t n = n0;
    for (; n + 2 <= n1; n += 2) {
        rs_prefetch_rows<KIND>(w, n + RS_PREFETCH_ROWS, 2);
        __m256 acc0[4], acc1[4];
        for (int i = 0; i < 4; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
        for (int64_t g = 0; g < groups; ++g) {
            const float* xg = x + g * RS_GROUP;
            __m256 xs[4], weights[4];
            for (int i = 0; i < 4; ++i) xs[i] = _mm256_loadu_ps(xg + 8 * i);
            rs_group_weights<KIND>(w, n, g, weights);
            for (int i = 0; i < 4; ++i) acc0[i] = _mm256_fmadd_ps(weights[i], xs[i], acc0[i]);
            rs_group_weights<KIND>(w, n + 1, g, weights);
            for (int i = 0; i < 4; ++i) acc1[i] = _mm256_fmadd_ps(weights[i], xs[i], acc1[i]);
        }
        out[n] = rs_hsum(_mm256_add_ps(_mm256_add_ps(acc0[0], acc0[1]), _mm256_add_ps(acc0[2], acc0[3])));
        out[n + 1] = rs_hsum(_mm256_add_ps(_mm256_add_ps(acc1[0], acc1[1]), _mm256_add_ps(acc1[2], acc1[3])));
    }
    if (n < n1) rs_linear_tile<KIND, 1>(w, n, n1, x, 0, out, 0);
}

template <int KIND>
static void rs_linear_block(const rs_linear& w, int64_t n0, int64_t n1, const float* x, int64_t rows, int64_t ldx,
                            float* out, int64_t ldo) {
    int64_t r = 0;
    for (; r + RS_ROW_TILE <= rows; r += RS_ROW_TILE)
        rs_linear_tile<KIND, RS_ROW_TILE>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo);
    switch (rows - r) {
        case 0: break;
        case 1: rs_linear_single_row<KIND>(w, n0, n1, x + r * ldx, out + r * ldo); break;
        case 2: rs_linear_tile<KIND, 2>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
        case 3: rs_linear_tile<KIND, 3>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
        case 4: rs_linear_tile<KIND, 4>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
        case 5: rs_linear_tile<KIND, 5>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
        case 6: rs_linear_tile<KIND, 6>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
        default: rs_linear_tile<KIND, 7>(w, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo); break;
    }
}

// Work-shared over blocks of output rows: call from inside an OpenMP parallel region (every thread).
static void rs_linear_shared(const rs_linear& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo) {
    const int64_t blocks = (w.n + RS_COL_BLOCK - 1) / RS_COL_BLOCK;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t n0 = b * RS_COL_BLOCK;
        const int64_t n1 = n0 + RS_COL_BLOCK < w.n ? n0 + RS_COL_BLOCK : w.n;
        if (w.kind == RS_Q4)
            rs_linear_block<RS_Q4>(w, n0, n1, x, rows, ldx, out, ldo);
        else if (w.kind == RS_Q8)
            rs_linear_block<RS_Q8>(w, n0, n1, x, rows, ldx, out, ldo);
        else
            rs_linear_block<RS_F32>(w, n0, n1, x, rows, ldx, out, ldo);
    }
}

// Row `row` of W as float32 (an embedding lookup on a quantised table).
static void rs_weight_row(const rs_linear& w, int64_t row, float* out) {
    const int64_t groups = w.k / RS_GROUP;
    for (int64_t g = 0; g < groups; ++g) {
        __m256 weights[4];
        if (w.kind == RS_Q4)
            rs_group_weights<RS_Q4>(w, row, g, weights);
        else if (w.kind == RS_Q8)
            rs_group_weights<RS_Q8>(w, row, g, weights);
        else
            rs_group_weights<RS_F32>(w, row, g, weights);
        for (int i = 0; i < 4; ++i) _mm256_storeu_ps(out + g * RS_GROUP + 8 * i, weights[i]);
    }
}
