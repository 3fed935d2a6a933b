#include "engine/model_config.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/json_fields.h"

namespace xlate {
namespace {

using Json = nlohmann::json;

absl::Status range_error(const char* key, double value, const char* limit) {
  return absl::InvalidArgumentError(absl::StrCat("config key \"", key, "\" = ", value,
                                                 " is out of range: it must be ", limit));
}

}  // namespace

absl::StatusOr<ModelConfig> ModelConfig::FromJson(const std::string& text,
                                                  const std::string& origin) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not a JSON object"));
  }
  ModelConfig config;
  std::string positional = "sinusoidal";
  const std::pair<const char*, int*> integers[] = {
      {"vocab_size", &config.vocab_size},
      {"d_model", &config.d_model},
      {"encoder_layers", &config.encoder_layers},
      {"decoder_layers", &config.decoder_layers},
      {"encoder_attention_heads", &config.encoder_heads},
      {"decoder_attention_heads", &config.decoder_heads},
      {"encoder_ffn_dim", &config.encoder_ffn_dim},
      {"decoder_ffn_dim", &config.decoder_ffn_dim},
      {"max_position_embeddings", &config.max_positions},
      {"xlate_d_k", &config.d_k},
      {"xlate_d_v", &config.d_v},
      {"pad_token_id", &config.pad_id},
      {"unk_token_id", &config.unk_id},
      {"bos_token_id", &config.bos_id},
      {"eos_token_id", &config.eos_id},
      {"decoder_start_token_id", &config.decoder_start_id}};
  for (const auto& [key, value] : integers) {
    int64_t number = *value;
    absl::Status status = read_json_integer(
        json, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
        "a 32-bit integer",
        key == std::string("vocab_size") ? JsonField::kRequired : JsonField::kOptional, origin,
        &number);
    if (!status.ok()) return status;
    *value = static_cast<int>(number);
  }
  const std::pair<const char*, float*> floats[] = {
      {"dropout", &config.dropout},
      {"attention_dropout", &config.attention_dropout},
      {"activation_dropout", &config.activation_dropout},
      {"xlate_label_smoothing", &config.label_smoothing}};
  for (const auto& [key, value] : floats) {
    double number = *value;
    absl::Status status = read_json_number(
        json, key, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max(),
        "a number within float range", JsonField::kOptional, origin, &number);
    if (!status.ok()) return status;
    *value = static_cast<float>(number);
  }
  for (const auto& [key, value] : {std::pair<const char*, std::string*>{"source_lang",
                                                                        &config.source_lang},
                                   {"target_lang", &config.target_lang},
                                   {"xlate_positional", &positional}}) {
    absl::Status status = read_json_string(json, key, JsonField::kOptional, origin, value);
    if (!status.ok()) return status;
  }
  if (positional == "sinusoidal") {
    config.positional = PositionalEncoding::kSinusoidal;
  } else if (positional == "learned") {
    config.positional = PositionalEncoding::kLearned;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": \"xlate_positional\" is \"", positional, "\"; expected sinusoidal or learned"));
  }
  for (const auto& [key, expected] : {std::pair<const char*, bool>{"normalize_before", false},
                                      {"scale_embedding", true}}) {
    if (json.contains(key) && json[key] != expected) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": \"", key, "\" must be ",
                                                     expected ? "true" : "false",
                                                     " (xlate implements the paper's model)"));
    }
  }
  if (auto status = config.Validate(); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", status.message()));
  }
  return config;
}

absl::StatusOr<ModelConfig> ModelConfig::Preset(const std::string& name) {
  ModelConfig config;
  if (name == "base") return config;
  if (name == "big") {
    config.d_model = 1024;
    config.encoder_heads = config.decoder_heads = 16;
    config.encoder_ffn_dim = config.decoder_ffn_dim = 4096;
    config.dropout = 0.3f;
    return config;
  }
  if (name == "tiny") {
    config.d_model = 64;
    config.encoder_layers = config.decoder_layers = 2;
    config.encoder_heads = config.decoder_heads = 4;
    config.encoder_ffn_dim = config.decoder_ffn_dim = 256;
    config.max_positions = 256;
    return config;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown preset \"", name, "\"; expected tiny, base or big"));
}

