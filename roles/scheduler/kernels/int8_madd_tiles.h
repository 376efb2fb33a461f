// The int8 tiles of the avx2 path (int8_tiles.h): vpmaddubsw multiplies 32 unsigned bytes with 32 signed ones
// and adds neighbouring products in int16, 32 products per instruction against vpmaddwd's 16 with int16 inputs.
// The codes are the unsigned side: each type's codes raised by its bias to 0..top (a top of at most 63, 6
// bits), the bias times the scale then taken back with the offsets, which meet the sums of the rounded inputs
// (w = s q + o = s (q + bias) + (o - s bias)). The inputs are the signed side, -127..127. A lane's int16 pair
// sums add up over a run of quads small enough never to pass 32767, then widen to int32 in one vpmaddwd.
// Q8_0's codes and the IQ4 tables' values need 8 bits: a linear with such a part stays int16.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "packed_tiles.h"

// What TYPE's codes are raised by to be unsigned, and their largest value then (0: the type stays int16).
constexpr int rs_madd_bias(int type) {
    return type == RS_Q4_0 ? 8 : type == RS_Q5_0 ? 16 : type == RS_Q3_K ? 4 : type == RS_Q6_K ? 32 : 0;
}
constexpr int rs_madd_top(int type) {
    switch (type) {
        case RS_Q2_K: return 3;
        case RS_Q3_K: return 7;
        case RS_Q4_0: case RS_Q4_1: case RS_Q4_K: return 15;
        case RS_Q5_0: case RS_Q5_1: case RS_Q5_K: return 31;
        case RS_Q6_K: return 63;
        default: return 0;
    }
}
constexpr bool rs_int8_takes(int type) { return rs_madd_top(type) > 0; }

// The quads of a group under one scale: half of them where the type has a scale per 16 weights.
template <int TYPE>
constexpr int rs_madd_span = rs_reader<TYPE>::HALF_SCALES ? RS_TILE_QUADS / 2 : RS_TILE_QUADS;

// Quads whose int16 pair sums a lane adds before widening: each adds at most 2 x top x 127, and a run ends at
// its scale's last quad.
template <int TYPE>
constexpr int rs_madd_run = 32767 / (2 * 127 * rs_madd_top(TYPE)) < rs_madd_span<TYPE>
                                ? 32767 / (2 * 127 * rs_madd_top(TYPE))
                                : rs_madd_span<TYPE>;

// An empty asm that takes v in a register and may have changed it: the adds before and after it stay in
// their order. Without it GCC reassociates a run's int16 adds into a tree that keeps every product of the run
// live at once, and spills most of them (a 3-row pass of 4-bit codes: 1.16x slower).
static RS_ALWAYS_INLINE void rs_add_in_order(__m256i& v) { asm("" : "+x"(v)); }

// Rows [r0, r1) of x (ldx floats apart), k values each, as int8 with a step per 32 inputs (into rows.q8 and
// rows.scale) and the sums of each 16 inputs as rounded (rows.sums).
static inline void rs_rows_to_int8(const float* x, int64_t ldx, int64_t r0, int64_t r1, int64_t k,
                                   const rs_int16_rows& rows) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < k; c += RS_GROUP) {
            __m256i q[4];
            const float step = rs_round_group(x + r * ldx + c, 127.0f, q);
            // The packs work within 128-bit lanes: 32-bit words [q0 0-3, q1 0-3, q2 0-3, q3 0-3, q0 4-7, ...].
            const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q8 + r * k + c), _mm256_permutevar8x32_epi32(bytes, order));
            rs_store_group_step(rows, r * k + c, step, q);
        }
}

