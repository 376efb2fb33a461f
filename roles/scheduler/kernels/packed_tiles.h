// Linears with int16 activations over repacked weights (packed_layout.h): a work item whose 16 output rows
// are a packed tile multiplies each row's int16 form (int16_rows.h) with the tile's codes, every register
// lane an output column, in calls of any number of rows (int8 activations: of fewer than RS_INT16_MAX_ROWS, for
// the linears int8_packed_rows.h does not take).
// A chunk of codes is loaded once; a shift and a mask (Q8_0: shifts; Q5_0, Q5_1, Q6_K: and their high bits)
// give two neighbouring codes of every column as int16, and one vpmaddwd (vpdpwssd with VNNI) takes their
// products with two inputs of a row, broadcast: 16 columns' products a 512-bit instruction, where the row
// kernels widen one row's codes and sum across lanes at the end, and where the int16 tiles (int16_tiles.h)
// decode a panel of the work item's codes for every call.
// Per group and row, one float multiply-add applies the columns' scales times the row's step, then the
// offsets meet the sums of the rounded inputs, through the int16 tiles' own rs_tile_scale and
// rs_tile_offset: their arithmetic in the same order, so a row's outputs have the same bits whatever the
// number of rows in its call. On avx2, calls of RS_PACKED_PANEL_ROWS rows or more unpack the tile into the
// int16 tiles' panel once and run their loop over it (rs_packed_panel): the same bits again.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "int16_tiles.h"
#include "packed_layout.h"

