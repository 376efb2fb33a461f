// Linears over a GGUF's own blocks on AVX2/FMA: y[m, n] = sum_k x[m, k] * W[n, k].
//
// A linear's output rows are one or more parts, each a run of rows in one tensor type (Q|K|V stacked may be
// Q5_0 | Q5_0 | Q8_0 in a K-quant file), each row the file's blocks as they are (block_decode.h). Each group
// of 32 weights is widened to four 8-float registers once and used for every input row of a tile, so a weight
// is read from memory once per call however many rows the call has.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "block_decode.h"
#include "vector_math.h"

extern "C" {
struct rs_part {
    int32_t type;       // ggml type id
    int32_t rows;       // output rows in this part
    int64_t row_bytes;  // bytes of one row (its blocks)
    const uint8_t* data;
    const uint8_t* packed;  // rows [0, rows / 16 * 16) repacked (packed_layout.h), or null
};

constexpr int RS_MAX_PARTS = 4;

// 1: quantised types multiply int16 activations (int16_rows.h, int16_tiles.h); 2: int16 below 16 rows and int8
// from 16 where the path's int8 tiles take every quantised part (int8_tiles.h); 3 (mixed): as 2 for the linears
// marked int8_inputs, as 1 for the rest; 0: float32. Process-wide, set through dispatch.cpp's
// rs_set_activation_dtype.
extern int rs_activations_int16;

struct rs_linear {
    int32_t n;  // out features: the parts' rows together
    int32_t k;  // in features, a multiple of 32
    int32_t num_parts;
    int32_t int8_inputs;  // nonzero: int8 inputs under activation dtype 3 (mixed)
    rs_part parts[RS_MAX_PARTS];
};
}

constexpr int RS_ROW_TILE = 8;    // input rows per pass over a weight group (8 accumulators + 4 weights + temps)
constexpr int RS_COL_BLOCK = 16;  // output rows per work item

// One row is bound by memory latency, not bandwidth: ask for the weight rows a few rows ahead.
constexpr int64_t RS_PREFETCH_ROWS = 8;

static inline void rs_prefetch_rows(const rs_part& p, int64_t row, int64_t count) {
    if (row + count > p.rows) return;
    const char* bytes = reinterpret_cast<const char*>(p.data) + row * p.row_bytes;
    for (int64_t offset = 0; offset < count * p.row_bytes; offset += 64) _mm_prefetch(bytes + offset, _MM_HINT_T0);
}

// out[r, n] for r < ROWS and part rows n in [n0, n1). One input row gets four accumulators (one per weight
// register) so the FMA chain is not latency bound; several rows interleave their own chains.
template <int TYPE, int ROWS>
static void rs_linear_tile(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const float* x, int64_t ldx,
                           float* out, int64_t ldo) {
    using R = rs_reader<TYPE>;
    constexpr int CHAINS = ROWS == 1 ? 4 : (ROWS == 2 ? 2 : 1);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = p.data + n * p.row_bytes;
        __m256 acc[ROWS][CHAINS];
        for (int r = 0; r < ROWS; ++r)
            for (int c = 0; c < CHAINS; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            R reader;
            reader.begin(row + b * R::BYTES);
#pragma GCC unroll 8
            for (int j = 0; j < R::GROUPS; ++j) {
                __m256 weights[4];
                reader.group(j, weights);
                const int64_t column = (b * R::GROUPS + j) * RS_GROUP;
                for (int r = 0; r < ROWS; ++r) {
                    const float* xr = x + r * ldx + column;
                    for (int i = 0; i < 4; ++i)
                        acc[r][i % CHAINS] = _mm256_fmadd_ps(weights[i], _mm256_loadu_ps(xr + 8 * i), acc[r][i % CHAINS]);
                }
            }
        }
        for (int r = 0; r < ROWS; ++r) {
            __m256 sum = acc[r][0];
            for (int c = 1; c < CHAINS; ++c) sum = _mm256_add_ps(sum, acc[r][c]);
            out[r * ldo + n] = rs_hsum(sum);
        }
    }
}

