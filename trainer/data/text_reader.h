// Line-by-line reading of a text corpus file, plain or gzip-compressed, with UTF-8 checking.
//
// The format is told by the content (the gzip magic bytes 1f 8b), not by the file name, so a
// compressed file without ".gz" and a plain file named "x.gz" both read correctly. Lines are
// returned without their "\n" (and without a "\r" before it), the first without a UTF-8 byte
// order mark. Every line is checked to be well-formed UTF-8; a bad line is an error naming the
// file, the line and the byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace xlate::trainer {

class TextLineReader {
 public:
  // Longest line accepted, in bytes; a longer line is an error (a binary file read by mistake).
  static constexpr int64_t kMaxLineBytes = 1 << 20;

  static absl::StatusOr<TextLineReader> Open(const std::string& path);
  TextLineReader(TextLineReader&&) noexcept;
  TextLineReader& operator=(TextLineReader&&) noexcept;
  ~TextLineReader();

  // Reads the next line into *line. Returns false at the end of the file.
  absl::StatusOr<bool> next(std::string* line);

  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }
  // 1-based number of the line last returned (0 before the first).
  int64_t line_number() const { return line_number_; }

 private:
  struct Stream;
  TextLineReader(std::string path, bool compressed, std::unique_ptr<Stream> stream);
  // Refills buffer_ from the file; false at the end of the input.
  absl::StatusOr<bool> refill();

  std::string path_;
  bool compressed_ = false;
  std::unique_ptr<Stream> stream_;
  std::string buffer_;        // bytes read but not yet returned start at buffer_begin_
  size_t buffer_begin_ = 0;
  int64_t line_number_ = 0;
};

// Whether the first bytes of the file at `path` are the gzip magic number.
absl::StatusOr<bool> is_gzip_file(const std::string& path);

}  // namespace xlate::trainer