// The registers of packed codes: 16 columns' words on the AVX-512 paths, 8 on avx2 (rs_cols_*).
#ifdef RS_INT16_ZMM
static RS_ALWAYS_INLINE __m512i rs_cols_load_i(const uint8_t* p) { return _mm512_loadu_si512(p); }
static RS_ALWAYS_INLINE void rs_cols_store_i(int32_t* p, __m512i v) { _mm512_storeu_si512(p, v); }
static RS_ALWAYS_INLINE __m512 rs_cols_halves(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
static RS_ALWAYS_INLINE __m512i rs_cols_nibble_pair(__m512i words, int i) {
    return _mm512_and_si512(_mm512_srli_epi32(words, 4 * i), _mm512_set1_epi32(0x000F000F));
}
static RS_ALWAYS_INLINE __m512i rs_cols_sub16(__m512i pair, int centre) {
    return _mm512_sub_epi16(pair, _mm512_set1_epi16(short(centre)));
}
static RS_ALWAYS_INLINE __m512i rs_cols_or(__m512i a, __m512i b) { return _mm512_or_si512(a, b); }
// A pair's high bits (BITS of them) from `words`, where they sit `shift` bits above bit 4 (below: -shift),
// into bits 4.. of each 16-bit half. The kernels' loops are unrolled: shift is a constant there.
template <int BITS>
static RS_ALWAYS_INLINE __m512i rs_cols_high_bits(__m512i words, int shift) {
    const __m512i moved = shift >= 0 ? _mm512_srli_epi32(words, shift) : _mm512_slli_epi32(words, -shift);
    return _mm512_and_si512(moved, _mm512_set1_epi32(BITS == 1 ? 0x00100010 : 0x00300030));
}
static RS_ALWAYS_INLINE __m512i rs_cols_low_bytes(__m512i words) {
    return _mm512_srai_epi16(_mm512_slli_epi16(words, 8), 8);
}
static RS_ALWAYS_INLINE __m512i rs_cols_high_bytes(__m512i words) { return _mm512_srai_epi16(words, 8); }
static RS_ALWAYS_INLINE __m512i rs_cols_madd_pair(__m512i acc, __m512i codes, const int16_t* x) {
    int32_t pair;
    std::memcpy(&pair, x, 4);
#ifdef RS_INT16_VNNI
    return _mm512_dpwssd_epi32(acc, codes, _mm512_set1_epi32(pair));
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(codes, _mm512_set1_epi32(pair)));
#endif
}
#else
static RS_ALWAYS_INLINE __m256i rs_cols_load_i(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
static RS_ALWAYS_INLINE void rs_cols_store_i(int32_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
static RS_ALWAYS_INLINE __m256 rs_cols_halves(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static RS_ALWAYS_INLINE __m256i rs_cols_nibble_pair(__m256i words, int i) {
    return _mm256_and_si256(_mm256_srli_epi32(words, 4 * i), _mm256_set1_epi32(0x000F000F));
}
static RS_ALWAYS_INLINE __m256i rs_cols_sub16(__m256i pair, int centre) {
    return _mm256_sub_epi16(pair, _mm256_set1_epi16(short(centre)));
}
static RS_ALWAYS_INLINE __m256i rs_cols_or(__m256i a, __m256i b) { return _mm256_or_si256(a, b); }
template <int BITS>
static RS_ALWAYS_INLINE __m256i rs_cols_high_bits(__m256i words, int shift) {
    const __m256i moved = shift >= 0 ? _mm256_srli_epi32(words, shift) : _mm256_slli_epi32(words, -shift);
    return _mm256_and_si256(moved, _mm256_set1_epi32(BITS == 1 ? 0x00100010 : 0x00300030));
}
static RS_ALWAYS_INLINE __m256i rs_cols_low_bytes(__m256i words) {
    return _mm256_srai_epi16(_mm256_slli_epi16(words, 8), 8);
}
static RS_ALWAYS_INLINE __m256i rs_cols_high_bytes(__m256i words) { return _mm256_srai_epi16(words, 8); }
static RS_ALWAYS_INLINE __m256i rs_cols_madd_pair(__m256i acc, __m256i codes, const int16_t* x) {
    int32_t pair;
    std::memcpy(&pair, x, 4);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(codes, _mm256_set1_epi32(pair)));
}
#endif

// The columns' scales (or offsets) at p: half floats, or float32 for Q4_K, Q5_K and Q6_K.
template <int TYPE>
static RS_ALWAYS_INLINE rs_cols_f rs_packed_columns(const uint8_t* p) {
    if constexpr (rs_packed_scale_bytes(TYPE) == 4) return rs_cols_load(reinterpret_cast<const float*>(p));
    else return rs_cols_halves(p);
}

// visit(q, pair) for the 16 pairs of group `group`'s codes (codes 2q and 2q + 1) of the packed tile's columns
// [lane, lane + RS_TILE_LANES), in order, each as int16 pairs centred as the int16 tiles' codes are. The loops
// are unrolled: q is a constant in each call.
template <int TYPE, typename Visit>
static RS_ALWAYS_INLINE void rs_packed_pairs(const uint8_t* group, int lane, Visit visit) {
    constexpr int CHUNK = RS_PACKED_COLUMNS * 4;  // bytes of a chunk of words
    const uint8_t* codes = group + rs_packed_codes_at(TYPE) + lane * 4;
    if constexpr (!rs_packed_nibbles(TYPE)) {
#pragma GCC unroll 8
        for (int t = 0; t < 8; ++t) {
            const rs_cols_i words = rs_cols_load_i(codes + t * CHUNK);
            visit(2 * t, rs_cols_low_bytes(words));
            visit(2 * t + 1, rs_cols_high_bytes(words));
        }
    } else {
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
            const rs_cols_i words = rs_cols_load_i(codes + t * CHUNK);
            rs_cols_i high = rs_cols_zero_i();
            if constexpr (rs_packed_high_bits(TYPE) != 0)
                high = rs_cols_load_i(group + rs_packed_high_at(TYPE) + (t / 2) * CHUNK + lane * 4);
#pragma GCC unroll 4
            for (int i = 0; i < 4; ++i) {
                rs_cols_i pair = rs_cols_nibble_pair(words, i);
                if constexpr (rs_packed_high_bits(TYPE) != 0)
                    pair = rs_cols_or(pair, rs_cols_high_bits<rs_packed_high_bits(TYPE)>(
                                                high, rs_packed_high_position(TYPE, t, i) - 4));
                if constexpr (rs_packed_centre(TYPE) != 0) pair = rs_cols_sub16(pair, rs_packed_centre(TYPE));
                visit(4 * t + i, pair);
            }
        }
    }
}

// The columns' scales of a group at `group` for [lane, lane + RS_TILE_LANES): codes 0-15's (half 0) or
// 16-31's (half 1; a different one only for Q6_K); and their offsets.
template <int TYPE>
static RS_ALWAYS_INLINE rs_cols_f rs_packed_scale_columns(const uint8_t* group, int lane, int half) {
    const int second = rs_packed_half_scales(TYPE) && half == 1 ? RS_PACKED_COLUMNS : 0;
    return rs_packed_columns<TYPE>(group + (second + lane) * rs_packed_scale_bytes(TYPE));
}
template <int TYPE>
static RS_ALWAYS_INLINE rs_cols_f rs_packed_offset_columns(const uint8_t* group, int lane) {
    return rs_packed_columns<TYPE>(group + (RS_PACKED_COLUMNS + lane) * rs_packed_scale_bytes(TYPE));
}

// A call of one or two rows is bound by memory latency: each tile's groups are read once, from memory, and the
// hardware prefetcher does not run far enough ahead of a stream of 300-600-byte groups. So the first pass over
// a tile asks for the group RS_PACKED_PREFETCH_GROUPS ahead (into the next tile at its end). On a Zen 1 EPYC
// (avx2) the bundled model's one-sequence decode step went from 12.9 to 10.2 ms (best of three alternating
// runs); 6, 8 and 12 groups ahead measured alike, and 4 rows gained nothing (they are bound by instructions).
constexpr int RS_PACKED_PREFETCH_GROUPS = 8;
constexpr int RS_PACKED_PREFETCH_MAX_ROWS = 2;
template <int TYPE>
static RS_ALWAYS_INLINE void rs_packed_prefetch(const uint8_t* group) {
    const char* ahead = reinterpret_cast<const char*>(group) + RS_PACKED_PREFETCH_GROUPS * rs_packed_group_bytes(TYPE);
    for (int offset = 0; offset < rs_packed_group_bytes(TYPE); offset += 64) _mm_prefetch(ahead + offset, _MM_HINT_T0);
}

// out[m, lane + c] for M quantised rows from `first` and the packed tile's columns [lane, lane + RS_TILE_LANES).
template <int TYPE, int M>
static RS_ALWAYS_INLINE void rs_packed_tile(const uint8_t* tile, int64_t groups, int lane, const rs_int16_rows& x,
                                            int64_t first, int64_t k, float* out, int64_t ldo) {
    const int16_t* rows[M];
    for (int m = 0; m < M; ++m) rows[m] = x.q + (first + m) * k;
    rs_cols_f acc[M];
    for (int m = 0; m < M; ++m) acc[m] = rs_cols_zero_f();
    for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* group = tile + g * rs_packed_group_bytes(TYPE);
        if (M <= RS_PACKED_PREFETCH_MAX_ROWS && lane == 0) rs_packed_prefetch<TYPE>(group);
        rs_cols_i sums[M];
        for (int m = 0; m < M; ++m) sums[m] = rs_cols_zero_i();
        rs_packed_pairs<TYPE>(group, lane, [&](int q, rs_cols_i pair) {
            for (int m = 0; m < M; ++m) sums[m] = rs_cols_madd_pair(sums[m], pair, rows[m] + 2 * q);
            if (rs_packed_half_scales(TYPE) && q == RS_TILE_PAIRS / 2 - 1) {  // codes 0-15: their own scale
                rs_tile_scale<M>(acc, sums, rs_packed_scale_columns<TYPE>(group, lane, 0), x, first, k, g);
                for (int m = 0; m < M; ++m) sums[m] = rs_cols_zero_i();
            }
        });
        // The group's (Q6_K: codes 16-31's) scale.
        rs_tile_scale<M>(acc, sums, rs_packed_scale_columns<TYPE>(group, lane, 1), x, first, k, g);
        if constexpr (rs_packed_offsets(TYPE))
            rs_tile_offset<M, false>(acc, rs_packed_offset_columns<TYPE>(group, lane), x, first, k, g, 0);
        for (int m = 0; m < M; ++m) rows[m] += RS_GROUP;
    }
    for (int m = 0; m < M; ++m) rs_cols_store(out + (first + m) * ldo + lane, acc[m]);
}