// One input row: two output rows per pass share the x loads, and eight independent accumulator chains
// keep the FMA units busy (one row alone would wait on FMA latency at every group).
template <int TYPE>
static void rs_linear_single_row(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const float* x,
                                 float* out) {
    using R = rs_reader<TYPE>;
    int64_t n = n0;
    for (; n + 2 <= n1; n += 2) {
        rs_prefetch_rows(p, n + RS_PREFETCH_ROWS, 2);
        const uint8_t* row0 = p.data + n * p.row_bytes;
        const uint8_t* row1 = row0 + p.row_bytes;
        __m256 acc0[4], acc1[4];
        for (int i = 0; i < 4; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            R reader0, reader1;
            reader0.begin(row0 + b * R::BYTES);
            reader1.begin(row1 + b * R::BYTES);
#pragma GCC unroll 8
            for (int j = 0; j < R::GROUPS; ++j) {
                const float* xg = x + (b * R::GROUPS + j) * RS_GROUP;
                __m256 xs[4], weights[4];
                for (int i = 0; i < 4; ++i) xs[i] = _mm256_loadu_ps(xg + 8 * i);
                reader0.group(j, weights);
                for (int i = 0; i < 4; ++i) acc0[i] = _mm256_fmadd_ps(weights[i], xs[i], acc0[i]);
                reader1.group(j, weights);
                for (int i = 0; i < 4; ++i) acc1[i] = _mm256_fmadd_ps(weights[i], xs[i], acc1[i]);
            }
        }
        out[n] = rs_hsum(_mm256_add_ps(_mm256_add_ps(acc0[0], acc0[1]), _mm256_add_ps(acc0[2], acc0[3])));
        out[n + 1] = rs_hsum(_mm256_add_ps(_mm256_add_ps(acc1[0], acc1[1]), _mm256_add_ps(acc1[2], acc1[3])));
    }
    if (n < n1) rs_linear_tile<TYPE, 1>(p, blocks, n, n1, x, 0, out, 0);
}

// use(column, weights) for every 32-weight group of part row n, in order: the group decoded into four 8-float
// registers, column its first weight's index.
template <int TYPE, typename Use>
static RS_ALWAYS_INLINE void rs_for_each_group(const rs_part& p, int64_t blocks, int64_t n, Use&& use) {
    using R = rs_reader<TYPE>;
    const uint8_t* row = p.data + n * p.row_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
        R reader;
        reader.begin(row + b * R::BYTES);
#pragma GCC unroll 8
        for (int j = 0; j < R::GROUPS; ++j) {
            __m256 weights[4];
            reader.group(j, weights);
            use((b * R::GROUPS + j) * RS_GROUP, weights);
        }
    }
}

// Part row n decoded to k float32s in out.
template <int TYPE>
static inline void rs_part_row(const rs_part& p, int64_t blocks, int64_t n, float* out) {
    rs_for_each_group<TYPE>(p, blocks, n, [&](int64_t column, const __m256* weights) {
        for (int i = 0; i < 4; ++i) _mm256_storeu_ps(out + column + 8 * i, weights[i]);
    });
}

#ifndef RS_VECTOR_REGISTERS
#define RS_VECTOR_REGISTERS 16
#endif
// Weight rows a panel kernel holds in registers beside 4 input rows' accumulators (4 x N + N + 1 registers).
constexpr int RS_PANEL_N = RS_VECTOR_REGISTERS >= 32 ? 4 : 2;

// A thread's buffer for one work item's decoded weight rows, grown as needed and kept for the next call.
template <typename T>
static inline T* rs_panel_buffer(int64_t size) {
    thread_local std::vector<T> panel;
    if (static_cast<int64_t>(panel.size()) < size) panel.resize(size);
    return panel.data();
}

// out[m, n] for M input rows of x and N decoded weight rows of the panel (k apart): each accumulator sums its
// products in the order an 8-row tile does, so the two give the same bits.
template <int M, int N>
static inline void rs_panel_kernel(const float* x, int64_t ldx, const float* panel, int64_t k, float* out, int64_t ldo) {
    __m256 acc[M][N];
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) acc[m][n] = _mm256_setzero_ps();
    for (int64_t c = 0; c < k; c += 8) {
        __m256 weights[N];
        for (int n = 0; n < N; ++n) weights[n] = _mm256_loadu_ps(panel + n * k + c);
        for (int m = 0; m < M; ++m) {
            const __m256 xs = _mm256_loadu_ps(x + m * ldx + c);
            for (int n = 0; n < N; ++n) acc[m][n] = _mm256_fmadd_ps(weights[n], xs, acc[m][n]);
        }
    }
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) out[m * ldo + n] = rs_hsum(acc[m][n]);
}

