// Architecture hyperparameters (the paper's Table 3) and special token ids of a model, as stored
// in a model directory's config.json. The keys are documented in docs/model-format.md.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace xlate {

enum class PositionalEncoding { kSinusoidal, kLearned };

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

  // Parses config.json text; `origin` names the file in error messages.
  static absl::StatusOr<ModelConfig> FromJson(const std::string& text, const std::string& origin);
  // "tiny" (tests), "base" and "big" (the paper's); the vocabulary size is set by the caller.
  static absl::StatusOr<ModelConfig> Preset(const std::string& name);
  std::string ToJson() const;
  // Checks ranges and divisibility; the message names the key and the limit.
  absl::Status Validate() const;

  // d_k and d_v of a stack with `heads` heads.
  int head_dim_k(int heads) const { return d_k > 0 ? d_k : d_model / heads; }
  int head_dim_v(int heads) const { return d_v > 0 ? d_v : d_model / heads; }
};

}  // namespace xlate
