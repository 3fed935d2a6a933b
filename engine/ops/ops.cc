// Argument checks for every op, then its body in the backend of the tensors' device
// (engine/ops/backend.h). Checks that read index values run where those values are readable
// (host tensors); a device body trusts, or clamps, what the host cannot see without waiting.
#include "engine/ops/ops.h"

#include <stdexcept>
#include <string>

#include "engine/ops/backend.h"
#include "engine/ops/op_checks.h"
#include "engine/profiling.h"

namespace xlate {
namespace {

// `columns` is a block of columns [first, first + width) of a tensor on like's device in like's
// dtype.
void require_columns(const Columns& columns, const Tensor& like, const char* op,
                     const char* name) {
  require(columns.tensor.defined() && columns.tensor.dtype() == like.dtype() &&
              columns.tensor.device() == like.device(),
          op, std::string(name) + " must share out's dtype and device");
  require(columns.tensor.rank() >= 1 && columns.first >= 0 && columns.width > 0 &&
              columns.first + columns.width <= columns.stride(),
          op, std::string(name) + ": columns beyond the rows");
}

// gather_rows / scatter_rows: `table` [I, ...] is addressed by indices int32 [R]; `packed`
// (R rows, or columns of R rows) holds one table row per index. Host indices must address rows
// of the table (device indices are not read back).
void require_indexed_rows(const Tensor& table, const Columns& packed, const Tensor& indices,
                          const char* op) {
  require(table.defined(), op, "the indexed tensor is undefined");
  require_columns(packed, table, op, "the packed rows");
  require_int32_like(indices, table, op, "indices");
  require(table.rank() >= 1 && table.dim(0) > 0, op, "the indexed tensor needs a leading row axis");
  const int64_t row_size = table.numel() / table.dim(0);
  require(packed.whole() ? packed.tensor.numel() == indices.numel() * row_size
                         : packed.rows() == indices.numel() && packed.width == row_size,
          op, "the packed tensor must be [R, ...] with the indexed tensor's row size");
  if (!on_host(indices)) return;
  const int32_t* rows = indices.data<int32_t>();
  for (int64_t r = 0; r < indices.numel(); ++r) {
    require(rows[r] >= 0 && rows[r] < table.dim(0), op, "index beyond the indexed tensor's rows");
  }
}

}  // namespace

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset,
                       const Tensor& row_positions) {
  ScopedOpTimer timer(OpCategory::kOther);
  require_float_like(table, out, "embedding_forward", "table");
  require_float_like(positions, out, "embedding_forward", "positions");
  require_int32_like(tokens, out, "embedding_forward", "tokens");
  require(tokens.rank() == 2, "embedding_forward", "tokens must be int32 [N, T]");
  require(position_offset + tokens.dim(1) <= positions.dim(0), "embedding_forward",
          "positions beyond the positional table");
  require(out.numel() == tokens.numel() * table.dim(1), "embedding_forward", "out shape");
  if (row_positions.defined()) {
    require_int32_like(row_positions, out, "embedding_forward", "row_positions");
    require(row_positions.numel() == tokens.dim(0), "embedding_forward",
            "row_positions must be int32 [N]");
  }
  // Device row positions are not read back: the kernel clamps positions to the table.
  for (int64_t n = 0; row_positions.defined() && on_host(row_positions) && n < tokens.dim(0);
       ++n) {
    const int64_t first = position_offset + row_positions.data<int32_t>()[n];
    require(first >= 0 && first + tokens.dim(1) <= positions.dim(0), "embedding_forward",
            "a row's positions beyond the positional table");
  }
  backend_of(out).embedding_forward(out, tokens, table, positions, scale, position_offset,
                                    row_positions);
}

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  ScopedOpTimer timer(OpCategory::kMatmul);
  require_float_like(inp, out, "linear_forward", "inp");
  require_float_like(weight, out, "linear_forward", "weight");
  require(weight.rank() == 2 && inp.dim(-1) == weight.dim(1), "linear_forward",
          "inp " + inp.shape_string() + " does not match weight " + weight.shape_string());
  require(out.numel() == inp.numel() / weight.dim(1) * weight.dim(0), "linear_forward",
          "out " + out.shape_string());
  if (bias.defined()) require_float_like(bias, out, "linear_forward", "bias");
  require(!bias.defined() || bias.numel() == weight.dim(0), "linear_forward", "bias size");
  backend_of(out).linear_forward(out, inp, weight, bias, activation);
}