// out[r, n] for the first `rows` rows of x (a whole number of tiles) and part rows n in [n0, n1): the rows are
// decoded once into a panel, then multiplied 4 input rows by RS_PANEL_N weight rows at a time, so a weight is
// widened once per call rather than once per 8-row tile.
template <int TYPE>
static void rs_linear_panel(const rs_part& p, int64_t blocks, int64_t n0, int64_t n1, const float* x, int64_t rows,
                            int64_t ldx, int64_t k, float* out, int64_t ldo) {
    constexpr int M = 4, N = RS_PANEL_N;
    float* panel = rs_panel_buffer<float>((n1 - n0) * k);
    for (int64_t n = n0; n < n1; ++n) rs_part_row<TYPE>(p, blocks, n, panel + (n - n0) * k);
    const int64_t count = n1 - n0;
    for (int64_t m = 0; m < rows; m += M) {
        const float* xm = x + m * ldx;
        float* o = out + m * ldo + n0;
        int64_t n = 0;
        for (; n + N <= count; n += N) rs_panel_kernel<M, N>(xm, ldx, panel + n * k, k, o + n, ldo);
        for (; n < count; ++n) rs_panel_kernel<M, 1>(xm, ldx, panel + n * k, k, o + n, ldo);
    }
}

#ifdef RS_BF16_TILES
#include "bf16_tiles.h"
#else
constexpr bool RS_HAS_BF16_TILES = false;
#endif
#include "int16_rows.h"
#include "int16_tiles.h"
#include "int8_tiles.h"
#include "packed_tiles.h"

// Part rows [n0, n1) for every input row; out points at the part's first output column. xb: null, or the
// rows of every whole tile as bfloat16 (k apart), which those tiles then multiply (bf16_tiles.h). xq: null,
// or every row quantised to int16 (int16_rows.h) or, when its q8 is set, to int8 (int8_tiles.h), which a quantised
// type's blocks then multiply.
template <int TYPE>
static void rs_linear_block(const rs_part& p, int64_t k, int64_t n0, int64_t n1, const float* x, int64_t rows,
                            int64_t ldx, const uint16_t* xb, const rs_int16_rows* xq, float* out, int64_t ldo) {
    const int64_t blocks = k / RS_GROUP / rs_reader<TYPE>::GROUPS;
    if constexpr (rs_has_codes<TYPE>) {
        if (xq != nullptr) {
#ifdef RS_INT8_TILES
            if constexpr (rs_int8_takes(TYPE))
                if (xq->q8 != nullptr) {
                    if constexpr (rs_int8_rows_take(TYPE))
                        if (rows < RS_INT16_MAX_ROWS && rs_whole_packed_tile(p, n0, n1))
                            return rs_linear_int8_packed<TYPE>(p, n0, *xq, rows, k, out, ldo);
                    return rs_linear_int8_tiles<TYPE>(p, blocks, n0, n1, *xq, rows, k, out, ldo);
                }
#endif
            // A whole packed tile: the same arithmetic as the int16 tiles without decoding a panel per call.
            if constexpr (rs_type_packs(TYPE))
                if (rs_whole_packed_tile(p, n0, n1)) return rs_linear_packed<TYPE>(p, n0, *xq, rows, k, out, ldo);
            if (rows < RS_INT16_MAX_ROWS) return rs_linear_int16<TYPE>(p, blocks, n0, n1, *xq, rows, k, out, ldo);
            return rs_linear_int16_tiles<TYPE>(p, blocks, n0, n1, *xq, rows, k, out, ldo);
        }
    }
    int64_t r = 0;
#ifdef RS_BF16_TILES
    if (xb != nullptr && rows >= RS_ROW_TILE) {
        r = rows / RS_ROW_TILE * RS_ROW_TILE;
        rs_linear_tiles_bf16<TYPE>(p, blocks, n0, n1, xb, r, k, out, ldo);
    }
#endif
    if (r == 0 && rows >= 2 * RS_ROW_TILE) {  // one tile alone decodes its weights once either way
        r = rows / RS_ROW_TILE * RS_ROW_TILE;
        rs_linear_panel<TYPE>(p, blocks, n0, n1, x, r, ldx, k, out, ldo);
    }
    for (; r + RS_ROW_TILE <= rows; r += RS_ROW_TILE)
        rs_linear_tile<TYPE, RS_ROW_TILE>(p, blocks, n0, n1, x + r * ldx, ldx, out + r * ldo, ldo);
    x += r * ldx, out += r * ldo;
    switch (rows - r) {
        case 0: break;
        case 1: rs_linear_single_row<TYPE>(p, blocks, n0, n1, x, out); break;
        case 2: rs_linear_tile<TYPE, 2>(p, blocks, n0, n1, x, ldx, out, ldo); break;
        case 3: rs_linear_tile<TYPE, 3>(p, blocks, n0, n1, x, ldx, out, ldo); break;
        case 4: rs_linear_tile<TYPE, 4>(p, blocks, n0, n1, x, ldx, out, ldo); break;
        case 5: rs_linear_tile<TYPE, 5>(p, blocks, n0, n1, x, ldx, out, ldo); break;
        case 6: rs_linear_tile<TYPE, 6>(p, blocks, n0, n1, x, ldx, out, ldo); break;
        default: rs_linear_tile<TYPE, 7>(p, blocks, n0, n1, x, ldx, out, ldo); break;
    }
}