// Part rows [n0, n1) (at most RS_TILE_COLUMNS) decoded from the file's blocks into panel, k weights each: the
// codes raised by the type's bias, the offsets lowered by the bias times the scales (panel.start unused).
template <int TYPE>
static void rs_decode_int8_blocks(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int8_panel& panel) {
    constexpr int BIAS = rs_madd_bias(TYPE);
    rs_read_tile_groups<TYPE>(p, blocks, n0, n1, panel.scale, panel.offset, [&](int64_t g, __m256i* codes) {
        if constexpr (BIAS != 0) {
            const float* scale = panel.scale + g * 2 * RS_TILE_COLUMNS;
            float* offset = panel.offset + g * 2 * RS_TILE_COLUMNS;
            for (int i = 0; i < 2 * RS_TILE_COLUMNS; ++i) offset[i] -= float(BIAS) * scale[i];  // exact: 2^n
            for (int c = 0; c < RS_TILE_COLUMNS; ++c) codes[c] = _mm256_add_epi8(codes[c], _mm256_set1_epi8(BIAS));
        }
        rs_store_quads(codes, panel.codes + g * RS_TILE_QUADS * RS_TILE_COLUMNS);
    });
}

// A packed tile (packed_layout.h) as the int8 panel: the values rs_decode_int8_blocks reads from the file's
// blocks (the codes raised by the type's bias, four to a column's word; the scales; the offsets lowered by the
// bias times the scales), so the tiles give the same bits while the file's pages, which the packed tiles let
// go, stay out of memory. A pair of int16 pairs (codes 4q, 4q + 1 and 4q + 2, 4q + 3 of each column) packs to
// bytes within each 128-bit lane, columns' pairs first; a byte shuffle puts each column's four codes together.
template <int TYPE>
static void rs_packed_int8_panel(const uint8_t* tile, int64_t groups, const rs_int8_panel& panel) {
    constexpr int BIAS = rs_madd_bias(TYPE);
    rs_packed_panel_of<TYPE, BIAS>(
        tile, groups, RS_TILE_QUADS * RS_TILE_COLUMNS, panel.codes, panel.scale, panel.offset,
        [](const uint8_t* group, int lane, int32_t* codes) {
            const __m256i quads = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,  //
                                                   0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
            __m256i first = _mm256_setzero_si256();
            rs_packed_pairs<TYPE>(group, lane, [&](int q, __m256i pair) {
                if (q % 2 == 0) {
                    first = pair;
                    return;
                }
                __m256i bytes = _mm256_shuffle_epi8(_mm256_packs_epi16(first, pair), quads);
                if constexpr (BIAS != 0) bytes = _mm256_add_epi8(bytes, _mm256_set1_epi8(BIAS));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + q / 2 * RS_TILE_COLUMNS + lane), bytes);
            });
        });
}

// Part rows [n0, n1) decoded into panel: from their packed tile where they are a whole one, so the file's
// pages stay given back, else from the file's blocks.
template <int TYPE>
static void rs_decode_int8_panel(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const rs_int8_panel& panel) {
    if constexpr (rs_type_packs(TYPE)) {
        if (rs_whole_packed_tile(p, n0, n1)) {
            const int64_t groups = blocks * rs_reader<TYPE>::GROUPS;
            return rs_packed_int8_panel<TYPE>(rs_packed_tile_at<TYPE>(p, n0, groups), groups, panel);
        }
    }
    rs_decode_int8_blocks<TYPE>(p, blocks, n0, n1, panel);
}

