// The CUDA backend's table and bodies: shapes from the tensors, then one kernel (or cuBLASLt
// call) each on the worker's stream. Nothing here waits for the device, except synchronize.
#include <algorithm>
#include <cmath>

#include "engine/backend/cuda_backend.h"
#include "engine/ops/cuda/cuda_ops.h"
#include "kernels/activation.h"
#include "kernels/add_layer_norm.h"
#include "engine/ops/beam_step_views.h"
#include "kernels/attention.h"
#include "kernels/beam_search_step.h"
#include "kernels/decode_positions.h"
#include "kernels/embedding.h"
#include "kernels/gather_log_probs.h"
#include "kernels/gather_rows.h"
#include "kernels/runtime/gemm.h"
#include "kernels/log_softmax.h"
#include "kernels/log_softmax_top_k.h"
#include "kernels/repeat_guards.h"

namespace xlate::cuda {
namespace {

kernels::ElementType type_of(const Tensor& tensor) {
  return cuda_backend::element_type(tensor.dtype());
}

// The first element of the block's first row.
const void* column_data(const Columns& columns) {
  return static_cast<const char*>(columns.tensor.raw_data()) +
         columns.first * static_cast<int64_t>(dtype_size(columns.tensor.dtype()));
}

}  // namespace

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset,
                       const Tensor& row_positions) {
  kernels::EmbeddingShape shape;
  shape.rows = tokens.dim(0);
  shape.steps = tokens.dim(1);
  shape.channels = table.dim(1);
  shape.vocabulary = table.dim(0);
  shape.positions = positions.dim(0);
  shape.position_offset = position_offset;
  kernels::embedding_forward(out.raw_data(), tokens.data<int32_t>(), table.raw_data(),
                             positions.raw_data(),
                             row_positions.defined() ? row_positions.data<int32_t>() : nullptr,
                             shape, scale, type_of(out), cuda_backend::stream());
}

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  const bool relu = activation == Activation::kRelu;
  const kernels::GemmEpilogue epilogue =
      bias.defined() ? (relu ? kernels::GemmEpilogue::kBiasRelu : kernels::GemmEpilogue::kBias)
                     : (relu ? kernels::GemmEpilogue::kRelu : kernels::GemmEpilogue::kNone);
  const int64_t k = weight.dim(1);
  cuda_backend::gemm().linear_forward(out.raw_data(), inp.raw_data(), weight.raw_data(),
                                      bias.defined() ? bias.raw_data() : nullptr,
                                      inp.numel() / k, weight.dim(0), k, epilogue, type_of(out));
  if (activation == Activation::kSwish || activation == Activation::kGelu) {
    kernels::activation_forward(out.raw_data(), out.numel(),
                                activation == Activation::kSwish
                                    ? kernels::PointwiseActivation::kSwish
                                    : kernels::PointwiseActivation::kGelu,
                                type_of(out), cuda_backend::stream());
  }
}

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps,
                            LayerNormTraining* training) {
  const int64_t channels = inp.dim(-1);
  kernels::AddLayerNormTraining kernel_training{};
  if (training != nullptr) {
    kernel_training = {rules::DropoutMask::of(training->dropout, training->dropout_key),
                       training->sum.raw_data(), training->mean.data<float>(),
                       training->rstd.data<float>()};
  }
  kernels::add_layer_norm_forward(out.raw_data(), inp.raw_data(), residual.raw_data(),
                                  gamma.raw_data(), beta.raw_data(), inp.numel() / channels,
                                  channels, eps, training ? &kernel_training : nullptr,
                                  type_of(out), cuda_backend::stream());
}

void attention_forward(Tensor& out, const Columns& query, const Columns& keys,
                       const Columns& values, const Tensor& key_rows, const Tensor& key_lengths,
                       int heads, bool causal, Tensor* weights) {
  kernels::AttentionShape shape;
  shape.rows = query.tensor.dim(0);
  shape.steps = query.tensor.dim(1);
  shape.table_width = key_rows.dim(1);
  shape.heads = heads;
  shape.key_dim = static_cast<int>(query.width / heads);
  shape.value_dim = static_cast<int>(values.width / heads);
  shape.query_stride = query.stride();
  shape.key_stride = keys.stride();
  shape.value_stride = values.stride();
  shape.causal = causal;
  kernels::attention_forward(out.raw_data(), weights ? weights->data<float>() : nullptr,
                             column_data(query), column_data(keys),
                             column_data(values), key_rows.data<int32_t>(),
                             key_lengths.data<int32_t>(), shape, type_of(out),
                             cuda_backend::stream());
}

void log_softmax_forward(Tensor& out, const Tensor& inp) {
  const int64_t vocabulary = inp.dim(-1);
  kernels::log_softmax_forward(out.raw_data(), inp.raw_data(), inp.numel() / vocabulary,
                               vocabulary, type_of(out), cuda_backend::stream());
}

void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  const size_t workspace_bytes = kernels::log_softmax_top_k_workspace_bytes(rows, vocabulary, k);
  Tensor workspace = Tensor::empty({static_cast<int64_t>(workspace_bytes / sizeof(int32_t))},
                                   DType::kInt32, Device::kCUDA);
  kernels::log_softmax_top_k(top_values.data<float>(), top_indices.data<int32_t>(),
                             logits.raw_data(),
                             row_offsets.defined() ? row_offsets.data<float>() : nullptr, rows,
                             vocabulary, k, workspace.raw_data(), type_of(logits),
                             cuda_backend::stream());
}

