#include "engine/model_directory.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/safetensors.h"

namespace xlate {
namespace fs = std::filesystem;

absl::StatusOr<LoadedModel> load_model_directory(const std::string& directory) {
  const std::string config_path = (fs::path(directory) / "config.json").string();
  std::ifstream config_file(config_path);
  if (!config_file) {
    return absl::NotFoundError(absl::StrCat(
        config_path, ": cannot open (a model directory holds config.json, model.safetensors "
                     "and spm.model; see docs/model-format.md)"));
  }
  std::stringstream text;
  text << config_file.rdbuf();
  auto config = ModelConfig::FromJson(text.str(), config_path);
  if (!config.ok()) return config.status();

  const std::string weights_path = (fs::path(directory) / "model.safetensors").string();
  auto stored = read_safetensors(weights_path);
  if (!stored.ok()) return stored.status();

  LoadedModel model{*config, {}};
  for (NamedParameter& parameter : named_parameters(model.weights, model.config)) {
    auto found = stored->find(parameter.name);
    if (found == stored->end()) {
      return absl::NotFoundError(absl::StrCat(weights_path, ": tensor \"", parameter.name,
                                              "\" is missing (expected shape ",
                                              shape_string(parameter.shape), ")"));
    }
    const Tensor& tensor = found->second;
    if (tensor.shape() != parameter.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          weights_path, ": tensor \"", parameter.name, "\" has shape ", tensor.shape_string(),
          " but config.json implies ", shape_string(parameter.shape)));
    }
    if (!is_float(tensor.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat(weights_path, ": tensor \"", parameter.name,
                                                     "\" is ", dtype_name(tensor.dtype()),
                                                     "; expected F32, F16 or BF16"));
    }
    *parameter.tensor = tensor.to_float32();
  }
  return model;
}

absl::Status save_model_directory(const std::string& directory, const ModelConfig& config,
                                  const TransformerWeights& weights, DType dtype) {
  if (!is_float(dtype)) {
    return absl::InvalidArgumentError("weights can be saved as F32, F16 or BF16, not " +
                                      dtype_name(dtype));
  }
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat(directory, ": cannot create directory: ", error.message()));
  }
  TransformerWeights copy = weights;  // handles only; named_parameters needs a mutable struct
  TensorMap tensors;
  for (const NamedParameter& parameter : named_parameters(copy, config)) {
    if (!parameter.tensor->defined() || parameter.tensor->shape() != parameter.shape) {
      return absl::InvalidArgumentError(absl::StrCat("cannot save: tensor \"", parameter.name,
                                                     "\" is missing or not ",
                                                     shape_string(parameter.shape)));
    }
    tensors[parameter.name] = parameter.tensor->to_dtype(dtype);
  }
  const std::string weights_path = (fs::path(directory) / "model.safetensors").string();
  if (auto status = write_safetensors(weights_path, tensors, {{"format", "pt"}}); !status.ok()) {
    return status;
  }
  return write_file_atomically((fs::path(directory) / "config.json").string(), config.ToJson());
}

TransformerWeights random_weights(const ModelConfig& config, uint64_t seed) {
  std::mt19937_64 generator(seed);
  TransformerWeights weights;
  for (NamedParameter& parameter : named_parameters(weights, config)) {
    Tensor tensor = Tensor::empty(parameter.shape, DType::kFloat32);
    float* values = tensor.data<float>();
    const int64_t count = tensor.numel();
    switch (parameter.kind) {
      case ParameterKind::kMatrix: {
        const double limit = std::sqrt(6.0 / static_cast<double>(parameter.shape[0] +
                                                                 parameter.shape[1]));
        std::uniform_real_distribution<float> uniform(static_cast<float>(-limit),
                                                      static_cast<float>(limit));
        for (int64_t i = 0; i < count; ++i) values[i] = uniform(generator);
        break;
      }
      case ParameterKind::kEmbedding: {
        std::normal_distribution<float> normal(0.f, 1.f / std::sqrt(float(config.d_model)));
        for (int64_t i = 0; i < count; ++i) values[i] = normal(generator);
        break;
      }
      case ParameterKind::kPositions:
        if (config.positional == PositionalEncoding::kSinusoidal) {
          tensor = sinusoidal_positions(parameter.shape[0], parameter.shape[1]);
        } else {
          std::normal_distribution<float> normal(0.f, 0.02f);
          for (int64_t i = 0; i < count; ++i) values[i] = normal(generator);
        }
        break;
      case ParameterKind::kNormGain:
        for (int64_t i = 0; i < count; ++i) values[i] = 1.f;
        break;
      case ParameterKind::kBias:
      case ParameterKind::kNormBias:
        for (int64_t i = 0; i < count; ++i) values[i] = 0.f;
        break;
    }
    *parameter.tensor = tensor;
  }
  return weights;
}

}  // namespace xlate
