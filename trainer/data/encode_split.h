// Encodes one split of parallel text with the shared tokenizer, filters the pairs
// (pair_filter.h) and writes <split>.tokens / <split>.index (token_format.h).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/tokenizer.h"
#include "trainer/data/pair_filter.h"

namespace xlate::trainer {

// Counts of one split. input_pairs = kept_pairs + the three dropped counts.
struct SplitStats {
  int64_t input_pairs = 0;
  int64_t kept_pairs = 0;
  int64_t dropped_empty = 0;
  int64_t dropped_too_long = 0;
  int64_t dropped_ratio = 0;
  int64_t source_tokens = 0;  // stored tokens of kept pairs (sources include eos)
  int64_t target_tokens = 0;
};

struct EncodeSplitOptions {
  std::string source_path, target_path;  // line-aligned text, plain or gzip
  std::string directory;                 // where <split>.tokens / .index go
  std::string split;                     // "train", "valid", ...
  PairLimits limits;
  int eos_id = 3;
  int threads = 1;  // encoding threads, >= 1
};

absl::StatusOr<SplitStats> encode_split(const Tokenizer& tokenizer,
                                        const EncodeSplitOptions& options);

}  // namespace xlate::trainer
