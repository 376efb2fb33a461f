// Calls of fewer than RS_INT16_MAX_ROWS rows with int8 activations on the avx2 path, over packed tiles
// (packed_layout.h): the decode steps of one or a few sequences, a speculative step's verification. The int8 tiles (int8_madd_tiles.h) decode a work
// item's codes into a panel for every call, which a call of few rows cannot repay; these read the packed tile
// as the int16 row kernels do (packed_tiles.h), with vpmaddubsw's 32 products an instruction where vpmaddwd
// takes 16, and no widening of the codes: a mask gives four codes of a column as unsigned bytes.
// A chunk word holds a column's codes 8t .. 8t + 7 as nibbles (code 8t + 2i in bits 4i, code 8t + 2i + 1 in
// bits 16 + 4i), so word & 0x0F0F0F0F is its codes 8t, 8t + 4, 8t + 1, 8t + 5 as four bytes and (word >> 4)
// & 0x0F0F0F0F its codes 8t + 2, 8t + 6, 8t + 3, 8t + 7; each row's int8 inputs are put once per call in
// that order (q8_order), so a quad of inputs meets its quad of codes. A code's high bits (Q5_0, Q5_1, Q5_K:
// one; Q6_K: two) are shifted from their word to bit 4 of its byte.
// Same arithmetic as the int8 tiles, in the same order: the pair sums of a run of quads are exact integers
// whatever the order of the quads, then each group (Q6_K: each half) meets the columns' scales times the row's
// step, then the offsets (lowered by the type's bias times the scales) meet the rounded inputs' sums, and the
// kept inputs meet their weights as the panel gives them. So a row's outputs have the same bits whether its
// call has 1 row or 100, and the tiles of a work item that is not a whole packed tile agree with these.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "int8_madd_tiles.h"
#include "packed_tiles.h"

// Whether calls of few rows over TYPE's packed tiles take int8 inputs (isa.INT8_ROWS agrees).
constexpr bool rs_int8_rows_take(int type) { return rs_type_packs(type) && rs_int8_takes(type); }

// Rows [r0, r1)'s int8 inputs (rows.q8) into rows.q8_order, each 8 as 0, 4, 1, 5, 2, 6, 3, 7.
static inline void rs_rows_to_nibble_order(int64_t r0, int64_t r1, int64_t k, const rs_int16_rows& rows) {
    const __m256i order = _mm256_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15,  //
                                           0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    for (int64_t at = r0 * k; at < r1 * k; at += RS_GROUP) {
        const __m256i inputs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.q8 + at));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows.q8_order + at), _mm256_shuffle_epi8(inputs, order));
    }
}

// Chunk t of a group's codes of the columns [lane, lane + 8) as two quads of bytes a column: quad[0] its codes
// 8t, 8t + 4, 8t + 1, 8t + 5, quad[1] 8t + 2, 8t + 6, 8t + 3, 8t + 7, each as the file has it (0 .. top: the
// codes the int8 tiles raise by the type's bias).
template <int TYPE>
static RS_ALWAYS_INLINE void rs_packed_quads(const uint8_t* group, int lane, int t, __m256i quad[2]) {
    constexpr int CHUNK = RS_PACKED_COLUMNS * 4;
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + rs_packed_codes_at(TYPE) + t * CHUNK + lane * 4));
    const __m256i nibbles = _mm256_set1_epi8(0x0F);
    quad[0] = _mm256_and_si256(words, nibbles);
    quad[1] = _mm256_and_si256(_mm256_srli_epi32(words, 4), nibbles);
    if constexpr (rs_packed_high_bits(TYPE) != 0) {
        const __m256i high = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(group + rs_packed_high_at(TYPE) + (t / 2) * CHUNK + lane * 4));
        // Bytes 0 and 2 take codes 8t + 2h (+ 1), whose high bits go to bits 4 and 20 (rs_cols_high_bits puts
        // them there); bytes 1 and 3 codes 8t + 2h + 4 (+ 1), to bits 4 and 20, then 8 higher.
        constexpr int BITS = rs_packed_high_bits(TYPE);
        for (int h = 0; h < 2; ++h) {
            const __m256i first = rs_cols_high_bits<BITS>(high, rs_packed_high_position(TYPE, t, h) - 4);
            const __m256i second = rs_cols_high_bits<BITS>(high, rs_packed_high_position(TYPE, t, h + 2) - 4);
            quad[h] = _mm256_or_si256(quad[h], _mm256_or_si256(first, _mm256_slli_epi32(second, 8)));
        }
    }
}

