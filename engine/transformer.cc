#include "engine/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "engine/key_rows.h"
#include "engine/model_directory.h"
#include "engine/ops/backend.h"

namespace xlate {
namespace {

// [rows..., in] -> [rows..., out], on x's device in x's dtype
Tensor linear(const Tensor& x, const LinearWeights& w, Activation activation = Activation::kNone) {
  std::vector<int64_t> shape = x.shape();
  shape.back() = w.packed.defined() ? w.packed.outputs : w.weight.dim(0);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (w.packed.defined()) {
    packed_linear_forward(out, x, w.packed, w.bias, activation);
  } else {
    linear_forward(out, x, w.weight, w.bias, activation);
  }
  return out;
}

// The output widths of an attention's projections with `heads` heads: query and key h·d_k,
// value h·d_v (from the config: models with packed weights drop the float projection weights).
struct AttentionWidths {
  int64_t query, key, value;
};
AttentionWidths attention_widths(const ModelConfig& config, int heads) {
  const int64_t k = int64_t{heads} * config.head_dim_k(heads);
  return {k, k, int64_t{heads} * config.head_dim_v(heads)};
}

Activation ffn_activation(FfnActivation activation) {
  switch (activation) {
    case FfnActivation::kSwish: return Activation::kSwish;
    case FfnActivation::kGelu: return Activation::kGelu;
    case FfnActivation::kRelu: break;
  }
  return Activation::kRelu;
}

float embedding_scale(const ModelConfig& config) {
  return config.scale_embedding ? std::sqrt(static_cast<float>(config.d_model)) : 1.f;
}

// x = LN(x + sublayer_out), in place on x's storage.
void residual_norm(Tensor& x, const Tensor& sublayer_out, const LayerNormWeights& norm) {
  add_layer_norm_forward(x, sublayer_out, x, norm.gamma, norm.beta, kLayerNormEps);
}

// LN(x + residual) into a new tensor, keeping the sum in residual_out's place: the op's
// training form with no dropout, whose saved sum is the pre-norm residual stream.
Tensor add_and_norm(Tensor& sum_out, const Tensor& inp, const Tensor& residual,
                    const LayerNormWeights& norm) {
  Tensor normed = Tensor::empty(inp.shape(), inp.dtype(), inp.device());
  const int64_t rows = inp.numel() / inp.dim(-1);
  LayerNormTraining keep;
  keep.sum = sum_out;
  keep.mean = Tensor::empty({rows}, DType::kFloat32, inp.device());
  keep.rstd = Tensor::empty({rows}, DType::kFloat32, inp.device());
  add_layer_norm_forward(normed, inp, residual, norm.gamma, norm.beta, kLayerNormEps, &keep);
  return normed;
}

std::vector<int32_t> identity(int64_t count) {
  std::vector<int32_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<int32_t>(i);
  return values;
}

// Copies `parts` (projections of one input) into one weight [Σ out, in] and one bias [Σ out] and
// re-points each part to its rows of them.
LinearWeights fuse(const std::vector<LinearWeights*>& parts) {
  const Tensor& like = parts.front()->weight;
  const int64_t inputs = like.dim(1);
  int64_t outputs = 0;
  for (const LinearWeights* part : parts) outputs += part->weight.dim(0);
  LinearWeights fused;
  fused.weight = Tensor::empty({outputs, inputs}, like.dtype(), like.device());
  fused.bias = Tensor::zeros({outputs}, like.dtype(), like.device());
  int64_t row = 0;
  for (LinearWeights* part : parts) {
    const int64_t count = part->weight.dim(0);
    Tensor weight = fused.weight.view(row * inputs, {count, inputs});
    Tensor bias = fused.bias.view(row, {count});
    weight.copy_from(part->weight);
    if (part->bias.defined()) bias.copy_from(part->bias);
    part->weight = weight;
    part->bias = bias;
    row += count;
  }
  return fused;
}

}  // namespace

absl::Status check_placement(const Placement& placement) {
  if (!is_float(placement.dtype)) {
    return absl::InvalidArgumentError("the compute dtype must be F32, F16 or BF16");
  }
  if (placement.weights != DType::kFloat32) {
    const bool int8 = placement.weights == DType::kInt8;
    if (!int8 && placement.weights != DType::kBFloat16) {
      return absl::InvalidArgumentError("packed weights are float32, bfloat16 or int8, not " +
                                        dtype_name(placement.weights));
    }
    const char* type = int8 ? "int8" : "bfloat16";
    if (placement.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(std::string(type) +
                                        " weights compute with float32 activations, not " +
                                        dtype_name(placement.dtype));
    }
    if (placement.device != Device::kCPU) {
      return absl::InvalidArgumentError(std::string(type) +
                                        " runs on the CPU only; on CUDA use float16 or bfloat16");
    }
    return int8 ? int8_available(placement.device)
                : bfloat16_weights_available(placement.device);
  }
  if (placement.device == Device::kCPU) {
    if (placement.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(
          "the CPU's activations are F32; " + dtype_name(placement.dtype) +
          " activations need --device cuda (on the CPU, compute type bfloat16 multiplies F32 "
          "activations by bfloat16 weights)");
    }
    return absl::OkStatus();
  }
  if (find_op_backend(Device::kCUDA) == nullptr) {
    return absl::FailedPreconditionError(
        "this build of xlate has no CUDA backend (nvcc was not found when it was built)");
  }
  int devices = 0;
  try {
    devices = device_count(Device::kCUDA);
  } catch (const std::runtime_error& error) {
    return absl::FailedPreconditionError(error.what());
  }
  if (devices == 0) {
    return absl::FailedPreconditionError("no CUDA device is visible on this machine");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const TransformerModel>> TransformerModel::Load(
    const std::string& dir, const Placement& placement) {
  if (absl::Status valid = check_placement(placement); !valid.ok()) return valid;
  absl::StatusOr<ModelConfig> config = read_model_config(dir);
  if (!config.ok()) return config.status();
  std::shared_ptr<TransformerModel> model(new TransformerModel(*std::move(config), placement));
  if (absl::Status read = read_model_weights(
          dir, model->config_, model->weights_,
          [&model](const NamedParameter& parameter) { model->prepare(parameter); });
      !read.ok()) {
    return read;
  }
  model->finish_preparing();
  return model;
}

TransformerModel::TransformerModel(ModelConfig config, const Placement& placement)
    : config_(std::move(config)), placement_(placement) {
  plan_linears();
}

TransformerModel::TransformerModel(ModelConfig config, TransformerWeights weights,
                                   const Placement& placement)
    : config_(std::move(config)), weights_(std::move(weights)), placement_(placement) {
  plan_linears();
  for (const NamedParameter& parameter : named_parameters(weights_, config_)) prepare(parameter);
  finish_preparing();
}

void TransformerModel::plan_linears() {
  named_parameters(weights_, config_);  // sizes the layer vectors, whose addresses then stay
  packs_ = placement_.weights != DType::kFloat32 ||
           op_backend(placement_.device).pack_linear_weight != nullptr;
  output_source_ = !config_.tie_output         ? &weights_.output_weight
                   : !config_.share_embeddings ? &weights_.decoder_embedding
                                               : &weights_.shared_embedding;
  auto plan = [this](std::vector<LinearWeights*> parts, LinearWeights* made) {
    for (LinearWeights* part : parts) {
      pending_of_[&part->weight] = pending_.size();
      pending_of_[&part->bias] = pending_.size();
    }
    const size_t missing = 2 * parts.size();
    pending_.push_back({std::move(parts), made, missing});
  };
  encoder_projections_.resize(weights_.encoder.size());
  for (size_t i = 0; i < weights_.encoder.size(); ++i) {
    EncoderLayerWeights& layer = weights_.encoder[i];
    AttentionWeights& self = layer.self_attention;
    plan({&self.query, &self.key, &self.value}, &encoder_projections_[i]);
    for (LinearWeights* linear : {&self.output, &layer.ffn_inner, &layer.ffn_outer}) {
      plan({linear}, linear);
    }
  }
  decoder_projections_.resize(weights_.decoder.size());
  cross_projections_.resize(weights_.decoder.size());
  for (size_t i = 0; i < weights_.decoder.size(); ++i) {
    DecoderLayerWeights& layer = weights_.decoder[i];
    AttentionWeights &self = layer.self_attention, &cross = layer.cross_attention;
    plan({&self.query, &self.key, &self.value}, &decoder_projections_[i]);
    plan({&cross.key, &cross.value}, &cross_projections_[i]);
    for (LinearWeights* linear :
         {&self.output, &cross.query, &cross.output, &layer.ffn_inner, &layer.ffn_outer}) {
      plan({linear}, linear);
    }
  }
}

void TransformerModel::prepare(const NamedParameter& parameter) {
  Tensor& tensor = *parameter.tensor;
  if (tensor.dtype() != placement_.dtype) {
    // Convert where the bytes are: on the host before an upload, on the device after.
    tensor = tensor.device() == Device::kCPU
                 ? tensor.to_dtype(placement_.dtype).to(placement_.device)
                 : tensor.to(placement_.device).to_dtype(placement_.dtype);
  } else if (tensor.device() != placement_.device) {
    tensor = tensor.to(placement_.device);
  }
  if (parameter.tensor == output_source_) {
    output_projection_.weight = tensor;
    if (packs_) {
      PackedWeight& packed = output_projection_.packed;
      packed = pack_linear_weight(tensor, placement_.weights);
      output_projection_.weight = Tensor();
      if (config_.tie_output && (packed.packed.dtype() == DType::kFloat32 || packed.quantized()) &&
          op_backend(placement_.device).packed_weight_rows != nullptr) {
        tensor = Tensor();
      }
    }
  }
  const auto pending = pending_of_.find(parameter.tensor);
  if (pending != pending_of_.end() && --pending_[pending->second].missing == 0) {
    make_linear(pending_[pending->second]);
  }
}

void TransformerModel::make_linear(PendingLinear& linear) {
  if (linear.parts.size() > 1) *linear.made = fuse(linear.parts);
  if (!packs_) return;
  // The parts' weights are views of the fused one: dropped with it.
  for (LinearWeights* part : linear.parts) {
    if (part != linear.made) part->weight = Tensor();
  }
  linear.made->packed = pack_linear_weight(linear.made->weight, placement_.weights);
  linear.made->weight = Tensor();
}

void TransformerModel::finish_preparing() {
  for (const PendingLinear& linear : pending_) {
    if (linear.missing != 0) {
      throw std::logic_error("TransformerModel: a linear layer's parameters never arrived");
    }
  }
  pending_.clear();
  pending_of_.clear();
  output_projection_.bias = weights_.logits_bias;
  if (!config_.suppressed_tokens.empty()) {
    // A token never generated has logit -inf: the softmax gives it nothing, as transformers'
    // bad_words_ids processor does (a copy: the weights keep the file's bias).
    Tensor bias = weights_.logits_bias.on(Device::kCPU).to_float32();
    for (int id : config_.suppressed_tokens) {
      bias.data<float>()[id] = -std::numeric_limits<float>::infinity();
    }
    output_projection_.bias = bias.to_dtype(placement_.dtype).to(placement_.device);
  }
  // The uploads ran on this thread's stream; the model is used from other workers' streams.
  op_backend(placement_.device).synchronize();
}

void TransformerModel::embed(Tensor& x, const Tensor& tokens, const Tensor& table,
                             const Tensor& positions, int64_t position_offset,
                             const Tensor& row_positions) const {
  const float scale = embedding_scale(config_);
  if (table.defined()) {
    embedding_forward(x, tokens, table, positions, scale, position_offset, row_positions);
    return;
  }
  // The table lives only in the packed output projection: its rows for these tokens, then
  // the same lookup over them (token i is row i).
  Tensor rows = Tensor::empty({tokens.numel(), config_.d_model}, DType::kFloat32,
                              placement_.device);
  packed_weight_rows(rows, tokens, output_projection_.packed);
  Tensor order = Tensor::empty(tokens.shape(), DType::kInt32, Device::kCPU);
  for (int64_t i = 0; i < order.numel(); ++i) order.data<int32_t>()[i] = static_cast<int32_t>(i);
  embedding_forward(x, on_device(order), rows, positions, scale, position_offset, row_positions);
}

Tensor TransformerModel::activations(std::vector<int64_t> shape) const {
  return Tensor::empty(std::move(shape), placement_.dtype, placement_.device);
}

Tensor TransformerModel::on_device(const Tensor& host) const {
  return host.on(placement_.device);
}

Tensor TransformerModel::logits_to_host(const Tensor& logits) const {
  return logits.on(Device::kCPU).to_float32();
}

TransformerModel::Residual TransformerModel::start_stack(Tensor embedded,
                                                         const LayerNormWeights& first) const {
  Residual stream;
  stream.input = config_.pre_norm ? add_and_norm(embedded, embedded,
                                                 Tensor::zeros(embedded.shape(),
                                                               embedded.dtype(),
                                                               embedded.device()),
                                                 first)
                                  : embedded;
  stream.x = std::move(embedded);
  return stream;
}

void TransformerModel::add_sublayer(Residual& stream, Tensor sublayer_out,
                                    const LayerNormWeights& own,
                                    const LayerNormWeights& next) const {
  if (config_.pre_norm) {
    stream.input = add_and_norm(sublayer_out, sublayer_out, stream.x, next);
    stream.x = std::move(sublayer_out);
  } else {
    residual_norm(stream.x, sublayer_out, own);
    stream.input = stream.x;
  }
}

void TransformerModel::feed_forward(const LinearWeights& inner, const LinearWeights& outer,
                                    const LayerNormWeights& norm, Residual& stream,
                                    const LayerNormWeights& next) const {
  Tensor hidden = linear(stream.input, inner, ffn_activation(config_.activation));
  add_sublayer(stream, linear(hidden, outer), norm, next);
}

const LayerNormWeights& TransformerModel::norm_after_encoder_layer(size_t index) const {
  return index + 1 < weights_.encoder.size() ? weights_.encoder[index + 1].self_attention_norm
                                             : weights_.encoder_final_norm;
}

const LayerNormWeights& TransformerModel::norm_after_decoder_layer(size_t index) const {
  return index + 1 < weights_.decoder.size() ? weights_.decoder[index + 1].self_attention_norm
                                             : weights_.decoder_final_norm;
}

void TransformerModel::encoder_layer(size_t index, Residual& stream, const Tensor& key_rows,
                                     const Tensor& lengths) const {
  const EncoderLayerWeights& layer = weights_.encoder[index];
  const AttentionWeights& attention = layer.self_attention;
  const auto [query_width, key_width, value_width] =
      attention_widths(config_, config_.encoder_heads);
  const Tensor& x = stream.input;
  const Tensor projected = linear(x, encoder_projections_[index]);  // [B, S, q | k | v]
  Tensor context = activations({x.dim(0), x.dim(1), value_width});
  attention_forward(context, Columns(projected, 0, query_width),
                    Columns(projected, query_width, key_width),
                    Columns(projected, query_width + key_width, value_width), key_rows, lengths,
                    config_.encoder_heads, /*causal=*/false);
  add_sublayer(stream, linear(context, attention.output), layer.self_attention_norm,
               layer.ffn_norm);
  feed_forward(layer.ffn_inner, layer.ffn_outer, layer.ffn_norm, stream,
               norm_after_encoder_layer(index));
}

Tensor TransformerModel::encode(const Tensor& source, const Tensor& source_lengths) const {
  const int64_t batch = source.dim(0), steps = source.dim(1);
  Tensor x = activations({batch, steps, config_.d_model});
  embed(x, on_device(source), weights_.shared_embedding, weights_.encoder_positions, 0, Tensor());
  const Tensor key_rows = on_device(batch_major_key_rows(batch, steps));
  const Tensor lengths = on_device(source_lengths);
  Residual stream = start_stack(std::move(x), weights_.encoder.front().self_attention_norm);
  for (size_t i = 0; i < weights_.encoder.size(); ++i) {
    encoder_layer(i, stream, key_rows, lengths);
  }
  return stream.input;
}

DecoderState TransformerModel::start_decoding(const Tensor& encoder_output,
                                              const Tensor& source_lengths, int64_t max_rows,
                                              int64_t max_positions) const {
  const int64_t sentences = encoder_output.dim(0), per = std::max<int64_t>(1, sentences);
  DecoderState::Shape shape;
  shape.sentences = per;
  shape.rows_per_sentence = (std::max(max_rows, sentences) + per - 1) / per;
  shape.positions = max_positions;
  shape.source_steps = encoder_output.dim(1);
  // A pool of its own, as large as the state may come to need, filled as its rows reach
  // positions.
  const int64_t blocks =
      shape.sentences * (shape.rows_per_sentence * KvCachePool::blocks_for(shape.positions) +
                         KvCachePool::blocks_for(shape.source_steps));
  DecoderState state(shape, kv_cache_pool(blocks));
  set_sources(state, encoder_output, source_lengths, identity(sentences));
  std::vector<RowPlacement> rows(static_cast<size_t>(sentences));
  for (int32_t r = 0; r < sentences; ++r) rows[r] = {-1, r, 0, 0};
  state.place_rows(rows);
  return state;
}

std::shared_ptr<KvCachePool> TransformerModel::kv_cache_pool(int64_t max_blocks) const {
  const AttentionWidths self = attention_widths(config_, config_.decoder_heads);
  return std::make_shared<KvCachePool>(static_cast<int64_t>(weights_.decoder.size()),
                                       self.key + self.value, placement_.dtype,
                                       placement_.device, max_blocks);
}

int64_t TransformerModel::kv_cache_block_bytes() const {
  const AttentionWidths self = attention_widths(config_, config_.decoder_heads);
  return KvCachePool::block_bytes(static_cast<int64_t>(weights_.decoder.size()),
                                  self.key + self.value, placement_.dtype);
}

void TransformerModel::decoder_layer(size_t index, Tensor& cache,
                                     const DecoderState::StepTables& tables, Residual& stream,
                                     Tensor* cross_weights) const {
  const DecoderLayerWeights& layer = weights_.decoder[index];
  const AttentionWeights& self = layer.self_attention;
  const auto [query_width, key_width, value_width] =
      attention_widths(config_, config_.decoder_heads);
  const Tensor x = stream.input;
  const Tensor projected = linear(x, decoder_projections_[index]);  // [R, T, q | k | v]
  scatter_rows(cache, Columns(projected, query_width, key_width + value_width),
               tables.cache_rows);
  Tensor context = activations({x.dim(0), x.dim(1), value_width});
  attention_forward(context, Columns(projected, 0, query_width), Columns(cache, 0, key_width),
                    Columns(cache, key_width, value_width), tables.self_rows,
                    tables.self_lengths, config_.decoder_heads, /*causal=*/true);
  add_sublayer(stream, linear(context, self.output), layer.self_attention_norm,
               layer.cross_attention_norm);

  const AttentionWeights& cross = layer.cross_attention;
  const Tensor query = linear(stream.input, cross.query);
  attention_forward(context, query, Columns(cache, 0, key_width),
                    Columns(cache, key_width, value_width), tables.cross_rows,
                    tables.cross_lengths, config_.decoder_heads, /*causal=*/false,
                    cross_weights);
  add_sublayer(stream, linear(context, cross.output), layer.cross_attention_norm,
               layer.ffn_norm);
  feed_forward(layer.ffn_inner, layer.ffn_outer, layer.ffn_norm, stream,
               norm_after_decoder_layer(index));
}

Tensor TransformerModel::decode(DecoderState& state, const Tensor& tokens) const {
  return logits_to_host(decode_on_device(state, tokens));
}

TopK TransformerModel::decode_top_k_on_device(DecoderState& state, const Tensor& tokens,
                                              const Tensor& row_scores, int k,
                                              const Tensor& wanted) const {
  const Tensor logits = step_logits(state, tokens.reshape({tokens.numel(), 1}));
  TopK top = top_k_of(logits, row_scores, k);
  if (wanted.defined() && wanted.numel() > 0) {
    top.wanted_values = Tensor::empty({wanted.dim(0), wanted.dim(1)}, DType::kFloat32,
                                      logits.device());
    gather_log_probs(top.wanted_values, logits, row_scores, wanted);
  }
  return top;
}

Tensor TransformerModel::step_logits(DecoderState& state, const Tensor& tokens) const {
  const std::vector<DecoderState::ForcedToken> forced = state.forced_next_step();
  const int64_t vocabulary = config_.target_vocab_size();
  Tensor logits = decode_on_device(state, tokens).reshape({tokens.dim(0), vocabulary});
  state.penalize_repeats(logits);
  if (forced.empty()) return logits;
  const auto count = static_cast<int64_t>(forced.size());
  Tensor certain = Tensor::empty({count, vocabulary}, DType::kFloat32);
  std::fill_n(certain.data<float>(), certain.numel(), -std::numeric_limits<float>::infinity());
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < count; ++i) {
    certain.data<float>()[i * vocabulary + forced[i].token] = 0.f;
    rows.push_back(forced[i].row);
  }
  scatter_rows(logits, certain.to_dtype(logits.dtype()).on(logits.device()),
               Tensor::from_vector(rows, {count}).on(logits.device()));
  return logits;
}

TopK TransformerModel::top_k_of(const Tensor& logits, const Tensor& offsets, int k) {
  const int64_t rows = logits.dim(0);
  k = static_cast<int>(std::min<int64_t>(k, logits.dim(1)));
  TopK top{Tensor::empty({rows, k}, DType::kFloat32, logits.device()),
           Tensor::empty({rows, k}, DType::kInt32, logits.device())};
  log_softmax_top_k(top.values, top.indices, logits, offsets, k);
  return top;
}

std::vector<Tensor> TransformerModel::cross_attention(DecoderState& state,
                                                     const Tensor& tokens) const {
  std::vector<Tensor> weights;
  decoder_layers(state, tokens, &weights);
  for (Tensor& layer : weights) layer = layer.on(Device::kCPU);
  return weights;
}

Tensor TransformerModel::decode_on_device(DecoderState& state, const Tensor& tokens) const {
  return linear(decoder_layers(state, tokens, nullptr), output_projection_);
}

Tensor TransformerModel::decoder_layers(DecoderState& state, const Tensor& tokens,
                                        std::vector<Tensor>* cross_weights) const {
  const int64_t rows = tokens.dim(0), steps = tokens.dim(1);
  const Tensor device_tokens = on_device(tokens);
  const DecoderState::StepTables tables = state.advance(device_tokens);
  Tensor x = activations({rows, steps, config_.d_model});
  // The target table by the config: a separate one dropped for its packed copy (prepare) leaves
  // the source table defined.
  embed(x, device_tokens,
        config_.share_embeddings ? weights_.shared_embedding : weights_.decoder_embedding,
        weights_.decoder_positions, tables.length, tables.row_positions);
  Residual stream = start_stack(std::move(x), weights_.decoder.front().self_attention_norm);
  for (size_t i = 0; i < weights_.decoder.size(); ++i) {
    Tensor layer_weights;
    if (cross_weights != nullptr) {
      layer_weights = Tensor::empty({rows, config_.decoder_heads, steps, tables.cross_rows.dim(1)},
                                    DType::kFloat32, placement_.device);
    }
    decoder_layer(i, state.pool().layer(i), tables, stream,
                  cross_weights != nullptr ? &layer_weights : nullptr);
    if (cross_weights != nullptr) cross_weights->push_back(std::move(layer_weights));
  }
  return stream.input;
}

DecoderState TransformerModel::start_slots(int64_t max_sentences, int64_t max_source_tokens,
                                          int64_t rows_per_sentence, int64_t max_positions,
                                          std::shared_ptr<KvCachePool> pool) const {
  DecoderState::Shape shape;
  shape.sentences = max_sentences;
  shape.rows_per_sentence = rows_per_sentence;
  shape.positions = max_positions;
  shape.source_steps = max_source_tokens;
  return DecoderState(shape, std::move(pool));
}

void TransformerModel::set_sources(DecoderState& state, const Tensor& encoder_output,
                                   const Tensor& source_lengths,
                                   const std::vector<int32_t>& sentence_slots) const {
  const int64_t sentences = encoder_output.dim(0), steps = encoder_output.dim(1);
  const int32_t* lengths = source_lengths.data<int32_t>();
  const std::vector<int32_t> length_list(lengths, lengths + sentences);
  // The rows of the padded encoder output that hold a source position, and the pool rows they go
  // to (the blocks are taken first: a pool without room throws before any work).
  const std::vector<int32_t> cache_rows = state.take_source_rows(sentence_slots, length_list);
  std::vector<int32_t> source_rows;
  for (int64_t n = 0; n < sentences; ++n) {
    for (int32_t s = 0; s < lengths[n]; ++s) {
      source_rows.push_back(static_cast<int32_t>(n * steps + s));
    }
  }
  const auto count = static_cast<int64_t>(source_rows.size());
  if (count == 0) return;
  const Tensor from = on_device(Tensor::from_vector(source_rows, {count}));
  const Tensor to = on_device(Tensor::from_vector(cache_rows, {count}));
  for (size_t i = 0; i < weights_.decoder.size(); ++i) {
    // Projected over the padded output (the products of the whole batch, as every pass computes
    // them), then the source positions alone copied into their blocks.
    const Tensor key_values = linear(encoder_output, cross_projections_[i]);  // [n, S, k | v]
    const int64_t width = key_values.dim(2);
    Tensor positions = activations({count, width});
    gather_rows(positions, key_values.reshape({sentences * steps, width}), from);
    scatter_rows(state.pool().layer(i), positions, to);
  }
}

}  // namespace xlate
