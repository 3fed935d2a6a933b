// Loading and saving a model directory: config.json + model.safetensors (+ spm.model, which the
// Tokenizer loads). Layout and names: docs/model-format.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "engine/model_weights.h"

namespace xlate {

struct LoadedModel {
  ModelConfig config;
  TransformerWeights weights;  // float32, whatever the stored dtype
};

// read_model_config, then read_model_weights into the model's weights.
absl::StatusOr<LoadedModel> load_model_directory(const std::string& directory);

// The directory's config.json, with what generation_config.json (tokens never generated) and
// tokenizer_config.json (the languages) add to it.
absl::StatusOr<ModelConfig> read_model_config(const std::string& directory);

// Called with each parameter once it is read, float32 and checked; it may take the tensor
// (leave *parameter.tensor undefined) to hold it in another form.
using ParameterReady = std::function<void(const NamedParameter& parameter)>;

// Reads the parameters `config` names (named_parameters, in its order) from the directory's
// weight files into `weights`, one tensor at a time, calling `ready` after each: a loader that
// packs each as it comes holds the file's bytes of one tensor beside what it has made, not the
// whole model. Errors name the file and the tensor; the file changing while read is one.
absl::Status read_model_weights(const std::string& directory, const ModelConfig& config,
                                TransformerWeights& weights, const ParameterReady& ready = {});

// Creates `directory` if needed and writes config.json and model.safetensors, the weights
// converted to `dtype` (F32, F16 or BF16). Each file is written atomically.
absl::Status save_model_directory(const std::string& directory, const ModelConfig& config,
                                  const TransformerWeights& weights, DType dtype);

// The paper-style initialisation used by `xlate init-model` and the trainer: Xavier-uniform
// matrices, zero biases, unit LayerNorm gains, N(0, d_model^-1/2) embeddings, sinusoidal (or
// small random learned) positions. Deterministic for a seed.
TransformerWeights random_weights(const ModelConfig& config, uint64_t seed);

}  // namespace xlate
