// Every GGUF tensor type the kernels run, read in place from the file's own blocks (AVX2/FMA/F16C).
//
// A row of a weight is the file's row: its blocks one after another. The kernels walk it block by block,
// each block in groups of 32 weights (every type's block is 32 or 256 weights), and `rs_reader<TYPE>` turns
// a group into 32 float32 weights in four 8-float registers, computing what the `gguf` package's
// dequantisation computes (the reference; at most one rounding apart where it multiplies then adds). A
// 256-weight block's scales are decoded once for its eight groups.
// Every quantised type's reader also gives a group as integers (int16_rows.h): ``codes(j, scale, offset)``
// returns its 32 codes as int8 (byte i: weight i) and their affine map, weight i = scale[h] q_i + offset[h]
// for half h = i / 16 (HALF_SCALES; else scale[0] and offset[0] serve both halves), offset 0 unless OFFSETS.
// Layouts (offsets in bytes within a block, as gguf/quants.py reads them):
//   Q4_0  18: d f16 @0, 16 bytes of nibbles @2: byte j = weight j (low) | weight j + 16 (high); w = d (q - 8)
//   Q4_1  20: d @0, m @2, nibbles @4;                                                          w = d q + m
//   Q5_0  22: d @0, high bits u32 @2 (bit j: weight j), nibbles @6;                  w = d (q - 16)
//   Q5_1  24: d @0, m @2, high bits @4, nibbles @8;                                            w = d q + m
//   Q8_0  34: d @0, 32 int8 @2;                                                                w = d q
//   Q2_K  84: 16 scale bytes @0 (low nibble scale, high nibble min, per 16 weights), 64 bytes of 2-bit codes
//             @16, d @80, dmin @82;                                           w = d sc q - dmin m
//   Q3_K 110: 32 bytes high-bit mask @0, 64 bytes of 2-bit codes @32, 12 bytes of 6-bit scales @96, d @108;
//             w = d (sc - 32) (q - 4 [high bit clear])
//   Q4_K 144: d @0, dmin @2, 12 bytes of 6-bit scales and mins @4, 128 bytes of nibbles @16
//   Q5_K 176: d @0, dmin @2, scales @4, 32 bytes of high bits @16, nibbles @48
//   Q6_K 210: 128 bytes low nibbles @0, 64 bytes of 2-bit highs @128, 16 int8 scales @192, d @208
//   IQ4_NL 18: as Q4_0 with each nibble a code of a fixed 16-value table
//   IQ4_XS 136: d @0, high scale bits u16 @2, 4 bytes of low scale nibbles @4, 128 bytes of nibbles @8
//   F32 / F16 / BF16: one value per weight.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "block_layout.h"

// The readers' methods are called once per group in the kernels' innermost loops: never a call there.
#define RS_ALWAYS_INLINE inline __attribute__((always_inline))

static inline float rs_half(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return _cvtsh_ss(bits);
}

// 8 int32 lanes -> float, times scale, plus offset.
static inline __m256 rs_affine(__m256i q, __m256 scale, __m256 offset) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), scale, offset);
}

// 16 bytes of nibbles -> 32 codes 0..15 as int8: [0, 16) the low nibbles, [16, 32) the high ones.
static inline __m256i rs_split_nibbles(__m128i packed) {
    const __m128i mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
}

// 32 int8 codes -> four registers of (code * scale + offset); scales and offsets per half (16 weights).
static inline void rs_codes_to_floats(__m256i codes, __m256 scale_lo, __m256 offset_lo, __m256 scale_hi,
                                      __m256 offset_hi, __m256 out[4]) {
    const __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
    out[0] = rs_affine(_mm256_cvtepi8_epi32(lo), scale_lo, offset_lo);
    out[1] = rs_affine(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)), scale_lo, offset_lo);
    out[2] = rs_affine(_mm256_cvtepi8_epi32(hi), scale_hi, offset_hi);
    out[3] = rs_affine(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)), scale_hi, offset_hi);
}

static inline void rs_codes_to_floats(__m256i codes, float scale, float offset, __m256 out[4]) {
    const __m256 s = _mm256_set1_ps(scale), o = _mm256_set1_ps(offset);
    rs_codes_to_floats(codes, s, o, s, o, out);
}

// Bit i of `bits` (i < 32) spread to byte i: 0x00 or 0xFF.
static inline __m256i rs_bits_to_bytes(uint32_t bits) {
    const __m256i shuffle = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuffle);
    const __m256i select = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// 32 consecutive bytes, each shifted right by `shift` and masked.