namespace {

// The backend of `device`, which must have packed weights (a model packs only on backends whose
// table has them, and check_placement refuses an int8 placement on one without int8 products).
const OpBackend& packing_backend(Device device, const char* op) {
  const OpBackend& backend = op_backend(device);
  require(backend.pack_linear_weight != nullptr && backend.packed_linear_forward != nullptr, op,
          std::string("the ") + backend.name + " backend has no packed weights");
  return backend;
}

}  // namespace

PackedWeight pack_linear_weight(const Tensor& weight, DType element) {
  require(weight.defined() && weight.dtype() == DType::kFloat32 && weight.rank() == 2,
          "pack_linear_weight", "weight must be float32 [N, K]");
  require(weight.numel() > 0, "pack_linear_weight", "weight is empty");
  require(element == DType::kFloat32 || element == DType::kInt8 || element == DType::kBFloat16,
          "pack_linear_weight", "elements must be float32, bfloat16 or int8, not " +
                                    dtype_name(element));
  return packing_backend(weight.device(), "pack_linear_weight").pack_linear_weight(weight, element);
}

void packed_linear_forward(Tensor& out, const Tensor& inp, const PackedWeight& weight,
                           const Tensor& bias, Activation activation) {
  ScopedOpTimer timer(OpCategory::kMatmul);
  const char* op = "packed_linear_forward";
  require(out.defined() && out.dtype() == DType::kFloat32, op, "out must be float32");
  require_float_like(inp, out, op, "inp");
  require(weight.defined() && weight.packed.device() == out.device(), op,
          "weight must be packed (pack_linear_weight) on out's device");
  if (weight.quantized()) require_float32(weight.scales, out, weight.outputs, op, "weight.scales");
  require(inp.dim(-1) == weight.inputs, op,
          "inp " + inp.shape_string() + " does not match the weight's " +
              std::to_string(weight.inputs) + " inputs");
  require(out.numel() == inp.numel() / weight.inputs * weight.outputs, op,
          "out " + out.shape_string());
  if (bias.defined()) require_float32(bias, out, weight.outputs, op, "bias");
  packing_backend(out.device(), op).packed_linear_forward(out, inp, weight, bias, activation);
}

void packed_weight_rows(Tensor& out, const Tensor& tokens, const PackedWeight& weight) {
  ScopedOpTimer timer(OpCategory::kOther);
  const char* op = "packed_weight_rows";
  require(weight.defined() && (weight.packed.dtype() == DType::kFloat32 || weight.quantized()), op,
          "weight must be packed with float32 or int8 elements");
  require(tokens.defined() && tokens.dtype() == DType::kInt32 &&
              tokens.device() == weight.packed.device(),
          op, "tokens must be int32 on the weight's device");
  require(out.defined() && out.dtype() == DType::kFloat32 && out.rank() == 2 &&
              out.dim(0) == tokens.numel() && out.dim(1) == weight.inputs &&
              out.device() == weight.packed.device(),
          op, "out must be float32 [tokens, " + std::to_string(weight.inputs) + "], not " +
                  out.shape_string());
  const OpBackend& backend = op_backend(out.device());
  require(backend.packed_weight_rows != nullptr, op,
          std::string("the ") + backend.name + " backend has no packed weights");
  backend.packed_weight_rows(out, tokens, weight);
}

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormTraining* training) {
  ScopedOpTimer timer(OpCategory::kOther);
  require_float_like(inp, out, "add_layer_norm_forward", "inp");
  require_float_like(residual, out, "add_layer_norm_forward", "residual");
  require_float_like(gamma, out, "add_layer_norm_forward", "gamma");
  require_float_like(beta, out, "add_layer_norm_forward", "beta");
  require(inp.numel() == residual.numel() && inp.numel() == out.numel(),
          "add_layer_norm_forward", "inp, residual and out differ in size");
  require(gamma.numel() == inp.dim(-1) && beta.numel() == inp.dim(-1), "add_layer_norm_forward",
          "gamma/beta size");
  if (training != nullptr) {
    const int64_t rows = inp.numel() / inp.dim(-1);
    for (const Tensor* statistic : {&training->mean, &training->rstd}) {
      require(statistic->defined() && statistic->dtype() == DType::kFloat32 &&
                  statistic->device() == out.device() && statistic->numel() == rows,
              "add_layer_norm_forward", "saved statistics must be float32 [M] on out's device");
    }
    require(training->sum.defined() && training->sum.dtype() == out.dtype() &&
                training->sum.device() == out.device() && training->sum.numel() == inp.numel(),
            "add_layer_norm_forward", "the saved sum must be of out's dtype and inp's size on "
            "its device");
    require(out.raw_data() != inp.raw_data() && out.raw_data() != residual.raw_data() &&
                out.raw_data() != training->sum.raw_data(),
            "add_layer_norm_forward", "out may not alias an input or the sum in training");
    require(training->sum.raw_data() != residual.raw_data(), "add_layer_norm_forward",
            "the saved sum may alias inp, not residual");
    require(training->dropout >= 0.f && training->dropout < 1.f, "add_layer_norm_forward",
            "dropout must be in [0, 1)");
  }
  backend_of(out).add_layer_norm_forward(out, inp, residual, gamma, beta, eps, training);
}

