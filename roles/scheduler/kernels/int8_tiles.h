// Linears of many rows with int8 activations (exec.activation_dtype int8): a call of RS_INT16_MAX_ROWS rows or
// more quantises each 32 inputs of a row to int8 with their own scale and multiplies them with a work item's
// codes, decoded once per call into a panel of four codes of a column per 32-bit lane. Calls of fewer rows
// take the packed int8 row kernels on avx2 where the types pack (int8_packed_rows.h: the same bits), and the
// int16 row kernels elsewhere. The inputs are rounded by at most half a step of 1/127 of their group's largest magnitude: the scheme
// llama.cpp's quantised dot products use (its Q8_0 and Q8_1 rows); offsets meet the sums of the rounded
// inputs, as with int16 (int16_rows.h). Two ways to multiply, chosen by the path:
// - AVX512_VNNI (int8_dpbusd_tiles.h): vpdpbusd, 64 products per instruction, every quantised type;
// - avx2 (int8_madd_tiles.h): vpmaddubsw, 32 products per instruction against vpmaddwd's 16 with int16
//   inputs, for the types whose codes fit 6 bits; a linear with any other quantised part stays int16.
// The avx512 path without VNNI has neither: int8 runs as int16 there.
// Each row keeps its RS_INT8_KEPT inputs of largest magnitude out of its int8 groups: they are zeroed before the
// groups are rounded, so that none of them sets a group's step, and multiplied in float beside the tiles, with
// the weights the panel holds. Activations carry a few channels far larger than the rest (the residual stream's),
// whose groups would otherwise round every other input to a coarse step (docs/weights-and-kernels.md).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "int16_tiles.h"
#include "packed_tiles.h"

constexpr int RS_TILE_QUADS = RS_GROUP / 4;
constexpr int RS_INT8_KEPT = 4;

// A work item's int8 panel: for group g, codes[g][quad][column] holds the column's codes 4 quad .. 4 quad + 3
// as four bytes; start[g][half][column] the integer sum's start (int8_dpbusd_tiles.h); scale and offset as in
// rs_tile_panel.
struct rs_int8_panel {
    int32_t* codes;
    int32_t* start;
    float* scale;
    float* offset;
};

// A group's 16 columns of 32 codes (codes[c] byte i: column c's code i) stored as out[quad][column]: four
// codes of a column in each 32-bit word.
static RS_ALWAYS_INLINE void rs_store_quads(const __m256i codes[RS_TILE_COLUMNS], int32_t* out) {
    __m256i pairs[RS_TILE_COLUMNS];
    rs_transpose_16x16_epi16(codes, pairs);  // pairs[q] bytes 2c, 2c + 1: column c's codes 2q, 2q + 1
    for (int q = 0; q < RS_TILE_QUADS; ++q) {
        // Interleaving pairs 2q and 2q + 1 puts four codes in each 32-bit lane, columns 0-3 and 8-11 in lo,
        // 4-7 and 12-15 in hi; the lanes' halves then go back in column order.
        const __m256i lo = _mm256_unpacklo_epi16(pairs[2 * q], pairs[2 * q + 1]);
        const __m256i hi = _mm256_unpackhi_epi16(pairs[2 * q], pairs[2 * q + 1]);
        __m256i* o = reinterpret_cast<__m256i*>(out + q * RS_TILE_COLUMNS);
        _mm256_storeu_si256(o, _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
}

#if defined(RS_INT16_VNNI)
#define RS_INT8_TILES 1
#include "int8_dpbusd_tiles.h"
#elif !defined(RS_INT16_ZMM)
#define RS_INT8_TILES 1
#define RS_INT8_ROWS 1  // calls of fewer than 16 rows take int8 too (int8_packed_rows.h)
#include "int8_madd_tiles.h"
#endif  // RS_INT8_TILES

#ifndef RS_INT8_TILES
constexpr bool RS_HAS_INT8_TILES = false;
#else
constexpr bool RS_HAS_INT8_TILES = true;

// Row xr's RS_INT8_KEPT inputs of largest magnitude (of equal ones, the first) into kept and value.
static inline void rs_keep_largest(const float* xr, int64_t k, int32_t* kept, float* value) {
    float top[RS_INT8_KEPT];  // largest first
    int32_t at[RS_INT8_KEPT];
    for (int j = 0; j < RS_INT8_KEPT; ++j) top[j] = -1.0f, at[j] = 0;
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t c = 0; c < k; c += 8) {
        const __m256 v = _mm256_and_ps(_mm256_loadu_ps(xr + c), magnitude);
        unsigned above = _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(top[RS_INT8_KEPT - 1]), _CMP_GT_OQ));
        while (above != 0) {
            const int i = __builtin_ctz(above);
            above &= above - 1;
            const float a = std::fabs(xr[c + i]);
            if (!(a > top[RS_INT8_KEPT - 1])) continue;  // an earlier one of this eight raised the bar
            int j = RS_INT8_KEPT - 1;
            for (; j > 0 && a > top[j - 1]; --j) top[j] = top[j - 1], at[j] = at[j - 1];
            top[j] = a, at[j] = int32_t(c + i);
        }
    }
    for (int j = 0; j < RS_INT8_KEPT; ++j) kept[j] = at[j], value[j] = xr[at[j]];
}

