// Loading and saving a model directory: config.json + model.safetensors (+ spm.model, which the
// Tokenizer loads). Layout and names: docs/model-format.md.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "engine/model_weights.h"

namespace xlate {

struct LoadedModel {
  ModelConfig config;
  TransformerWeights weights;  // float32, whatever the stored dtype
};

absl::StatusOr<LoadedModel> load_model_directory(const std::string& directory);

// Creates `directory` if needed and writes config.json and model.safetensors, the weights
// converted to `dtype` (F32, F16 or BF16). Each file is written atomically.
absl::Status save_model_directory(const std::string& directory, const ModelConfig& config,
                                  const TransformerWeights& weights, DType dtype);

// The paper-style initialisation used by `xlate init-model` and the trainer: Xavier-uniform
// matrices, zero biases, unit LayerNorm gains, N(0, d_model^-1/2) embeddings, sinusoidal (or
// small random learned) positions. Deterministic for a seed.
TransformerWeights random_weights(const ModelConfig& config, uint64_t seed);

}  // namespace xlate
