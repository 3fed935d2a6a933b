#include "engine/model_directory.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/json_fields.h"
#include "engine/safetensors.h"

namespace xlate {
namespace fs = std::filesystem;

namespace {

// A weight no model could have been trained to: a value that is not finite (NaN or infinite:
// every translation would come out empty), or a matrix of zeros (an embedding or projection
// whose outputs are all equal). Biases and norms may be zero. OK, or why not, with where.
absl::Status check_values(const Tensor& tensor, ParameterKind kind) {
  const float* values = tensor.data<float>();
  const int64_t count = tensor.numel();
  bool all_zero = count > 0;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat("holds ", values[i], " at element ", i,
                                                     ": weights must be finite"));
    }
    all_zero = all_zero && values[i] == 0.0f;
  }
  if (all_zero && (kind == ParameterKind::kEmbedding || kind == ParameterKind::kMatrix)) {
    return absl::InvalidArgumentError("is all zeros: no trained model has such a matrix");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> read_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Every tensor of the directory's weights: model.safetensors, or the shards that
// model.safetensors.index.json names (as transformers writes a large model). A directory with
// PyTorch's pickles only is pointed to the converter that ships with xlate.
absl::StatusOr<TensorMap> read_weights(const fs::path& directory, std::string* described) {
  const fs::path single = directory / "model.safetensors";
  const fs::path index = directory / "model.safetensors.index.json";
  if (fs::exists(single) || !fs::exists(index)) {
    *described = single.string();
    if (!fs::exists(single) && (fs::exists(directory / "pytorch_model.bin") ||
                                fs::exists(directory / "pytorch_model.bin.index.json"))) {
      return absl::NotFoundError(absl::StrCat(
          single.string(), " is missing; the directory holds PyTorch's pytorch_model.bin, which "
          "xlate does not read (it is a pickle, which can run code): convert it once with "
          "`python3 scripts/convert_pytorch_to_safetensors.py ", directory.string(), "`"));
    }
    return read_safetensors(single.string());
  }
  *described = index.string();
  auto text = read_text(index.string());
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("weight_map") ||
      !json["weight_map"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(index.string(), ": not a JSON object with a \"weight_map\" object"));
  }
  std::set<std::string> shards;
  for (const auto& [name, shard] : json["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          index.string(), ": tensor \"", name, "\" maps to ", json_excerpt(shard),
          "; expected the file name of a shard in the same directory"));
    }
    shards.insert(shard.get<std::string>());
  }
  TensorMap tensors;
  for (const std::string& shard : shards) {
    auto part = read_safetensors((directory / shard).string());
    if (!part.ok()) return part.status();
    tensors.merge(*part);
  }
  return tensors;
}

}  // namespace

absl::StatusOr<LoadedModel> load_model_directory(const std::string& directory) {
  const std::string config_path = (fs::path(directory) / "config.json").string();
  auto config_text = read_text(config_path);
  if (!config_text.ok()) {
    return absl::NotFoundError(absl::StrCat(
        config_path, ": cannot open (a model directory holds config.json, model.safetensors "
                     "and its tokenizer; see docs/model-format.md)"));
  }
  auto config = ModelConfig::FromJson(*config_text, config_path);
  if (!config.ok()) return config.status();
  // Hugging Face keeps generation settings apart; those that change what is computed (tokens
  // never generated) are the model's.
  const std::string generation_path =
      (fs::path(directory) / "generation_config.json").string();
  if (auto generation = read_text(generation_path); generation.ok()) {
    const nlohmann::json json =
        nlohmann::json::parse(*generation, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(generation_path, ": not a JSON object"));
    }
    std::vector<int> suppressed;
    if (auto status = read_suppressed_tokens(json, generation_path, &suppressed); !status.ok()) {
      return status;
    }
    for (int id : suppressed) {
      if (std::find(config->suppressed_tokens.begin(), config->suppressed_tokens.end(), id) ==
          config->suppressed_tokens.end()) {
        config->suppressed_tokens.push_back(id);
      }
    }
    if (auto status = config->Validate(); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(generation_path, ": ", status.message()));
    }
  }

  // A Hugging Face directory names its languages in tokenizer_config.json (MarianTokenizer's
  // source_lang and target_lang), not in config.json.
  const std::string tokenizer_path = (fs::path(directory) / "tokenizer_config.json").string();
  if (auto tokenizer = read_text(tokenizer_path); tokenizer.ok()) {
    const nlohmann::json json =
        nlohmann::json::parse(*tokenizer, nullptr, /*allow_exceptions=*/false);
    for (const auto& [key, language] :
         {std::pair<const char*, std::string*>{"source_lang", &config->source_lang},
          {"target_lang", &config->target_lang}}) {
      if (language->empty() && json.is_object() && json.contains(key) && json[key].is_string()) {
        *language = json[key].get<std::string>();
      }
    }
  }

  std::string weights_path;
  auto stored = read_weights(fs::path(directory), &weights_path);
  if (!stored.ok()) return stored.status();

  LoadedModel model{*config, {}};
  for (NamedParameter& parameter : named_parameters(model.weights, model.config)) {
    auto found = stored->find(parameter.name);
    for (size_t a = 0; found == stored->end() && a < parameter.aliases.size(); ++a) {
      found = stored->find(parameter.aliases[a]);
    }
    if (found == stored->end()) {
      // What transformers does not store: Marian's sinusoids (computed at load since 2020),
      // M2M100's (never stored) and a zero logits bias (M2M100 has none).
      if (parameter.kind == ParameterKind::kPositions &&
          model.config.positional != PositionalEncoding::kLearned) {
        *parameter.tensor =
            model.config.positional == PositionalEncoding::kFairseq
                ? fairseq_sinusoidal_positions(parameter.shape[0], parameter.shape[1])
                : marian_sinusoidal_positions(parameter.shape[0], parameter.shape[1]);
        continue;
      }
      if (parameter.name == "final_logits_bias") {
        *parameter.tensor = Tensor::zeros(parameter.shape, DType::kFloat32);
        continue;
      }
      return absl::NotFoundError(absl::StrCat(weights_path, ": tensor \"", parameter.name,
                                              "\" is missing (expected shape ",
                                              shape_string(parameter.shape), ")"));
    }
    Tensor& tensor = found->second;
    if (tensor.shape() != parameter.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          weights_path, ": tensor \"", found->first, "\" has shape ", tensor.shape_string(),
          " but config.json implies ", shape_string(parameter.shape)));
    }
    if (!is_float(tensor.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat(weights_path, ": tensor \"", found->first,
                                                     "\" is ", dtype_name(tensor.dtype()),
                                                     "; expected F32, F16 or BF16"));
    }
    *parameter.tensor = tensor.to_float32();
    // The file's 16-bit tensor goes as soon as its float32 copy is made (a name read twice finds
    // the copy), so that loading an F16 or BF16 file peaks near its float32 size, not 1.5x.
    tensor = *parameter.tensor;
    if (absl::Status usable = check_values(*parameter.tensor, parameter.kind);
        !usable.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(weights_path, ": tensor \"", found->first, "\" ", usable.message()));
    }
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
        if (config.positional == PositionalEncoding::kFairseq) {
          tensor = fairseq_sinusoidal_positions(parameter.shape[0], parameter.shape[1]);
        } else if (config.positional == PositionalEncoding::kSinusoidal) {
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