// m (at most M) rows from `first` against the whole tile.
template <int TYPE, int M>
static void rs_packed_tile_rows(const uint8_t* tile, int64_t groups, const rs_int16_rows& x, int64_t first, int64_t m,
                                int64_t k, float* out, int64_t ldo) {
    if constexpr (M > 1) {
        if (m < M) return rs_packed_tile_rows<TYPE, M - 1>(tile, groups, x, first, m, k, out, ldo);
    }
    for (int lane = 0; lane < RS_PACKED_COLUMNS; lane += RS_TILE_LANES)
        rs_packed_tile<TYPE, M>(tile, groups, lane, x, first, k, out, ldo);
}

// The offsets of a group's half h for the columns [lane, lane + RS_TILE_LANES): the type's own (none: zero),
// lowered by BIAS times the half's scales (exact: BIAS is 0 or 2^n).
template <int TYPE, int BIAS>
static RS_ALWAYS_INLINE rs_cols_f rs_packed_lowered_offsets(const uint8_t* group, int lane, int h) {
    rs_cols_f base = rs_packed_offsets(TYPE) ? rs_packed_offset_columns<TYPE>(group, lane) : rs_cols_zero_f();
    if constexpr (BIAS != 0) base = rs_cols_fmadd(rs_cols_set1(-float(BIAS)), rs_packed_scale_columns<TYPE>(group, lane, h), base);
    return base;
}

