// Linears of many rows with int16 activations (exec.activation_dtype int16): a call of RS_INT16_MAX_ROWS
// rows or more multiplies its rows' int16 form (int16_rows.h) with a work item's weight rows, decoded once
// per call into a panel of integer codes. In the panel a vector register's lanes are output columns (16 on
// the AVX-512 paths, 8 on avx2) and each lane holds two neighbouring codes of its column as int16, so one
// vpmaddwd multiplies two inputs of a row, broadcast to every lane, with every column's codes: 32 products
// per 512-bit instruction against 16 per float FMA. A group's products add up exactly in int32; then one
// float multiply-add per group, row and register applies the columns' scales times the row's step. Offsets
// meet the sums of the rounded inputs, as in int16_rows.h.
// A row's result is the same sum as the row kernels' in another order of float additions: it may differ from
// theirs in the last bits, never by more rounding of its inputs.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "block_decode.h"  // and rs_part, RS_GROUP, rs_int16_rows: included by linear_kernels.h after them

constexpr int RS_TILE_COLUMNS = 16;  // a panel's columns: a work item's output rows (RS_COL_BLOCK)
constexpr int RS_TILE_PAIRS = RS_GROUP / 2;

// One work item's decoded weights: for group g, codes[g][pair][column] holds the column's codes 2 pair and
// 2 pair + 1 as two int16 (the low one first); scale and offset [g][half][column] their affine map (half:
// weights 0-15, 16-31; both halves the same unless HALF_SCALES). Columns past the part's rows are zero.
struct rs_tile_panel {
    int32_t* codes;
    float* scale;
    float* offset;
};

// The 16 x 16 transpose of 16-bit elements: rows[c] element p becomes out[p] element c (AVX2 unpacks within
// 128-bit lanes, then the lanes' halves swapped in).
static RS_ALWAYS_INLINE void rs_transpose_16x16_epi16(const __m256i rows[16], __m256i out[16]) {
    __m256i half[2][8];
    for (int h = 0; h < 2; ++h) {
        const __m256i* a = rows + 8 * h;
        __m256i b[8], c[8];
        for (int i = 0; i < 4; ++i) {
            b[2 * i] = _mm256_unpacklo_epi16(a[2 * i], a[2 * i + 1]);
            b[2 * i + 1] = _mm256_unpackhi_epi16(a[2 * i], a[2 * i + 1]);
        }
        for (int i = 0; i < 2; ++i) {  // rows 4i .. 4i + 3, elements [0-1], [2-3], [4-5], [6-7] of each lane
            c[4 * i] = _mm256_unpacklo_epi32(b[4 * i], b[4 * i + 2]);
            c[4 * i + 1] = _mm256_unpackhi_epi32(b[4 * i], b[4 * i + 2]);
            c[4 * i + 2] = _mm256_unpacklo_epi32(b[4 * i + 1], b[4 * i + 3]);
            c[4 * i + 3] = _mm256_unpackhi_epi32(b[4 * i + 1], b[4 * i + 3]);
        }
        for (int i = 0; i < 4; ++i) {  // element 2i and 2i + 1 (lane 0), 2i + 8 and 2i + 9 (lane 1) of 8 rows
            half[h][2 * i] = _mm256_unpacklo_epi64(c[i], c[4 + i]);
            half[h][2 * i + 1] = _mm256_unpackhi_epi64(c[i], c[4 + i]);
        }
    }
    for (int p = 0; p < 8; ++p) {
        out[p] = _mm256_permute2x128_si256(half[0][p], half[1][p], 0x20);
        out[p + 8] = _mm256_permute2x128_si256(half[0][p], half[1][p], 0x31);
    }
}

// Group j of the current blocks of count columns: their 32 codes each as int8 into codes (zero past count), and
// their scales and offsets into scale and offset [half][column] (both halves the same unless HALF_SCALES).
template <typename R>
static RS_ALWAYS_INLINE void rs_read_tile_group(R* reader, int count, int j, float* scale, float* offset,
                                                __m256i codes[RS_TILE_COLUMNS]) {
    for (int c = 0; c < RS_TILE_COLUMNS; ++c) {
        float s[2] = {0.0f, 0.0f}, o[2] = {0.0f, 0.0f};
        codes[c] = c < count ? reader[c].codes(j, s, o) : _mm256_setzero_si256();
        if constexpr (!R::HALF_SCALES) s[1] = s[0], o[1] = o[0];
        scale[c] = s[0], scale[RS_TILE_COLUMNS + c] = s[1];
        offset[c] = o[0], offset[RS_TILE_COLUMNS + c] = o[1];
    }
}

