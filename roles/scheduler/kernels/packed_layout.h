// Weights repacked for linears with int16 activations (packed_tiles.h): a part's rows in tiles of 16, each
// group of 32 weights of a tile stored column by column, so that one vector register's lanes are the tile's
// 16 output columns and the codes of two neighbouring weights of a column come out of a lane as two int16
// with a shift and a mask. The row kernels (int16_rows.h) read a weight row's blocks one after another and
// spend most of their instructions widening codes and summing across lanes; from this layout a 512-bit
// multiply-add takes 16 columns' products at once and no lane sum is left at the end.
// No weight changes: the tile keeps each block's codes, and its half-float scale (and min) as the file has
// them; Q4_K keeps each group's scale and offset as float32, the products the readers compute
// (block_decode.h). Plain C++: no intrinsics, so the dispatcher's plain x86-64 code packs for every path.
//
// One tile (16 rows), group g (weights 32 g .. 32 g + 31 of every row), at g * rs_packed_group_bytes(type):
//   scales: per column its scale, then (Q4_1, Q5_1, Q4_K, Q5_K) its offset or (Q6_K) its second scale: half
//        floats (Q4_K, Q5_K, Q6_K: float32), 16 of each
//   codes, from rs_packed_codes_at(type):
//     all but Q8_0: 4 chunks of 16 words: chunk t, word c holds column c's codes 8t .. 8t + 7
//        (their low 4 bits) as nibbles, code 8t + 2i in bits 4i .. 4i + 3 and code 8t + 2i + 1 in bits
//        16 + 4i .. 16 + 4i + 3, so (word >> 4i) & 0x000F000F is the pair as two int16 (i < 4); Q5_0 and
//        Q5_1 then 2 chunks of 16 words of fifth bits: word w of column c holds those of codes 16w .. 16w + 15,
//        code 8t + 2i's in bit 4 + 4 (t % 2) + i and code 8t + 2i + 1's 16 bits higher, so
//        (word >> (4 (t % 2) + i)) & 0x00100010 is the pair's fifth bits in place; Q6_K likewise with its two
//        high bits a code, code 8t + 2i's in bits 2 (4 (t % 2) + i) and 2 (4 (t % 2) + i) + 1, shifted to 4
//     Q8_0: 8 chunks of 16 words: chunk t, word c holds column c's codes 4t, 4t + 2, 4t + 1, 4t + 3 as bytes
//        (low first), so each 16-bit half's low byte is code 4t (4t + 1) and its high byte code 4t + 2 (4t + 3)
//   weights: Q4_0 d (code - 8); Q5_0 d (code - 16); Q4_1, Q5_1 d code + m; Q8_0 d code; Q4_K, Q5_K scale code +
//        offset;
//        Q6_K scale (code - 32), its two scales for codes 0-15 and 16-31
// As many bytes as the file's blocks for Q4_0, Q4_1 and Q8_0; 13/11 as many for Q5_0, 7/6 for Q5_1 (their
// fifth bits spread for a shift and a mask), 4/3 for Q4_K, 256/176 for Q5_K, 256/210 for Q6_K. Rows past the last whole tile
// are not packed: the row kernels take them.
#pragma once

#include <cstdint>
#include <cstring>

#include "block_layout.h"

constexpr int RS_PACKED_COLUMNS = 16;