// A packed tile's groups into a panel, lane by lane: write_codes(group, lane, codes) stores a lane's codes of
// a group at that group's code words (code_words of them a group), then each half's scales and offsets go to
// scale and offset [g][half][column], each offset lowered by BIAS times its scale (exact: BIAS is 0 or 2^n).
template <int TYPE, int BIAS, typename WriteCodes>
static RS_ALWAYS_INLINE void rs_packed_panel_of(const uint8_t* tile, int64_t groups, int64_t code_words, int32_t* codes,
                                                float* scale, float* offset, WriteCodes write_codes) {
    for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* group = tile + g * rs_packed_group_bytes(TYPE);
        float* scales = scale + g * 2 * RS_TILE_COLUMNS;
        float* offsets = offset + g * 2 * RS_TILE_COLUMNS;
        for (int lane = 0; lane < RS_PACKED_COLUMNS; lane += RS_TILE_LANES) {
            write_codes(group, lane, codes + g * code_words);
            for (int half = 0; half < 2; ++half) {
                rs_cols_store(scales + half * RS_TILE_COLUMNS + lane, rs_packed_scale_columns<TYPE>(group, lane, half));
                rs_cols_store(offsets + half * RS_TILE_COLUMNS + lane, rs_packed_lowered_offsets<TYPE, BIAS>(group, lane, half));
            }
        }
    }
}

// A packed tile as the int16 tiles' panel (int16_tiles.h): its pairs, scales and offsets, the values the
// kernel above reads, so the tiles' loop over that panel gives the same bits.
template <int TYPE>
static void rs_packed_panel(const uint8_t* tile, int64_t groups, const rs_tile_panel& panel) {
    rs_packed_panel_of<TYPE, 0>(tile, groups, RS_TILE_PAIRS * RS_TILE_COLUMNS, panel.codes, panel.scale, panel.offset,
                                [](const uint8_t* group, int lane, int32_t* codes) {
                                    rs_packed_pairs<TYPE>(group, lane, [&](int q, rs_cols_i pair) {
                                        rs_cols_store_i(codes + q * RS_TILE_COLUMNS + lane, pair);
                                    });
                                });
}

// Calls of at least this many rows over a packed tile unpack it into the int16 tiles' panel once and run their
// loop, whose passes then read ready pairs, instead of extracting the pairs again in every pass of
// rs_packed_tile_rows. On avx2 only: from 6 rows (a pass's) the panel was 1.01-1.12x faster at 6-10 rows and
// 1.1-1.4x at 12-128 (Q4_1, Q8_0, Q6_K, 576 and 1536 columns, on a Zen 1 EPYC whose 256-bit operations are
// split in two and whose vector shifts share one pipe). The AVX-512 paths always read the packed tile.
#ifdef RS_INT16_ZMM
constexpr int64_t RS_PACKED_PANEL_ROWS = INT64_MAX;
#else
constexpr int64_t RS_PACKED_PANEL_ROWS = RS_TILE_ROWS;
#endif

// Whether part rows [n0, n1) are one whole packed tile of p, and where that tile starts.
static inline bool rs_whole_packed_tile(const rs_part& p, int64_t n0, int64_t n1) {
    return p.packed != nullptr && n0 % RS_PACKED_COLUMNS == 0 && n1 - n0 == RS_PACKED_COLUMNS;
}
template <int TYPE>
static inline const uint8_t* rs_packed_tile_at(const rs_part& p, int64_t n0, int64_t groups) {
    return p.packed + n0 / RS_PACKED_COLUMNS * groups * rs_packed_group_bytes(TYPE);
}

// Every one of `rows` quantised rows against the packed tile of part rows [n0, n0 + 16); out points at the
// part's first column.
template <int TYPE>
static void rs_linear_packed(const rs_part& p, int64_t n0, const rs_int16_rows& x, int64_t rows, int64_t k, float* out,
                             int64_t ldo) {
    const int64_t groups = k / RS_GROUP;
    const uint8_t* tile = rs_packed_tile_at<TYPE>(p, n0, groups);
    if (rows >= RS_PACKED_PANEL_ROWS)
        return rs_int16_tiles_over<TYPE>(groups, n0, n0 + RS_PACKED_COLUMNS, x, rows, k, out, ldo,
                                         [&](const rs_tile_panel& panel) { rs_packed_panel<TYPE>(tile, groups, panel); });
    for (int64_t r = 0; r < rows; r += RS_TILE_ROWS) {
        const int64_t m = rows - r < RS_TILE_ROWS ? rows - r : RS_TILE_ROWS;
        rs_packed_tile_rows<TYPE, RS_TILE_ROWS>(tile, groups, x, r, m, k, out + n0, ldo);
    }
}