// Output rows [n0, n1) of the whole linear, split at the parts' boundaries.
static void rs_linear_range(const rs_linear& w, int64_t n0, int64_t n1, const float* x, int64_t rows, int64_t ldx,
                            const uint16_t* xb, const rs_int16_rows* xq, float* out, int64_t ldo) {
    int64_t first = 0;
    for (int i = 0; i < w.num_parts && first < n1; first += w.parts[i].rows, ++i) {
        const rs_part& p = w.parts[i];
        const int64_t lo = n0 > first ? n0 - first : 0;
        const int64_t hi = n1 - first < p.rows ? n1 - first : p.rows;
        if (lo >= hi) continue;
        rs_dispatch_type(p.type, [&]<int TYPE>() { rs_linear_block<TYPE>(p, w.k, lo, hi, x, rows, ldx, xb, xq, out + first, ldo); });
    }
}

// A linear call's room for its input rows in other forms (rs_row_buffers): either may be absent.
struct rs_row_scratch {
    uint16_t* bf16;       // the whole tiles of the rows as bfloat16 where this path has BF16 tiles, else null
    rs_int16_rows int16;  // room for the rows as int16 (and q8: int8) as exec.activation_dtype says; q null: float32
};

// Buffers behind an rs_row_scratch for up to `rows` rows of up to k inputs.
struct rs_row_buffers {
    std::vector<uint16_t> bf16;
    std::vector<int16_t> q;
    std::vector<uint8_t> q8;
    std::vector<float> scale, sums;
    std::vector<int32_t> kept;
    std::vector<float> kept_value;
    rs_row_buffers(int64_t rows, int64_t k)
        : bf16(RS_HAS_BF16_TILES ? rows / RS_ROW_TILE * RS_ROW_TILE * k : 0),
          q(rs_activations_int16 ? rows * k : 0),
          q8(RS_HAS_INT8_TILES && rs_activations_int16 >= 2 && rows >= RS_INT16_MAX_ROWS ? rows * k : 0),
          scale(q.size() / RS_GROUP),
          sums(q.size() / 16),
          kept(q8.empty() ? 0 : rows * RS_INT8_KEPT),
          kept_value(kept.size()) {}
    rs_row_scratch view() {
        return {bf16.empty() ? nullptr : bf16.data(),
                {q.empty() ? nullptr : q.data(), scale.data(), sums.data(), q8.empty() ? nullptr : q8.data(),
                 nullptr, kept.data(), kept_value.data(), nullptr, nullptr}};
    }
};

// Whether any part of w is a quantised type (codes: true) or a float one (codes: false).
static inline bool rs_linear_has(const rs_linear& w, bool codes) {
    for (int i = 0; i < w.num_parts; ++i)
        if (rs_type_has_codes(w.parts[i].type) == codes) return true;
    return false;
}

#ifdef RS_INT8_TILES
// A thread's own room for a call's rows as int8: every row, for calls of fewer than 16 (rs_linear_shared), and
// for every call the kept channels of all rows united, which each thread works out for itself rather than one
// for all behind a barrier. Grown as needed and kept for the next call.
struct rs_own_rows {
    std::vector<uint8_t> q8, q8_order;
    std::vector<float> scale, sums, kept_value;
    std::vector<int32_t> kept, slot, united;
    rs_int16_rows rows(int64_t count, int64_t k) {
        q8.resize(count * k), q8_order.resize(count * k);
        scale.resize(count * k / RS_GROUP), sums.resize(count * k / 16);
        kept.resize(count * RS_INT8_KEPT), kept_value.resize(count * RS_INT8_KEPT);
        return {nullptr, scale.data(), sums.data(), q8.data(), q8_order.data(), kept.data(), kept_value.data(), nullptr, nullptr};
    }
    // form's kept channels united (rs_unite_kept) in this room.
    void unite(rs_int16_rows& form, int64_t count) {
        slot.resize(count * RS_INT8_KEPT), united.resize(count * RS_INT8_KEPT + 1);
        form.kept_slot = slot.data(), form.kept_union = united.data();
        rs_unite_kept(form, count);
    }
};

