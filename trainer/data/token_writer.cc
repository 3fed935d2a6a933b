#include "trainer/data/token_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "trainer/data/token_format.h"

namespace xlate::trainer {
namespace {

constexpr size_t kStreamBufferBytes = 1 << 20;

std::string temporary_name(const std::string& path) {
  return absl::StrCat(path, ".tmp.", ::getpid());
}

absl::Status write_error(const std::string& path, int error) {
  return absl::InternalError(absl::StrCat(path, ": write failed: ", std::strerror(error)));
}

// The first id of `ids` outside [0, vocab_size), or -1 when all are inside.
int64_t first_bad_id(const std::vector<int32_t>& ids, int vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

TokenCorpusWriter::TokenCorpusWriter(std::string tokens_path, std::string index_path,
                                     int vocab_size)
    : tokens_path_(std::move(tokens_path)),
      index_path_(std::move(index_path)),
      vocab_size_(vocab_size) {}

TokenCorpusWriter::TokenCorpusWriter(TokenCorpusWriter&& other) noexcept
    : tokens_path_(std::move(other.tokens_path_)),
      index_path_(std::move(other.index_path_)),
      vocab_size_(other.vocab_size_),
      tokens_(other.tokens_),
      index_(other.index_),
      token_count_(other.token_count_),
      pair_count_(other.pair_count_) {
  other.tokens_ = other.index_ = nullptr;
}

TokenCorpusWriter::~TokenCorpusWriter() { discard(); }

void TokenCorpusWriter::discard() {
  for (auto [file, path] : {std::pair{&tokens_, &tokens_path_}, std::pair{&index_, &index_path_}}) {
    if (*file == nullptr) continue;
    std::fclose(*file);
    *file = nullptr;
    std::remove(temporary_name(*path).c_str());
  }
}

absl::StatusOr<TokenCorpusWriter> TokenCorpusWriter::Create(const std::string& directory,
                                                           const std::string& split,
                                                           int vocab_size) {
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab_size ", vocab_size, " must be positive"));
  }
  const std::string base = absl::StrCat(directory, "/", split);
  TokenCorpusWriter writer(base + kTokensSuffix, base + kIndexSuffix, vocab_size);
  absl::Status opened = writer.open_files();
  if (!opened.ok()) return opened;
  return writer;
}

absl::Status TokenCorpusWriter::open_files() {
  for (auto [file, path] : {std::pair{&tokens_, &tokens_path_}, std::pair{&index_, &index_path_}}) {
    const std::string temporary = temporary_name(*path);
    *file = std::fopen(temporary.c_str(), "wb");
    if (*file == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrCat(temporary, ": cannot create: ", std::strerror(errno)));
    }
    std::setvbuf(*file, nullptr, _IOFBF, kStreamBufferBytes);
    // Placeholder header, rewritten by finish() once the counts are known.
    const unsigned char zeros[kHeaderBytes] = {};
    absl::Status written = write_bytes(*file, temporary, zeros, sizeof zeros);
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

absl::Status TokenCorpusWriter::write_bytes(std::FILE* file, const std::string& path,
                                            const void* data, size_t bytes) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, file) != bytes) return write_error(path, errno);
  return absl::OkStatus();
}

absl::Status TokenCorpusWriter::add(const std::vector<int32_t>& source,
                                    const std::vector<int32_t>& target) {
  if (tokens_ == nullptr) return absl::FailedPreconditionError("writer already finished");
  for (const auto* side : {&source, &target}) {
    const int64_t bad = first_bad_id(*side, vocab_size_);
    if (bad >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pair ", pair_count_, ": token id ", (*side)[bad], " is outside the vocabulary of ",
          vocab_size_));
    }
    if (side->size() > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("pair ", pair_count_, ": ", side->size(),
                                                     " tokens exceed the 2^32-1 limit"));
    }
  }
  const IndexRecord record{token_count_, static_cast<uint32_t>(source.size()),
                           static_cast<uint32_t>(target.size())};
  const std::string tokens_temporary = temporary_name(tokens_path_);
  absl::Status status = write_bytes(tokens_, tokens_temporary, source.data(), 4 * source.size());
  if (status.ok()) {
    status = write_bytes(tokens_, tokens_temporary, target.data(), 4 * target.size());
  }
  if (status.ok()) {
    status = write_bytes(index_, temporary_name(index_path_), &record, sizeof record);
  }
  if (!status.ok()) return status;
  token_count_ += source.size() + target.size();
  ++pair_count_;
  return absl::OkStatus();
}

absl::Status TokenCorpusWriter::close_file(std::FILE** file, const std::string& path,
                                           const unsigned char* header) {
  const std::string temporary = temporary_name(path);
  absl::Status status = absl::OkStatus();
  if (std::fseek(*file, 0, SEEK_SET) != 0) status = write_error(temporary, errno);
  if (status.ok()) status = write_bytes(*file, temporary, header, kHeaderBytes);
  if (status.ok() && (std::fflush(*file) != 0 || ::fsync(::fileno(*file)) != 0)) {
    status = write_error(temporary, errno);
  }
  const int closed = std::fclose(*file);
  *file = nullptr;
  if (status.ok() && closed != 0) status = write_error(temporary, errno);
  if (status.ok() && std::rename(temporary.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(absl::StrCat(path, ": rename failed: ", std::strerror(errno)));
  }
  if (!status.ok()) std::remove(temporary.c_str());
  return status;
}

absl::Status TokenCorpusWriter::finish() {
  if (tokens_ == nullptr) return absl::FailedPreconditionError("writer already finished");
  FileHeader header;
  header.vocab_size = static_cast<uint32_t>(vocab_size_);
  header.token_count = token_count_;
  header.pair_count = pair_count_;
  unsigned char tokens_header[kHeaderBytes], index_header[kHeaderBytes];
  encode_header(kTokensMagic, header, tokens_header);
  header.vocab_size = 0;
  encode_header(kIndexMagic, header, index_header);
  // The index goes last: a reader that finds an index finds its token file too.
  absl::Status status = close_file(&tokens_, tokens_path_, tokens_header);
  if (!status.ok()) {
    discard();
    return status;
  }
  return close_file(&index_, index_path_, index_header);
}

}  // namespace xlate::trainer
