// Writes one split of a token corpus (<split>.tokens + <split>.index, format in token_format.h).
// Both files are written under temporary names and renamed into place by finish(), so a reader
// never sees a half-written split; a writer destroyed before finish() removes its temporaries.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace xlate::trainer {

class TokenCorpusWriter {
 public:
  static absl::StatusOr<TokenCorpusWriter> Create(const std::string& directory,
                                                  const std::string& split, int vocab_size);
  TokenCorpusWriter(TokenCorpusWriter&& other) noexcept;
  TokenCorpusWriter& operator=(TokenCorpusWriter&&) = delete;
  ~TokenCorpusWriter();

  // Appends one pair; ids must lie in [0, vocab_size).
  absl::Status add(const std::vector<int32_t>& source, const std::vector<int32_t>& target);
  // Writes the headers, flushes, and renames both files into place.
  absl::Status finish();

  uint64_t pair_count() const { return pair_count_; }
  uint64_t token_count() const { return token_count_; }

 private:
  TokenCorpusWriter(std::string tokens_path, std::string index_path, int vocab_size);
  absl::Status open_files();
  absl::Status write_bytes(std::FILE* file, const std::string& path, const void* data,
                           size_t bytes);
  absl::Status close_file(std::FILE** file, const std::string& path, const unsigned char* header);
  void discard();

  std::string tokens_path_, index_path_;  // final names; temporaries add kTemporarySuffix
  int vocab_size_;
  std::FILE* tokens_ = nullptr;
  std::FILE* index_ = nullptr;
  uint64_t token_count_ = 0;
  uint64_t pair_count_ = 0;
};

}  // namespace xlate::trainer
