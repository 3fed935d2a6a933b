// CPU implementations of the ops declared in engine/ops/ops.h; arguments are already checked.
#pragma once

#include "engine/ops/ops.h"

namespace xlate::cpu {

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset,
                       const Tensor& row_positions);
void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation);
void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps);
void attention_forward(Tensor& out, const Columns& query, const Columns& keys,
                       const Columns& values, const Tensor& key_rows, const Tensor& key_lengths,
                       int heads, bool causal);
void log_softmax_forward(Tensor& out, const Tensor& inp);
void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k);
void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices);
void scatter_rows(Tensor& out, const Columns& inp, const Tensor& indices);

void decode_positions(Tensor& row_table, Tensor& cache_rows, Tensor& key_lengths,
                      const Tensor& row_slots, const Tensor& row_positions, int64_t length,
                      int64_t row_capacity);
void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token);

}  // namespace xlate::cpu