void attention_forward(Tensor& out, const Columns& query, const Columns& keys,
                       const Columns& values, const Tensor& key_rows, const Tensor& key_lengths,
                       int heads, bool causal, Tensor* weights) {
  ScopedOpTimer timer(OpCategory::kAttention);
  const char* op = "attention_forward";
  require(out.defined(), op, "out is undefined");
  const auto require_input = [&](const Columns& columns, const char* name) {
    require_float_like(columns.tensor, out, op, name);
    require_columns(columns, out, op, name);
  };
  require_input(query, "query");
  require_input(keys, "keys");
  require_input(values, "values");
  require_int32_like(key_rows, out, op, "key_rows");
  require_int32_like(key_lengths, out, op, "key_lengths");
  require(query.tensor.rank() == 3 && keys.rows() == values.rows(), op,
          "query [N, T, h*d_k], keys [..., h*d_k], values [..., h*d_v]");
  require(query.width == keys.width && query.width % heads == 0 && values.width % heads == 0,
          op, "query/key widths must match and divide by heads");
  const int max_head_dim = backend_of(out).max_attention_head_dim;
  require(query.width / heads <= max_head_dim && values.width / heads <= max_head_dim, op,
          "d_k and d_v must be <= " + std::to_string(max_head_dim) + " on the " +
              backend_of(out).name + " backend");
  const int64_t rows = query.tensor.dim(0), steps = query.tensor.dim(1);
  require(key_rows.rank() == 2 && key_rows.dim(0) == rows && key_lengths.numel() == rows, op,
          "key_rows [N, S] and key_lengths [N]");
  require(out.numel() == rows * steps * values.width, op, "out [N, T, h*d_v]");
  // Device lengths are not read back (that would synchronise): the kernel clamps them to S.
  const int32_t* lengths = key_lengths.data<int32_t>();
  for (int64_t n = 0; on_host(key_lengths) && n < rows; ++n) {
    require(lengths[n] <= key_rows.dim(1) && (!causal || lengths[n] >= steps), op,
            "key_lengths beyond the key_rows table");
  }
  if (weights != nullptr) {
    require(weights->dtype() == DType::kFloat32 && weights->device() == out.device(), op,
            "weights must be float32 on out's device");
    require(weights->numel() == rows * heads * steps * key_rows.dim(1), op,
            "weights [N, h, T, S]");
  }
  backend_of(out).attention_forward(out, query, keys, values, key_rows, key_lengths, heads,
                                    causal, weights);
}

void log_softmax_forward(Tensor& out, const Tensor& inp) {
  ScopedOpTimer timer(OpCategory::kSoftmax);
  require_float_like(inp, out, "log_softmax_forward", "inp");
  require(out.numel() == inp.numel(), "log_softmax_forward", "out shape");
  backend_of(out).log_softmax_forward(out, inp);
}