// Row r (k values at xr) as int8 into rows (rs_rows_to_int8), but for its kept inputs, which it records.
static inline void rs_row_to_int8_keeping(const float* xr, int64_t r, int64_t k, const rs_int16_rows& rows) {
    int32_t* kept = rows.kept + r * RS_INT8_KEPT;
    rs_keep_largest(xr, k, kept, rows.kept_value + r * RS_INT8_KEPT);
    thread_local std::vector<float> rest;
    if (static_cast<int64_t>(rest.size()) < k) rest.resize(k);
    std::memcpy(rest.data(), xr, k * sizeof(float));
    for (int j = 0; j < RS_INT8_KEPT; ++j) rest[kept[j]] = 0.0f;
    rs_rows_to_int8(rest.data(), 0, r, r + 1, k, rows);
}

// Byte `byte` of each code word of the columns, sign-extended: a column's code 4 quad + byte.
#ifdef RS_INT16_ZMM
static RS_ALWAYS_INLINE __m512i rs_cols_code_byte(__m512i words, int byte) {
    return _mm512_srai_epi32(_mm512_sll_epi32(words, _mm_cvtsi32_si128(24 - 8 * byte)), 24);
}
#else
static RS_ALWAYS_INLINE __m256i rs_cols_code_byte(__m256i words, int byte) {
    return _mm256_srai_epi32(_mm256_sll_epi32(words, _mm_cvtsi32_si128(24 - 8 * byte)), 24);
}
#endif

// The kept channels of rows [0, rows) together, each once, in order (kept_union), and each row's channel's place
// among them (kept_slot): a work item then decodes the weights of each channel once for all its rows.
static inline void rs_unite_kept(const rs_int16_rows& x, int64_t rows) {
    const int64_t n = rows * RS_INT8_KEPT;
    int32_t* united = x.kept_union + 1;
    std::copy(x.kept, x.kept + n, united);
    std::sort(united, united + n);
    const int64_t count = std::unique(united, united + n) - united;
    x.kept_union[0] = int32_t(count);
    for (int64_t i = 0; i < n; ++i) x.kept_slot[i] = int32_t(std::lower_bound(united, united + count, x.kept[i]) - united);
}

