#include "engine/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/json_fields.h"
#include "engine/sentencepiece_wrapper.h"

namespace xlate {

namespace {

namespace fs = std::filesystem;

// A Marian vocabulary (vocab.json): the model's id of each piece, and back.
struct PieceVocabulary {
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> pieces;
  int unk = 0;
  std::vector<bool> special;  // per id: eos, pad or unk (dropped when decoding)
};

absl::StatusOr<std::string> read_file(const fs::path& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// tokenizer_config.json's name of a special token: a string, or {"content": ...} (an
// AddedToken as transformers writes it); `fallback` when absent.
std::string special_token(const nlohmann::json& config, const char* key, const char* fallback) {
  const auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return fallback;
}

absl::StatusOr<PieceVocabulary> read_vocabulary(const fs::path& path,
                                                const nlohmann::json& tokenizer_config) {
  auto text = read_file(path);
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || json.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": not a JSON object of pieces and their ids"));
  }
  PieceVocabulary vocabulary;
  vocabulary.pieces.resize(json.size());
  std::vector<bool> seen(json.size());
  for (const auto& [piece, id] : json.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= static_cast<int64_t>(json.size()) || seen[id.get<size_t>()]) {
      return absl::InvalidArgumentError(absl::StrCat(
          path.string(), ": piece \"", piece, "\" has id ", json_excerpt(id), "; the ", json.size(),
          " pieces must have the ids 0 to ", json.size() - 1, ", each once"));
    }
    seen[id.get<size_t>()] = true;
    vocabulary.pieces[id.get<size_t>()] = piece;
    vocabulary.ids.emplace(piece, id.get<int>());
  }
  vocabulary.special.assign(json.size(), false);
  for (const auto& [key, fallback] : {std::pair<const char*, const char*>{"unk_token", "<unk>"},
                                      {"eos_token", "</s>"},
                                      {"pad_token", "<pad>"}}) {
    const std::string name = special_token(tokenizer_config, key, fallback);
    const auto found = vocabulary.ids.find(name);
    if (found == vocabulary.ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path.string(), ": has no piece \"", name, "\" (the ", key, ")"));
    }
    vocabulary.special[static_cast<size_t>(found->second)] = true;
    if (key == std::string("unk_token")) vocabulary.unk = found->second;
  }
  return vocabulary;
}

absl::StatusOr<nlohmann::json> read_json_object(const fs::path& path) {
  auto text = read_file(path);
  if (!text.ok()) return text.status();
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a JSON object"));
  }
  return json;
}

// The language code of an M2M100 or NLLB language token: "__de__" -> "de" (M2M100),
// "deu_Latn" -> "deu_Latn" (NLLB: ISO 639-3, "_", an ISO 15924 script); "" for another token.
std::string language_code_of(const std::string& token) {
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  if (token.size() > 4 && token.rfind("__", 0) == 0 &&
      token.compare(token.size() - 2, 2, "__") == 0) {
    const std::string code = token.substr(2, token.size() - 4);
    if (std::all_of(code.begin(), code.end(), lower)) return code;
    return "";
  }
  if (token.size() == 8 && lower(token[0]) && lower(token[1]) && lower(token[2]) &&
      token[3] == '_' && token[4] >= 'A' && token[4] <= 'Z' && lower(token[5]) &&
      lower(token[6]) && lower(token[7])) {
    return token;
  }
  return "";
}

std::unique_ptr<spm::Backend> load_processor(const std::string& path, absl::Status* status) {
  std::string error;
  std::unique_ptr<spm::Backend> processor = spm::create_backend(&error);
  if (!processor) {
    *status = absl::FailedPreconditionError(error);
    return nullptr;
  }
  error = processor->load(path);
  if (!error.empty()) {
    *status = absl::NotFoundError(path + ": cannot load the SentencePiece model: " + error);
    return nullptr;
  }
  return processor;
}

// MarianTokenizer's language code: a text that starts with ">>" and has a "<<" after it (at
// least one character between) begins with one piece, up to and including that first "<<";
// SentencePiece cuts the rest. Returns the code's length in bytes, 0 when there is none.
size_t language_code_length(const std::string& text) {
  if (text.rfind(">>", 0) != 0) return 0;
  const size_t close = text.find("<<", 3);
  return close == std::string::npos ? 0 : close + 2;
}