std::string ModelConfig::ToJson() const {
  Json json = {{"model_type", "marian"},
               {"architectures", {"MarianMTModel"}},
               {"vocab_size", vocab_size},
               {"d_model", d_model},
               {"encoder_layers", encoder_layers},
               {"decoder_layers", decoder_layers},
               {"encoder_attention_heads", encoder_heads},
               {"decoder_attention_heads", decoder_heads},
               {"encoder_ffn_dim", encoder_ffn_dim},
               {"decoder_ffn_dim", decoder_ffn_dim},
               {"max_position_embeddings", max_positions},
               {"xlate_d_k", d_k},
               {"xlate_d_v", d_v},
               {"dropout", dropout},
               {"attention_dropout", attention_dropout},
               {"activation_dropout", activation_dropout},
               {"activation_function", "relu"},
               {"scale_embedding", true},
               {"normalize_before", false},
               {"share_encoder_decoder_embeddings", true},
               {"tie_word_embeddings", true},
               {"pad_token_id", pad_id},
               {"unk_token_id", unk_id},
               {"bos_token_id", bos_id},
               {"eos_token_id", eos_id},
               {"decoder_start_token_id", decoder_start_id},
               {"forced_eos_token_id", eos_id},
               {"xlate_positional",
                positional == PositionalEncoding::kSinusoidal ? "sinusoidal" : "learned"},
               {"xlate_label_smoothing", label_smoothing},
               {"source_lang", source_lang},
               {"target_lang", target_lang}};
  return json.dump(2) + "\n";
}

absl::Status ModelConfig::Validate() const {
  if (vocab_size < 4 || vocab_size > 1000000) {
    return range_error("vocab_size", vocab_size, "in [4, 1000000]");
  }
  if (d_model < 1 || d_model > 16384) return range_error("d_model", d_model, "in [1, 16384]");
  for (const auto& [key, value] : {std::pair<const char*, int>{"encoder_layers", encoder_layers},
                                   {"decoder_layers", decoder_layers}}) {
    if (value < 1 || value > 64) return range_error(key, value, "in [1, 64]");
  }
  for (const auto& [key, value] :
       {std::pair<const char*, int>{"encoder_attention_heads", encoder_heads},
        {"decoder_attention_heads", decoder_heads}}) {
    if (value < 1 || value > 1024) return range_error(key, value, "in [1, 1024]");
    if ((d_k == 0 || d_v == 0) && d_model % value != 0) {
      return range_error(key, value,
                         "a divisor of d_model (or set xlate_d_k and xlate_d_v explicitly)");
    }
  }
  for (const auto& [key, value] : {std::pair<const char*, int>{"encoder_ffn_dim", encoder_ffn_dim},
                                   {"decoder_ffn_dim", decoder_ffn_dim}}) {
    if (value < 1 || value > 65536) return range_error(key, value, "in [1, 65536]");
  }
  for (const auto& [key, value] :
       {std::pair<const char*, int>{"xlate_d_k", d_k}, {"xlate_d_v", d_v}}) {
    if (value < 0 || value > 4096) return range_error(key, value, "in [0, 4096] (0 = d_model / heads)");
  }
  if (max_positions < 2 || max_positions > 65536) {
    return range_error("max_position_embeddings", max_positions, "in [2, 65536]");
  }
  for (const auto& [key, value] : {std::pair<const char*, float>{"dropout", dropout},
                                   {"attention_dropout", attention_dropout},
                                   {"activation_dropout", activation_dropout},
                                   {"xlate_label_smoothing", label_smoothing}}) {
    if (!(value >= 0.f && value < 1.f)) return range_error(key, value, "in [0, 1)");
  }
  for (const auto& [key, value] : {std::pair<const char*, int>{"pad_token_id", pad_id},
                                   {"unk_token_id", unk_id},
                                   {"bos_token_id", bos_id},
                                   {"eos_token_id", eos_id},
                                   {"decoder_start_token_id", decoder_start_id}}) {
    if (value < 0 || value >= vocab_size) return range_error(key, value, "in [0, vocab_size)");
  }
  return absl::OkStatus();
}

}  // namespace xlate
