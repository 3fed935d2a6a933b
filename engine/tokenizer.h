// The vocabulary of a model, behind Abseil statuses: xlate's own, one SentencePiece model
// (spm.model) whose ids are the model's for both languages; or Hugging Face Marian's, as
// MarianTokenizer reads it: SentencePiece models for each side (source.spm, target.spm) that
// only cut text into pieces, and vocab.json (plus target_vocab.json with separate
// vocabularies) that gives each piece the model's id (a piece it lacks is <unk>).
// SentencePiece itself is reached only through sentencepiece_wrapper.h (see there why).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"

namespace xlate {

// How a multilingual vocabulary's language tokens are used. kTargetBeforeSource: OPUS-MT's
// multilingual Marian models start the source with the target language's token (">>deu<<").
// kSourceAndForcedTarget: M2M100 and NLLB-200 start the source with its own language's token
// ("__en__", "eng_Latn") and force the target language's token as the first output token.
enum class LanguageTokenStyle { kNone, kTargetBeforeSource, kSourceAndForcedTarget };

class Tokenizer {
 public:
  // One SentencePiece model (spm.model) for both sides.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  // A model directory's tokenizer: spm.model, Hugging Face Marian's files, or M2M100's
  // (sentencepiece.bpe.model + vocab.json) or NLLB's (sentencepiece.bpe.model, whose ids are
  // fairseq's: the SentencePiece ids shifted by one after <s> <pad> </s> <unk>), each with the
  // language tokens that tokenizer.json or tokenizer_config.json adds.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> LoadDirectory(const std::string& directory);
  ~Tokenizer();

  // Source piece ids of `text`, without BOS/EOS (the caller adds the model's special ids). A
  // Marian vocabulary's language token at the start (">>deu<< text") is one piece, as
  // MarianTokenizer cuts it.
  absl::StatusOr<std::vector<int32_t>> encode(const std::string& text) const;
  // Target piece ids of `text` (a translation's forced start: TranslateRequest.target_prefix),
  // cut as the target side's tokenizer cuts (Marian: target.spm and the target vocabulary).
  absl::StatusOr<std::vector<int32_t>> encode_target(const std::string& text) const;
  // Detokenised text of target ids; special ids (pad, bos, eos; a Marian vocabulary's <unk>)
  // are dropped.
  absl::StatusOr<std::string> decode(const std::vector<int32_t>& ids) const;
  // How many of `ids` make whole words: those before the last piece that starts a word
  // (SentencePiece's "▁"), whose word may still grow. decode() of them is a prefix of decode()
  // of any continuation of `ids` (streaming shows no half words).
  size_t whole_words(const std::vector<int32_t>& ids) const;
  int vocab_size() const;         // the source side's
  int target_vocab_size() const;
  int id_of(const std::string& piece) const;  // target id; unk id when absent
  std::string piece_of(int id) const;         // a target id's piece
  std::string source_piece_of(int id) const;
  // A multilingual vocabulary's languages: the codes of its language tokens (">>deu<<" ->
  // "deu", "__de__" -> "de", "deu_Latn"); empty for a model of one language pair.
  std::vector<std::string> languages() const;
  // How those tokens choose the languages (engine/target_language.h).
  LanguageTokenStyle language_style() const;
  // The id of the language token of `code` ("deu"), or -1 when the vocabulary has none.
  int language_token(const std::string& code) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  absl::StatusOr<std::vector<int32_t>> encode_side(const std::string& text, bool target) const;
  static absl::StatusOr<std::unique_ptr<Tokenizer>> LoadM2M100(
      const std::filesystem::path& directory, const nlohmann::json& tokenizer_config);
  std::unique_ptr<Impl> impl_;
};

struct TokenizerTrainingOptions {
  std::vector<std::string> input_files;  // plain text, one sentence per line
  std::string model_prefix;              // writes <prefix>.model and <prefix>.vocab
  int vocab_size = 8000;
  std::string model_type = "unigram";  // or "bpe"
  int64_t max_sentences = 2000000;     // sampled when the input is larger
  int pad_id = 0, unk_id = 1, bos_id = 2, eos_id = 3;
};

// Trains a shared source/target SentencePiece model with the given special ids. When the text
// cannot support `vocab_size` pieces the vocabulary is smaller (hard limit off); Tokenizer::
// vocab_size() of the result tells.
absl::Status train_tokenizer(const TokenizerTrainingOptions& options);

}  // namespace xlate
