// Reads two line-aligned text files (source and target) pair by pair. Files of different line
// counts are an error that names both files and both counts.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/text_reader.h"

namespace xlate::trainer {

class ParallelTextReader {
 public:
  static absl::StatusOr<ParallelTextReader> Open(const std::string& source_path,
                                                 const std::string& target_path);

  // Reads the next pair; false once both files end together.
  absl::StatusOr<bool> next(std::string* source, std::string* target);
  // Pairs returned so far.
  int64_t pairs_read() const { return source_.line_number(); }

 private:
  ParallelTextReader(TextLineReader source, TextLineReader target);
  // The mismatch error, after counting the rest of the longer file.
  absl::Status mismatch(TextLineReader& longer, const TextLineReader& shorter);

  TextLineReader source_;
  TextLineReader target_;
};

}  // namespace xlate::trainer
