#include "engine/model_directory.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
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

// The directory's weight files, open: model.safetensors, or the shards that
// model.safetensors.index.json names (as transformers writes a large model).
struct StoredWeights {
  std::string described;  // the file named in messages
  std::vector<std::unique_ptr<SafetensorsReader>> files;
  std::map<std::string, const SafetensorsReader*> file_of;  // tensor name -> its file
};

// Opens the directory's weight files (reading their headers only). A directory with PyTorch's
// pickles only is pointed to the converter that ships with xlate.
absl::StatusOr<StoredWeights> open_weights(const fs::path& directory) {
  StoredWeights stored;
  const fs::path single = directory / "model.safetensors";
  const fs::path index = directory / "model.safetensors.index.json";
  std::set<std::string> shards;
  if (fs::exists(single) || !fs::exists(index)) {
    stored.described = single.string();
    if (!fs::exists(single) && (fs::exists(directory / "pytorch_model.bin") ||
                                fs::exists(directory / "pytorch_model.bin.index.json"))) {
      return absl::NotFoundError(absl::StrCat(
          single.string(), " is missing; the directory holds PyTorch's pytorch_model.bin, which "
          "xlate does not read (it is a pickle, which can run code): convert it once with "
          "`python3 scripts/convert_pytorch_to_safetensors.py ", directory.string(), "`"));
    }
    shards.insert(single.filename().string());
  } else {
    stored.described = index.string();
    auto text = read_text(index.string());
    if (!text.ok()) return text.status();
    const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object() || !json.contains("weight_map") ||
        !json["weight_map"].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index.string(), ": not a JSON object with a \"weight_map\" object"));
    }
    for (const auto& [name, shard] : json["weight_map"].items()) {
      if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat(index.string(), ": tensor \"", name, "\" maps to ", json_excerpt(shard),
                         "; expected the file name of a shard in the same directory"));
      }
      shards.insert(shard.get<std::string>());
    }
  }
  for (const std::string& shard : shards) {
    auto file = SafetensorsReader::Open((directory / shard).string());
    if (!file.ok()) return file.status();
    for (const std::string& name : (*file)->names()) stored.file_of.emplace(name, file->get());
    stored.files.push_back(*std::move(file));
  }
  return stored;
}

}  // namespace

absl::StatusOr<LoadedModel> load_model_directory(const std::string& directory) {
  auto config = read_model_config(directory);
  if (!config.ok()) return config.status();
  LoadedModel model{*std::move(config), {}};
  if (absl::Status read = read_model_weights(directory, model.config, model.weights); !read.ok()) {
    return read;
  }
  return model;
}

absl::StatusOr<ModelConfig> read_model_config(const std::string& directory) {
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

  return *std::move(config);
}

absl::Status read_model_weights(const std::string& directory, const ModelConfig& config,
                                TransformerWeights& weights, const ParameterReady& ready) {
  auto stored = open_weights(fs::path(directory));
  if (!stored.ok()) return stored.status();
  const std::string& weights_path = stored->described;
  for (NamedParameter& parameter : named_parameters(weights, config)) {
    auto found = stored->file_of.find(parameter.name);
    for (size_t a = 0; found == stored->file_of.end() && a < parameter.aliases.size(); ++a) {
      found = stored->file_of.find(parameter.aliases[a]);
    }
    if (found == stored->file_of.end()) {
      // What transformers does not store: Marian's sinusoids (computed at load since 2020),
      // M2M100's (never stored) and a zero logits bias (M2M100 has none).
      if (parameter.kind == ParameterKind::kPositions &&
          config.positional != PositionalEncoding::kLearned) {
        *parameter.tensor =
            config.positional == PositionalEncoding::kFairseq
                ? fairseq_sinusoidal_positions(parameter.shape[0], parameter.shape[1])
                : marian_sinusoidal_positions(parameter.shape[0], parameter.shape[1]);
      } else if (parameter.name == "final_logits_bias") {
        *parameter.tensor = Tensor::zeros(parameter.shape, DType::kFloat32);
      } else {
        return absl::NotFoundError(absl::StrCat(weights_path, ": tensor \"", parameter.name,
                                                "\" is missing (expected shape ",
                                                shape_string(parameter.shape), ")"));
      }
      if (ready) ready(parameter);
      continue;
    }
    const std::string& name = found->first;
    const SafetensorsReader& file = *found->second;
    if (file.shape(name) != parameter.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor \"", name, "\" has shape ", shape_string(file.shape(name)),
          " but config.json implies ", shape_string(parameter.shape)));
    }
    if (!is_float(file.dtype(name))) {
      return absl::InvalidArgumentError(absl::StrCat(file.path(), ": tensor \"", name, "\" is ",
                                                     dtype_name(file.dtype(name)),
                                                     "; expected F32, F16 or BF16"));
    }
    // The stored bytes of one tensor at a time: an F16 or BF16 tensor goes once its float32
    // copy is made.
    absl::StatusOr<Tensor> tensor = file.Read(name);
    if (!tensor.ok()) return tensor.status();
    *parameter.tensor = tensor->to_float32();
    *tensor = Tensor();
    if (absl::Status usable = check_values(*parameter.tensor, parameter.kind); !usable.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.path(), ": tensor \"", name, "\" ", usable.message()));
    }
    if (ready) ready(parameter);
  }
  for (const auto& file : stored->files) {
    if (absl::Status unchanged = file->CheckUnchanged(); !unchanged.ok()) return unchanged;
  }
  return absl::OkStatus();
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