// Part rows [n0, n1) (at most RS_TILE_COLUMNS) group by group: emit(g, codes) after each group's codes are
// read and its scales and offsets stored at scale and offset + g * 2 * RS_TILE_COLUMNS.
template <int TYPE, typename Emit>
static RS_ALWAYS_INLINE void rs_read_tile_groups(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, float* scale,
                                                 float* offset, Emit emit) {
    using R = rs_reader<TYPE>;
    const int count = static_cast<int>(n1 - n0);
    R reader[RS_TILE_COLUMNS];
    for (int64_t b = 0; b < blocks; ++b) {
        for (int c = 0; c < count; ++c) reader[c].begin(p.data + (n0 + c) * p.row_bytes + b * R::BYTES);
        for (int j = 0; j < R::GROUPS; ++j) {
            const int64_t g = b * R::GROUPS + j;
            __m256i codes[RS_TILE_COLUMNS];
            rs_read_tile_group(reader, count, j, scale + g * 2 * RS_TILE_COLUMNS, offset + g * 2 * RS_TILE_COLUMNS, codes);
            emit(g, codes);
        }
    }
}

// Part rows [n0, n1) (at most RS_TILE_COLUMNS) decoded into panel, k weights each.
template <int TYPE>
static void rs_decode_tile_panel(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_tile_panel& panel) {
    rs_read_tile_groups<TYPE>(p, blocks, n0, n1, panel.scale, panel.offset, [&](int64_t g, __m256i* codes) {
        __m256i pairs[RS_TILE_COLUMNS];
        rs_transpose_16x16_epi16(codes, pairs);  // pairs[q] byte 2c, 2c + 1: column c's codes 2q, 2q + 1
        int32_t* out = panel.codes + g * RS_TILE_PAIRS * RS_TILE_COLUMNS;
        for (int q = 0; q < RS_TILE_PAIRS; ++q) {
#ifdef RS_INT16_ZMM
            _mm512_storeu_si512(out + q * RS_TILE_COLUMNS, _mm512_cvtepi8_epi16(pairs[q]));
#else
            __m256i* o = reinterpret_cast<__m256i*>(out + q * RS_TILE_COLUMNS);
            _mm256_storeu_si256(o, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(pairs[q])));
            _mm256_storeu_si256(o + 1, _mm256_cvtepi8_epi16(_mm256_extracti128_si256(pairs[q], 1)));
#endif
        }
    });
}

// The tiles' vector of columns: one 512-bit register of 16 on the AVX-512 paths, one of 8 on avx2.
#ifdef RS_INT16_ZMM
using rs_cols_i = __m512i;
using rs_cols_f = __m512;
constexpr int RS_TILE_LANES = 16;
constexpr int RS_TILE_ROWS = 8;  // input rows a pass: 2 x 8 accumulators of 32
static RS_ALWAYS_INLINE __m512i rs_cols_madd(__m512i acc, const int32_t* codes, const int16_t* x) {
    int32_t pair;
    std::memcpy(&pair, x, 4);
#ifdef RS_INT16_VNNI
    return _mm512_dpwssd_epi32(acc, _mm512_loadu_si512(codes), _mm512_set1_epi32(pair));
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_loadu_si512(codes), _mm512_set1_epi32(pair)));
#endif
}
static RS_ALWAYS_INLINE __m512 rs_cols_load(const float* p) { return _mm512_loadu_ps(p); }
static RS_ALWAYS_INLINE __m512 rs_cols_fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
static RS_ALWAYS_INLINE __m512 rs_cols_float(__m512i v) { return _mm512_cvtepi32_ps(v); }
static RS_ALWAYS_INLINE __m512 rs_cols_set1(float v) { return _mm512_set1_ps(v); }
static RS_ALWAYS_INLINE __m512 rs_cols_mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
static RS_ALWAYS_INLINE __m512i rs_cols_zero_i() { return _mm512_setzero_si512(); }
static RS_ALWAYS_INLINE __m512 rs_cols_zero_f() { return _mm512_setzero_ps(); }
static RS_ALWAYS_INLINE void rs_cols_store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
#else
using rs_cols_i = __m256i;
using rs_cols_f = __m256;
constexpr int RS_TILE_LANES = 8;
constexpr int RS_TILE_ROWS = 6;  // 2 x 6 accumulators of 16 registers
static RS_ALWAYS_INLINE __m256i rs_cols_madd(__m256i acc, const int32_t* codes, const int16_t* x) {
    int32_t pair;
    std::memcpy(&pair, x, 4);
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(w, _mm256_set1_epi32(pair)));
}
static RS_ALWAYS_INLINE __m256 rs_cols_load(const float* p) { return _mm256_loadu_ps(p); }
static RS_ALWAYS_INLINE __m256 rs_cols_fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
static RS_ALWAYS_INLINE __m256 rs_cols_float(__m256i v) { return _mm256_cvtepi32_ps(v); }
static RS_ALWAYS_INLINE __m256 rs_cols_set1(float v) { return _mm256_set1_ps(v); }
static RS_ALWAYS_INLINE __m256 rs_cols_mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
static RS_ALWAYS_INLINE __m256i rs_cols_zero_i() { return _mm256_setzero_si256(); }
static RS_ALWAYS_INLINE __m256 rs_cols_zero_f() { return _mm256_setzero_ps(); }
static RS_ALWAYS_INLINE void rs_cols_store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
#endif