// Whether a call of `rows` rows of w rounds them to int8: the activation dtype says so for w (int8, or mixed
// and w marked), and every quantised part of w takes int8 inputs on this path at that many rows (int8_tiles.h;
// below 16 rows, only the types with packed int8 row kernels, int8_packed_rows.h).
static inline bool rs_linear_takes_int8(const rs_linear& w, int64_t rows) {
    if (rs_activations_int16 != 2 && !(rs_activations_int16 == 3 && w.int8_inputs)) return false;
    const bool few = rows < RS_INT16_MAX_ROWS;
    for (int i = 0; i < w.num_parts; ++i) {
        const int type = w.parts[i].type;
        if (rs_type_has_codes(type) && !(few ? rs_int8_rows_take(type) : rs_int8_takes(type))) return false;
    }
    return true;
}
#endif

// Work-shared over blocks of output rows: call from inside an OpenMP parallel region (every thread). The rows
// take only the forms some part reads: int16 for quantised parts, bfloat16 tiles for the rest.
static void rs_linear_shared(const rs_linear& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                             const rs_row_scratch& scratch) {
    const uint16_t* xb = nullptr;
    const rs_int16_rows* xq = nullptr;
    rs_int16_rows form = scratch.int16;  // the rows' integer form: int8 (q8 set) or int16
#ifdef RS_INT8_TILES
    // Calls of 16 rows or more round into the call's scratch, fewer into each thread's own room.
    const bool room = rows < RS_INT16_MAX_ROWS || form.q8 != nullptr;
    if (room && rs_linear_has(w, true) && rs_linear_takes_int8(w, rows)) {
        thread_local rs_own_rows own;
        if (rows < RS_INT16_MAX_ROWS) {
#ifdef RS_INT8_ROWS
            // Few rows: each thread rounds every one of them in its own room, so that no thread waits for
            // another before its work items (one barrier, and one thread's rounding, saved per linear).
            form = own.rows(rows, w.k);
            for (int64_t r = 0; r < rows; ++r) {
                rs_row_to_int8_keeping(x + r * ldx, r, w.k, form);
                rs_rows_to_nibble_order(r, r + 1, w.k, form);
            }
#endif
        } else {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) rs_row_to_int8_keeping(x + r * ldx, r, w.k, form);
            // The loop's barrier: every row is rounded before any thread reads it.
        }
        own.unite(form, rows);
        xq = &form;
    }
#endif
    if (xq == nullptr && form.q != nullptr && rs_linear_has(w, true)) {
        form.q8 = nullptr;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) rs_rows_to_int16(x, ldx, r, r + 1, w.k, form);
        xq = &form;  // the loop's barrier: every row is quantised before any thread reads it
    }
#ifdef RS_BF16_TILES
    if (scratch.bf16 != nullptr && rows >= RS_ROW_TILE && (xq == nullptr || rs_linear_has(w, false))) {
        const int64_t tiled = rows / RS_ROW_TILE * RS_ROW_TILE;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < tiled; ++r) rs_rows_to_bf16(x, ldx, r, r + 1, w.k, scratch.bf16);
        xb = scratch.bf16;  // the loop's barrier: every row is converted before any tile reads it
    }
#endif
    const int64_t blocks = (w.n + RS_COL_BLOCK - 1) / RS_COL_BLOCK;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t n0 = b * RS_COL_BLOCK;
        rs_linear_range(w, n0, n0 + RS_COL_BLOCK < w.n ? n0 + RS_COL_BLOCK : w.n, x, rows, ldx, xb, xq, out, ldo);
    }
}

// Row `row` of W as float32 (an embedding lookup on a quantised table).
static void rs_weight_row(const rs_linear& w, int64_t row, float* out) {
    for (int i = 0; i < w.num_parts; row -= w.parts[i].rows, ++i) {
        const rs_part& p = w.parts[i];
        if (row >= p.rows) continue;
        rs_dispatch_type(p.type, [&]<int TYPE>() { rs_part_row<TYPE>(p, w.k / RS_GROUP / rs_reader<TYPE>::GROUPS, row, out); });
        return;
    }
}