static inline __m256i rs_bit_field(const uint8_t* p, int shift, int mask) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_and_si256(_mm256_srl_epi16(bytes, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(char(mask)));
}

// A reader of one block of a type: ``begin`` takes the block and decodes what its groups share (scales,
// mins), ``group(j, out)`` gives group j's 32 weights (j < GROUPS). Float types read 32 values a "block".
template <int TYPE>
struct rs_reader;

template <>
struct rs_reader<RS_F32> {
    static constexpr int GROUPS = 1, BYTES = 128;
    const float* v;
    RS_ALWAYS_INLINE void begin(const uint8_t* block) { v = reinterpret_cast<const float*>(block); }
    RS_ALWAYS_INLINE void group(int, __m256 out[4]) const {
        for (int i = 0; i < 4; ++i) out[i] = _mm256_loadu_ps(v + 8 * i);
    }
};

template <>
struct rs_reader<RS_F16> {
    static constexpr int GROUPS = 1, BYTES = 64;
    const uint8_t* v;
    RS_ALWAYS_INLINE void begin(const uint8_t* block) { v = block; }
    RS_ALWAYS_INLINE void group(int, __m256 out[4]) const {
        for (int i = 0; i < 4; ++i)
            out[i] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * i)));
    }
};

template <>
struct rs_reader<RS_BF16> {
    static constexpr int GROUPS = 1, BYTES = 64;
    const uint8_t* v;
    RS_ALWAYS_INLINE void begin(const uint8_t* block) { v = block; }
    RS_ALWAYS_INLINE void group(int, __m256 out[4]) const {
        for (int i = 0; i < 4; ++i) {
            const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * i)));
            out[i] = _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
        }
    }
};

static inline __m256i rs_iq4_table() {
    return _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}

// 8 bytes at p, each widened to an int32 lane (the load is part of the conversion).
static inline __m256i rs_load_u8x8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

static inline __m256i rs_load_i8x8(const uint8_t* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// 16 bytes of nibbles at p (weight j: low nibble of byte j; weight j + 16: its high nibble), each group of
// 8 weights straight from memory to int32 lanes.
static inline void rs_nibbles_to_floats(const uint8_t* p, __m256 scale, __m256 offset, __m256 out[4]) {
    const __m256i low = _mm256_set1_epi32(0x0F);
    const __m256i first = rs_load_u8x8(p), second = rs_load_u8x8(p + 8);
    out[0] = rs_affine(_mm256_and_si256(first, low), scale, offset);
    out[1] = rs_affine(_mm256_and_si256(second, low), scale, offset);
    out[2] = rs_affine(_mm256_srli_epi32(first, 4), scale, offset);
    out[3] = rs_affine(_mm256_srli_epi32(second, 4), scale, offset);
}

// The 32-weight types: one group a block.
template <int TYPE>
    requires(TYPE == RS_Q4_0 || TYPE == RS_Q4_1 || TYPE == RS_Q5_0 || TYPE == RS_Q5_1 || TYPE == RS_Q8_0 ||
             TYPE == RS_IQ4_NL)
struct rs_reader<TYPE> {
    static constexpr int GROUPS = 1;
    static constexpr int BYTES = TYPE == RS_Q4_1 ? 20 : TYPE == RS_Q5_0 ? 22 : TYPE == RS_Q5_1 ? 24 : TYPE == RS_Q8_0 ? 34 : 18;
    static constexpr bool HALF_SCALES = false, OFFSETS = TYPE == RS_Q4_1 || TYPE == RS_Q5_1;
    const uint8_t* b;
    RS_ALWAYS_INLINE void begin(const uint8_t* block) { b = block; }
    RS_ALWAYS_INLINE __m256i codes(int, float scale[2], float offset[2]) const {
        scale[0] = rs_half(b);
        if constexpr (TYPE == RS_Q8_0) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
        constexpr int NIBBLES = TYPE == RS_Q4_0 || TYPE == RS_IQ4_NL ? 2 : TYPE == RS_Q4_1 ? 4 : TYPE == RS_Q5_0 ? 6 : 8;
        __m256i codes = rs_split_nibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + NIBBLES)));
        if constexpr (TYPE == RS_IQ4_NL) return _mm256_shuffle_epi8(rs_iq4_table(), codes);
        if constexpr (TYPE == RS_Q5_0 || TYPE == RS_Q5_1) {
            uint32_t high;
            std::memcpy(&high, b + NIBBLES - 4, 4);
            codes = _mm256_or_si256(codes, _mm256_and_si256(rs_bits_to_bytes(high), _mm256_set1_epi8(16)));
        }
        if constexpr (OFFSETS) {
            offset[0] = rs_half(b + 2);
            return codes;
        }
        return _mm256_sub_epi8(codes, _mm256_set1_epi8(TYPE == RS_Q5_0 ? 16 : 8));  // Q4_0, Q5_0: centred
    }
    RS_ALWAYS_INLINE void group(int, __m256 out[4]) const {
        const float d = rs_half(b);
        if constexpr (TYPE == RS_Q8_0) {
            const __m256 scale = _mm256_set1_ps(d);
            for (int i = 0; i < 4; ++i) out[i] = _mm256_mul_ps(_mm256_cvtepi32_ps(rs_load_i8x8(b + 2 + 8 * i)), scale);
        } else if constexpr (TYPE == RS_Q4_0) {
            rs_nibbles_to_floats(b + 2, _mm256_set1_ps(d), _mm256_set1_ps(-8.0f * d), out);
        } else if constexpr (TYPE == RS_Q4_1) {
            rs_nibbles_to_floats(b + 4, _mm256_set1_ps(d), _mm256_set1_ps(rs_half(b + 2)), out);
        } else {  // IQ4_NL, Q5_0, Q5_1: their codes and affine map (Q5_0's centred codes: d (q - 16) either way)
            float s[2], o[2] = {0.0f, 0.0f};
            const __m256i q = codes(0, s, o);  // sets s (and o): before they are read
            rs_codes_to_floats(q, s[0], o[0], out);
        }
    }
};

