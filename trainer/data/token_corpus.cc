#include "trainer/data/token_corpus.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace xlate::trainer {
namespace {

absl::Status corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// Parses and checks the header of `file` and that the file holds exactly the header and
// `count` items of `item_bytes` bytes each, where count is token_count or pair_count.
absl::StatusOr<FileHeader> read_header(const MappedFile& file, const char (&magic)[8],
                                       bool count_pairs, uint64_t item_bytes) {
  const std::string& path = file.path();
  if (file.size() < kHeaderBytes) {
    return corrupt(path, absl::StrCat("file is ", file.size(), " bytes, shorter than the ",
                                      kHeaderBytes, "-byte header (truncated?)"));
  }
  FileHeader header;
  if (!decode_header(file.data(), magic, &header)) {
    return corrupt(path, absl::StrCat("bad magic: not a ", std::string(magic, 8),
                                      " file of an xlate token corpus"));
  }
  if (header.version != kTokenFormatVersion) {
    return corrupt(path, absl::StrCat("format version ", header.version, ", but this build reads ",
                                      "version ", kTokenFormatVersion,
                                      "; prepare the corpus again"));
  }
  const uint64_t count = count_pairs ? header.pair_count : header.token_count;
  const char* unit = count_pairs ? " index records" : " tokens";
  const uint64_t payload = file.size() - kHeaderBytes;
  if (count > payload / item_bytes || payload != count * item_bytes) {
    const bool short_file = count > payload / item_bytes;
    return corrupt(path, absl::StrCat(short_file ? "truncated: " : "trailing bytes: ",
                                      "the header counts ", count, unit, " (",
                                      kHeaderBytes, " + ", count, " x ", item_bytes,
                                      " bytes) but the file has ", file.size(), " bytes"));
  }
  return header;
}

// Checks that the records tile the token payload back to back.
absl::Status check_records(const std::string& path, const IndexRecord* records,
                           const FileHeader& header) {
  uint64_t next_offset = 0;
  for (uint64_t i = 0; i < header.pair_count; ++i) {
    const IndexRecord& record = records[i];
    if (record.offset != next_offset) {
      return corrupt(path, absl::StrCat("record ", i, ": offset ", record.offset,
                                        ", expected ", next_offset,
                                        " (pairs are stored back to back)"));
    }
    if (record.source_length == 0) {
      return corrupt(path, absl::StrCat("record ", i, ": empty source (a source ends with eos)"));
    }
    next_offset += uint64_t{record.source_length} + record.target_length;
    if (next_offset > header.token_count) {
      return corrupt(path, absl::StrCat("record ", i, ": ends at token ", next_offset,
                                        ", past the ", header.token_count, " tokens stored"));
    }
  }
  if (next_offset != header.token_count) {
    return corrupt(path, absl::StrCat("the records cover ", next_offset, " tokens, but ",
                                      header.token_count, " are stored"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenCorpus> TokenCorpus::Open(const std::string& directory,
                                              const std::string& split) {
  const std::string base = absl::StrCat(directory, "/", split);
  absl::StatusOr<MappedFile> tokens = MappedFile::Open(base + kTokensSuffix);
  if (!tokens.ok()) return tokens.status();
  absl::StatusOr<MappedFile> index = MappedFile::Open(base + kIndexSuffix);
  if (!index.ok()) return index.status();

  absl::StatusOr<FileHeader> tokens_header =
      read_header(*tokens, kTokensMagic, /*count_pairs=*/false, sizeof(int32_t));
  if (!tokens_header.ok()) return tokens_header.status();
  if (tokens_header->vocab_size == 0 ||
      tokens_header->vocab_size > uint32_t{std::numeric_limits<int32_t>::max()}) {
    return corrupt(tokens->path(), absl::StrCat("vocab_size ", tokens_header->vocab_size,
                                                " is outside [1, 2^31)"));
  }
  absl::StatusOr<FileHeader> index_header =
      read_header(*index, kIndexMagic, /*count_pairs=*/true, kIndexRecordBytes);
  if (!index_header.ok()) return index_header.status();
  if (index_header->token_count != tokens_header->token_count ||
      index_header->pair_count != tokens_header->pair_count) {
    return corrupt(index->path(),
                   absl::StrCat("counts ", index_header->pair_count, " pairs / ",
                                index_header->token_count, " tokens differ from ",
                                tokens->path(), "'s ", tokens_header->pair_count, " pairs / ",
                                tokens_header->token_count,
                                " tokens (files of different runs?)"));
  }
  const auto* records = reinterpret_cast<const IndexRecord*>(index->data() + kHeaderBytes);
  absl::Status checked = check_records(index->path(), records, *tokens_header);
  if (!checked.ok()) return checked;
  return TokenCorpus(*std::move(tokens), *std::move(index), *tokens_header);
}

TokenCorpus::TokenCorpus(MappedFile tokens, MappedFile index, FileHeader header)
    : tokens_(std::move(tokens)), index_(std::move(index)), header_(header) {
  // The mappings are page-aligned and the header is 32 bytes, so both payloads are aligned.
  ids_ = reinterpret_cast<const int32_t*>(tokens_.data() + kHeaderBytes);
  records_ = reinterpret_cast<const IndexRecord*>(index_.data() + kHeaderBytes);
}

TokenSpan TokenCorpus::source(int64_t i) const {
  const IndexRecord& record = records_[i];
  return TokenSpan{ids_ + record.offset, record.source_length};
}

TokenSpan TokenCorpus::target(int64_t i) const {
  const IndexRecord& record = records_[i];
  return TokenSpan{ids_ + record.offset + record.source_length, record.target_length};
}

absl::Status TokenCorpus::verify_token_ids() const {
  const int64_t count = token_count();
  for (int64_t t = 0; t < count; ++t) {
    if (ids_[t] < 0 || ids_[t] >= vocab_size()) {
      return corrupt(tokens_.path(), absl::StrCat("token ", t, " is id ", ids_[t],
                                                  ", outside the vocabulary of ", vocab_size()));
    }
  }
  return absl::OkStatus();
}

}  // namespace xlate::trainer