// M2M100Tokenizer's language codes by its "language_codes" argument, in the order of its
// language tokens, which follow the dictionary: fairseq's lists for M2M-100 (100 languages,
// transformers' default) and WMT21's multilingual models.
const std::vector<std::string>* m2m100_language_list(const std::string& name) {
  static const std::vector<std::string> kM2M100 = {
      "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy",
      "da", "de", "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu",
      "ha", "he", "hi", "hr", "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja", "jv", "ka",
      "kk", "km", "kn", "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr",
      "ms", "my", "ne", "nl", "no", "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd",
      "si", "sk", "sl", "so", "sq", "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn", "tr",
      "uk", "ur", "uz", "vi", "wo", "xh", "yi", "yo", "zh", "zu"};
  static const std::vector<std::string> kWmt21 = {"en", "ha", "is", "ja", "cs", "ru", "zh", "de"};
  if (name == "m2m100") return &kM2M100;
  if (name == "wmt21") return &kWmt21;
  return nullptr;
}

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<spm::Backend> processor;         // the source side (both, without `target`)
  std::unique_ptr<spm::Backend> target_processor;  // Marian: target.spm
  // Marian: the model's ids of the pieces; without them the SentencePiece ids are the model's.
  std::optional<PieceVocabulary> source_vocabulary;
  std::optional<PieceVocabulary> target_vocabulary;  // the source's unless separate_vocabs
  // The codes of the vocabulary's language tokens (">>deu<<" -> "deu", "__de__" -> "de",
  // "deu_Latn"), and their ids, found once at load: every request of a multilingual model looks
  // them up.
  LanguageTokenStyle style = LanguageTokenStyle::kNone;
  // NllbTokenizer's text handling is tokenizers' Metaspace, not SentencePiece's (encode, decode).
  bool metaspace = false;
  std::vector<std::string> language_codes;
  std::unordered_map<std::string, int> language_ids;

  void add_language(std::string code, int id) {
    if (language_ids.emplace(code, id).second) language_codes.push_back(std::move(code));
  }

  const spm::Backend& target() const {
    return target_processor ? *target_processor : *processor;
  }
  const PieceVocabulary& target_vocab() const {
    return target_vocabulary ? *target_vocabulary : *source_vocabulary;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadDirectory(const std::string& directory) {
  const fs::path dir(directory);
  if (fs::exists(dir / "spm.model")) return Load((dir / "spm.model").string());
  nlohmann::json tokenizer_config = nlohmann::json::object();
  if (fs::exists(dir / "tokenizer_config.json")) {
    auto config = read_json_object(dir / "tokenizer_config.json");
    if (!config.ok()) return config.status();
    tokenizer_config = *std::move(config);
  }
  if (fs::exists(dir / "sentencepiece.bpe.model")) return LoadM2M100(dir, tokenizer_config);
  const fs::path source = dir / "source.spm", target = dir / "target.spm",
                 vocab = dir / "vocab.json";
  if (!fs::exists(source) || !fs::exists(target) || !fs::exists(vocab)) {
    return absl::NotFoundError(absl::StrCat(
        directory, ": no tokenizer: a model directory holds spm.model (xlate's own), "
                   "source.spm, target.spm and vocab.json (Hugging Face Marian, OPUS-MT) or "
                   "sentencepiece.bpe.model (M2M100, with vocab.json; NLLB-200)"));
  }
  auto impl = std::make_unique<Impl>();
  absl::Status status;
  impl->processor = load_processor(source.string(), &status);
  if (!impl->processor) return status;
  impl->target_processor = load_processor(target.string(), &status);
  if (!impl->target_processor) return status;
  auto source_vocabulary = read_vocabulary(vocab, tokenizer_config);
  if (!source_vocabulary.ok()) return source_vocabulary.status();
  impl->source_vocabulary = *std::move(source_vocabulary);
  for (size_t id = 0; id < impl->source_vocabulary->pieces.size(); ++id) {
    const std::string& piece = impl->source_vocabulary->pieces[id];
    if (piece.size() > 4 && piece.rfind(">>", 0) == 0 &&
        piece.compare(piece.size() - 2, 2, "<<") == 0) {
      impl->add_language(piece.substr(2, piece.size() - 4), static_cast<int>(id));
    }
  }
  if (!impl->language_codes.empty()) impl->style = LanguageTokenStyle::kTargetBeforeSource;
  const auto separate = tokenizer_config.find("separate_vocabs");
  if (separate != tokenizer_config.end() && *separate == true) {
    auto target_vocabulary = read_vocabulary(dir / "target_vocab.json", tokenizer_config);
    if (!target_vocabulary.ok()) return target_vocabulary.status();
    impl->target_vocabulary = *std::move(target_vocabulary);
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadM2M100(
    const std::filesystem::path& dir, const nlohmann::json& tokenizer_config) {
  auto impl = std::make_unique<Impl>();
  absl::Status status;
  impl->processor = load_processor((dir / "sentencepiece.bpe.model").string(), &status);
  if (!impl->processor) return status;
  PieceVocabulary vocabulary;
  if (fs::exists(dir / "vocab.json")) {
    // M2M100Tokenizer: vocab.json gives the pieces' ids (fairseq's dictionary).
    auto read = read_vocabulary(dir / "vocab.json", tokenizer_config);
    if (!read.ok()) return read.status();
    vocabulary = *std::move(read);
  } else {
    // NllbTokenizer: fairseq's dictionary is the SentencePiece model's pieces shifted by one,
    // after <s> 0, <pad> 1, </s> 2, <unk> 3 (SentencePiece's own <unk>, <s>, </s> at 0-2 map
    // to fairseq's).
    const int pieces = impl->processor->size();
    vocabulary.pieces = {"<s>", "<pad>", "</s>", "<unk>"};
    for (int id = 3; id < pieces; ++id) vocabulary.pieces.push_back(impl->processor->id_to_piece(id));
    for (size_t id = 0; id < vocabulary.pieces.size(); ++id) {
      vocabulary.ids.emplace(vocabulary.pieces[id], static_cast<int>(id));
    }
    vocabulary.unk = 3;
    impl->metaspace = true;
    vocabulary.special.assign(vocabulary.pieces.size(), false);
    for (int id = 0; id < 4; ++id) vocabulary.special[id] = true;
  }
  // The language tokens (and <mask>) come after the dictionary, as tokens added to it:
  // tokenizer.json's "added_tokens" or tokenizer_config.json's "added_tokens_decoder" name them
  // with their ids.
  std::vector<std::pair<int, std::string>> added;
  if (fs::exists(dir / "tokenizer.json")) {
    auto json = read_json_object(dir / "tokenizer.json");
    if (!json.ok()) return json.status();
    if (const auto tokens = json->find("added_tokens"); tokens != json->end() && tokens->is_array()) {
      for (const nlohmann::json& token : *tokens) {
        if (token.is_object() && token.contains("id") && token["id"].is_number_integer() &&
            token.contains("content") && token["content"].is_string()) {
          added.emplace_back(token["id"].get<int>(), token["content"].get<std::string>());
        }
      }
    }
  }
  if (const auto decoder = tokenizer_config.find("added_tokens_decoder");
      decoder != tokenizer_config.end() && decoder->is_object()) {
    for (const auto& [id, token] : decoder->items()) {
      int number = -1;
      if (absl::SimpleAtoi(id, &number) && token.is_object() && token.contains("content") &&
          token["content"].is_string()) {
        added.emplace_back(number, token["content"].get<std::string>());
      }
    }
  }
  for (const auto& [id, content] : added) {
    if (id < 0 || id > 2000000) {
      return absl::InvalidArgumentError(absl::StrCat(
          (dir / "tokenizer_config.json").string(), ": added token \"", content, "\" has id ", id,
          ", outside [0, 2000000]"));
    }
    if (id < static_cast<int>(vocabulary.pieces.size())) continue;  // a dictionary piece
    vocabulary.pieces.resize(static_cast<size_t>(id) + 1);
    vocabulary.special.resize(static_cast<size_t>(id) + 1, true);
    vocabulary.pieces[id] = content;
    vocabulary.special[id] = true;
    vocabulary.ids.emplace(content, id);
    std::string code = language_code_of(content);
    if (!code.empty()) impl->add_language(std::move(code), id);
  }
  if (impl->language_codes.empty() && fs::exists(dir / "vocab.json")) {
    // Named nowhere (transformers 5's save_pretrained of an M2M100Tokenizer made from its files
    // writes no tokenizer.json, and only <s> <pad> </s> <unk> in "added_tokens_decoder"): as
    // M2M100Tokenizer does, "language_codes" (default "m2m100") names fairseq's list, whose
    // tokens "__xx__" follow the dictionary in its order.
    std::string list_name = "m2m100";
    if (const auto named = tokenizer_config.find("language_codes");
        named != tokenizer_config.end()) {
      if (!named->is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            (dir / "tokenizer_config.json").string(), ": \"language_codes\" is ",
            json_excerpt(*named), "; expected \"m2m100\" or \"wmt21\""));
      }
      list_name = named->get<std::string>();
    }
    const std::vector<std::string>* codes = m2m100_language_list(list_name);
    if (codes == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          (dir / "tokenizer_config.json").string(), ": \"language_codes\" is ",
          json_excerpt(nlohmann::json(list_name)), "; expected \"m2m100\" or \"wmt21\""));
    }
    const int first = static_cast<int>(vocabulary.pieces.size());
    for (size_t i = 0; i < codes->size(); ++i) {
      const int id = first + static_cast<int>(i);
      const std::string token = "__" + (*codes)[i] + "__";
      vocabulary.pieces.push_back(token);
      vocabulary.special.push_back(true);
      vocabulary.ids.emplace(token, id);
      impl->add_language((*codes)[i], id);
    }
  }
  if (impl->language_codes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir.string(), ": an M2M100/NLLB tokenizer without language tokens: neither "
        "tokenizer.json's \"added_tokens\" nor tokenizer_config.json's "
        "\"added_tokens_decoder\" names tokens such as \"__en__\" or \"eng_Latn\""));
  }
  impl->style = LanguageTokenStyle::kSourceAndForcedTarget;
  impl->source_vocabulary = std::move(vocabulary);
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  absl::Status status;
  impl->processor = load_processor(path, &status);
  if (!impl->processor) return status;
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::encode(const std::string& text) const {
  return encode_side(text, /*target=*/false);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::encode_target(const std::string& text) const {
  return encode_side(text, /*target=*/true);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::encode_side(const std::string& text,
                                                            bool target) const {
  if (impl_->source_vocabulary) {
    const PieceVocabulary& vocabulary =
        target ? impl_->target_vocab() : *impl_->source_vocabulary;
    auto id_of_piece = [&](const std::string& piece) {
      const auto found = vocabulary.ids.find(piece);
      return found == vocabulary.ids.end() ? vocabulary.unk : found->second;
    };
    std::vector<int32_t> ids;
    // MarianTokenizer's ">>xxx<<" on the source side (M2M100's and NLLB's tokenizers cut it as
    // text).
    const size_t code =
        target || impl_->style == LanguageTokenStyle::kSourceAndForcedTarget
            ? 0
            : language_code_length(text);
    if (code > 0) ids.push_back(id_of_piece(text.substr(0, code)));
    std::vector<std::string> pieces;
    const spm::Backend& processor = target ? impl_->target() : *impl_->processor;
    const std::string error = processor.encode_pieces(text.substr(code), &pieces);
    if (!error.empty()) return absl::InvalidArgumentError("tokenizer: " + error);
    for (const std::string& piece : pieces) ids.push_back(id_of_piece(piece));
    // NllbTokenizer (tokenizers' Metaspace) keeps a text's trailing space as a lone "▁" piece,
    // which SentencePiece drops.
    if (impl_->metaspace && !text.empty() && (text.back() == ' ' || text.back() == '\t')) {
      ids.push_back(id_of_piece("\xE2\x96\x81"));
    }
    return ids;
  }
  std::vector<int> ids;
  const std::string error = impl_->processor->encode(text, &ids);
  if (!error.empty()) return absl::InvalidArgumentError("tokenizer: " + error);
  return std::vector<int32_t>(ids.begin(), ids.end());
}

absl::StatusOr<std::string> Tokenizer::decode(const std::vector<int32_t>& ids) const {
  if (impl_->source_vocabulary) {
    const PieceVocabulary& vocabulary = impl_->target_vocab();
    std::vector<std::string> pieces;
    for (int32_t id : ids) {
      // M2M100's and NLLB's models have a few embedding rows past the tokenizer's tokens: such
      // an id has no text.
      if (impl_->style == LanguageTokenStyle::kSourceAndForcedTarget && id >= 0 &&
          id >= static_cast<int32_t>(vocabulary.pieces.size())) {
        continue;
      }
      if (id < 0 || id >= static_cast<int32_t>(vocabulary.pieces.size())) {
        return absl::InvalidArgumentError(absl::StrCat("tokenizer: id ", id,
                                                       " is outside the vocabulary of ",
                                                       vocabulary.pieces.size()));
      }
      if (!vocabulary.special[static_cast<size_t>(id)]) pieces.push_back(vocabulary.pieces[id]);
    }
    if (impl_->metaspace) {
      // The pieces joined, "▁" read as a space, and one leading space dropped; nothing else is
      // trimmed.
      std::string text = absl::StrReplaceAll(absl::StrJoin(pieces, ""), {{"\xE2\x96\x81", " "}});
      if (!text.empty() && text.front() == ' ') text.erase(0, 1);
      return text;
    }
    std::string text;
    const std::string error = impl_->target().decode_pieces(pieces, &text);
    if (!error.empty()) return absl::InternalError("tokenizer: " + error);
    // As MarianTokenizer: what SentencePiece left of its space marks (in pieces it does not
    // know) becomes spaces, and the text is trimmed.
    text = absl::StrReplaceAll(text, {{"\xE2\x96\x81", " "}});
    return std::string(absl::StripAsciiWhitespace(text));
  }
  std::vector<int> pieces;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError("tokenizer: id " + std::to_string(id) +
                                        " is outside the vocabulary of " +
                                        std::to_string(vocab_size()));
    }
    if (!impl_->processor->is_control(id)) pieces.push_back(id);
  }
  std::string text;
  const std::string error = impl_->processor->decode(pieces, &text);
  if (!error.empty()) return absl::InternalError("tokenizer: " + error);
  return text;
}