// The panel's weights of every kept channel (x.kept_union), RS_TILE_COLUMNS of them per channel into weights: each
// the panel's scale x code + offset, the value the tiles' products and offsets give it.
static inline void rs_decode_kept(const rs_int8_panel& panel, const rs_int16_rows& x, float* weights) {
    const int32_t* united = x.kept_union + 1;
    for (int32_t u = 0; u < x.kept_union[0]; ++u) {
        const int64_t g = united[u] / RS_GROUP;
        const int e = united[u] % RS_GROUP;
        for (int lane = 0; lane < RS_TILE_COLUMNS; lane += RS_TILE_LANES) {
            const int32_t* words = panel.codes + (g * RS_TILE_QUADS + e / 4) * RS_TILE_COLUMNS + lane;
            const int64_t at = (g * 2 + e / 16) * RS_TILE_COLUMNS + lane;
            const rs_cols_i code = rs_cols_code_byte(rs_cols_load_i(reinterpret_cast<const uint8_t*>(words)), e % 4);
            rs_cols_store(weights + u * RS_TILE_COLUMNS + lane,
                          rs_cols_fmadd(rs_cols_load(panel.scale + at), rs_cols_float(code), rs_cols_load(panel.offset + at)));
        }
    }
}

// Rows [first, first + m)'s kept inputs times their weights (rs_decode_kept), added to the rows' tile.
static inline void rs_add_kept(const float* weights, const rs_int16_rows& x, int64_t first, int64_t m, float* tile) {
    for (int64_t i = 0; i < m; ++i) {
        const int32_t* slot = x.kept_slot + (first + i) * RS_INT8_KEPT;
        const float* value = x.kept_value + (first + i) * RS_INT8_KEPT;
        for (int lane = 0; lane < RS_TILE_COLUMNS; lane += RS_TILE_LANES) {
            rs_cols_f acc = rs_cols_load(tile + i * RS_TILE_COLUMNS + lane);
            for (int j = 0; j < RS_INT8_KEPT; ++j)
                acc = rs_cols_fmadd(rs_cols_set1(value[j]), rs_cols_load(weights + slot[j] * RS_TILE_COLUMNS + lane), acc);
            rs_cols_store(tile + i * RS_TILE_COLUMNS + lane, acc);
        }
    }
}

// Every one of `rows` int8 rows against part rows [n0, n1) (at most RS_TILE_COLUMNS of them).
template <int TYPE>
static void rs_linear_int8_tiles(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int16_rows& x,
                                 int64_t rows, int64_t k, float* out, int64_t ldo) {
    const int64_t groups = k / RS_GROUP;
    const int64_t code_words = groups * RS_TILE_QUADS * RS_TILE_COLUMNS, per_group = groups * 2 * RS_TILE_COLUMNS;
    const int64_t kept_weights = int64_t(x.kept_union[0]) * RS_TILE_COLUMNS;
    int32_t* codes = rs_panel_buffer<int32_t>(code_words + 3 * per_group + RS_TILE_ROWS * RS_TILE_COLUMNS + kept_weights);
    int32_t* start = codes + code_words;
    float* floats = reinterpret_cast<float*>(start + per_group);
    const rs_int8_panel panel{codes, start, floats, floats + per_group};
    float* tile = floats + 2 * per_group;
    float* weights = tile + RS_TILE_ROWS * RS_TILE_COLUMNS;
    rs_decode_int8_panel<TYPE>(p, blocks, n0, n1, panel);
    rs_decode_kept(panel, x, weights);
    rs_tile_passes(rows, n0, n1 - n0, tile, out, ldo, [&](int64_t r, int64_t m, float* t) {
        rs_int8_tile_rows<TYPE, RS_TILE_ROWS>(panel, groups, x, r, m, k, t);
        rs_add_kept(weights, x, r, m, t);
    });
}
#endif  // RS_INT8_TILES

#ifdef RS_INT8_ROWS
#include "int8_packed_rows.h"
constexpr bool RS_HAS_INT8_ROWS = true;
#else
constexpr bool RS_HAS_INT8_ROWS = false;
constexpr bool rs_int8_rows_take(int) { return false; }
#endif
