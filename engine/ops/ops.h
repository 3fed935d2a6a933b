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

#include "engine/packed_weight.h"
#include "engine/tensor.h"
#include "kernels/beam_search_step.h"
#include "kernels/log_softmax_top_k.h"

namespace xlate {

// out[N, T, C] = table[tokens[n, t]] * scale + positions[position_offset + row_positions[n] + t]
// tokens: int32 [N, T]; table: [V, C]; positions: [P, C]; row_positions: int32 [N], or
// undefined for 0 (rows that sit at different positions, as in continuous decoding).
void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset,
                       const Tensor& row_positions = Tensor());

// The activation applied to a linear layer's output: none, ReLU max(0, x), swish x·sigmoid(x)
// (transformers' "swish" and "silu") or GELU x·Φ(x) with the exact error function
// (transformers' "gelu"), in float32 on every backend.
enum class Activation { kNone, kRelu, kSwish, kGelu };

// out[M, N] = act(inp[M, K] · weight[N, K]ᵀ + bias[N]); bias may be undefined (no bias).
void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation);

// Packed weights, for inference on backends that have them (the CPU's; OpBackend::
// pack_linear_weight is null elsewhere, and int8 also needs int8_available in
// engine/ops/backend.h). pack_linear_weight: weight float32 [N, K] on its device, in the layout
// the backend's product reads without repacking it (engine/packed_weight.h), its elements
// `element`: kFloat32 (the same values) or kInt8 (quantised: compute type int8).
PackedWeight pack_linear_weight(const Tensor& weight, DType element);
// linear_forward with a packed weight. A float32 one computes what linear_forward computes. With
// an int8 one, each row of inp [M, K] is quantised to int8 on the fly (symmetric, scale
// max_k |inp[m, k]| / 127), the products accumulate in int32 and
// out[M, N] = act(acc · inp_scale[m] · weight.scales[n] + bias[n]), float32. Each product then
// differs from the float one by at most K · max_k |inp[m, k]| · max_k |weight[n, k]| / 127.
void packed_linear_forward(Tensor& out, const Tensor& inp, const PackedWeight& weight,
                           const Tensor& bias, Activation activation);

// The rows `tokens` (int32, any shape, n elements) of a packed weight [N, K], out float32 [n, K]:
// a float32 weight's exactly as the weight had them, out[i, :] = weight[tokens[i], :]; an int8
// one's int8 values times their row's scale (what its products multiply by). A tied output
// projection packed for the products is then the embedding table too, held once.
void packed_weight_rows(Tensor& out, const Tensor& tokens, const PackedWeight& weight);

// Training's residual sub-layer, LN(residual + Dropout(inp)), and what it keeps for
// layer_norm_backward (engine/ops/training_ops.h), allocated by the caller on out's device: the
// sum in out's dtype, the statistics in float32.
struct LayerNormTraining {
  float dropout = 0.f;       // p of inp's dropout (dropout_forward's mask under dropout_key)
  uint64_t dropout_key = 0;
  Tensor sum;                // [M, C] receives Dropout(inp) + residual; may alias inp
  Tensor mean;               // [M] of each summed row, as stored in `sum` (rounded, in 16 bits)
  Tensor rstd;               // [M] 1 / sqrt(variance + eps), likewise
};

// out[M, C] = LayerNorm(inp[M, C] + residual[M, C]) * gamma[C] + beta[C], eps inside the sqrt.
// `out` may alias `inp` or `residual` (not when `training` is given).
// training (optional): drops inp out first and keeps the sum and its statistics.
void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormTraining* training = nullptr);

// Columns [first, first + width) of every row of `tensor` (rows of tensor.dim(-1) elements): one
// projection's block of a fused projection's output [..., q | k | v], or of a cache that holds
// keys and values side by side. A tensor converts to all of its columns.
struct Columns {
  Columns(const Tensor& whole) : Columns(whole, 0, whole.defined() ? whole.dim(-1) : 0) {}
  Columns(const Tensor& tensor, int64_t first, int64_t width)
      : tensor(tensor), first(first), width(width) {}
  int64_t stride() const { return tensor.dim(-1); }
  int64_t rows() const { return tensor.numel() / tensor.dim(-1); }
  bool whole() const { return first == 0 && width == stride(); }
  // Elements from one row of `row_size` elements to the next: a whole tensor's rows are packed
  // (they may span several of its dimensions); a block's rows are the tensor's rows.
  int64_t row_stride(int64_t row_size) const { return whole() ? row_size : stride(); }