// out[r, c] for M int8 rows from `first` and the panel's columns [lane, lane + 8 L), into the M x
// RS_TILE_COLUMNS buffer tile: each broadcast row input meets L registers of 8 columns.
template <int TYPE, int M, int L>
static RS_ALWAYS_INLINE void rs_int8_madd_tile(const rs_int8_panel& panel, int64_t groups, int lane,
                                               const rs_int16_rows& x, int64_t first, int64_t k, float* tile) {
    constexpr bool HALF_SCALES = rs_reader<TYPE>::HALF_SCALES;
    constexpr int SPAN = rs_madd_span<TYPE>, RUN = rs_madd_run<TYPE>;
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t* rows[M];
    for (int m = 0; m < M; ++m) rows[m] = x.q8 + (first + m) * k;
    __m256 acc[L][M];
    for (int l = 0; l < L; ++l)
        for (int m = 0; m < M; ++m) acc[l][m] = _mm256_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
        const int32_t* codes = panel.codes + g * RS_TILE_QUADS * RS_TILE_COLUMNS + lane;
        for (int h = 0; h < RS_TILE_QUADS / SPAN; ++h) {
            __m256i sums[L][M];
            for (int run = 0; run < SPAN / RUN; ++run) {
                __m256i pairs[L][M];
#pragma GCC unroll 8
                for (int i = 0; i < RUN; ++i) {
                    const int q = h * SPAN + run * RUN + i;
                    __m256i w[L];
                    for (int l = 0; l < L; ++l)
                        w[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + q * RS_TILE_COLUMNS + 8 * l));
                    for (int m = 0; m < M; ++m) {
                        int32_t quad;
                        std::memcpy(&quad, rows[m] + 4 * q, 4);
                        const __m256i inputs = _mm256_set1_epi32(quad);
                        for (int l = 0; l < L; ++l) {
                            const __m256i products = _mm256_maddubs_epi16(w[l], inputs);
                            pairs[l][m] = i == 0 ? products : _mm256_add_epi16(pairs[l][m], products);
                            if constexpr (RUN == SPAN) rs_add_in_order(pairs[l][m]);  // shorter runs: no gain
                        }
                    }
                }
                for (int l = 0; l < L; ++l)
                    for (int m = 0; m < M; ++m) {
                        const __m256i widened = _mm256_madd_epi16(pairs[l][m], ones);
                        sums[l][m] = run == 0 ? widened : _mm256_add_epi32(sums[l][m], widened);
                    }
            }
            for (int l = 0; l < L; ++l)
                rs_tile_scale<M>(acc[l], sums[l], rs_cols_load(panel.scale + (g * 2 + h) * RS_TILE_COLUMNS + lane + 8 * l), x,
                                 first, k, g);
        }
        for (int l = 0; l < L; ++l)
            rs_tile_offsets<M, HALF_SCALES>(acc[l], panel.offset + g * 2 * RS_TILE_COLUMNS + lane + 8 * l, x, first, k, g);
        for (int m = 0; m < M; ++m) rows[m] += RS_GROUP;
    }
    for (int l = 0; l < L; ++l)
        for (int m = 0; m < M; ++m) rs_cols_store(tile + m * RS_TILE_COLUMNS + lane + 8 * l, acc[l][m]);
}

// m (at most M) rows from `first` against the whole panel, into tile. Where one run spans a scale (no int32
// sums kept across runs), 3 rows a pass meet 16 columns (L = 2: 12 accumulators, each broadcast input used
// twice); else 4 rows meet 8 columns at a time (12 accumulators with the int32 sums).
template <int TYPE, int M>
static void rs_int8_tile_rows(const rs_int8_panel& panel, int64_t groups, const rs_int16_rows& x, int64_t first,
                              int64_t m, int64_t k, float* tile) {
    constexpr bool WHOLE = rs_madd_run<TYPE> == rs_madd_span<TYPE>;
    constexpr int L = WHOLE ? 2 : 1;
    constexpr int MOST = WHOLE ? 3 : 4;
    if constexpr (M > MOST) {
        for (int64_t i = 0; i < m; i += MOST)
            rs_int8_tile_rows<TYPE, MOST>(panel, groups, x, first + i, m - i < MOST ? m - i : MOST, k, tile + i * RS_TILE_COLUMNS);
    } else {
        if constexpr (M > 1) {
            if (m < M) return rs_int8_tile_rows<TYPE, M - 1>(panel, groups, x, first, m, k, tile);
        }
        for (int lane = 0; lane < RS_TILE_COLUMNS; lane += 8 * L)
            rs_int8_madd_tile<TYPE, M, L>(panel, groups, lane, x, first, k, tile);
    }
}
