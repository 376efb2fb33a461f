// roleserve's CPU kernels, called through ctypes (GIL released): linears over a GGUF's own blocks of any
// tensor type for any number of rows, embedding-row lookup, and one whole decode step of Llama's layer (with
// Qwen's Q/K/V biases or per-head Q/K norms where a family has them) in a single call. A step's rows are
// one token each: a decode, or one token of a prefill chunk over its sequence's pages (every row's K/V is
// written before any row attends, so a chunk's rows attend causally), with logits for the rows asked.
//
// This file is compiled once per instruction set (isa_*.cpp set the target and name the entry points with
// RS_ENTRY); dispatch.cpp exports the entry points and calls the set chosen for this CPU.
//
// The decode step exists because at a few rows per step the model's arithmetic takes a few milliseconds
// while dispatching ~40 torch ops per layer from Python takes as long again; here a step is one call and
// one OpenMP parallel region whose threads split every linear by output rows and attention by sequence
// (by (sequence, KV head) when there are few). OpenMP is libgomp: torch's, loaded before this library
// (native._load_openmp_runtime) whether or not torch itself is, so both share one thread pool.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "linear_kernels.h"

#ifndef RS_ENTRY
#error "compile cpu_kernels.cpp through an isa_*.cpp, which names its entry points"
#endif

extern "C" {

struct rs_layer {
    const float* input_norm;  // (hidden,)
    const float* post_norm;   // (hidden,)
    rs_linear qkv;            // (heads + 2 * kv_heads) * head_dim rows: Q | K | V
    rs_linear o;              // hidden rows
    rs_linear gate_up;        // 2 * intermediate rows: gate | up
    rs_linear down;           // hidden rows
    const float* qkv_bias;    // (qkv rows,) added to Q | K | V, or null (Qwen 2)
    const float* q_norm;      // (head_dim,) RMSNorm over each query head before the rotation, or null (Qwen 3)
    const float* k_norm;      // (head_dim,) the same over each key head; set with q_norm
};

struct rs_model {
    int32_t num_layers, hidden, intermediate, heads, kv_heads, head_dim, vocab, reserved;
    float eps, reserved2;
    const rs_linear* embed;  // (vocab, hidden)
    const rs_linear* head;   // (vocab, hidden); may be the embedding
    const float* final_norm;
    const rs_layer* layers;
    const float* inv_freq;  // (head_dim / 2,) RoPE inverse frequencies, HF rotate_half layout
};

struct rs_decode_batch {
    int64_t num_seqs;
    const int64_t* token_ids;     // (B,)
    const int64_t* positions;     // (B,) position of the new token = tokens already cached
    const int64_t* slots;         // (B,) cache slot for the new token's K/V
    const int64_t* block_tables;  // (B, table_stride) page ids
    int64_t table_stride;
    int64_t page_size;
    void* kv;  // (layers, 2, num_slots, kv_heads, head_dim) of float32, or of IEEE half when kv_half
    int64_t num_slots;
    float* logits;  // (num_logits, vocab) out: the rows logits_rows names, or (B, vocab) when it is null
    const int64_t* logits_rows;  // (num_logits,) rows to take logits of (a prefill chunk's last), or null
    int64_t num_logits;
    int64_t kv_half;  // 1: the cache holds IEEE half floats (written rounded to nearest), 0: float32
};

}  // extern "C"

