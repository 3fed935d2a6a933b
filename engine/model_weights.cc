#include "engine/model_weights.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

class ParameterList {
 public:
  void add(std::string name, std::vector<int64_t> shape, ParameterKind kind, Tensor* tensor,
           std::vector<std::string> aliases = {}) {
    list_.push_back({std::move(name), std::move(shape), kind, tensor, std::move(aliases)});
  }
  void linear(const std::string& prefix, LinearWeights& linear, int64_t out, int64_t in) {
    add(prefix + ".weight", {out, in}, ParameterKind::kMatrix, &linear.weight);
    add(prefix + ".bias", {out}, ParameterKind::kBias, &linear.bias);
  }
  void norm(const std::string& prefix, LayerNormWeights& norm, int64_t channels) {
    add(prefix + ".weight", {channels}, ParameterKind::kNormGain, &norm.gamma);
    add(prefix + ".bias", {channels}, ParameterKind::kNormBias, &norm.beta);
  }
  // key_width = h * d_k, value_width = h * d_v.
  void attention(const std::string& prefix, AttentionWeights& attention, int64_t channels,
                 int64_t key_width, int64_t value_width) {
    linear(prefix + ".q_proj", attention.query, key_width, channels);
    linear(prefix + ".k_proj", attention.key, key_width, channels);
    linear(prefix + ".v_proj", attention.value, value_width, channels);
    linear(prefix + ".out_proj", attention.output, channels, value_width);
  }
  std::vector<NamedParameter> take() { return std::move(list_); }

 private:
  std::vector<NamedParameter> list_;
};

}  // namespace

std::vector<NamedParameter> named_parameters(TransformerWeights& weights,
                                             const ModelConfig& config) {
  const int64_t channels = config.d_model;
  const int64_t encoder_keys = int64_t{config.encoder_heads} * config.head_dim_k(config.encoder_heads);
  const int64_t encoder_values = int64_t{config.encoder_heads} * config.head_dim_v(config.encoder_heads);
  const int64_t decoder_keys = int64_t{config.decoder_heads} * config.head_dim_k(config.decoder_heads);
  const int64_t decoder_values = int64_t{config.decoder_heads} * config.head_dim_v(config.decoder_heads);
  ParameterList list;
  const int64_t target_vocabulary = config.target_vocab_size();
  if (config.share_embeddings) {
    list.add("model.shared.weight", {config.vocab_size, channels}, ParameterKind::kEmbedding,
             &weights.shared_embedding,
             {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"});
  } else {
    list.add("model.encoder.embed_tokens.weight", {config.vocab_size, channels},
             ParameterKind::kEmbedding, &weights.shared_embedding);
    list.add("model.decoder.embed_tokens.weight", {target_vocabulary, channels},
             ParameterKind::kEmbedding, &weights.decoder_embedding);
  }
  if (!config.tie_output) {
    list.add("lm_head.weight", {target_vocabulary, channels}, ParameterKind::kEmbedding,
             &weights.output_weight);
  }
  list.add("final_logits_bias", {1, target_vocabulary}, ParameterKind::kBias,
           &weights.logits_bias);
  list.add("model.encoder.embed_positions.weight", {config.max_positions, channels},
           ParameterKind::kPositions, &weights.encoder_positions);
  list.add("model.decoder.embed_positions.weight", {config.max_positions, channels},
           ParameterKind::kPositions, &weights.decoder_positions);
  weights.encoder.resize(static_cast<size_t>(config.encoder_layers));
  for (size_t i = 0; i < weights.encoder.size(); ++i) {
    const std::string prefix = absl::StrCat("model.encoder.layers.", i);
    EncoderLayerWeights& layer = weights.encoder[i];
    list.attention(prefix + ".self_attn", layer.self_attention, channels, encoder_keys,
                   encoder_values);
    list.norm(prefix + ".self_attn_layer_norm", layer.self_attention_norm, channels);
    list.linear(prefix + ".fc1", layer.ffn_inner, config.encoder_ffn_dim, channels);
    list.linear(prefix + ".fc2", layer.ffn_outer, channels, config.encoder_ffn_dim);
    list.norm(prefix + ".final_layer_norm", layer.ffn_norm, channels);
  }
  weights.decoder.resize(static_cast<size_t>(config.decoder_layers));
  for (size_t i = 0; i < weights.decoder.size(); ++i) {
    const std::string prefix = absl::StrCat("model.decoder.layers.", i);
    DecoderLayerWeights& layer = weights.decoder[i];
    list.attention(prefix + ".self_attn", layer.self_attention, channels, decoder_keys,
                   decoder_values);
    list.norm(prefix + ".self_attn_layer_norm", layer.self_attention_norm, channels);
    list.attention(prefix + ".encoder_attn", layer.cross_attention, channels, decoder_keys,
                   decoder_values);
    list.norm(prefix + ".encoder_attn_layer_norm", layer.cross_attention_norm, channels);
    list.linear(prefix + ".fc1", layer.ffn_inner, config.decoder_ffn_dim, channels);
    list.linear(prefix + ".fc2", layer.ffn_outer, channels, config.decoder_ffn_dim);
    list.norm(prefix + ".final_layer_norm", layer.ffn_norm, channels);
  }
  if (config.pre_norm) {
    list.norm("model.encoder.layer_norm", weights.encoder_final_norm, channels);
    list.norm("model.decoder.layer_norm", weights.decoder_final_norm, channels);
  }
  return list.take();
}

Tensor sinusoidal_positions(int64_t rows, int64_t channels) {
  Tensor table = Tensor::empty({rows, channels}, DType::kFloat32);
  float* values = table.data<float>();
  for (int64_t pos = 0; pos < rows; ++pos) {
    for (int64_t i = 0; i < channels; ++i) {
      const int64_t pair = i / 2;  // dimensions 2i and 2i+1 share a frequency
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(pair) /
                                                           static_cast<double>(channels));
      values[pos * channels + i] = static_cast<float>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return table;
}

Tensor marian_sinusoidal_positions(int64_t rows, int64_t channels) {
  Tensor table = Tensor::empty({rows, channels}, DType::kFloat32);
  float* values = table.data<float>();
  const int64_t sines = (channels + 1) / 2;
  for (int64_t pos = 0; pos < rows; ++pos) {
    for (int64_t j = 0; j < sines; ++j) {
      const double angle = static_cast<double>(pos) /
                           std::pow(10000.0, 2.0 * static_cast<double>(j) /
                                                 static_cast<double>(channels));
      values[pos * channels + j] = static_cast<float>(std::sin(angle));
      if (sines + j < channels) values[pos * channels + sines + j] = static_cast<float>(std::cos(angle));
    }
  }
  return table;
}

Tensor fairseq_sinusoidal_positions(int64_t rows, int64_t channels) {
  Tensor table = Tensor::zeros({rows, channels}, DType::kFloat32);
  float* values = table.data<float>();
  const int64_t half = channels / 2;
  // fairseq computes the frequencies in float32: exp(i · -(log(10000) / (h - 1))).
  const float step = std::log(10000.f) / static_cast<float>(std::max<int64_t>(1, half - 1));
  for (int64_t row = 0; row < rows; ++row) {
    const float position = static_cast<float>(row + 2);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = position * std::exp(static_cast<float>(i) * -step);
      values[row * channels + i] = std::sin(angle);
      values[row * channels + half + i] = std::cos(angle);
    }
  }
  return table;
}

}  // namespace xlate
