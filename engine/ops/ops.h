// The engine's operations, device-free. Each op checks its arguments, then dispatches on the
// tensors' device to its backend: ops/cpu/*_cpu.cc (float32), or ops/cuda/ops_cuda.cc over the
// kernels of kernels/ (float32, float16 or bfloat16 storage, float32 arithmetic). All tensors of
// one call live on one device. Arguments are ordered outputs -> inputs -> sizes.
//
// Dimension legend: N rows of a batch (sentences, or sentences x beams), T query positions,
// S key positions, C = d_model, V = vocabulary size, M = N*T flattened rows, K input features.
// Outputs must be allocated by the caller with the documented shapes; a mismatch is a
// programming error and throws std::logic_error.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

// out[N, T, C] = table[tokens[n, t]] * scale + positions[position_offset + t]
// tokens: int32 [N, T]; table: [V, C]; positions: [P, C].
void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset);

enum class Activation { kNone, kRelu };

// out[M, N] = act(inp[M, K] · weight[N, K]ᵀ + bias[N]); bias may be undefined (no bias).
void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation);

// out[M, C] = LayerNorm(inp[M, C] + residual[M, C]) * gamma[C] + beta[C], eps inside the sqrt.
// `out` may alias `inp` or `residual`.
void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps);

// Multi-head scaled dot-product attention with `heads` heads, scale 1/sqrt(d_k).
// out[N, T, h·d_v]; query[N, T, h·d_k]; keys: any shape [..., h·d_k] and values [..., h·d_v],
// read as rows (the same row index addresses both).
// key_rows: int32 [N, S_table]: key position s of query row n is row key_rows[n, s] of
// keys/values, so one op serves batch-major encoder keys, per-sentence cross-attention keys
// and the decoder's time-major cache whose beams are reordered through this table (no copy).
// key_lengths: int32 [N], the valid positions of each query row. When causal, query t sees
// positions s <= key_lengths[n] - T + t (the queries are the last T positions).
void attention_forward(Tensor& out, const Tensor& query, const Tensor& keys, const Tensor& values,
                       const Tensor& key_rows, const Tensor& key_lengths, int heads, bool causal);

// out[M, V] = log_softmax(inp[M, V]) along the last axis; may alias.
void log_softmax_forward(Tensor& out, const Tensor& inp);

// For every row n of logits[N, V]: the k largest of log_softmax(logits[n]) + row_offsets[n],
// best first, ties broken by the smaller id; top_values float32 [N, k], top_indices int32 [N, k].
// row_offsets: float32 [N] (beam search's running scores) or undefined (no offset).
// 1 <= k <= V, and k <= kMaxDeviceTopK on CUDA (each thread of the kernel keeps its own top-k).
constexpr int kMaxDeviceTopK = 32;
void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k);

// The result of log_softmax_top_k as the search reads it: values float32 [N, k], best first,
// and their token ids int32 [N, k].
struct TopK {
  Tensor values;
  Tensor indices;
};

// out[r, ...] = inp[indices[r], ...] for r < R: indices int32 [R], inp [I, ...], out [R, ...]
// (same row size and dtype); reorders cache rows by copying. `out` must not alias `inp`.
void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices);

// out[indices[r], ...] = inp[r, ...] for r < R: indices int32 [R] (distinct), inp [R, ...],
// out [O, ...] (same row size and dtype); writes new keys/values into their KV-cache rows.
void scatter_rows(Tensor& out, const Tensor& inp, const Tensor& indices);

}  // namespace xlate