// acc[m] += sums[m] (a group's, or a half-group's, integer sums) times the columns' scales times the step of
// group g of row first + m: one float multiply-add per row and register.
template <int M>
static RS_ALWAYS_INLINE void rs_tile_scale(rs_cols_f* acc, const rs_cols_i* sums, rs_cols_f columns,
                                           const rs_int16_rows& x, int64_t first, int64_t k, int64_t g) {
    for (int m = 0; m < M; ++m) {
        const float step = x.scale[(first + m) * (k / RS_GROUP) + g];
        acc[m] = rs_cols_fmadd(rs_cols_float(sums[m]), rs_cols_mul(columns, rs_cols_set1(step)), acc[m]);
    }
}

// acc[m] += the columns' offsets of half h of group g (HALF_SCALES; else of the whole group) times the float
// sums of the rounded inputs of row first + m they cover.
template <int M, bool HALF_SCALES>
static RS_ALWAYS_INLINE void rs_tile_offset(rs_cols_f* acc, rs_cols_f columns, const rs_int16_rows& x, int64_t first,
                                            int64_t k, int64_t g, int h) {
    for (int m = 0; m < M; ++m) {
        const float* row_sums = x.sums + (first + m) * (k / 16) + 2 * g;
        const float sum = HALF_SCALES ? row_sums[h] : row_sums[0] + row_sums[1];
        acc[m] = rs_cols_fmadd(columns, rs_cols_set1(sum), acc[m]);
    }
}

// rs_tile_offset for each half of group g (one unless HALF_SCALES), its offsets at offset (half 1's
// RS_TILE_COLUMNS further).
template <int M, bool HALF_SCALES>
static RS_ALWAYS_INLINE void rs_tile_offsets(rs_cols_f* acc, const float* offset, const rs_int16_rows& x,
                                             int64_t first, int64_t k, int64_t g) {
    for (int h = 0; h < (HALF_SCALES ? 2 : 1); ++h)
        rs_tile_offset<M, HALF_SCALES>(acc, rs_cols_load(offset + h * RS_TILE_COLUMNS), x, first, k, g, h);
}

// out[r, c] for M quantised rows from `first` and the panel's columns [lane, lane + RS_TILE_LANES), every
// column, into the M x RS_TILE_COLUMNS buffer tile (RS_TILE_COLUMNS floats apart).
template <int M, bool HALF_SCALES, bool OFFSETS>
static RS_ALWAYS_INLINE void rs_int16_tile(const rs_tile_panel& panel, int64_t groups, int lane, const rs_int16_rows& x,
                                           int64_t first, int64_t k, float* tile) {
    constexpr int HALF = RS_TILE_PAIRS / 2;
    const int16_t* rows[M];
    for (int m = 0; m < M; ++m) rows[m] = x.q + (first + m) * k;
    rs_cols_f acc[M];
    for (int m = 0; m < M; ++m) acc[m] = rs_cols_zero_f();
    for (int64_t g = 0; g < groups; ++g) {
        const int32_t* codes = panel.codes + g * RS_TILE_PAIRS * RS_TILE_COLUMNS + lane;
        rs_cols_i sums[M];
        for (int m = 0; m < M; ++m) sums[m] = rs_cols_zero_i();
        for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 8
            for (int q = h * HALF; q < (h + 1) * HALF; ++q)
                for (int m = 0; m < M; ++m) sums[m] = rs_cols_madd(sums[m], codes + q * RS_TILE_COLUMNS, rows[m] + 2 * q);
            if (!HALF_SCALES && h == 0) continue;  // one scale for the group: its 32 products in one sum
            rs_tile_scale<M>(acc, sums, rs_cols_load(panel.scale + (g * 2 + h) * RS_TILE_COLUMNS + lane), x, first, k, g);
            for (int m = 0; m < M; ++m) sums[m] = rs_cols_zero_i();
        }
        if constexpr (OFFSETS) rs_tile_offsets<M, HALF_SCALES>(acc, panel.offset + g * 2 * RS_TILE_COLUMNS + lane, x, first, k, g);
        for (int m = 0; m < M; ++m) rows[m] += RS_GROUP;
    }
    for (int m = 0; m < M; ++m) rs_cols_store(tile + m * RS_TILE_COLUMNS + lane, acc[m]);
}