namespace {

void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* out) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float inv = 1.0f / std::sqrt(float(sum / n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

// HF rotate_half: pairs (i, i + half) rotate by position * inv_freq[i].
void rotate(float* head, const float* cos, const float* sin, int64_t half) {
    for (int64_t i = 0; i < half; ++i) {
        const float a = head[i], b = head[i + half];
        head[i] = a * cos[i] - b * sin[i];
        head[i + half] = b * cos[i] + a * sin[i];
    }
}

// A KV cache element type: float32, or IEEE half (uint16_t bits) widened by F16C on load, rounded on store.
inline __m256 kv_load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 kv_load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline float kv_load1(const float* p) { return *p; }
inline float kv_load1(const uint16_t* p) { return _cvtsh_ss(*p); }

inline void kv_store(const float* x, int64_t n, float* out) { std::memcpy(out, x, sizeof(float) * n); }
inline void kv_store(const float* x, int64_t n, uint16_t* out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; ++i) out[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// q . key over n elements, the key in the cache's element type.
template <typename KV>
inline float kv_dot(const float* q, const KV* key, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv_load8(key + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), kv_load8(key + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv_load8(key + i), acc0);
    float sum = rs_hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += q[i] * kv_load1(key + i);
    return sum;
}

// e^(score - max) in place over n scores; returns (max, sum of the exponentials).
std::pair<float, float> exp_shifted(float* scores, int64_t n) {
    float best = -INFINITY;
    for (int64_t t = 0; t < n; ++t) best = scores[t] > best ? scores[t] : best;
    const __m256 shift = _mm256_set1_ps(best);
    __m256 total8 = _mm256_setzero_ps();
    int64_t t = 0;
    for (; t + 8 <= n; t += 8) {
        const __m256 e = rs_exp(_mm256_sub_ps(_mm256_loadu_ps(scores + t), shift));
        _mm256_storeu_ps(scores + t, e);
        total8 = _mm256_add_ps(total8, e);
    }
    float total = rs_hsum(total8);
    for (; t < n; ++t) total += (scores[t] = std::exp(scores[t] - best));
    return {best, total};
}

// Four dot products' lanes summed: lane j of the result is the sum of acc[j]'s eight lanes.
inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// Rows [t, t + count) of the rows from `first` (row_stride apart, `rows` of them; first null: none), their
// elements [begin, end), asked into the cache: the next page's rows while this page's are read, so they come
// from memory before they are read instead of a cache miss each (the pages of a sequence lie anywhere, so
// no hardware prefetcher can guess them; the score loop alone over a 30-layer float32 cache of 32 sequences
// read 11.5 GB/s of keys without, 16.6 with).
template <typename KV>
struct rows_ahead {
    const KV* first;
    int64_t rows, row_stride;

    // Inlined always: GCC counts a function that only prefetches as one without effects and drops its calls.
    [[gnu::always_inline]] void fetch(int64_t t, int64_t count, int64_t begin, int64_t end) const {
        if (first == nullptr) return;
        for (int64_t r = t; r < std::min(t + count, rows); ++r) {
            const char* row = reinterpret_cast<const char*>(first + r * row_stride);
            for (int64_t offset = begin * int64_t(sizeof(KV)); offset < end * int64_t(sizeof(KV)); offset += 64)
                _mm_prefetch(row + offset, _MM_HINT_T0);
        }
    }
};

// scores[g * stride + t] = scale * q_g . key_t for GB query heads (q: head_dim apart) and n keys (row_stride
// apart), d % 8 == 0. Four keys at a time, each loaded once for the GB heads, their sums reduced together.
template <typename KV, int GB>
void score_keys(const float* q, int64_t d, const KV* keys, int64_t row_stride, int64_t n, float scale,
                float* scores, int64_t stride, const rows_ahead<KV>& ahead) {
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
        ahead.fetch(t, 4, 0, d);
        __m256 acc[GB][4];
        for (int g = 0; g < GB; ++g)
            for (int j = 0; j < 4; ++j) acc[g][j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < d; i += 8) {
            __m256 key[4];
            for (int j = 0; j < 4; ++j) key[j] = kv_load8(keys + (t + j) * row_stride + i);
            for (int g = 0; g < GB; ++g) {
                const __m256 qv = _mm256_loadu_ps(q + g * d + i);
                for (int j = 0; j < 4; ++j) acc[g][j] = _mm256_fmadd_ps(qv, key[j], acc[g][j]);
            }
        }
        for (int g = 0; g < GB; ++g)
            _mm_storeu_ps(scores + g * stride + t,
                          _mm_mul_ps(hsum4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]), _mm_set1_ps(scale)));
    }
    for (; t < n; ++t)
        for (int g = 0; g < GB; ++g) scores[g * stride + t] = kv_dot(q + g * d, keys + t * row_stride, d) * scale;
}