void gather_rows(Tensor& out, const Tensor& inp, const Tensor& indices) {
  kernels::gather_rows(out.raw_data(), inp.raw_data(), indices.data<int32_t>(), indices.numel(),
                       static_cast<int64_t>(inp.nbytes() / static_cast<size_t>(inp.dim(0))),
                       cuda_backend::stream());
}

void scatter_rows(Tensor& out, const Columns& inp, const Tensor& indices) {
  const int64_t element = static_cast<int64_t>(dtype_size(out.dtype()));
  const int64_t row_size = out.numel() / out.dim(0);
  kernels::scatter_rows(out.raw_data(), column_data(inp), indices.data<int32_t>(),
                        indices.numel(), row_size * element, inp.row_stride(row_size) * element,
                        cuda_backend::stream());
}

void penalize_repeats(Tensor& logits, const Tensor& tokens, const Tensor& history_rows,
                      const Tensor& lengths, const Tensor& penalties, const Tensor& ngram_sizes) {
  kernels::penalize_repeats(logits.raw_data(), tokens.data<int32_t>(),
                            history_rows.data<int32_t>(), lengths.data<int32_t>(),
                            penalties.data<float>(), ngram_sizes.data<int32_t>(), logits.dim(0),
                            logits.dim(1), history_rows.dim(1), type_of(logits),
                            cuda_backend::stream());
}

void decode_positions(Tensor& row_table, Tensor& cache_rows, Tensor& key_lengths,
                      const Tensor& row_slots, const Tensor& row_positions,
                      const Tensor& slot_blocks, int64_t length, int64_t block_positions) {
  const int64_t rows = key_lengths.numel();
  kernels::decode_positions(row_table.data<int32_t>(), cache_rows.data<int32_t>(),
                            key_lengths.data<int32_t>(), row_slots.data<int32_t>(),
                            row_positions.data<int32_t>(), slot_blocks.data<int32_t>(), rows,
                            cache_rows.numel() / rows, row_table.dim(1), slot_blocks.dim(1),
                            length, block_positions, cuda_backend::stream());
}

void gather_log_probs(Tensor& values, const Tensor& logits, const Tensor& row_offsets,
                      const Tensor& tokens) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  kernels::gather_log_probs(values.data<float>(), logits.raw_data(), row_offsets.data<float>(),
                            tokens.data<int32_t>(), rows, vocabulary, tokens.dim(1),
                            type_of(logits), cuda_backend::stream());
}

void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token) {
  const BeamStepViews views = beam_step_views(state, top, end_token);
  // A constrained batch's candidate arrays: beam_stride·(K + W) per live sentence, freed to the
  // caching allocator after the launch (stream-ordered: the next use waits for it).
  Tensor scratch;
  rules::ConstrainedCandidate* candidates = nullptr;
  if (state.constrained()) {
    const int64_t count = static_cast<int64_t>(views.shape.sentences) * views.shape.beam_stride *
                          (views.shape.candidates + views.constraints.wanted_width);
    static_assert(sizeof(rules::ConstrainedCandidate) % sizeof(int32_t) == 0,
                  "a candidate is whole int32 words");
    scratch = Tensor::empty(
        {std::max<int64_t>(1, count) * static_cast<int64_t>(sizeof(rules::ConstrainedCandidate) /
                                                            sizeof(int32_t))},
        DType::kInt32, state.beams.device());
    candidates = reinterpret_cast<rules::ConstrainedCandidate*>(scratch.data<int32_t>());
  }
  kernels::beam_search_step(views.rows, views.state, views.shape, views.constraints, candidates,
                            cuda_backend::stream());
}

const OpBackend& op_backend() {
  static const OpBackend backend = [] {
    OpBackend table;
    table.name = "CUDA";
    table.reduced_precision_storage = true;
    table.max_top_k = kMaxDeviceTopK;
    table.max_beam = kMaxDeviceBeam;
    table.lexical_constraints = true;
    table.max_attention_head_dim = kernels::kMaxAttentionHeadDim;
    table.synchronize = cuda_backend::synchronize;
    table.plan_counts = cuda_backend::plan_counts;
    table.device_count = cuda_backend::device_count;
    table.device_description = cuda_backend::device_description;
    table.compute_capability = cuda_backend::compute_capability;
    table.allocate = cuda_backend::allocate;
    table.allocate_host_staging = cuda_backend::allocate_pinned;
    table.fill_zero = cuda_backend::fill_zero;
    table.copy_from_host = cuda_backend::copy_host_to_device;
    table.copy_to_host = cuda_backend::copy_device_to_host;
    table.copy_within = cuda_backend::copy_device_to_device;
    table.convert = cuda_backend::convert;
    table.memory = [] {
      return DeviceMemory{cuda_backend::bytes_in_use(), cuda_backend::peak_bytes_in_use(),
                          cuda_backend::bytes_reserved(), cuda_backend::device_memory_free()};
    };
    table.wait_seconds = cuda_backend::wait_seconds;
    table.set_float32_math = cuda_backend::set_float32_math;
    table.float32_math = cuda_backend::float32_math;
    XLATE_FOR_EACH_OP(XLATE_SET_OP_BODY)
    return table;
  }();
  return backend;
}

}  // namespace xlate::cuda