void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k) {
  ScopedOpTimer timer(OpCategory::kSoftmax);
  const char* op = "log_softmax_top_k";
  require(top_values.defined() && top_values.dtype() == DType::kFloat32, op,
          "top_values must be float32");
  require(top_values.device() == logits.device(), op, "top_values is on another device");
  require_float_like(logits, logits, op, "logits");
  require_int32_like(top_indices, logits, op, "top_indices");
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  require(k >= 1 && k <= vocabulary, op, "k must be in [1, V]");
  require(k <= backend_of(logits).max_top_k, op,
          "k must be <= " + std::to_string(backend_of(logits).max_top_k) + " on the " +
              backend_of(logits).name + " backend");
  require(top_values.numel() == rows * k && top_indices.numel() == rows * k, op,
          "top_values and top_indices must be [N, k]");
  if (row_offsets.defined()) {
    require(row_offsets.dtype() == DType::kFloat32 && row_offsets.numel() == rows &&
                row_offsets.device() == logits.device(),
            op, "row_offsets must be float32 [N] on the logits' device");
  }
  backend_of(logits).log_softmax_top_k(top_values, top_indices, logits, row_offsets, k);
}

void gather_log_probs(Tensor& values, const Tensor& logits, const Tensor& row_offsets,
                      const Tensor& tokens) {
  ScopedOpTimer timer(OpCategory::kSoftmax);
  const char* op = "gather_log_probs";
  require_float_like(logits, logits, op, "logits");
  require_int32_like(tokens, logits, op, "tokens");
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  require(tokens.rank() == 2 && tokens.dim(0) == rows, op, "tokens must be [N, W]");
  require(values.defined() && values.dtype() == DType::kFloat32 &&
              values.device() == logits.device() && values.numel() == tokens.numel(),
          op, "values must be float32 [N, W] on the logits' device");
  require(row_offsets.defined() && row_offsets.dtype() == DType::kFloat32 &&
              row_offsets.device() == logits.device() && row_offsets.numel() == rows,
          op, "row_offsets must be float32 [N] on the logits' device");
  for (int64_t i = 0; on_host(tokens) && i < tokens.numel(); ++i) {
    const int32_t token = tokens.data<int32_t>()[i];
    require(token >= -1 && token < vocabulary, op, "tokens must be in [-1, V)");
  }
  backend_of(logits).gather_log_probs(values, logits, row_offsets, tokens);
}

void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices) {
  ScopedOpTimer timer(OpCategory::kOther);
  require_indexed_rows(inp, out, indices, "gather_rows");
  backend_of(out).gather_rows(out, inp, indices);
}

void scatter_rows(Tensor& out, const Columns& inp, const Tensor& indices) {
  ScopedOpTimer timer(OpCategory::kOther);
  require_indexed_rows(out, inp, indices, "scatter_rows");
  backend_of(out).scatter_rows(out, inp, indices);
}

void decode_positions(Tensor& row_table, Tensor& cache_rows, Tensor& key_lengths,
                      const Tensor& row_slots, const Tensor& row_positions,
                      const Tensor& slot_blocks, int64_t length, int64_t block_positions) {
  ScopedOpTimer timer(OpCategory::kOther);
  const char* op = "decode_positions";
  require(row_table.defined() && row_table.dtype() == DType::kInt32 && row_table.rank() == 2, op,
          "row_table must be int32 [rows, S_max]");
  require_int32_like(cache_rows, row_table, op, "cache_rows");
  require_int32_like(key_lengths, row_table, op, "key_lengths");
  require_int32_like(row_slots, row_table, op, "row_slots");
  require_int32_like(row_positions, row_table, op, "row_positions");
  require_int32_like(slot_blocks, row_table, op, "slot_blocks");
  require(slot_blocks.rank() == 2 && block_positions >= 1 &&
              slot_blocks.dim(1) * block_positions >= row_table.dim(1),
          op, "slot_blocks must be [R_cap, S_max / block_positions rounded up]");
  const int64_t row_capacity = slot_blocks.dim(0);
  const int64_t rows = key_lengths.numel();
  require(rows > 0 && cache_rows.numel() % rows == 0, op, "cache_rows must be [R·T]");
  require(row_slots.numel() >= rows && row_positions.numel() >= rows, op,
          "row_slots and row_positions must hold R rows");
  const int64_t steps = cache_rows.numel() / rows;
  require(rows <= row_table.dim(0) && rows <= row_capacity, op, "more rows than the table holds");
  require(length >= 0, op, "length must be >= 0");
  for (int64_t r = 0; on_host(row_positions) && r < rows; ++r) {
    const int64_t position = row_positions.data<int32_t>()[r] + length;
    const int32_t slot = row_slots.data<int32_t>()[r];
    require(position >= 0 && position + steps <= row_table.dim(1), op, "positions beyond S_max");
    require(slot >= 0 && slot < row_capacity, op, "a row slot beyond R_cap");
  }
  backend_of(row_table).decode_positions(row_table, cache_rows, key_lengths, row_slots,
                                         row_positions, slot_blocks, length, block_positions);
}