  Tensor tensor;
  int64_t first;
  int64_t width;
};

// Multi-head scaled dot-product attention with `heads` heads, scale 1/sqrt(d_k).
// out[N, T, h·d_v]; query: h·d_k columns of [N, T, ...]; keys: h·d_k columns and values: h·d_v
// columns of any [..., ...], read as rows (the same row index addresses both). d_k and d_v are
// at most the backend's max_attention_head_dim (kernels::kMaxAttentionHeadDim on CUDA).
// key_rows: int32 [N, S_table]: key position s of query row n is row key_rows[n, s] of
// keys/values, so one op serves batch-major encoder keys, per-sentence cross-attention keys
// and the decoder's time-major cache whose beams are reordered through this table (no copy).
// key_lengths: int32 [N], the valid positions of each query row. When causal, query t sees
// positions s <= key_lengths[n] - T + t (the queries are the last T positions).
// weights (optional, last so that the decoding path need not name it): when given, float32
// [N, h, T, S] on out's device (S = key_rows.dim(1)) receives the attention probabilities
// softmax(q·k / sqrt(d_k)) of every query and head over the table's positions, 0 where the
// query sees nothing: alignments (engine/alignment.h) read them; decoding never asks.
void attention_forward(Tensor& out, const Columns& query, const Columns& keys,
                       const Columns& values, const Tensor& key_rows, const Tensor& key_lengths,
                       int heads, bool causal, Tensor* weights = nullptr);

// out[M, V] = log_softmax(inp[M, V]) along the last axis; may alias.
void log_softmax_forward(Tensor& out, const Tensor& inp);

// For every row n of logits[N, V]: the k ids with the largest logits, best first, ties broken by
// the smaller id, as top_indices int32 [N, k], with their log_softmax(logits[n]) + row_offsets[n]
// as top_values float32 [N, k]. Ranking by the logit, not by the rounded shifted value, makes
// the order exact on every backend. row_offsets: float32 [N] (beam search's running scores) or
// undefined (no offset). 1 <= k <= V, and k <= the backend's max_top_k (kMaxDeviceTopK on CUDA:
// the kernel keeps each thread's candidates in registers).
constexpr int kMaxDeviceTopK = kernels::kMaxTopK;
void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k);

// values[n, j] = log_softmax(logits[n])[tokens[n, j]] + row_offsets[n], -inf where tokens[n, j]
// is -1: the scores of given tokens, on the scale of log_softmax_top_k's (the wanted tokens of
// a constrained beam search). values float32 [N, W], logits [N, V], row_offsets float32 [N],
// tokens int32 [N, W] in [-1, V).
void gather_log_probs(Tensor& values, const Tensor& logits, const Tensor& row_offsets,
                      const Tensor& tokens);

// The result of log_softmax_top_k as the search reads it: values float32 [N, k], best first,
// and their token ids int32 [N, k].
struct TopK {
  Tensor values;
  Tensor indices;
  // float32 [N, W] when the step was given wanted tokens (gather_log_probs): their scores.
  Tensor wanted_values{};
};

// out[r, ...] = inp[indices[r], ...] for r < R: indices int32 [R], inp [I, ...], out [R, ...]
// (same row size and dtype); reorders cache rows by copying. `out` must not alias `inp`.
void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices);

// out[indices[r], ...] = inp[r, ...] for r < R: indices int32 [R] (distinct), inp R rows (or
// columns of R rows) of out's row size, out [O, ...] (same dtype); writes new keys/values into
// their KV-cache rows.
void scatter_rows(Tensor& out, const Columns& inp, const Tensor& indices);

