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
// one OpenMP parallel region whose threads split every linear by output rows and attention by
// (sequence, KV head). OpenMP is libgomp, the runtime torch itself loads, so both share one thread pool.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
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
    float* kv;  // (layers, 2, num_slots, kv_heads, head_dim)
    int64_t num_slots;
    float* logits;  // (num_logits, vocab) out: the rows logits_rows names, or (B, vocab) when it is null
    const int64_t* logits_rows;  // (num_logits,) rows to take logits of (a prefill chunk's last), or null
    int64_t num_logits;
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

// The G query heads that share one KV head of one sequence, against its cached keys/values at positions
// [t0, t1) (this step's K/V already written). Each cached K/V row is fetched from memory once for all G
// heads. scores: (G, length) scratch, length = the sequence's context; q and out: the G heads' rows, head_dim
// apart. stats null: the whole context, out normalised. Otherwise a part of it: out holds the sum of
// e^(score - max) V and stats[2g], stats[2g + 1] that max and the sum of the exponentials (merge_parts).
void attend_kv_head(const rs_model& m, const rs_decode_batch& batch, int64_t seq, int64_t kv_head, const float* q,
                    const float* k_cache, const float* v_cache, float* scores, float* out, int64_t t0, int64_t t1,
                    float* stats) {
    const int64_t d = m.head_dim, group = m.heads / m.kv_heads;
    const int64_t length = batch.positions[seq] + 1, page = batch.page_size;
    const int64_t* table = batch.block_tables + seq * batch.table_stride;
    const int64_t row_stride = int64_t(m.kv_heads) * d;
    const float scale = 1.0f / std::sqrt(float(d));
    // Positions page by page: one table lookup per page, consecutive rows within it.
    for (int64_t start = t0; start < t1;) {
        const int64_t rows = std::min(page - start % page, t1 - start);
        const float* keys = k_cache + (table[start / page] * page + start % page) * row_stride + kv_head * d;
        for (int64_t t = 0; t < rows; ++t)
            for (int64_t g = 0; g < group; ++g)
                scores[g * length + start + t] = rs_dot(q + g * d, keys + t * row_stride, d) * scale;
        start += rows;
    }
    for (int64_t g = 0; g < group; ++g) {
        float* row = scores + g * length + t0;
        const auto [best, total] = exp_shifted(row, t1 - t0);
        if (stats == nullptr) {  // probabilities
            const float inv = 1.0f / total;
            for (int64_t t = 0; t < t1 - t0; ++t) row[t] *= inv;
        } else {
            stats[2 * g] = best, stats[2 * g + 1] = total;
        }
    }
    if (d % 8 != 0 || d > 128) {  // generic path
        for (int64_t g = 0; g < group; ++g) {
            float* o = out + g * d;
            std::memset(o, 0, sizeof(float) * d);
            for (int64_t t = t0; t < t1; ++t) {
                const float* value = v_cache + (table[t / page] * page + t % page) * row_stride + kv_head * d;
                for (int64_t i = 0; i < d; ++i) o[i] += scores[g * length + t] * value[i];
            }
        }
        return;
    }
    // head_dim <= 128: the output row lives in registers; after the first head the V rows come from cache.
    const int64_t chunks = d / 8;
    for (int64_t g = 0; g < group; ++g) {
        __m256 acc[16];
        for (int64_t c = 0; c < chunks; ++c) acc[c] = _mm256_setzero_ps();
        const float* p = scores + g * length;
        for (int64_t start = t0; start < t1;) {
            const int64_t rows = std::min(page - start % page, t1 - start);
            const float* values = v_cache + (table[start / page] * page + start % page) * row_stride + kv_head * d;
            for (int64_t t = 0; t < rows; ++t) {
                const __m256 weight = _mm256_set1_ps(p[start + t]);
                for (int64_t c = 0; c < chunks; ++c)
                    acc[c] = _mm256_fmadd_ps(weight, _mm256_loadu_ps(values + t * row_stride + 8 * c), acc[c]);
            }
            start += rows;
        }
        for (int64_t c = 0; c < chunks; ++c) _mm256_storeu_ps(out + g * d + 8 * c, acc[c]);
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
    // Attention goes by (sequence, KV head); when there are fewer such items than 2 per thread, each is also
    // split along its positions (at least 64 a part) and the parts merged by their softmax statistics.
    const int64_t items = B * m.kv_heads;
    int64_t parts = items >= 2 * threads ? 1 : (2 * threads + items - 1) / items;
    parts = std::max<int64_t>(1, std::min(parts, longest / 64));
    std::vector<float> part_out(parts > 1 ? parts * B * m.heads * D : 0),
        part_stats(parts > 1 ? parts * B * m.heads * 2 : 0);
    const int64_t widest = std::max({H, q_size, inter});
    rs_row_buffers buffers(B, widest);
    const rs_row_scratch xb = buffers.view();
    const int64_t group = m.heads / m.kv_heads;
    for (int64_t s = 0; s < B; ++s) {
        rs_weight_row(*m.embed, batch.token_ids[s], hidden.data() + s * H);
        for (int64_t i = 0; i < half; ++i) {
            const float angle = float(batch.positions[s]) * m.inv_freq[i];
            cos[s * half + i] = std::cos(angle);
            sin[s * half + i] = std::sin(angle);
        }
    }
    const int64_t layer_floats = 2 * batch.num_slots * kv_size;

#pragma omp parallel num_threads(threads)
    {
        for (int32_t l = 0; l < m.num_layers; ++l) {
            const rs_layer& layer = m.layers[l];
            float* k_cache = batch.kv + l * layer_floats;
            float* v_cache = k_cache + batch.num_slots * kv_size;
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s) rms_norm_row(&hidden[s * H], layer.input_norm, H, m.eps, &normed[s * H]);
            rs_linear_shared(layer.qkv, normed.data(), B, H, qkv.data(), qkv_size, xb);
#pragma omp for schedule(static)
            for (int64_t s = 0; s < B; ++s) {
                float* row = &qkv[s * qkv_size];
                if (layer.qkv_bias)
                    for (int64_t i = 0; i < qkv_size; ++i) row[i] += layer.qkv_bias[i];
                if (layer.q_norm)
                    for (int64_t h = 0; h < m.heads + m.kv_heads; ++h)
                        rms_norm_row(row + h * D, h < m.heads ? layer.q_norm : layer.k_norm, D, m.eps, row + h * D);
                for (int64_t h = 0; h < m.heads + m.kv_heads; ++h) rotate(row + h * D, &cos[s * half], &sin[s * half], half);
                std::memcpy(k_cache + batch.slots[s] * kv_size, row + q_size, sizeof(float) * kv_size);
                std::memcpy(v_cache + batch.slots[s] * kv_size, row + q_size + kv_size, sizeof(float) * kv_size);
            }
            if (parts == 1) {
#pragma omp for schedule(dynamic, 1) collapse(2)
                for (int64_t s = 0; s < B; ++s)
                    for (int64_t kvh = 0; kvh < m.kv_heads; ++kvh)
                        attend_kv_head(m, batch, s, kvh, &qkv[s * qkv_size + kvh * group * D], k_cache, v_cache,
                                       &scores[(s * m.heads + kvh * group) * longest],
                                       &attended[s * q_size + kvh * group * D], 0, batch.positions[s] + 1, nullptr);
            } else {  // few (sequence, KV head) items for the threads: each also split along its positions
#pragma omp for schedule(dynamic, 1) collapse(3)
                for (int64_t s = 0; s < B; ++s)
                    for (int64_t kvh = 0; kvh < m.kv_heads; ++kvh)
                        for (int64_t part = 0; part < parts; ++part) {
                            const int64_t length = batch.positions[s] + 1;
                            const int64_t t0 = length * part / parts, t1 = length * (part + 1) / parts;
                            const int64_t head = s * m.heads + kvh * group;  // its first query head
                            if (t0 < t1)
                                attend_kv_head(m, batch, s, kvh, &qkv[s * qkv_size + kvh * group * D], k_cache,
                                               v_cache, &scores[head * longest], &part_out[(part * B * m.heads + head) * D],
                                               t0, t1, &part_stats[(part * B * m.heads + head) * 2]);
                            else  // an empty part: weight e^-inf = 0 at the merge
                                for (int64_t g = 0; g < group; ++g)
                                    part_stats[(part * B * m.heads + head + g) * 2] = -INFINITY,
                                    part_stats[(part * B * m.heads + head + g) * 2 + 1] = 0.0f;
                        }
#pragma omp for schedule(static)
                for (int64_t head = 0; head < B * m.heads; ++head)
                    merge_parts(&part_out[head * D], B * m.heads * D, &part_stats[head * 2], B * m.heads * 2, parts, D,
                                &attended[head * D]);
            }
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