void penalize_repeats(Tensor& logits, const Tensor& tokens, const Tensor& history_rows,
                      const Tensor& lengths, const Tensor& penalties, const Tensor& ngram_sizes) {
  ScopedOpTimer timer(OpCategory::kOther);
  const char* op = "penalize_repeats";
  require_float_like(logits, logits, op, "logits");
  require(logits.rank() == 2, op, "logits must be [R, V]");
  const int64_t rows = logits.dim(0), vocabulary = logits.dim(1);
  require_int32_like(tokens, logits, op, "tokens");
  require_int32_like(history_rows, logits, op, "history_rows");
  require_int32_like(lengths, logits, op, "lengths");
  require_int32_like(ngram_sizes, logits, op, "ngram_sizes");
  require(penalties.defined() && penalties.dtype() == DType::kFloat32 &&
              penalties.device() == logits.device() && penalties.numel() == rows,
          op, "penalties must be float32 [R] on the logits' device");
  require(history_rows.rank() == 2 && history_rows.dim(0) >= rows, op,
          "history_rows must be [>= R, W]");
  const int64_t width = history_rows.dim(1);
  require(width <= kMaxRepeatHistory, op,
          "histories of at most " + std::to_string(kMaxRepeatHistory) + " positions");
  require(lengths.numel() == rows && ngram_sizes.numel() == rows, op,
          "lengths and ngram_sizes must be [R]");
  for (int64_t r = 0; on_host(lengths) && r < rows; ++r) {
    const int32_t length = lengths.data<int32_t>()[r];
    require(length >= 0 && length <= width, op, "a history length beyond W");
    require(penalties.data<float>()[r] > 0.f && ngram_sizes.data<int32_t>()[r] >= 0, op,
            "penalties must be > 0 and ngram sizes >= 0");
    for (int64_t j = 0; j < length; ++j) {
      const int32_t at = history_rows.data<int32_t>()[r * width + j];
      require(at >= 0 && at < tokens.numel(), op, "a history row beyond the token table");
      const int32_t token = tokens.data<int32_t>()[at];
      require(token >= 0 && token < vocabulary, op, "a history token beyond V");
    }
  }
  backend_of(logits).penalize_repeats(logits, tokens, history_rows, lengths, penalties,
                                      ngram_sizes);
}