// 8 bytes -> 8 floats times d (a block's sub-scales, decoded once a block).
static inline __m256 rs_scaled_u8x8(const uint8_t* p, float d) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(rs_load_u8x8(p)), _mm256_set1_ps(d));
}

// The 256-weight types: eight groups a block, their scales (and mins) decoded once in begin. Types whose
// scales cover 16 weights keep two per group: [2j] for its first 16 weights, [2j + 1] for the rest.
template <>
struct rs_reader<RS_Q2_K> {
    static constexpr int GROUPS = 8, BYTES = 84;
    static constexpr bool HALF_SCALES = true, OFFSETS = true;
    const uint8_t* b;
    alignas(32) float scale[16], offset[16];
    RS_ALWAYS_INLINE void begin(const uint8_t* block) {
        b = block;
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
        alignas(16) uint8_t nibbles[32];
        _mm_store_si128(reinterpret_cast<__m128i*>(nibbles), _mm_and_si128(packed, _mm_set1_epi8(0x0F)));
        _mm_store_si128(reinterpret_cast<__m128i*>(nibbles + 16),
                        _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
        const float d = rs_half(b + 80), dmin = -rs_half(b + 82);
        for (int i = 0; i < 2; ++i) {
            _mm256_store_ps(scale + 8 * i, rs_scaled_u8x8(nibbles + 8 * i, d));
            _mm256_store_ps(offset + 8 * i, rs_scaled_u8x8(nibbles + 16 + 8 * i, dmin));
        }
    }
    RS_ALWAYS_INLINE __m256i codes(int j, float s[2], float o[2]) const {
        s[0] = scale[2 * j], s[1] = scale[2 * j + 1], o[0] = offset[2 * j], o[1] = offset[2 * j + 1];
        return rs_bit_field(b + 16 + (j / 4) * 32, 2 * (j % 4), 3);
    }
    RS_ALWAYS_INLINE void group(int j, __m256 out[4]) const {
        float s[2], o[2];
        const __m256i q = codes(j, s, o);  // sets s and o: before they are read
        rs_codes_to_floats(q, _mm256_set1_ps(s[0]), _mm256_set1_ps(o[0]), _mm256_set1_ps(s[1]), _mm256_set1_ps(o[1]), out);
    }
};

template <>
struct rs_reader<RS_Q3_K> {
    static constexpr int GROUPS = 8, BYTES = 110;
    static constexpr bool HALF_SCALES = true, OFFSETS = false;
    const uint8_t* b;
    alignas(32) float scale[16];
    RS_ALWAYS_INLINE void begin(const uint8_t* block) {
        b = block;
        // 16 six-bit scales: low nibbles in bytes 0..7 (scales 0..7 low, 8..15 high nibble), their top two
        // bits in bytes 8..11 (scale i: byte 8 + i % 4, bits 2 (i / 4)); llama.cpp's word-wise unpacking.
        uint32_t w[3], out[4];
        std::memcpy(w, b + 96, 12);
        const uint32_t low4 = 0x0f0f0f0f, top2 = 0x03030303;
        out[0] = (w[0] & low4) | ((w[2] & top2) << 4);
        out[1] = (w[1] & low4) | (((w[2] >> 2) & top2) << 4);
        out[2] = ((w[0] >> 4) & low4) | (((w[2] >> 4) & top2) << 4);
        out[3] = ((w[1] >> 4) & low4) | (((w[2] >> 6) & top2) << 4);
        alignas(16) uint8_t values[16];
        std::memcpy(values, out, 16);
        const float d = rs_half(b + 108);
        const __m256i bias = _mm256_set1_epi32(32);
        for (int i = 0; i < 2; ++i)
            _mm256_store_ps(scale + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(rs_load_u8x8(values + 8 * i), bias)),
                                                         _mm256_set1_ps(d)));
    }
    RS_ALWAYS_INLINE __m256i codes(int j, float s[2], float*) const {
        s[0] = scale[2 * j], s[1] = scale[2 * j + 1];
        const __m256i low = rs_bit_field(b + 32 + (j / 4) * 32, 2 * (j % 4), 3);
        const __m256i high = rs_bit_field(b, j, 1);  // 1: no offset; 0: minus 4
        return _mm256_sub_epi8(low, _mm256_andnot_si256(_mm256_slli_epi16(high, 2), _mm256_set1_epi8(4)));
    }
    RS_ALWAYS_INLINE void group(int j, __m256 out[4]) const {
        float s[2];
        const __m256i q = codes(j, s, nullptr);
        const __m256 zero = _mm256_setzero_ps();
        rs_codes_to_floats(q, _mm256_set1_ps(s[0]), zero, _mm256_set1_ps(s[1]), zero, out);
    }
};