int Tokenizer::vocab_size() const {
  return impl_->source_vocabulary ? static_cast<int>(impl_->source_vocabulary->pieces.size())
                                  : impl_->processor->size();
}

int Tokenizer::target_vocab_size() const {
  return impl_->source_vocabulary ? static_cast<int>(impl_->target_vocab().pieces.size())
                                  : impl_->processor->size();
}

int Tokenizer::id_of(const std::string& piece) const {
  if (!impl_->source_vocabulary) return impl_->processor->piece_to_id(piece);
  const PieceVocabulary& vocabulary = impl_->target_vocab();
  const auto found = vocabulary.ids.find(piece);
  return found == vocabulary.ids.end() ? vocabulary.unk : found->second;
}

std::string Tokenizer::piece_of(int id) const {
  if (!impl_->source_vocabulary) return impl_->processor->id_to_piece(id);
  const PieceVocabulary& vocabulary = impl_->target_vocab();
  return id >= 0 && id < static_cast<int>(vocabulary.pieces.size()) ? vocabulary.pieces[id] : "";
}

std::string Tokenizer::source_piece_of(int id) const {
  if (!impl_->source_vocabulary) return impl_->processor->id_to_piece(id);
  const PieceVocabulary& vocabulary = *impl_->source_vocabulary;
  return id >= 0 && id < static_cast<int>(vocabulary.pieces.size()) ? vocabulary.pieces[id] : "";
}

