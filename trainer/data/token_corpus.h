// Read access to one split of a prepared token corpus (format in token_format.h), mapped into
// memory. Opening checks the headers, the file sizes and every index record, so a truncated
// or corrupt file is refused with a message that says what is wrong.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/mapped_file.h"
#include "trainer/data/token_format.h"

namespace xlate::trainer {

// A view of `size` consecutive token ids inside the mapping (valid while the corpus lives).
struct TokenSpan {
  const int32_t* data = nullptr;
  int64_t size = 0;

  const int32_t* begin() const { return data; }
  const int32_t* end() const { return data + size; }
  int32_t operator[](int64_t i) const { return data[i]; }
};

class TokenCorpus {
 public:
  // Maps <directory>/<split>.tokens and <directory>/<split>.index.
  static absl::StatusOr<TokenCorpus> Open(const std::string& directory, const std::string& split);

  // Number of pairs.
  int64_t size() const { return static_cast<int64_t>(header_.pair_count); }
  // Source ids of pair i, ending with eos. Requires 0 <= i < size().
  TokenSpan source(int64_t i) const;
  // Target ids of pair i (no BOS, no EOS). Requires 0 <= i < size().
  TokenSpan target(int64_t i) const;
  int64_t source_length(int64_t i) const { return records_[i].source_length; }
  int64_t target_length(int64_t i) const { return records_[i].target_length; }

  int vocab_size() const { return static_cast<int>(header_.vocab_size); }
  int64_t token_count() const { return static_cast<int64_t>(header_.token_count); }
  // Checks that every id lies in [0, vocab_size()); reads the whole token file, so Open leaves
  // it to callers that want it.
  absl::Status verify_token_ids() const;

 private:
  TokenCorpus(MappedFile tokens, MappedFile index, FileHeader header);

  MappedFile tokens_;
  MappedFile index_;
  FileHeader header_;
  const int32_t* ids_ = nullptr;             // [token_count]
  const IndexRecord* records_ = nullptr;     // [pair_count]
};

}  // namespace xlate::trainer