// Whether the kernels can take a type's blocks repacked.
constexpr bool rs_type_packs(int type) {
    return type == RS_Q4_0 || type == RS_Q4_1 || type == RS_Q5_0 || type == RS_Q5_1 || type == RS_Q8_0 ||
           type == RS_Q4_K || type == RS_Q5_K || type == RS_Q6_K;
}
constexpr bool rs_packed_nibbles(int type) { return type != RS_Q8_0; }
// Bits of each code above its nibble, in the high-bit words: Q5_0, Q5_1 and Q5_K one, Q6_K two.
constexpr int rs_packed_high_bits(int type) {
    return type == RS_Q5_0 || type == RS_Q5_1 || type == RS_Q5_K ? 1 : type == RS_Q6_K ? 2 : 0;
}
// Where code 8t + 2i's high bits sit in its 16-bit half of high-bit word t / 2 (code 8t + 2i + 1's: 16 higher).
constexpr int rs_packed_high_position(int type, int t, int i) {
    return rs_packed_high_bits(type) == 1 ? 4 + 4 * (t % 2) + i : 2 * (4 * (t % 2) + i);
}
constexpr bool rs_packed_offsets(int type) {
    return type == RS_Q4_1 || type == RS_Q5_1 || type == RS_Q4_K || type == RS_Q5_K;
}
// Q6_K: a scale per 16 weights, two a group (codes 0-15, 16-31).
constexpr bool rs_packed_half_scales(int type) { return type == RS_Q6_K; }
// What the codes are centred on: weight = d (code - centre).
constexpr int rs_packed_centre(int type) {
    return type == RS_Q4_0 ? 8 : type == RS_Q5_0 ? 16 : type == RS_Q6_K ? 32 : 0;
}
constexpr int rs_packed_scale_bytes(int type) {
    return type == RS_Q4_K || type == RS_Q5_K || type == RS_Q6_K ? 4 : 2;
}
// Bytes of a group's scales (and offsets), where its codes start.
constexpr int rs_packed_codes_at(int type) {
    const int count = rs_packed_offsets(type) || rs_packed_half_scales(type) ? 2 : 1;
    return count * rs_packed_scale_bytes(type) * RS_PACKED_COLUMNS;
}
// Where a group's high-bit words start (Q5_0, Q5_1, Q6_K), and its bytes.
constexpr int rs_packed_high_at(int type) {
    return rs_packed_codes_at(type) + (rs_packed_nibbles(type) ? 16 : 32) * RS_PACKED_COLUMNS;
}
constexpr int rs_packed_group_bytes(int type) {
    return rs_packed_high_at(type) + (rs_packed_high_bits(type) ? 8 * RS_PACKED_COLUMNS : 0);
}

// A half float's value (exact).
static inline float rs_half_value(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        int shift = 0;
        uint32_t m = mantissa;
        while (!(m & 0x400)) m <<= 1, ++shift;
        bits = sign | ((113 - shift) << 23) | ((m & 0x3FF) << 13);
    }
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

// A packed word from 8 codes (byte j of `codes`: code j, 0..15; see the layout above).
static inline uint32_t rs_nibble_word(uint64_t codes) {
    uint32_t word = 0;
    for (int odd = 0; odd < 2; ++odd) {
        // codes odd, odd + 2, odd + 4, odd + 6 -> nibbles 0..3 of 16 bits
        uint64_t v = (codes >> (8 * odd)) & 0x00FF00FF00FF00FFULL;
        v = (v | (v >> 12)) & 0x000000FF000000FFULL;
        v = (v | (v >> 24)) & 0xFFFFULL;
        word |= uint32_t(v) << (16 * odd);
    }
    return word;
}

static inline uint64_t rs_nibbles_of(const uint8_t* bytes, int shift) {
    uint64_t v;
    std::memcpy(&v, bytes, 8);
    return (v >> shift) & 0x0F0F0F0F0F0F0F0FULL;
}

// Column c's high-bit words of a group from high(e), the bits above code e's nibble.
template <typename High>
static inline void rs_pack_high_words(int type, int c, uint8_t* group, High high) {
    uint32_t words[2] = {0, 0};
    for (int t = 0; t < 4; ++t)
        for (int i = 0; i < 4; ++i) {
            const int at = rs_packed_high_position(type, t, i);
            words[t / 2] |= high(8 * t + 2 * i) << at | high(8 * t + 2 * i + 1) << (16 + at);
        }
    for (int w = 0; w < 2; ++w)
        std::memcpy(group + rs_packed_high_at(type) + (w * RS_PACKED_COLUMNS + c) * 4, &words[w], 4);
}