// m (at most M) rows from `first` against the whole panel, into tile.
template <int TYPE, int M>
static void rs_int16_tile_rows(const rs_tile_panel& panel, int64_t groups, const rs_int16_rows& x, int64_t first,
                               int64_t m, int64_t k, float* tile) {
    using R = rs_reader<TYPE>;
    if constexpr (M > 1) {
        if (m < M) return rs_int16_tile_rows<TYPE, M - 1>(panel, groups, x, first, m, k, tile);
    }
    for (int lane = 0; lane < RS_TILE_COLUMNS; lane += RS_TILE_LANES)
        rs_int16_tile<M, R::HALF_SCALES, R::OFFSETS>(panel, groups, lane, x, first, k, tile);
}

// tile_rows(r, m, tile) for each pass of at most RS_TILE_ROWS of `rows` rows, each pass's tile (m x
// RS_TILE_COLUMNS) then copied out to its rows' columns [n0, n0 + count).
template <typename TileRows>
static RS_ALWAYS_INLINE void rs_tile_passes(int64_t rows, int64_t n0, int64_t count, float* tile, float* out, int64_t ldo,
                                            TileRows tile_rows) {
    for (int64_t r = 0; r < rows; r += RS_TILE_ROWS) {
        const int64_t m = rows - r < RS_TILE_ROWS ? rows - r : RS_TILE_ROWS;
        tile_rows(r, m, tile);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < count; ++c) out[(r + i) * ldo + n0 + c] = tile[i * RS_TILE_COLUMNS + c];
    }
}

// Every one of `rows` quantised rows against output columns [n0, n1) (at most RS_TILE_COLUMNS of them) of
// type TYPE, groups groups of k weights each, their panel filled by decode(panel).
template <int TYPE, typename Decode>
static void rs_int16_tiles_over(int64_t groups, int64_t n0, int64_t n1, const rs_int16_rows& x, int64_t rows,
                                int64_t k, float* out, int64_t ldo, Decode decode) {
    const int64_t code_words = groups * RS_TILE_PAIRS * RS_TILE_COLUMNS, panel_floats = groups * 2 * RS_TILE_COLUMNS;
    int32_t* codes = rs_panel_buffer<int32_t>(code_words + 2 * panel_floats + RS_TILE_ROWS * RS_TILE_COLUMNS);
    float* floats = reinterpret_cast<float*>(codes + code_words);
    const rs_tile_panel panel{codes, floats, floats + panel_floats};
    float* tile = floats + 2 * panel_floats;
    decode(panel);
    rs_tile_passes(rows, n0, n1 - n0, tile, out, ldo, [&](int64_t r, int64_t m, float* t) {
        rs_int16_tile_rows<TYPE, RS_TILE_ROWS>(panel, groups, x, r, m, k, t);
    });
}

// Every one of `rows` quantised rows against part rows [n0, n1) (at most RS_TILE_COLUMNS of them), decoded from
// the part's blocks.
template <int TYPE>
static void rs_linear_int16_tiles(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int16_rows& x,
                                  int64_t rows, int64_t k, float* out, int64_t ldo) {
    rs_int16_tiles_over<TYPE>(k / RS_GROUP, n0, n1, x, rows, k, out, ldo,
                              [&](const rs_tile_panel& panel) { rs_decode_tile_panel<TYPE>(p, blocks, n0, n1, panel); });
}
