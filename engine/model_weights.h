// The Transformer's parameters as typed structs, and the one list that names them
// (docs/model-format.md). Loading, saving, random initialisation and (in the trainer) gradients
// all walk named_parameters(), so a tensor's name and shape are written down exactly once.
#pragma once

#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/packed_weight.h"
#include "engine/tensor.h"

namespace xlate {

struct LinearWeights {
  Tensor weight;  // [out, in]
  Tensor bias;    // [out]
  // An inference model's on a backend that packs weights (never a file's): the weight packed
  // (float32, or int8 for compute type int8), which the layer then uses; `weight` is undefined.
  PackedWeight packed;
};

struct LayerNormWeights {
  Tensor gamma;  // [C]
  Tensor beta;   // [C]
};

struct AttentionWeights {
  // query, key: [h·d_k, C]; value: [h·d_v, C]; output: [C, h·d_v] (all [C, C] when
  // d_k = d_v = C / h, the paper's base and big models).
  LinearWeights query, key, value, output;
};

struct EncoderLayerWeights {
  AttentionWeights self_attention;
  LayerNormWeights self_attention_norm;
  LinearWeights ffn_inner;  // [F, C]
  LinearWeights ffn_outer;  // [C, F]
  LayerNormWeights ffn_norm;
};

struct DecoderLayerWeights {
  AttentionWeights self_attention;
  LayerNormWeights self_attention_norm;
  AttentionWeights cross_attention;
  LayerNormWeights cross_attention_norm;
  LinearWeights ffn_inner;
  LinearWeights ffn_outer;
  LayerNormWeights ffn_norm;
};

struct TransformerWeights {
  // [V, C]: the source embedding; also the target embedding unless decoder_embedding is
  // defined, and the output projection unless output_weight (or decoder_embedding) is.
  Tensor shared_embedding;
  // Models whose encoder and decoder do not share embeddings (config.share_embeddings false):
  // the decoder's [V_tgt, C]; undefined otherwise.
  Tensor decoder_embedding;
  // Models whose output projection is not tied (config.tie_output false): [V_tgt, C];
  // undefined otherwise.
  Tensor output_weight;
  Tensor logits_bias;        // [1, V_tgt]
  Tensor encoder_positions;  // [P, C]
  Tensor decoder_positions;  // [P, C]
  std::vector<EncoderLayerWeights> encoder;
  std::vector<DecoderLayerWeights> decoder;
  // Pre-norm models (config.pre_norm): the layer norm after each stack's last layer; undefined
  // otherwise.
  LayerNormWeights encoder_final_norm, decoder_final_norm;

  const Tensor& target_embedding() const {
    return decoder_embedding.defined() ? decoder_embedding : shared_embedding;
  }
  const Tensor& output_matrix() const {
    return output_weight.defined() ? output_weight : target_embedding();
  }
};

enum class ParameterKind { kEmbedding, kPositions, kMatrix, kBias, kNormGain, kNormBias };

struct NamedParameter {
  std::string name;
  std::vector<int64_t> shape;
  ParameterKind kind;
  Tensor* tensor;
  // Other names a file may store it under (transformers keeps one name of tied weights, not
  // always the same one).
  std::vector<std::string> aliases = {};
};

// Every parameter with its file name and expected shape. Resizes the layer vectors of `weights`
// to the config's layer counts; the returned pointers point into `weights`.
std::vector<NamedParameter> named_parameters(TransformerWeights& weights,
                                             const ModelConfig& config);

// The paper's interleaved sinusoid, [rows, channels] float32.
Tensor sinusoidal_positions(int64_t rows, int64_t channels);
// Hugging Face Marian's sinusoid (MarianSinusoidalPositionalEmbedding), which transformers
// computes instead of storing: the same angles pos / 10000^(2j / channels), sines in the first
// ceil(channels / 2) columns and cosines after them instead of interleaved. [rows, channels].
Tensor marian_sinusoidal_positions(int64_t rows, int64_t channels);
// fairseq's sinusoid as M2M100 and NLLB compute it (M2M100SinusoidalPositionalEmbedding), which
// is never stored: row p is fairseq's position p + 2 (its positions start after the padding id
// 1), sines of p' · 10000^(-i / (h - 1)) in the first h = channels / 2 columns, cosines in the
// next h, a last odd column 0. [rows, channels].
Tensor fairseq_sinusoidal_positions(int64_t rows, int64_t channels);

}  // namespace xlate
