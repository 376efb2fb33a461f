// The tensor types the kernels run and their block layouts: no intrinsics, so code of any instruction set
// (the dispatcher's plain x86-64 too) can ask.
#pragma once

#include <cstdint>
#include <cstring>

// ggml type ids, as GGUF files store them.
enum {
    RS_F32 = 0,
    RS_F16 = 1,
    RS_Q4_0 = 2,
    RS_Q4_1 = 3,
    RS_Q5_0 = 6,
    RS_Q5_1 = 7,
    RS_Q8_0 = 8,
    RS_Q2_K = 10,
    RS_Q3_K = 11,
    RS_Q4_K = 12,
    RS_Q5_K = 13,
    RS_Q6_K = 14,
    RS_IQ4_NL = 20,
    RS_IQ4_XS = 23,
    RS_BF16 = 30,
};
constexpr int RS_GROUP = 32;

// (weights, bytes) per block of a type the kernels run; weights 0 for any other type.
static inline void rs_block_layout(int type, int* weights, int* bytes) {
    int w = 0, b = 0;
    switch (type) {
        case RS_F32: w = 1, b = 4; break;
        case RS_F16: w = 1, b = 2; break;
        case RS_BF16: w = 1, b = 2; break;
        case RS_Q4_0: w = 32, b = 18; break;
        case RS_Q4_1: w = 32, b = 20; break;
        case RS_Q5_0: w = 32, b = 22; break;
        case RS_Q5_1: w = 32, b = 24; break;
        case RS_Q8_0: w = 32, b = 34; break;
        case RS_IQ4_NL: w = 32, b = 18; break;
        case RS_Q2_K: w = 256, b = 84; break;
        case RS_Q3_K: w = 256, b = 110; break;
        case RS_Q4_K: w = 256, b = 144; break;
        case RS_Q5_K: w = 256, b = 176; break;
        case RS_Q6_K: w = 256, b = 210; break;
        case RS_IQ4_XS: w = 256, b = 136; break;
        default: break;
    }
    *weights = w, *bytes = b;
}

// The six-bit scales and mins of a Q4_K / Q5_K block's 12 packed bytes, as two runs of 8 bytes:
// out[0..7] the scales of sub-blocks 0..7, out[8..15] their mins (llama.cpp's unpacking, on 32-bit words).
static inline void rs_unpack_k4_scales(const uint8_t* packed, uint8_t out[16]) {
    uint32_t w[4];
    std::memcpy(w, packed, 12);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0x03030303;
    w[3] = ((w[2] >> 4) & low4) | (((w[1] >> 6) & top2) << 4);
    const uint32_t mins_low = w[1] & low6;
    w[1] = (w[2] & low4) | (((w[0] >> 6) & top2) << 4);
    w[2] = mins_low;
    w[0] &= low6;
    std::memcpy(out, w, 16);
}
