#include "engine/model_config.h"

#include <cmath>
#include <cstdint>
#include <algorithm>
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

absl::Status unsupported(const std::string& origin, const char* key, const Json& value,
                         const std::string& supported) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": \"", key, "\" = ", json_excerpt(value),
                                                 " is not supported: xlate supports ", supported));
}

// Transformers writes a token id as null when the model has none (bos_token_id, since version
// 5) and eos_token_id as a list when generation stops at several: the ids xlate reads become
// absent (the default stands) or the list's first entry, the model's own end token.
absl::Status normalise_token_ids(Json& json, const std::string& origin) {
  for (const char* key : {"pad_token_id", "unk_token_id", "bos_token_id", "eos_token_id",
                          "decoder_start_token_id", "forced_eos_token_id"}) {
    const auto it = json.find(key);
    if (it == json.end()) continue;
    if (it->is_null()) {
      json.erase(it);
    } else if (it->is_array()) {
      if (it->empty()) return unsupported(origin, key, *it, "an id or a non-empty list of ids");
      *it = Json((*it)[0]);
    }
  }
  return absl::OkStatus();
}

// A boolean key: absent leaves *value; another type is refused.
absl::Status read_bool(const Json& json, const char* key, const std::string& origin,
                       bool* value) {
  const auto it = json.find(key);
  if (it == json.end()) return absl::OkStatus();
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": key \"", key, "\" has the wrong type: ",
                                                   json_excerpt(*it), " (expected true or false)"));
  }
  *value = it->get<bool>();
  return absl::OkStatus();
}

}  // namespace