void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token) {
  ScopedOpTimer timer(OpCategory::kOther);
  const char* op = "beam_search_step";
  const Tensor& like = top.indices;
  require(top.values.defined() && top.values.dtype() == DType::kFloat32 &&
              top.values.device() == like.device() && top.values.numel() == like.numel(),
          op, "top values must be float32 like the indices");
  const int64_t rows = state.next_tokens.numel();
  require(like.rank() == 2 && like.dim(0) == rows, op, "top must be [R, K]");
  const OpBackend& backend = backend_of(like);
  require(like.dim(1) <= backend.max_top_k, op,
          "at most " + std::to_string(backend.max_top_k) + " candidates per row");
  if (state.constrained()) {
    require(backend.lexical_constraints, op,
            std::string("lexical constraints are not implemented on the ") + backend.name +
                " backend");
    const int64_t slots = state.beams.numel();
    require(state.constraint_counts.numel() == slots &&
                state.constraint_starts.numel() == slots * (rules::kMaxConstraints + 1) &&
                state.constraint_tokens.numel() == slots * rules::kMaxConstraintTokens,
            op, "constraint settings must be [S], [S, C + 1], [S, T]");
    for (const Tensor* t : {&state.row_met, &state.row_progress, &state.next_met,
                            &state.next_progress}) {
      require_int32_like(*t, like, op, "every constraint state tensor");
      require(t->numel() == rows, op, "constraint row state must be [R]");
    }
    const int64_t wanted = state.wanted_width();
    for (const Tensor* t : {&state.row_wanted, &state.next_wanted}) {
      require_int32_like(*t, like, op, "the wanted tokens");
      require(t->rank() == 2 && t->dim(0) == rows && t->dim(1) == wanted, op,
              "row_wanted and next_wanted must be [R, W]");
    }
    require(wanted == 0 || (top.wanted_values.defined() &&
                            top.wanted_values.dtype() == DType::kFloat32 &&
                            top.wanted_values.device() == like.device() &&
                            top.wanted_values.numel() == rows * wanted),
            op, "top.wanted_values must be float32 [R, W]");
  }
  for (const Tensor* t :
       {&state.sentence_ids, &state.first_rows, &state.beams, &state.n_bests, &state.min_lengths,
        &state.max_lengths, &state.steps, &state.done, &state.finished_count,
        &state.finished_last_steps, &state.finished_last_index, &state.history_tokens,
        &state.history_parents, &state.next_tokens, &state.source_rows}) {
    require_int32_like(*t, like, op, "every index tensor of the state");
  }
  for (const Tensor* t : {&state.length_penalties, &state.finished_scores,
                          &state.finished_log_probs, &state.next_scores}) {
    require(t->defined() && t->dtype() == DType::kFloat32 && t->device() == like.device(), op,
            "every score tensor of the state must be float32 on the candidates' device");
  }
  const int64_t slots = state.beams.numel();
  for (const Tensor* t : {&state.n_bests, &state.min_lengths, &state.max_lengths,
                          &state.length_penalties, &state.steps, &state.done,
                          &state.finished_count}) {
    require(t->numel() == slots && slots > 0, op, "per-sentence tensors must be [S]");
  }
  require(state.history_tokens.rank() == 2 && state.history_tokens.dim(1) % slots == 0 &&
              state.history_parents.numel() == state.history_tokens.numel(),
          op, "history must be [L, S·B_max]");
  const int64_t beam_stride = state.history_tokens.dim(1) / slots;
  require(beam_stride >= 1 && beam_stride <= backend.max_beam, op,
          "B_max must be in [1, " + std::to_string(backend.max_beam) + "]");
  require(state.finished_scores.rank() == 2 && state.finished_scores.dim(0) == slots &&
              state.finished_scores.dim(1) >= 3 * beam_stride,
          op, "finished tensors must be [S, F >= 3·B_max]");
  for (const Tensor* t : {&state.finished_log_probs, &state.finished_last_steps,
                          &state.finished_last_index}) {
    require(t->numel() == state.finished_scores.numel(), op, "finished tensors must be [S, F]");
  }
  const int64_t sentences = state.sentence_ids.numel();
  require(state.first_rows.numel() == sentences, op, "first_rows must be [N]");
  require(state.next_scores.numel() == rows && state.source_rows.numel() == rows, op,
          "next tokens, scores and source rows must be [R]");
  // On the host the layout is checked too (a device step trusts its caller).
  const int32_t* ids = state.sentence_ids.data<int32_t>();
  for (int64_t n = 0; on_host(like) && n < sentences; ++n) {
    require(ids[n] >= 0 && ids[n] < slots, op, "sentence id beyond S");
    const int32_t beam = state.beams.data<int32_t>()[ids[n]];
    const int32_t first = state.first_rows.data<int32_t>()[n];
    require(beam >= 1 && beam <= beam_stride, op, "a sentence's beam outside [1, B_max]");
    require(first >= 0 && first + beam <= rows, op, "a sentence's rows beyond R");
  }
  backend.beam_search_step(state, top, end_token);
}

}  // namespace xlate