std::vector<std::string> Tokenizer::languages() const { return impl_->language_codes; }

LanguageTokenStyle Tokenizer::language_style() const { return impl_->style; }

int Tokenizer::language_token(const std::string& code) const {
  const auto found = impl_->language_ids.find(code);
  return found == impl_->language_ids.end() ? -1 : found->second;
}

size_t Tokenizer::whole_words(const std::vector<int32_t>& ids) const {
  static constexpr char kWordStart[] = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  for (size_t i = ids.size(); i-- > 1;) {
    if (piece_of(ids[i]).rfind(kWordStart, 0) == 0) return i;
  }
  return 0;
}

absl::Status train_tokenizer(const TokenizerTrainingOptions& options) {
  if (options.input_files.empty()) return absl::InvalidArgumentError("no input text files given");
  if (options.vocab_size < 8) {
    return absl::InvalidArgumentError("vocab_size " + std::to_string(options.vocab_size) +
                                      " is too small; it must be at least 8");
  }
  std::ostringstream args;
  args << "--input=";
  for (size_t i = 0; i < options.input_files.size(); ++i) {
    args << (i ? "," : "") << options.input_files[i];
  }
  args << " --model_prefix=" << options.model_prefix << " --vocab_size=" << options.vocab_size
       << " --model_type=" << options.model_type << " --character_coverage=1.0"
       << " --hard_vocab_limit=false --input_sentence_size=" << options.max_sentences
       << " --shuffle_input_sentence=true --pad_id=" << options.pad_id
       << " --unk_id=" << options.unk_id << " --bos_id=" << options.bos_id
       << " --eos_id=" << options.eos_id << " --minloglevel=2";
  std::string error;
  const std::unique_ptr<spm::Backend> backend = spm::create_backend(&error);
  if (!backend) return absl::FailedPreconditionError(error);
  error = backend->train(args.str());
  if (!error.empty()) return absl::InvalidArgumentError("SentencePiece training failed: " + error);
  return absl::OkStatus();
}

}  // namespace xlate