// out[g] (+)= sum over t of p[g * stride + t] * value_t for GB heads, over CB * 8 of the value columns from
// `column`: the accumulators stay in registers while each value row is loaded once for the GB heads.
template <typename KV, int GB, int CB>
void weigh_values(const float* p, int64_t stride, const KV* values, int64_t row_stride, int64_t n, int64_t column,
                  float* out, int64_t d, bool accumulate, const rows_ahead<KV>& ahead) {
    __m256 acc[GB][CB];
    for (int g = 0; g < GB; ++g)
        for (int c = 0; c < CB; ++c)
            acc[g][c] = accumulate ? _mm256_loadu_ps(out + g * d + column + 8 * c) : _mm256_setzero_ps();
    for (int64_t t = 0; t < n; ++t) {
        ahead.fetch(t, 1, column, column + 8 * CB);
        __m256 weight[GB];
        for (int g = 0; g < GB; ++g) weight[g] = _mm256_set1_ps(p[g * stride + t]);
        for (int c = 0; c < CB; ++c) {
            const __m256 value = kv_load8(values + t * row_stride + column + 8 * c);
            for (int g = 0; g < GB; ++g) acc[g][c] = _mm256_fmadd_ps(weight[g], value, acc[g][c]);
        }
    }
    for (int g = 0; g < GB; ++g)
        for (int c = 0; c < CB; ++c) _mm256_storeu_ps(out + g * d + column + 8 * c, acc[g][c]);
}

// fn(g, GB) for the query heads g .. g + GB - 1 of a KV head's group, in blocks of up to 3 (GB a
// std::integral_constant, so each block size is its own instance of the kernels).
template <typename Fn>
inline void for_head_blocks(int64_t group, Fn fn) {
    for (int64_t g = 0; g < group; g += 3) {
        if (group - g >= 3)
            fn(g, std::integral_constant<int, 3>{});
        else if (group - g == 2)
            fn(g, std::integral_constant<int, 2>{});
        else
            fn(g, std::integral_constant<int, 1>{});
    }
}

// The query heads of KV heads [kvh0, kvh1) of one sequence against its cached keys/values at positions
// [t0, t1) (this step's K/V already written), page by page: on each page every one of those KV heads in
// turn, so a page's rows (a position's KV heads side by side) are read together while the next page's are
// fetched ahead. Within a KV head, its query heads go in blocks of up to 3 that each fetch a K/V row once.
// q and out: the sequence's heads' rows, head_dim apart; scores: its (heads, length) scratch, length = its
// context. stats null: the whole context, out normalised. Otherwise a part of it: out holds the sum of
// e^(score - max) V and stats[2h], stats[2h + 1] that max and the sum of the exponentials (merge_parts).
template <typename KV>
void attend_sequence(const rs_model& m, const rs_decode_batch& batch, int64_t seq, const float* q,
                     const KV* k_cache, const KV* v_cache, float* scores, float* out, int64_t kvh0, int64_t kvh1,
                     int64_t t0, int64_t t1, float* stats) {
    const int64_t d = m.head_dim, group = m.heads / m.kv_heads;
    const int64_t length = batch.positions[seq] + 1, page = batch.page_size;
    const int64_t* table = batch.block_tables + seq * batch.table_stride;
    const int64_t row_stride = int64_t(m.kv_heads) * d;
    const float scale = 1.0f / std::sqrt(float(d));
    // position t's row of KV head h
    const auto row_of = [&](const KV* cache, int64_t t, int64_t h) {
        return cache + (table[t / page] * page + t % page) * row_stride + h * d;
    };
    const rows_ahead<KV> no_rows{nullptr, 0, row_stride};
    // the rows of KV head h on the page after the one `start` is on, to fetch ahead
    const auto next_page = [&](const KV* cache, int64_t start, int64_t rows, int64_t h) -> rows_ahead<KV> {
        const int64_t next = start + rows;
        if (next >= t1) return no_rows;
        return {row_of(cache, next, h), std::min(page, t1 - next), row_stride};
    };
    for (int64_t start = t0; start < t1;) {  // a page at a time
        const int64_t rows = std::min(page - start % page, t1 - start);
        for (int64_t kvh = kvh0; kvh < kvh1; ++kvh) {
            const float* q_group = q + kvh * group * d;
            float* s_group = scores + kvh * group * length + start;
            if (d % 8 != 0) {  // generic path
                for (int64_t t = 0; t < rows; ++t)
                    for (int64_t g = 0; g < group; ++g)
                        s_group[g * length + t] = kv_dot(q_group + g * d, row_of(k_cache, start + t, kvh), d) * scale;
                continue;
            }
            for_head_blocks(group, [&](int64_t g, auto gb) {
                score_keys<KV, decltype(gb)::value>(q_group + g * d, d, row_of(k_cache, start, kvh), row_stride, rows,
                                                    scale, s_group + g * length, length,
                                                    g == 0 ? next_page(k_cache, start, rows, kvh) : no_rows);
            });
        }
        start += rows;
    }
    for (int64_t h = kvh0 * group; h < kvh1 * group; ++h) {
        float* row = scores + h * length + t0;
        const auto [best, total] = exp_shifted(row, t1 - t0);
        if (stats == nullptr) {  // probabilities
            const float inv = 1.0f / total;
            for (int64_t t = 0; t < t1 - t0; ++t) row[t] *= inv;
        } else {
            stats[2 * h] = best, stats[2 * h + 1] = total;
        }
    }
    for (int64_t start = t0; start < t1;) {
        const int64_t rows = std::min(page - start % page, t1 - start);
        for (int64_t kvh = kvh0; kvh < kvh1; ++kvh) {
            const float* p_group = scores + kvh * group * length + start;
            float* o_group = out + kvh * group * d;
            if (d % 8 != 0) {  // generic path
                for (int64_t g = 0; g < group; ++g) {
                    float* o = o_group + g * d;
                    if (start == t0) std::memset(o, 0, sizeof(float) * d);
                    for (int64_t t = 0; t < rows; ++t) {
                        const KV* value = row_of(v_cache, start + t, kvh);
                        for (int64_t i = 0; i < d; ++i) o[i] += p_group[g * length + t] * kv_load1(value + i);
                    }
                }
                continue;
            }
            for_head_blocks(group, [&](int64_t g, auto gb) {
                constexpr int GB = decltype(gb)::value;
                const KV* values = row_of(v_cache, start, kvh);
                const rows_ahead<KV> ahead = g == 0 ? next_page(v_cache, start, rows, kvh) : no_rows;
                int64_t column = 0;
                for (; column + 32 <= d; column += 32)
                    weigh_values<KV, GB, 4>(p_group + g * length, length, values, row_stride, rows, column,
                                            o_group + g * d, d, start != t0, ahead);
                for (; column < d; column += 8)
                    weigh_values<KV, GB, 1>(p_group + g * length, length, values, row_stride, rows, column,
                                            o_group + g * d, d, start != t0, ahead);
            });
        }
        start += rows;
    }
}