absl::Status read_suppressed_tokens(const nlohmann::json& json, const std::string& origin,
                                    std::vector<int>* suppressed) {
  const auto it = json.find("bad_words_ids");
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  const char* form = "a list of single-token lists ([[id], ...]): sequences of several tokens "
                     "are not supported";
  if (!it->is_array()) return unsupported(origin, "bad_words_ids", *it, form);
  for (const Json& words : *it) {
    if (!words.is_array() || words.size() != 1 || !words[0].is_number_integer() ||
        words[0].get<int64_t>() < 0 || words[0].get<int64_t>() > 1000000) {
      return unsupported(origin, "bad_words_ids", *it, form);
    }
    suppressed->push_back(words[0].get<int>());
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ModelConfig::FromJson(const std::string& text,
                                                  const std::string& origin) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not a JSON object"));
  }
  ModelConfig config;
  if (auto status = normalise_token_ids(json, origin); !status.ok()) return status;
  std::string positional = "sinusoidal";
  if (const auto type = json.find("model_type"); type != json.end() && *type != "marian") {
    if (*type != "m2m_100") {
      return unsupported(origin, "model_type", *type,
                         "\"marian\" (xlate's own models and Hugging Face MarianMTModel, every "
                         "OPUS-MT model) and \"m2m_100\" (M2M100ForConditionalGeneration: "
                         "M2M100 and NLLB-200)");
    }
    // M2M100's fixed architecture and fairseq's special ids (<s> 0, <pad> 1, </s> 2, <unk> 3;
    // the decoder starts from </s>); config.json may restate the ids.
    config.pre_norm = true;
    positional = "fairseq";
    config.bos_id = 0;
    config.pad_id = 1;
    config.eos_id = config.decoder_start_id = 2;
    config.unk_id = 3;
  }
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
      {"decoder_start_token_id", &config.decoder_start_id},
      {"decoder_vocab_size", &config.decoder_vocab_size}};
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
  } else if (positional == "fairseq") {
    config.positional = PositionalEncoding::kFairseq;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": \"xlate_positional\" is ", json_excerpt(Json(positional)),
        "; expected sinusoidal, learned or fairseq"));
  }
  // Keys that would change the computation in ways the forward does not implement (pre-norm
  // blocks, extra layer norms around the embeddings): refused by name when set.
  for (const char* key : {"normalize_before", "add_final_layer_norm", "normalize_embedding",
                          "layernorm_embedding"}) {
    if (json.contains(key) && json[key] != false) {
      return unsupported(origin, key, json[key],
                         "false only (post-norm blocks without extra layer norms, as the paper "
                         "and Marian)");
    }
  }
  for (const auto& [key, value] :
       {std::pair<const char*, bool*>{"scale_embedding", &config.scale_embedding},
        {"share_encoder_decoder_embeddings", &config.share_embeddings},
        {"tie_word_embeddings", &config.tie_output}}) {
    if (auto status = read_bool(json, key, origin, value); !status.ok()) return status;
  }
  if (const auto activation = json.find("activation_function"); activation != json.end()) {
    if (*activation == "relu") {
      config.activation = FfnActivation::kRelu;
    } else if (*activation == "swish" || *activation == "silu") {
      config.activation = FfnActivation::kSwish;
    } else if (*activation == "gelu") {
      config.activation = FfnActivation::kGelu;
    } else {
      return unsupported(origin, "activation_function", *activation,
                         "\"relu\", \"swish\", \"silu\" and \"gelu\" (exact, erf)");
    }
  }
  if (auto status = read_suppressed_tokens(json, origin, &config.suppressed_tokens);
      !status.ok()) {
    return status;
  }
  if (const auto forced = json.find("forced_eos_token_id"); forced != json.end()) {
    if (!forced->is_number_integer() || forced->get<int64_t>() != config.eos_id) {
      return unsupported(origin, "forced_eos_token_id", *forced,
                         "null or the end token (eos_token_id)");
    }
    config.end_forced_at_limit = true;
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
  Json json = {{"model_type", pre_norm ? "m2m_100" : "marian"},
               {"architectures",
                {pre_norm ? "M2M100ForConditionalGeneration" : "MarianMTModel"}},
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
               {"activation_function", activation == FfnActivation::kRelu    ? "relu"
                                       : activation == FfnActivation::kSwish ? "swish"
                                                                              : "gelu"},
               {"scale_embedding", scale_embedding},
               {"share_encoder_decoder_embeddings", share_embeddings},
               {"tie_word_embeddings", tie_output},
               {"decoder_vocab_size", target_vocab_size()},
               {"pad_token_id", pad_id},
               {"unk_token_id", unk_id},
               {"bos_token_id", bos_id},
               {"eos_token_id", eos_id},
               {"decoder_start_token_id", decoder_start_id},
               {"xlate_positional", positional == PositionalEncoding::kSinusoidal ? "sinusoidal"
                                    : positional == PositionalEncoding::kLearned  ? "learned"
                                                                                   : "fairseq"},
               {"xlate_label_smoothing", label_smoothing},
               {"source_lang", source_lang},
               {"target_lang", target_lang}};
  if (!pre_norm) json["normalize_before"] = false;
  if (end_forced_at_limit) json["forced_eos_token_id"] = eos_id;
  if (!suppressed_tokens.empty()) {
    Json words = Json::array();
    for (int id : suppressed_tokens) words.push_back({id});
    json["bad_words_ids"] = words;
  }
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
  if (decoder_vocab_size < 0 || decoder_vocab_size > 1000000 ||
      (share_embeddings && decoder_vocab_size != 0 && decoder_vocab_size != vocab_size)) {
    return range_error("decoder_vocab_size", decoder_vocab_size,
                       "in [0, 1000000], and vocab_size when share_encoder_decoder_embeddings");
  }
  // The special ids are the decoder's (the source side only appends eos, which a Marian
  // vocabulary gives the same id on both sides).
  const int target_vocabulary = target_vocab_size();
  for (const auto& [key, value] : {std::pair<const char*, int>{"pad_token_id", pad_id},
                                   {"unk_token_id", unk_id},
                                   {"bos_token_id", bos_id},
                                   {"eos_token_id", eos_id},
                                   {"decoder_start_token_id", decoder_start_id}}) {
    if (value < 0 || value >= std::min(vocab_size, target_vocabulary)) {
      return range_error(key, value, "in [0, vocabulary size)");
    }
  }
  for (int id : suppressed_tokens) {
    if (id < 0 || id >= target_vocabulary || id == eos_id) {
      return range_error("bad_words_ids", id, "in [0, target vocabulary size) and not eos");
    }
  }
  return absl::OkStatus();
}

}  // namespace xlate
