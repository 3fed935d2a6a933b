#include "trainer/data/text_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate::trainer {
namespace {

constexpr unsigned kReadChunkBytes = 1 << 17;
constexpr unsigned char kGzipMagic[2] = {0x1f, 0x8b};

// The zlib error of `file`, or the OS error when zlib reports one.
std::string stream_error(gzFile file) {
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return message ? message : "unknown zlib error";
}

}  // namespace

// gzFile reads gzip members and, transparently, plain files; the magic check is ours.
struct TextLineReader::Stream {
  gzFile file = nullptr;
  ~Stream() {
    if (file) gzclose(file);
  }
};

absl::StatusOr<bool> is_gzip_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, file);
  std::fclose(file);
  return got == 2 && magic[0] == kGzipMagic[0] && magic[1] == kGzipMagic[1];
}

absl::StatusOr<TextLineReader> TextLineReader::Open(const std::string& path) {
  absl::StatusOr<bool> compressed = is_gzip_file(path);
  if (!compressed.ok()) return compressed.status();
  auto stream = std::make_unique<Stream>();
  stream->file = gzopen(path.c_str(), "rb");
  if (!stream->file) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(stream->file, kReadChunkBytes);
  return TextLineReader(path, *compressed, std::move(stream));
}

TextLineReader::TextLineReader(std::string path, bool compressed, std::unique_ptr<Stream> stream)
    : path_(std::move(path)), compressed_(compressed), stream_(std::move(stream)) {}
TextLineReader::TextLineReader(TextLineReader&&) noexcept = default;
TextLineReader& TextLineReader::operator=(TextLineReader&&) noexcept = default;
TextLineReader::~TextLineReader() = default;

absl::StatusOr<bool> TextLineReader::refill() {
  buffer_.erase(0, buffer_begin_);
  buffer_begin_ = 0;
  const size_t kept = buffer_.size();
  buffer_.resize(kept + kReadChunkBytes);
  const int got = gzread(stream_->file, &buffer_[kept], kReadChunkBytes);
  if (got < 0) {
    buffer_.resize(kept);
    return absl::DataLossError(absl::StrCat(path_, ": read error after line ", line_number_, ": ",
                                            stream_error(stream_->file)));
  }
  buffer_.resize(kept + static_cast<size_t>(got));
  if (got == 0) {
    // A truncated gzip member reads as a short stream with the error set.
    int code = Z_OK;
    gzerror(stream_->file, &code);
    if (code != Z_OK) {
      return absl::DataLossError(absl::StrCat(path_, ": read error after line ", line_number_,
                                              ": ", stream_error(stream_->file),
                                              " (truncated or corrupt gzip data?)"));
    }
  }
  return got > 0;
}

absl::StatusOr<bool> TextLineReader::next(std::string* line) {
  size_t newline;
  while ((newline = buffer_.find('\n', buffer_begin_)) == std::string::npos) {
    if (static_cast<int64_t>(buffer_.size() - buffer_begin_) > kMaxLineBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ":", line_number_ + 1, ": line longer than ", kMaxLineBytes,
          " bytes (is this a text file?)"));
    }
    absl::StatusOr<bool> more = refill();
    if (!more.ok()) return more.status();
    if (!*more) break;
  }
  if (newline == std::string::npos && buffer_begin_ == buffer_.size()) return false;
  // The last line may lack its "\n".
  const size_t end = newline == std::string::npos ? buffer_.size() : newline;
  line->assign(buffer_, buffer_begin_, end - buffer_begin_);
  buffer_begin_ = newline == std::string::npos ? buffer_.size() : newline + 1;
  ++line_number_;
  if (static_cast<int64_t>(line->size()) > kMaxLineBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ":", line_number_,
                                                   ": line longer than ", kMaxLineBytes,
                                                   " bytes (is this a text file?)"));
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (line_number_ == 1 && line->compare(0, 3, "\xef\xbb\xbf") == 0) line->erase(0, 3);  // BOM
  size_t bad_offset = 0;
  if (!is_valid_utf8(*line, &bad_offset)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ":", line_number_,
                                                   ": invalid UTF-8 at byte ", bad_offset,
                                                   " of the line"));
  }
  return true;
}

}  // namespace xlate::trainer