template <int TYPE>
    requires(TYPE == RS_Q4_K || TYPE == RS_Q5_K)
struct rs_reader<TYPE> {
    static constexpr int GROUPS = 8, BYTES = TYPE == RS_Q4_K ? 144 : 176, NIBBLES = TYPE == RS_Q4_K ? 16 : 48;
    static constexpr bool HALF_SCALES = false, OFFSETS = true;
    const uint8_t* b;
    alignas(32) float scale[8], offset[8];
    RS_ALWAYS_INLINE void begin(const uint8_t* block) {
        b = block;
        alignas(16) uint8_t unpacked[16];
        rs_unpack_k4_scales(b + 4, unpacked);
        _mm256_store_ps(scale, rs_scaled_u8x8(unpacked, rs_half(b)));
        _mm256_store_ps(offset, rs_scaled_u8x8(unpacked + 8, -rs_half(b + 2)));
    }
    RS_ALWAYS_INLINE void group(int j, __m256 out[4]) const {
        if constexpr (TYPE == RS_Q4_K) {
            // Sub-blocks 2i and 2i + 1 share 32 bytes: the low nibbles, then the high ones.
            const uint8_t* p = b + NIBBLES + (j / 2) * 32;
            const __m256 s = _mm256_set1_ps(scale[j]), o = _mm256_set1_ps(offset[j]);
            for (int i = 0; i < 4; ++i) {
                const __m256i bytes = rs_load_u8x8(p + 8 * i);
                const __m256i code = j % 2 ? _mm256_srli_epi32(bytes, 4) : _mm256_and_si256(bytes, _mm256_set1_epi32(0x0F));
                out[i] = rs_affine(code, s, o);
            }
        } else {
            float s[2], o[2];
            const __m256i q = codes(j, s, o);  // sets s and o: before they are read
            rs_codes_to_floats(q, s[0], o[0], out);
        }
    }
    RS_ALWAYS_INLINE __m256i codes(int j, float s[2], float o[2]) const {
        s[0] = scale[j], o[0] = offset[j];
        const __m256i low = rs_bit_field(b + NIBBLES + (j / 2) * 32, 4 * (j % 2), 0x0F);
        if constexpr (TYPE == RS_Q4_K) return low;
        return _mm256_or_si256(low, _mm256_slli_epi16(rs_bit_field(b + 16, j, 1), 4));
    }
};