// The positions of one decoding call that appends T positions to each of rows r < R. Row r
// decodes positions p_r .. p_r + T - 1 with p_r = row_positions[r] + length (its position when
// the rows were last placed, plus the positions decoded since) and writes them to its cache
// slot c_r = row_slots[r], whose positions live in blocks of B = block_positions rows of the
// KV-cache pool (engine/kv_cache_pool.h), in the order of its block table slot_blocks[c_r, :]:
//   row_table[r, p_r + t]  = slot_blocks[c_r, (p_r + t) / B]·B + (p_r + t) % B   the pool row
//                                                 that holds position p_r + t of row r
//   cache_rows[r·T + t]    = the same row        where the new keys/values go
//   key_lengths[r]         = p_r + T             positions row r attends to
// row_table int32 [>= R, S_max] (S_max > every p_r + T - 1), cache_rows int32 [R·T],
// key_lengths, row_slots and row_positions int32 [R], slot_blocks int32 [R_cap, >= S_max / B]
// (the blocks the positions reach are taken: entries valid). Computed where the tensors are, so
// that a GPU decode step uploads nothing but the block table's new entries.
void decode_positions(Tensor& row_table, Tensor& cache_rows, Tensor& key_lengths,
                      const Tensor& row_slots, const Tensor& row_positions,
                      const Tensor& slot_blocks, int64_t length, int64_t block_positions);

// The decoding guards against repetition (rules/repeat_guards.h has the rules), on the logits
// of one step before the softmax: row r's history is tokens[history_rows[r, j]] for
// j < lengths[r], the tokens the row was fed so far (start token first).
//   penalties[r] != 1: each distinct history token's logit x becomes x < 0 ? x·p : x / p
//   ngram_sizes[r] = n > 0: each token that would repeat an n-gram of the history gets -inf
// logits [R, V], updated in place; tokens int32 [>= every index] (a time-major token table, as
// the KV cache's rows); history_rows int32 [R, W] (the decoder's row table), lengths int32 [R]
// (<= W <= kMaxRepeatHistory), penalties float32 [R] (> 0), ngram_sizes int32 [R] (>= 0).
constexpr int64_t kMaxRepeatHistory = 8192;
void penalize_repeats(Tensor& logits, const Tensor& tokens, const Tensor& history_rows,
                      const Tensor& lengths, const Tensor& penalties, const Tensor& ngram_sizes);

// A beam search's state in tensors on one device (rules/beam_search.h has the rule and the
// layouts): S sentence slots of up to B_max rows each, N live sentences, R rows.
struct BeamSearchTensors {
  Tensor sentence_ids, first_rows;                    // int32 [N]
  Tensor beams, n_bests, min_lengths, max_lengths;    // int32 [S], settings
  Tensor length_penalties;                            // float32 [S]
  Tensor steps, done, finished_count;                 // int32 [S], state
  Tensor finished_scores, finished_log_probs;         // float32 [S, F], F >= 3·B_max
  Tensor finished_last_steps, finished_last_index;    // int32 [S, F]
  Tensor history_tokens, history_parents;             // int32 [L, S·B_max]
  Tensor next_tokens, next_scores, source_rows;       // int32, float32, int32 [R]
  // Lexical constraints (rules/beam_search.h, BeamConstraints); all undefined for a
  // search without them. Settings: int32 [S], [S, C + 1], [S, T]. Row state: the rows the step
  // continues (row_*) and the rows it writes (next_*), int32 [R]; next_wanted int32 [R, W].
  Tensor constraint_counts, constraint_starts, constraint_tokens;
  Tensor row_met, row_progress, row_wanted, next_met, next_progress, next_wanted;
  bool constrained() const { return constraint_counts.defined(); }
  int64_t wanted_width() const { return constrained() ? next_wanted.dim(1) : 0; }
};

// One step of beam search for every live sentence from its rows' candidates `top` ([R, K] on the
// state's device, min(2·beams[s] + 1, V) <= K <= the backend's max_top_k for every live s; when
// constrained, top.wanted_values [R, W] scores state.row_wanted, W = state.wanted_width()): writes
// next_tokens/next_scores/source_rows and advances each live sentence's state and history (and,
// constrained, the rows' constraint state and wanted tokens; backends with
// lexical_constraints only).
// 1 <= beams[s] <= B_max <= the backend's max_beam (no limit on the CPU, kMaxDeviceBeam on CUDA).
constexpr int kMaxDeviceBeam = kernels::kMaxStepBeam;
void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token);

}  // namespace xlate