// One query head's output from its parts' unnormalised outputs (d floats each, d_stride apart) and stats.
void merge_parts(const float* outs, int64_t d_stride, const float* stats, int64_t stats_stride, int64_t parts,
                 int64_t d, float* out) {
    float best = -INFINITY;
    for (int64_t i = 0; i < parts; ++i) best = std::max(best, stats[i * stats_stride]);
    float total = 0.0f;
    std::memset(out, 0, sizeof(float) * d);
    for (int64_t i = 0; i < parts; ++i) {
        const float weight = std::exp(stats[i * stats_stride] - best);
        total += weight * stats[i * stats_stride + 1];
        for (int64_t j = 0; j < d; ++j) out[j] += weight * outs[i * d_stride + j];
    }
    const float inv = 1.0f / total;
    for (int64_t j = 0; j < d; ++j) out[j] *= inv;
}

void silu_and_multiply(const float* gate, const float* up, float* out, int64_t n) {
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 sig = _mm256_div_ps(one, _mm256_add_ps(one, rs_exp(_mm256_sub_ps(_mm256_setzero_ps(), g))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// One layer's attention for a step, called by every thread of the step's parallel region: the rows' Q/K
// biases, norms and rotation, this step's K/V written to the cache (in its element type KV), then every
// sequence (or, with few sequences, each (sequence, KV head)) attending, split along its positions when
// there are few items per thread.
struct step_attention {
    const rs_model& m;
    const rs_decode_batch& batch;
    float *qkv, *cos, *sin, *scores, *attended, *part_out, *part_stats;
    int64_t parts, longest;
    bool by_kv_head;  // an item per (sequence, KV head, part), else per (sequence, part)

    template <typename KV>
    void layer(int32_t l, KV* kv) const {
        const rs_layer& layer = m.layers[l];
        const int64_t B = batch.num_seqs, D = m.head_dim, half = D / 2;
        const int64_t q_size = int64_t(m.heads) * D, kv_size = int64_t(m.kv_heads) * D;
        const int64_t qkv_size = q_size + 2 * kv_size;
        KV* k_cache = kv + l * 2 * batch.num_slots * kv_size;
        KV* v_cache = k_cache + batch.num_slots * kv_size;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < B; ++s) {
            float* row = &qkv[s * qkv_size];
            if (layer.qkv_bias)
                for (int64_t i = 0; i < qkv_size; ++i) row[i] += layer.qkv_bias[i];
            if (layer.q_norm)
                for (int64_t h = 0; h < m.heads + m.kv_heads; ++h)
                    rms_norm_row(row + h * D, h < m.heads ? layer.q_norm : layer.k_norm, D, m.eps, row + h * D);
            for (int64_t h = 0; h < m.heads + m.kv_heads; ++h) rotate(row + h * D, &cos[s * half], &sin[s * half], half);
            kv_store(row + q_size, kv_size, k_cache + batch.slots[s] * kv_size);
            kv_store(row + q_size + kv_size, kv_size, v_cache + batch.slots[s] * kv_size);
        }
        const int64_t group = m.heads / m.kv_heads, head_items = by_kv_head ? m.kv_heads : 1;
#pragma omp for schedule(dynamic, 1) collapse(3)
        for (int64_t s = 0; s < B; ++s)
            for (int64_t item = 0; item < head_items; ++item)
                for (int64_t part = 0; part < parts; ++part) {
                    const int64_t kvh0 = by_kv_head ? item : 0, kvh1 = by_kv_head ? item + 1 : m.kv_heads;
                    const int64_t length = batch.positions[s] + 1, head = s * m.heads;  // its first query head
                    const float* q = &qkv[s * qkv_size];
                    if (parts == 1) {
                        attend_sequence(m, batch, s, q, k_cache, v_cache, &scores[head * longest],
                                        &attended[s * q_size], kvh0, kvh1, 0, length, nullptr);
                        continue;
                    }
                    const int64_t t0 = length * part / parts, t1 = length * (part + 1) / parts;
                    float* stats = &part_stats[(part * B * m.heads + head) * 2];
                    if (t0 < t1)
                        attend_sequence(m, batch, s, q, k_cache, v_cache, &scores[head * longest],
                                        &part_out[(part * B * m.heads + head) * D], kvh0, kvh1, t0, t1, stats);
                    else  // an empty part: weight e^-inf = 0 at the merge
                        for (int64_t h = kvh0 * group; h < kvh1 * group; ++h)
                            stats[2 * h] = -INFINITY, stats[2 * h + 1] = 0.0f;
                }
        if (parts == 1) return;
#pragma omp for schedule(static)
        for (int64_t head = 0; head < B * m.heads; ++head)
            merge_parts(&part_out[head * D], B * m.heads * D, &part_stats[head * 2], B * m.heads * 2, parts, D,
                        &attended[head * D]);
    }
};

}  // namespace

extern "C" {

// y (rows, n) = x (rows, k) @ W.T, every thread of a new parallel region taking a share of the output rows.
void RS_ENTRY(rs_linear_forward)(const rs_linear* w, const float* x, int64_t rows, float* out, int32_t threads) {
    rs_row_buffers buffers(rows, w->k);
    const rs_row_scratch scratch = buffers.view();
#pragma omp parallel num_threads(threads)
    rs_linear_shared(*w, x, rows, w->k, out, w->n, scratch);
}

// out (count, k) = rows ids[i] of W as float32.
void RS_ENTRY(rs_weight_rows)(const rs_linear* w, const int64_t* ids, int64_t count, float* out) {
    for (int64_t i = 0; i < count; ++i) rs_weight_row(*w, ids[i], out + i * w->k);
}

// One decode step for B sequences: embed, every layer, final norm, logits. Returns 0, or -1 when the
// scratch memory could not be allocated (no exception crosses the C boundary).
static int decode_step(const rs_model* model, const rs_decode_batch* batch_in, int32_t threads);

int RS_ENTRY(rs_decode_step)(const rs_model* model, const rs_decode_batch* batch_in, int32_t threads) {
    try {
        return decode_step(model, batch_in, threads);
    } catch (const std::bad_alloc&) {
        return -1;
    }
}

static int decode_step(const rs_model* model, const rs_decode_batch* batch_in, int32_t threads) {
    const rs_model& m = *model;
    const rs_decode_batch& batch = *batch_in;
    const int64_t B = batch.num_seqs, H = m.hidden, D = m.head_dim, half = D / 2;
    const int64_t q_size = int64_t(m.heads) * D, kv_size = int64_t(m.kv_heads) * D;
    const int64_t qkv_size = q_size + 2 * kv_size, inter = m.intermediate;
    int64_t longest = 1;
    for (int64_t s = 0; s < B; ++s) longest = batch.positions[s] + 1 > longest ? batch.positions[s] + 1 : longest;

    std::vector<float> hidden(B * H), normed(B * H), qkv(B * qkv_size), attended(B * q_size), proj(B * H),
        gate_up(B * 2 * inter), act(B * inter), cos(B * half), sin(B * half),
        scores(B * int64_t(m.heads) * longest);
    // Attention goes by sequence, a page's rows (every KV head of a position) read together, when there are
    // 4 or more sequences a thread; with fewer, by (sequence, KV head) for more items. When there are fewer
    // items than 2 per thread, each is also split along its positions (at least 64 a part) and the parts
    // merged by their softmax statistics.
    const bool by_kv_head = B < 4 * threads;
    const int64_t items = by_kv_head ? B * m.kv_heads : B;
    int64_t parts = items >= 2 * threads ? 1 : (2 * threads + items - 1) / items;
    parts = std::max<int64_t>(1, std::min(parts, longest / 64));
    std::vector<float> part_out(parts > 1 ? parts * B * m.heads * D : 0),
        part_stats(parts > 1 ? parts * B * m.heads * 2 : 0);
    const int64_t widest = std::max({H, q_size, inter});
    rs_row_buffers buffers(B, widest);
    const rs_row_scratch xb = buffers.view();
    for (int64_t s = 0; s < B; ++s) {
        rs_weight_row(*m.embed, batch.token_ids[s], hidden.data() + s * H);
        for (int64_t i = 0; i < half; ++i) {
            const float angle = float(batch.positions[s]) * m.inv_freq[i];
            cos[s * half + i] = std::cos(angle);
            sin[s * half + i] = std::sin(angle);
        }
    }
    step_attention step{m, batch, qkv.data(), cos.data(), sin.data(), scores.data(), attended.data(),
                        part_out.data(), part_stats.data(), parts, longest, by_kv_head};

#pragma omp parallel num_threads(threads)
    {
        for (int32_t l = 0; l < m.num_layers; ++l) {
            const rs_layer& layer = m.layers[l];
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s) rms_norm_row(&hidden[s * H], layer.input_norm, H, m.eps, &normed[s * H]);
            rs_linear_shared(layer.qkv, normed.data(), B, H, qkv.data(), qkv_size, xb);
            if (batch.kv_half)
                step.layer(l, static_cast<uint16_t*>(batch.kv));
            else
                step.layer(l, static_cast<float*>(batch.kv));
            rs_linear_shared(layer.o, attended.data(), B, q_size, proj.data(), H, xb);
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s) {
                for (int64_t i = 0; i < H; ++i) hidden[s * H + i] += proj[s * H + i];
                rms_norm_row(&hidden[s * H], layer.post_norm, H, m.eps, &normed[s * H]);
            }
            rs_linear_shared(layer.gate_up, normed.data(), B, H, gate_up.data(), 2 * inter, xb);
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s)
                silu_and_multiply(&gate_up[s * 2 * inter], &gate_up[s * 2 * inter + inter], &act[s * inter], inter);
            rs_linear_shared(layer.down, act.data(), B, inter, proj.data(), H, xb);
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s)
                for (int64_t i = 0; i < H; ++i) hidden[s * H + i] += proj[s * H + i];
        }
        const int64_t sampled = batch.logits_rows != nullptr ? batch.num_logits : B;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < sampled; ++i) {
            const int64_t s = batch.logits_rows != nullptr ? batch.logits_rows[i] : i;
            rms_norm_row(&hidden[s * H], m.final_norm, H, m.eps, &normed[i * H]);
        }
        rs_linear_shared(*m.head, normed.data(), sampled, H, batch.logits, m.vocab, xb);
    }
    return 0;
}

}  // extern "C"