// The offsets of a group's half h for the columns [lane, lane + 8) as the int8 panel holds them: lowered by the
// type's bias times the scales.
template <int TYPE>
static RS_ALWAYS_INLINE rs_cols_f rs_int8_packed_offsets(const uint8_t* group, int lane, int h) {
    return rs_packed_lowered_offsets<TYPE, rs_madd_bias(TYPE)>(group, lane, h);
}

// out[m, lane + c] (RS_TILE_COLUMNS apart) for M int8 rows from `first` and the packed tile's columns
// [lane, lane + 8 L): L registers of 8 columns meet each broadcast quad of inputs. The int8 tiles' loop
// (rs_int8_madd_tile) with the codes taken from the packed tile instead of a panel. One loop for both, the
// codes' source a parameter, made the tiles' calls of 32 and 128 rows 1.1-1.25x slower (Zen 3 EPYC): each
// keeps its own.
template <int TYPE, int M, int L>
static RS_ALWAYS_INLINE void rs_int8_packed_tile(const uint8_t* tile, int64_t groups, int lane, const rs_int16_rows& x,
                                                 int64_t first, int64_t k, float* out) {
    constexpr bool HALF_SCALES = rs_reader<TYPE>::HALF_SCALES;
    constexpr int SPAN = rs_madd_span<TYPE>, RUN = rs_madd_run<TYPE>;
    static_assert(RUN % 2 == 0, "a run starts at a chunk's first quad");
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t* rows[M];
    for (int m = 0; m < M; ++m) rows[m] = x.q8_order + (first + m) * k;
    __m256 acc[L][M];
    for (int l = 0; l < L; ++l)
        for (int m = 0; m < M; ++m) acc[l][m] = _mm256_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* group = tile + g * rs_packed_group_bytes(TYPE);
        if (M <= RS_PACKED_PREFETCH_MAX_ROWS && lane == 0) rs_packed_prefetch<TYPE>(group);
        for (int h = 0; h < RS_TILE_QUADS / SPAN; ++h) {
            __m256i sums[L][M];
            for (int run = 0; run < SPAN / RUN; ++run) {
                __m256i pairs[L][M];
                __m256i quad[L][2];
#pragma GCC unroll 8
                for (int i = 0; i < RUN; ++i) {
                    const int q = h * SPAN + run * RUN + i;  // quad q: chunk q / 2's quad q % 2
                    if (q % 2 == 0)
                        for (int l = 0; l < L; ++l) rs_packed_quads<TYPE>(group, lane + 8 * l, q / 2, quad[l]);
                    for (int m = 0; m < M; ++m) {
                        int32_t quad_inputs;
                        std::memcpy(&quad_inputs, rows[m] + 4 * q, 4);
                        const __m256i inputs = _mm256_set1_epi32(quad_inputs);
                        for (int l = 0; l < L; ++l) {
                            const __m256i products = _mm256_maddubs_epi16(quad[l][q % 2], inputs);
                            pairs[l][m] = i == 0 ? products : _mm256_add_epi16(pairs[l][m], products);
                            if constexpr (RUN == SPAN) rs_add_in_order(pairs[l][m]);
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
                rs_tile_scale<M>(acc[l], sums[l], rs_packed_scale_columns<TYPE>(group, lane + 8 * l, h), x, first, k, g);
        }
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < (HALF_SCALES ? 2 : 1); ++h)
                rs_tile_offset<M, HALF_SCALES>(acc[l], rs_int8_packed_offsets<TYPE>(group, lane + 8 * l, h), x, first, k, g, h);
        for (int m = 0; m < M; ++m) rows[m] += RS_GROUP;
    }
    for (int l = 0; l < L; ++l)
        for (int m = 0; m < M; ++m) rs_cols_store(out + m * RS_TILE_COLUMNS + lane + 8 * l, acc[l][m]);
}

// m (at most M) rows from `first` against the whole packed tile, into the m x RS_TILE_COLUMNS buffer out, as the
// int8 tiles pass (rs_int8_tile_rows): where one run spans a scale, 3 rows a pass against 16 columns, else 4
// against 8; one row always against 16.
template <int TYPE, int M>
static void rs_int8_packed_rows(const uint8_t* tile, int64_t groups, const rs_int16_rows& x, int64_t first, int64_t m,
                                int64_t k, float* out) {
    constexpr bool WHOLE = rs_madd_run<TYPE> == rs_madd_span<TYPE>;
    constexpr int MOST = WHOLE ? 3 : 4;
    if constexpr (M > MOST) {
        for (int64_t i = 0; i < m; i += MOST)
            rs_int8_packed_rows<TYPE, MOST>(tile, groups, x, first + i, m - i < MOST ? m - i : MOST, k, out + i * RS_TILE_COLUMNS);
    } else {
        if constexpr (M > 1) {
            if (m < M) return rs_int8_packed_rows<TYPE, M - 1>(tile, groups, x, first, m, k, out);
        }
        constexpr int L = WHOLE || M == 1 ? 2 : 1;
        for (int lane = 0; lane < RS_PACKED_COLUMNS; lane += 8 * L)
            rs_int8_packed_tile<TYPE, M, L>(tile, groups, lane, x, first, k, out);
    }
}

// The packed tile's weights of every kept channel (x.kept_union), RS_TILE_COLUMNS a channel, as rs_decode_kept
// takes them from the int8 panel: scale x code + offset, the code raised and the offset lowered by the bias.
template <int TYPE>
static void rs_packed_kept(const uint8_t* tile, const rs_int16_rows& x, float* weights) {
    const int32_t* united = x.kept_union + 1;
    for (int32_t u = 0; u < x.kept_union[0]; ++u) {
        const int64_t g = united[u] / RS_GROUP;
        const int e = united[u] % RS_GROUP, code = e % 8;  // the code's place in its chunk
        const uint8_t* group = tile + g * rs_packed_group_bytes(TYPE);
        for (int lane = 0; lane < RS_PACKED_COLUMNS; lane += RS_TILE_LANES) {
            __m256i quad[2];
            rs_packed_quads<TYPE>(group, lane, e / 8, quad);
            const __m256i codes = rs_cols_code_byte(quad[(code / 2) % 2], (code % 2) * 2 + code / 4);
            rs_cols_store(weights + u * RS_TILE_COLUMNS + lane,
                          rs_cols_fmadd(rs_packed_scale_columns<TYPE>(group, lane, e / 16), rs_cols_float(codes),
                                        rs_int8_packed_offsets<TYPE>(group, lane, e / 16)));
        }
    }
}

// Every one of `rows` (< RS_INT16_MAX_ROWS) int8 rows against the packed tile of part rows [n0, n0 + 16); out
// points at the part's first column.
template <int TYPE>
static void rs_linear_int8_packed(const rs_part& p, int64_t n0, const rs_int16_rows& x, int64_t rows, int64_t k,
                                  float* out, int64_t ldo) {
    const int64_t groups = k / RS_GROUP;
    const uint8_t* tile = rs_packed_tile_at<TYPE>(p, n0, groups);
    float* buffer = rs_panel_buffer<float>((RS_TILE_ROWS + int64_t(x.kept_union[0])) * RS_TILE_COLUMNS);
    float* weights = buffer + RS_TILE_ROWS * RS_TILE_COLUMNS;
    rs_tile_passes(rows, n0, RS_PACKED_COLUMNS, buffer, out, ldo, [&](int64_t r, int64_t m, float* t) {
        rs_int8_packed_rows<TYPE, RS_TILE_ROWS>(tile, groups, x, r, m, k, t);
        // After the first pass, which brought the tile into cache: read before it, the kept channels' groups
        // were a few misses to memory per work item (a one-row decode step 1.2x slower).
        if (r == 0) rs_packed_kept<TYPE>(tile, x, weights);
        rs_add_kept(weights, x, r, m, t);
    });
}
