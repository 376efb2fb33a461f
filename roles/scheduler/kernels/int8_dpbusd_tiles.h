// The int8 tiles of the paths with AVX512_VNNI (int8_tiles.h): each 32 inputs of a row quantised to int8 with
// their own scale, multiplied with a work item's codes in vpdpbusd, 64 products per 512-bit instruction
// against vpdpwssd's 32 with int16 inputs (int16_tiles.h, whose layout this follows).
// vpdpbusd multiplies unsigned bytes with signed ones: the inputs go in as q + 128 (0..255) and each
// column's codes as they are (every type's codes fit int8), so a group's integer sum starts from -128 times
// the sum of the column's codes in it, kept in the panel beside the scales. Offsets meet the sums of the
// rounded inputs, as with int16 (int16_rows.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

// Every quantised type takes the int8 tiles here.
constexpr bool rs_int8_takes(int type) { return rs_type_has_codes(type); }

// Rows [r0, r1) of x (ldx floats apart), k values each, as int8 + 128 with a step per 32 inputs (into
// rows.q8 and rows.scale) and the sums of each 16 inputs as rounded (rows.sums).
static inline void rs_rows_to_int8(const float* x, int64_t ldx, int64_t r0, int64_t r1, int64_t k,
                                   const rs_int16_rows& rows) {
    const __m512i bias = _mm512_set1_epi32(128);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < k; c += RS_GROUP) {
            const float* xg = x + r * ldx + c;
            const __m512 v0 = _mm512_loadu_ps(xg), v1 = _mm512_loadu_ps(xg + 16);
            const float top = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
            const __m512 inverse = _mm512_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
            const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inverse));
            const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inverse));
            uint8_t* out = rows.q8 + r * k + c;
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(_mm512_add_epi32(q0, bias)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(q1, bias)));
            const float step = top / 127.0f;
            rows.scale[(r * k + c) / RS_GROUP] = step;
            rows.sums[(r * k + c) / 16] = step * float(_mm512_reduce_add_epi32(q0));  // exact integers
            rows.sums[(r * k + c) / 16 + 1] = step * float(_mm512_reduce_add_epi32(q1));
        }
}

// The signed sum of a half-group's 16 codes (bytes 16 h .. 16 h + 15 of codes).
static RS_ALWAYS_INLINE int32_t rs_code_sum(__m256i codes, int h) {
    // psadbw sums unsigned bytes: flip each code's sign bit (code + 128), then take 16 x 128 back off.
    const __m256i sums = _mm256_sad_epu8(_mm256_xor_si256(codes, _mm256_set1_epi8(-128)), _mm256_setzero_si256());
    return int32_t(_mm256_extract_epi64(sums, 2 * h) + _mm256_extract_epi64(sums, 2 * h + 1)) - 16 * 128;
}

// Part rows [n0, n1) (at most RS_TILE_COLUMNS) decoded into panel, k weights each.
template <int TYPE>
static void rs_decode_int8_panel(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int8_panel& panel) {
    constexpr bool HALF_SCALES = rs_reader<TYPE>::HALF_SCALES;
    rs_read_tile_groups<TYPE>(p, blocks, n0, n1, panel.scale, panel.offset, [&](int64_t g, __m256i* codes) {
        int32_t* start = panel.start + g * 2 * RS_TILE_COLUMNS;
        for (int c = 0; c < RS_TILE_COLUMNS; ++c) {
            const int32_t low = rs_code_sum(codes[c], 0), high = rs_code_sum(codes[c], 1);
            start[c] = -128 * (HALF_SCALES ? low : low + high);
            start[RS_TILE_COLUMNS + c] = -128 * high;
        }
        rs_store_quads(codes, panel.codes + g * RS_TILE_QUADS * RS_TILE_COLUMNS);
    });
}

// out[r, c] for M quantised rows from `first` and the panel's 16 columns, into the M x RS_TILE_COLUMNS tile.
template <int M, bool HALF_SCALES, bool OFFSETS>
static RS_ALWAYS_INLINE void rs_int8_tile(const rs_int8_panel& panel, int64_t groups, const rs_int16_rows& x,
                                          int64_t first, int64_t k, float* tile) {
    constexpr int HALF = RS_TILE_QUADS / 2;
    const uint8_t* rows[M];
    for (int m = 0; m < M; ++m) rows[m] = x.q8 + (first + m) * k;
    rs_cols_f acc[M];  // the AVX-512 paths' 16 columns (RS_INT16_ZMM, which every RS_INT16_VNNI path sets)
    for (int m = 0; m < M; ++m) acc[m] = rs_cols_zero_f();
    for (int64_t g = 0; g < groups; ++g) {
        const int32_t* codes = panel.codes + g * RS_TILE_QUADS * RS_TILE_COLUMNS;
        for (int h = 0; h < (HALF_SCALES ? 2 : 1); ++h) {
            const __m512i start = _mm512_loadu_si512(panel.start + (g * 2 + h) * RS_TILE_COLUMNS);
            __m512i sums[M];
            for (int m = 0; m < M; ++m) sums[m] = start;
            const int q0 = HALF_SCALES ? h * HALF : 0, q1 = HALF_SCALES ? q0 + HALF : RS_TILE_QUADS;
#pragma GCC unroll 8
            for (int q = q0; q < q1; ++q) {
                const __m512i w = _mm512_loadu_si512(codes + q * RS_TILE_COLUMNS);
                for (int m = 0; m < M; ++m) {
                    int32_t quad;
                    std::memcpy(&quad, rows[m] + 4 * q, 4);
                    sums[m] = _mm512_dpbusd_epi32(sums[m], _mm512_set1_epi32(quad), w);
                }
            }
            rs_tile_scale<M>(acc, sums, rs_cols_load(panel.scale + (g * 2 + h) * RS_TILE_COLUMNS), x, first, k, g);
        }
        if constexpr (OFFSETS) rs_tile_offsets<M, HALF_SCALES>(acc, panel.offset + g * 2 * RS_TILE_COLUMNS, x, first, k, g);
        for (int m = 0; m < M; ++m) rows[m] += RS_GROUP;
    }
    for (int m = 0; m < M; ++m) rs_cols_store(tile + m * RS_TILE_COLUMNS, acc[m]);
}

// m (at most M) rows from `first` against the whole panel, into tile.
template <int TYPE, int M>
static void rs_int8_tile_rows(const rs_int8_panel& panel, int64_t groups, const rs_int16_rows& x, int64_t first,
                              int64_t m, int64_t k, float* tile) {
    using R = rs_reader<TYPE>;
    if constexpr (M > 1) {
        if (m < M) return rs_int8_tile_rows<TYPE, M - 1>(panel, groups, x, first, m, k, tile);
    }
    rs_int8_tile<M, R::HALF_SCALES, R::OFFSETS>(panel, groups, x, first, k, tile);
}
