// The binary token corpus that `prepare_corpus` writes and `TokenCorpus` maps.
//
// A prepared corpus directory holds:
//   spm.model, spm.vocab   the shared source/target SentencePiece vocabulary
//   corpus.json            {"format_version", "vocab_size", "tokenizer": "spm.model",
//                           "splits": {"train"|"valid": {input_pairs, kept_pairs, dropped_empty,
//                           dropped_too_long, dropped_ratio, source_tokens, target_tokens}},
//                           "options": the PrepareOptions used}; written last (prepare.h)
//   <split>.tokens         the token ids of every kept pair of the split ("train", "valid")
//   <split>.index          where each pair's tokens are
//
// All integers are little-endian; the token file and index are read in place (mmap).
//
// <split>.tokens: a 32-byte header, then token_count int32 ids.
//   offset  size  field
//   0       8     magic "XLTOKENS"
//   8       4     uint32 format version (kTokenFormatVersion)
//   12      4     uint32 vocab_size (every id is in [0, vocab_size))
//   16      8     uint64 token_count
//   24      8     uint64 pair_count
//   32      4·token_count  int32 ids: pair 0's source, pair 0's target, pair 1's source, ...
//
// <split>.index: a 32-byte header, then pair_count 16-byte records.
//   offset  size  field
//   0       8     magic "XLINDEX1"
//   8       4     uint32 format version (kTokenFormatVersion)
//   12      4     uint32 reserved, 0
//   16      8     uint64 token_count (equals the token file's)
//   24      8     uint64 pair_count  (equals the token file's)
//   32      16·pair_count  records {uint64 offset; uint32 source_length; uint32 target_length}
//
// A record's `offset` counts int32 tokens from the start of the token payload; pairs are stored
// back to back, so record i starts where record i-1 ends and the last ends at token_count.
//
// Token convention (matches the engine, engine/model_config.h):
//   source = SentencePiece ids + [eos_id]   (source_length >= 1)
//   target = SentencePiece ids only         (target_length >= 1 after `prepare`'s filters)
// The batcher makes decoder input [decoder_start_id] + target and decoder output target + [eos].
#pragma once

#include <cstdint>

namespace xlate::trainer {

inline constexpr uint32_t kTokenFormatVersion = 1;
inline constexpr char kTokensMagic[8] = {'X', 'L', 'T', 'O', 'K', 'E', 'N', 'S'};
inline constexpr char kIndexMagic[8] = {'X', 'L', 'I', 'N', 'D', 'E', 'X', '1'};
inline constexpr uint64_t kHeaderBytes = 32;
inline constexpr uint64_t kIndexRecordBytes = 16;

// One pair's place in the token payload, as laid out in <split>.index.
struct IndexRecord {
  uint64_t offset;  // tokens
  uint32_t source_length;
  uint32_t target_length;
};
static_assert(sizeof(IndexRecord) == kIndexRecordBytes, "IndexRecord must match the file layout");

// The fields of either header (vocab_size is 0 in the index header).
struct FileHeader {
  uint32_t version = kTokenFormatVersion;
  uint32_t vocab_size = 0;
  uint64_t token_count = 0;
  uint64_t pair_count = 0;
};

// The 32 header bytes for `magic` and `header`.
void encode_header(const char (&magic)[8], const FileHeader& header, unsigned char* out);
// Parses 32 header bytes; false when the magic differs (the other fields are then unset).
bool decode_header(const unsigned char* bytes, const char (&magic)[8], FileHeader* header);

// File names of a split inside a corpus directory.
inline constexpr const char* kTokensSuffix = ".tokens";
inline constexpr const char* kIndexSuffix = ".index";

}  // namespace xlate::trainer
