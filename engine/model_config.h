// Architecture hyperparameters (the paper's Table 3) and special token ids of a model, as stored
// in a model directory's config.json. The keys are documented in docs/model-format.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"

namespace xlate {

// kSinusoidal: the paper's (interleaved in xlate's own files, stored; Marian's, computed when
// absent). kFairseq: M2M100's and NLLB's, never stored: [sin | cos] with frequencies
// 10000^(-i / (C/2 - 1)), position p of a sentence at fairseq's row p + 2 (model_weights.h).
enum class PositionalEncoding { kSinusoidal, kLearned, kFairseq };

// The feed-forward networks' activation (config.json's "activation_function"): the paper's ReLU,
// or swish (x·sigmoid(x); "swish" and "silu") or exact GELU ("gelu"), as OPUS-MT models use.
enum class FfnActivation { kRelu, kSwish, kGelu };

// The ε inside every layer norm's square root (PyTorch's nn.LayerNorm default, which Hugging
// Face's Marian models use), in the engine and the trainer alike.
constexpr float kLayerNormEps = 1e-5f;

struct ModelConfig {
  int vocab_size = 0;
  int d_model = 512;
  int encoder_layers = 6;
  int decoder_layers = 6;
  int encoder_heads = 8;
  int decoder_heads = 8;
  int encoder_ffn_dim = 2048;
  int decoder_ffn_dim = 2048;
  int max_positions = 1024;  // rows of each positional table
  // Per-head query/key and value widths (Table 3 rows A and B); 0 means d_model / heads.
  int d_k = 0;
  int d_v = 0;
  float dropout = 0.1f;      // P_drop
  float attention_dropout = 0.f;
  float activation_dropout = 0.f;
  float label_smoothing = 0.1f;  // ε_ls
  PositionalEncoding positional = PositionalEncoding::kSinusoidal;
  int pad_id = 0;
  int unk_id = 1;
  int bos_id = 2;
  int eos_id = 3;
  int decoder_start_id = 2;  // the paper's decoder starts from BOS
  std::string source_lang;
  std::string target_lang;
  // Variants of Hugging Face Marian models (OPUS-MT) on the one forward; the paper's (and
  // xlate's own models') values are the defaults.
  FfnActivation activation = FfnActivation::kRelu;
  bool scale_embedding = true;   // embeddings × sqrt(d_model)
  // One embedding matrix for the encoder and the decoder ("share_encoder_decoder_embeddings"),
  // and the output projection tied to the decoder's embedding ("tie_word_embeddings").
  bool share_embeddings = true;
  bool tie_output = true;
  // The decoder's vocabulary when it is not the encoder's (separate vocabularies: Hugging
  // Face's "decoder_vocab_size"); 0 = vocab_size.
  int decoder_vocab_size = 0;
  // Target ids never generated: their logit is -inf before the softmax (generation_config.json's
  // single-token "bad_words_ids", e.g. pad in every OPUS-MT model).
  std::vector<int> suppressed_tokens;
  // forced_eos_token_id = eos (every OPUS-MT model): a translation that reaches the length
  // limit ends with the end token in the limit's last place, as transformers'
  // ForcedEOSTokenLogitsProcessor makes it, so it holds one token less than the limit.
  bool end_forced_at_limit = false;
  // M2M100 and NLLB-200 (model_type "m2m_100"): pre-norm blocks, x + Sublayer(LN(x)), and a
  // layer norm after each stack's last layer (model.encoder.layer_norm, model.decoder.layer_norm).
  bool pre_norm = false;

  // Parses config.json text; `origin` names the file in error messages.
  static absl::StatusOr<ModelConfig> FromJson(const std::string& text, const std::string& origin);
  // "tiny" (tests), "base" and "big" (the paper's); the vocabulary size is set by the caller.
  static absl::StatusOr<ModelConfig> Preset(const std::string& name);
  std::string ToJson() const;
  // Checks ranges and divisibility; the message names the key and the limit.
  absl::Status Validate() const;

  // The size of the decoder's (output) vocabulary.
  int target_vocab_size() const { return decoder_vocab_size > 0 ? decoder_vocab_size : vocab_size; }

  // d_k and d_v of a stack with `heads` heads.
  int head_dim_k(int heads) const { return d_k > 0 ? d_k : d_model / heads; }
  int head_dim_v(int heads) const { return d_v > 0 ? d_v : d_model / heads; }
};

// generation_config.json's (or an older config.json's) "bad_words_ids", when every entry is a
// single token: appended to *suppressed; sequences of several tokens are refused by name.
absl::Status read_suppressed_tokens(const nlohmann::json& json, const std::string& origin,
                                    std::vector<int>* suppressed);

}  // namespace xlate
