// `prepare`: from parallel text to a training-ready corpus directory (format in token_format.h).
//
// 1. Trains ONE SentencePiece model shared by source and target on the training text (both
//    sides), or copies an existing spm.model to encode new data with the same vocabulary.
// 2. Encodes every pair: source = ids + [eos], target = ids.
// 3. Drops, and counts, pairs that
//      - are empty: either side has no pieces (an empty or blank line);
//      - are too long: the source (ids + eos) or the decoder sequence (ids + 1) has more than
//        max_length tokens;
//      - exceed the length ratio (training split only, like Moses' clean-corpus-n): the longer
//        side has more than max_length_ratio times the pieces of the shorter.
//    Each dropped pair is counted once, under the first of these reasons that applies.
// 4. Writes <split>.tokens / <split>.index for "train" and, when given, "valid", then
//    corpus.json. Every file is written under a temporary name and renamed into place;
//    corpus.json is removed first and written last, so a directory without it is incomplete.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/encode_split.h"

namespace xlate::trainer {

struct PrepareOptions {
  // Parallel text, one sentence per line, plain or gzip (told by content); UTF-8.
  std::string train_source, train_target;
  std::string valid_source, valid_target;  // optional: both or neither
  std::string output_directory;            // created when missing
  int vocab_size = 8000;                   // shared vocabulary (may come out smaller)
  std::string model_type = "bpe";          // "bpe" (the paper's) or "unigram"
  int max_length = 256;                    // tokens per side, eos / decoder start included
  double max_length_ratio = 3.0;           // 0 disables the ratio filter
  std::string spm_model;                   // reuse this spm.model instead of training one
  int64_t tokenizer_max_sentences = 2000000;  // lines sampled to train SentencePiece
  int threads = 0;                             // encoding threads; 0 = all cores
};

struct PrepareReport {
  int vocab_size = 0;  // of the SentencePiece model used
  SplitStats train;
  bool has_valid = false;
  SplitStats valid;
};

absl::StatusOr<PrepareReport> prepare_corpus(const PrepareOptions& options);

}  // namespace xlate::trainer
