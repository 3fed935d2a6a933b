// The SentencePiece vocabulary of a model (spm.model), behind Abseil statuses. SentencePiece
// itself is reached only through sentencepiece_wrapper.h (see there why).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate {

class Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  ~Tokenizer();

  // Piece ids of `text`, without BOS/EOS (the caller adds the model's special ids).
  absl::StatusOr<std::vector<int32_t>> encode(const std::string& text) const;
  // Detokenised text of ids; special ids (pad, bos, eos) are dropped.
  absl::StatusOr<std::string> decode(const std::vector<int32_t>& ids) const;
  // How many of `ids` make whole words: those before the last piece that starts a word
  // (SentencePiece's "▁"), whose word may still grow. decode() of them is a prefix of decode()
  // of any continuation of `ids` (streaming shows no half words).
  size_t whole_words(const std::vector<int32_t>& ids) const;
  int vocab_size() const;
  int id_of(const std::string& piece) const;  // unk id when absent
  std::string piece_of(int id) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
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
