// Weights repacked for linears with int16 activations (packed_tiles.h): a part's rows in tiles of 16, each group of 32
// weights of a tile stored column by column, so that one vector register's lanes are the tile's 16 output
// columns and the codes of two neighbouring weights of a column come out of a lane as two int16 with a shift
// and a mask. The row kernels (int16_rows.h) read a weight row's blocks one after another and spend most of
// their instructions widening codes and summing across lanes; from this layout a 512-bit multiply-add takes
// 16 columns' products at once and no lane sum is left at the end.
// No value changes: the tile keeps each block's codes and its half-float scale (and min) as the file has
// them, in as many bytes (16 rows' blocks of a group -> one packed group). Plain C++: no intrinsics, so the
// dispatcher's plain x86-64 code packs for every path.
//
// One tile (16 rows), group g (weights 32 g .. 32 g + 31 of every row), at g * 16 * block bytes:
//   Q4_0 (288 bytes): d[16] half floats, then 4 chunks of 16 words: chunk t, word c holds column c's codes
//        8t .. 8t + 7 (0..15) as nibbles, code 8t + 2i in bits 4i .. 4i + 3 and code 8t + 2i + 1 in bits
//        16 + 4i .. 16 + 4i + 3, so (word >> 4i) & 0x000F000F is the pair as two int16 (i < 4);
//        weight = d (code - 8)
//   Q4_1 (320 bytes): d[16], m[16], then the 4 chunks as Q4_0's; weight = d code + m
//   Q8_0 (544 bytes): d[16], then 8 chunks of 16 words: chunk t, word c holds column c's codes 4t, 4t + 2,
//        4t + 1, 4t + 3 as bytes (low first), so each 16-bit half's low byte is code 4t (4t + 1) and its high
//        byte code 4t + 2 (4t + 3); weight = d code
// Rows past the last whole tile are not packed: the row kernels take them.
#pragma once

#include <cstdint>
#include <cstring>

#include "block_layout.h"

constexpr int RS_PACKED_COLUMNS = 16;

// Whether the kernels can take a type's blocks repacked.
constexpr bool rs_type_packs(int type) { return type == RS_Q4_0 || type == RS_Q4_1 || type == RS_Q8_0; }

// The four words of a Q4 column's group from its 16 bytes of nibbles (byte j: code j low, code j + 16 high):
// bytes 8h .. 8h + 7 give word h from their low nibbles and word h + 2 from their high ones.
static inline void rs_pack_nibbles(const uint8_t nibbles[16], uint32_t words[4]) {
    for (int h = 0; h < 2; ++h) {
        uint64_t bytes;
        std::memcpy(&bytes, nibbles + 8 * h, 8);
        for (int high = 0; high < 2; ++high) {
            const uint64_t codes = (bytes >> (4 * high)) & 0x0F0F0F0F0F0F0F0FULL;  // code of byte j in byte j
            uint32_t word = 0;
            for (int odd = 0; odd < 2; ++odd) {
                // codes of bytes odd, odd + 2, odd + 4, odd + 6 -> nibbles 0..3 of 16 bits
                uint64_t v = (codes >> (8 * odd)) & 0x00FF00FF00FF00FFULL;
                v = (v | (v >> 12)) & 0x000000FF000000FFULL;
                v = (v | (v >> 24)) & 0xFFFFULL;
                word |= uint32_t(v) << (16 * odd);
            }
            words[h + 2 * high] = word;
        }
    }
}

// Part rows [0, rows / 16 * 16) of a packable type, row_bytes apart at data, into out (as many bytes); the
// tiles shared among the threads.
static inline void rs_repack_rows(int type, int64_t rows, int64_t row_bytes, const uint8_t* data, uint8_t* out) {
    int weights, block_bytes;
    rs_block_layout(type, &weights, &block_bytes);
    const int64_t groups = row_bytes / block_bytes, tiles = rows / RS_PACKED_COLUMNS;
    const int scales = type == RS_Q4_1 ? 2 : 1;  // half floats before the codes, per column
#pragma omp parallel for schedule(static)
    for (int64_t tile = 0; tile < tiles; ++tile)
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t first = tile * RS_PACKED_COLUMNS;
            uint8_t* group = out + first * row_bytes + g * RS_PACKED_COLUMNS * block_bytes;
            uint8_t* codes = group + scales * 2 * RS_PACKED_COLUMNS;
            for (int c = 0; c < RS_PACKED_COLUMNS; ++c) {
                const uint8_t* block = data + (first + c) * row_bytes + g * block_bytes;
                for (int s = 0; s < scales; ++s) std::memcpy(group + (s * RS_PACKED_COLUMNS + c) * 2, block + 2 * s, 2);
                if (type == RS_Q8_0) {
                    for (int t = 0; t < 8; ++t) {
                        uint32_t w;  // bytes q0 q1 q2 q3 -> q0 q2 q1 q3
                        std::memcpy(&w, block + 2 + 4 * t, 4);
                        w = (w & 0xFF0000FFu) | ((w >> 8) & 0x0000FF00u) | ((w << 8) & 0x00FF0000u);
                        std::memcpy(codes + (t * RS_PACKED_COLUMNS + c) * 4, &w, 4);
                    }
                    continue;
                }
                uint32_t words[4];
                rs_pack_nibbles(block + 2 * scales, words);
                for (int t = 0; t < 4; ++t) std::memcpy(codes + (t * RS_PACKED_COLUMNS + c) * 4, &words[t], 4);
            }
        }
}
