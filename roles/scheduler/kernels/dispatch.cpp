// The kernels' entry points: each calls the instruction set chosen once, at load, for this CPU (the widest one
// it has that rounds no weight), unless rs_select_isa picks another it has. Compiled for plain x86-64, so
// loading this library never meets an instruction the CPU lacks; only the chosen set's code runs.
#include <cstdint>

#include "block_layout.h"
#include "packed_layout.h"

extern "C" {
struct rs_linear;
struct rs_model;
struct rs_decode_batch;

void rs_linear_forward_avx2(const rs_linear*, const float*, int64_t, float*, int32_t);
void rs_weight_rows_avx2(const rs_linear*, const int64_t*, int64_t, float*);
int rs_decode_step_avx2(const rs_model*, const rs_decode_batch*, int32_t);
void rs_linear_forward_avx512(const rs_linear*, const float*, int64_t, float*, int32_t);
void rs_weight_rows_avx512(const rs_linear*, const int64_t*, int64_t, float*);
int rs_decode_step_avx512(const rs_model*, const rs_decode_batch*, int32_t);
void rs_linear_forward_avx512vnni(const rs_linear*, const float*, int64_t, float*, int32_t);
void rs_weight_rows_avx512vnni(const rs_linear*, const int64_t*, int64_t, float*);
int rs_decode_step_avx512vnni(const rs_model*, const rs_decode_batch*, int32_t);
void rs_linear_forward_avx512bf16(const rs_linear*, const float*, int64_t, float*, int32_t);
void rs_weight_rows_avx512bf16(const rs_linear*, const int64_t*, int64_t, float*);
int rs_decode_step_avx512bf16(const rs_model*, const rs_decode_batch*, int32_t);
}

namespace {

enum { RS_ISA_AVX2 = 0, RS_ISA_AVX512 = 1, RS_ISA_AVX512VNNI = 2, RS_ISA_AVX512BF16 = 3, RS_ISA_COUNT = 4 };

struct rs_isa {
    const char* name;
    void (*linear_forward)(const rs_linear*, const float*, int64_t, float*, int32_t);
    void (*weight_rows)(const rs_linear*, const int64_t*, int64_t, float*);
    int (*decode_step)(const rs_model*, const rs_decode_batch*, int32_t);
};

const rs_isa ISAS[RS_ISA_COUNT] = {
    {"avx2", rs_linear_forward_avx2, rs_weight_rows_avx2, rs_decode_step_avx2},
    {"avx512", rs_linear_forward_avx512, rs_weight_rows_avx512, rs_decode_step_avx512},
    {"avx512vnni", rs_linear_forward_avx512vnni, rs_weight_rows_avx512vnni, rs_decode_step_avx512vnni},
    {"avx512bf16", rs_linear_forward_avx512bf16, rs_weight_rows_avx512bf16, rs_decode_step_avx512bf16},
};

bool cpu_has(int isa) {
    __builtin_cpu_init();
    const bool base = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == RS_ISA_AVX2) return base;
    const bool avx512 = base && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    if (isa == RS_ISA_AVX512) return avx512;
    const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
    if (isa == RS_ISA_AVX512VNNI) return vnni;
    if (isa == RS_ISA_AVX512BF16) return vnni && __builtin_cpu_supports("avx512bf16");
    return false;
}

// The widest path that rounds no weight: avx512bf16 rounds batched linears to bfloat16, so only a setting
// chooses it.
int widest() {
    for (int isa = RS_ISA_AVX512VNNI; isa > 0; --isa)
        if (cpu_has(isa)) return isa;
    return RS_ISA_AVX2;
}

int selected = widest();

}  // namespace

extern "C" {

int rs_kernels_abi_version() { return 11; }

// Read by every path's linears (linear_kernels.h).
int rs_activations_int16 = 0;

// Quantised types' linears multiply float32 activations (0, the default), int16 ones (1), int16 below 16 rows
// and int8 from 16 where the path has int8 tiles for their types (2), or that for the linears marked
// int8_inputs and int16 for the rest (3).
void rs_set_activation_dtype(int32_t dtype) { rs_activations_int16 = dtype >= 0 && dtype <= 3 ? dtype : 0; }
int rs_activation_dtype() { return rs_activations_int16; }

// 1 when the kernels run tensors of ggml type `type`, else 0.
int rs_type_supported(int32_t type) {
    int weights, bytes;
    rs_block_layout(type, &weights, &bytes);
    return weights > 0;
}

// Bytes of the packed tiles of a part of type `type` (rows of row_bytes; packed_layout.h): 0 when the kernels
// take this type only as the file has it, or the part has no whole tile.
int64_t rs_packed_bytes(int32_t type, int64_t rows, int64_t row_bytes) {
    return rs_packed_size(int(type), rows, row_bytes);
}

// Rows [0, rows / 16 * 16) of such a part (row_bytes apart at data) repacked into out (rs_packed_bytes of them)
// by `threads` threads.
void rs_pack_rows(int32_t type, int64_t rows, int64_t row_bytes, const uint8_t* data, uint8_t* out, int32_t threads) {
    if (rs_packed_size(int(type), rows, row_bytes) > 0)
        rs_repack_rows(int(type), rows, row_bytes, data, out, threads > 0 ? int(threads) : 1);
}

int rs_isa_count() { return RS_ISA_COUNT; }
const char* rs_isa_name(int32_t isa) { return isa >= 0 && isa < RS_ISA_COUNT ? ISAS[isa].name : nullptr; }
int rs_isa_available(int32_t isa) { return isa >= 0 && isa < RS_ISA_COUNT && cpu_has(isa); }
int rs_selected_isa() { return selected; }

// Use instruction set `isa` from now on: 0, or -1 when this CPU lacks it (the choice is unchanged).
int rs_select_isa(int32_t isa) {
    if (!rs_isa_available(isa)) return -1;
    selected = isa;
    return 0;
}

void rs_linear_forward(const rs_linear* w, const float* x, int64_t rows, float* out, int32_t threads) {
    ISAS[selected].linear_forward(w, x, rows, out, threads);
}

void rs_weight_rows(const rs_linear* w, const int64_t* ids, int64_t count, float* out) {
    ISAS[selected].weight_rows(w, ids, count, out);
}

int rs_decode_step(const rs_model* model, const rs_decode_batch* batch, int32_t threads) {
    return ISAS[selected].decode_step(model, batch, threads);
}

}  // extern "C"