// Column c's scales and codes of one group: into its tile group (at group).
static inline void rs_pack_column(int type, const uint8_t* block, int j, int c, uint8_t* group) {
    uint8_t* codes = group + rs_packed_codes_at(type) + 4 * c;
    uint32_t words[8];
    if (type == RS_Q6_K) {
        // As the reader computes them: each 16 weights' int8 scale times d.
        const float d = rs_half_value(block + 208);
        for (int h = 0; h < 2; ++h) {
            const float scale = float(int8_t(block[192 + 2 * j + h])) * d;
            std::memcpy(group + 4 * (h * RS_PACKED_COLUMNS + c), &scale, 4);
        }
        const int half = j / 4, quarter = j % 4;
        const uint8_t* low = block + half * 64 + (quarter % 2) * 32;  // shifted by 4 (quarter / 2)
        const uint8_t* top = block + 128 + half * 32;                 // shifted by 2 quarter
        for (int t = 0; t < 4; ++t) words[t] = rs_nibble_word(rs_nibbles_of(low + 8 * t, 4 * (quarter / 2)));
        rs_pack_high_words(type, c, group, [&](int e) { return uint32_t(top[e] >> (2 * quarter)) & 3u; });
    } else if (type == RS_Q4_K || type == RS_Q5_K) {
        uint8_t unpacked[16];
        rs_unpack_k4_scales(block + 4, unpacked);
        // As the reader computes them: the sub-block's 6-bit scale times d, its min times -dmin.
        const float scale = float(unpacked[j]) * rs_half_value(block);
        const float offset = float(unpacked[8 + j]) * -rs_half_value(block + 2);
        std::memcpy(group + 4 * c, &scale, 4);
        std::memcpy(group + 4 * (RS_PACKED_COLUMNS + c), &offset, 4);
        // sub-blocks 2i, 2i + 1: low, high nibbles of 32 bytes (Q5_K: after 32 bytes whose bit j is group j's
        // fifth bit of code i in byte i)
        const uint8_t* nibbles = block + (type == RS_Q5_K ? 48 : 16) + (j / 2) * 32;
        for (int t = 0; t < 4; ++t) words[t] = rs_nibble_word(rs_nibbles_of(nibbles + 8 * t, 4 * (j % 2)));
        if (type == RS_Q5_K) rs_pack_high_words(type, c, group, [&](int e) { return uint32_t(block[16 + e] >> j) & 1u; });
    } else {
        const int halves = rs_packed_offsets(type) ? 2 : 1;  // d, then m (Q4_1, Q5_1)
        for (int s = 0; s < halves; ++s) std::memcpy(group + 2 * (s * RS_PACKED_COLUMNS + c), block + 2 * s, 2);
        if (type == RS_Q8_0) {
            for (int t = 0; t < 8; ++t) {
                uint32_t w;  // bytes q0 q1 q2 q3 -> q0 q2 q1 q3
                std::memcpy(&w, block + 2 + 4 * t, 4);
                words[t] = (w & 0xFF0000FFu) | ((w >> 8) & 0x0000FF00u) | ((w << 8) & 0x00FF0000u);
            }
        } else {  // byte j: code j (low nibble), code j + 16 (high); Q5: their fifth bits first, bit j: code j
            const int high_bytes = rs_packed_high_bits(type) ? 4 : 0;
            const uint8_t* nibbles = block + 2 * halves + high_bytes;
            for (int t = 0; t < 4; ++t) words[t] = rs_nibble_word(rs_nibbles_of(nibbles + 8 * (t % 2), 4 * (t / 2)));
            if (high_bytes) {
                uint32_t bits;
                std::memcpy(&bits, block + 2 * halves, 4);
                rs_pack_high_words(type, c, group, [&](int e) { return (bits >> e) & 1u; });
            }
        }
    }
    for (int t = 0; t < (rs_packed_nibbles(type) ? 4 : 8); ++t)
        std::memcpy(codes + t * 4 * RS_PACKED_COLUMNS, &words[t], 4);
}

// Bytes of a part's packed tiles: rows / 16 whole tiles.
static inline int64_t rs_packed_size(int type, int64_t rows, int64_t row_bytes) {
    int weights, block_bytes;
    rs_block_layout(type, &weights, &block_bytes);
    if (!rs_type_packs(type) || weights == 0) return 0;
    return rows / RS_PACKED_COLUMNS * (row_bytes / block_bytes * weights / 32) * rs_packed_group_bytes(type);
}

// Part rows [0, rows / 16 * 16) of a packable type, row_bytes apart at data, into out (rs_packed_size); the
// tiles shared among `threads` threads.
static inline void rs_repack_rows(int type, int64_t rows, int64_t row_bytes, const uint8_t* data, uint8_t* out,
                                  int threads) {
    int weights, block_bytes;
    rs_block_layout(type, &weights, &block_bytes);
    const int per_block = weights / 32;
    const int64_t groups = row_bytes / block_bytes * per_block, tiles = rows / RS_PACKED_COLUMNS;
    const int64_t group_bytes = rs_packed_group_bytes(type);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t tile = 0; tile < tiles; ++tile)
        for (int64_t g = 0; g < groups; ++g) {
            uint8_t* group = out + (tile * groups + g) * group_bytes;
            for (int c = 0; c < RS_PACKED_COLUMNS; ++c) {
                const uint8_t* block = data + (tile * RS_PACKED_COLUMNS + c) * row_bytes + g / per_block * block_bytes;
                rs_pack_column(type, block, int(g % per_block), c, group);
            }
        }
}