template <>
struct rs_reader<RS_Q6_K> {
    static constexpr int GROUPS = 8, BYTES = 210;
    static constexpr bool HALF_SCALES = true, OFFSETS = false;
    const uint8_t* b;
    alignas(32) float scale[16];
    RS_ALWAYS_INLINE void begin(const uint8_t* block) {
        b = block;
        const __m256 d = _mm256_set1_ps(rs_half(b + 208));
        for (int i = 0; i < 2; ++i)
            _mm256_store_ps(scale + 8 * i, _mm256_mul_ps(_mm256_cvtepi32_ps(rs_load_i8x8(b + 192 + 8 * i)), d));
    }
    RS_ALWAYS_INLINE __m256i codes(int j, float s[2], float*) const {
        s[0] = scale[2 * j], s[1] = scale[2 * j + 1];
        const int half = j / 4, quarter = j % 4;
        const __m256i low = rs_bit_field(b + half * 64 + (quarter % 2) * 32, 4 * (quarter / 2), 0x0F);
        const __m256i high = rs_bit_field(b + 128 + half * 32, 2 * quarter, 3);
        return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
    }
    RS_ALWAYS_INLINE void group(int j, __m256 out[4]) const {
        float s[2];
        const __m256i q = codes(j, s, nullptr);
        const __m256 zero = _mm256_setzero_ps();
        rs_codes_to_floats(q, _mm256_set1_ps(s[0]), zero, _mm256_set1_ps(s[1]), zero, out);
    }
};

template <>
struct rs_reader<RS_IQ4_XS> {
    static constexpr int GROUPS = 8, BYTES = 136;
    static constexpr bool HALF_SCALES = false, OFFSETS = false;
    const uint8_t* b;
    alignas(32) float scale[8];
    RS_ALWAYS_INLINE void begin(const uint8_t* block) {
        b = block;
        uint16_t high;
        std::memcpy(&high, b + 2, 2);
        alignas(16) uint8_t values[8];
        for (int j = 0; j < 8; ++j)
            values[j] = uint8_t(((b[4 + j / 2] >> (4 * (j % 2))) & 0x0F) | (((high >> (2 * j)) & 3) << 4));
        _mm256_store_ps(scale, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(rs_load_u8x8(values), _mm256_set1_epi32(32))),
                                             _mm256_set1_ps(rs_half(b))));
    }
    RS_ALWAYS_INLINE __m256i codes(int j, float s[2], float*) const {
        s[0] = scale[j];
        const __m256i nibbles = rs_split_nibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 8 + 16 * j)));
        return _mm256_shuffle_epi8(rs_iq4_table(), nibbles);
    }
    RS_ALWAYS_INLINE void group(int j, __m256 out[4]) const {
        float s[2];
        const __m256i q = codes(j, s, nullptr);  // sets s: before it is read
        rs_codes_to_floats(q, s[0], 0.0f, out);
    }
};

// Calls f.template operator()<TYPE>() for a runtime type id; returns false for a type the kernels lack.
template <typename F>
static inline bool rs_dispatch_type(int type, F&& f) {
    switch (type) {
        case RS_F32: f.template operator()<RS_F32>(); return true;
        case RS_F16: f.template operator()<RS_F16>(); return true;
        case RS_BF16: f.template operator()<RS_BF16>(); return true;
        case RS_Q4_0: f.template operator()<RS_Q4_0>(); return true;
        case RS_Q4_1: f.template operator()<RS_Q4_1>(); return true;
        case RS_Q5_0: f.template operator()<RS_Q5_0>(); return true;
        case RS_Q5_1: f.template operator()<RS_Q5_1>(); return true;
        case RS_Q8_0: f.template operator()<RS_Q8_0>(); return true;
        case RS_Q2_K: f.template operator()<RS_Q2_K>(); return true;
        case RS_Q3_K: f.template operator()<RS_Q3_K>(); return true;
        case RS_Q4_K: f.template operator()<RS_Q4_K>(); return true;
        case RS_Q5_K: f.template operator()<RS_Q5_K>(); return true;
        case RS_Q6_K: f.template operator()<RS_Q6_K>(); return true;
        case RS_IQ4_NL: f.template operator()<RS_IQ4_NL>(); return true;
        case RS_IQ4_XS: f.template operator()<RS_IQ4_XS>(); return true;
        default: return false;
    }
}
