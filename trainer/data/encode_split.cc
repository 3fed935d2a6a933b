#include "trainer/data/encode_split.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainer/data/parallel_text.h"
#include "trainer/data/token_writer.h"

namespace xlate::trainer {
namespace {

// Pairs read, then encoded in parallel, at a time.
constexpr size_t kChunkPairs = 16384;

// One chunk of text pairs and, once encoded, their piece ids.
struct Chunk {
  int64_t first_line = 1;  // 1-based line number of pair 0
  std::vector<std::string> source_text, target_text;
  std::vector<std::vector<int32_t>> source_ids, target_ids;
};

// Reads up to kChunkPairs pairs; an empty chunk means the end of the files.
absl::Status read_chunk(ParallelTextReader& reader, Chunk* chunk) {
  chunk->first_line = reader.pairs_read() + 1;
  chunk->source_text.clear();
  chunk->target_text.clear();
  std::string source, target;
  while (chunk->source_text.size() < kChunkPairs) {
    absl::StatusOr<bool> more = reader.next(&source, &target);
    if (!more.ok()) return more.status();
    if (!*more) break;
    chunk->source_text.push_back(std::move(source));
    chunk->target_text.push_back(std::move(target));
  }
  return absl::OkStatus();
}

// Encodes pairs worker, worker + workers, ... of the chunk.
absl::Status encode_stride(const Tokenizer& tokenizer, const EncodeSplitOptions& options,
                           size_t worker, size_t workers, Chunk* chunk) {
  for (size_t i = worker; i < chunk->source_text.size(); i += workers) {
    for (const bool is_source : {true, false}) {
      const std::string& text = is_source ? chunk->source_text[i] : chunk->target_text[i];
      absl::StatusOr<std::vector<int32_t>> ids = tokenizer.encode(text);
      if (!ids.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(is_source ? options.source_path : options.target_path, ":",
                         chunk->first_line + static_cast<int64_t>(i), ": ",
                         ids.status().message()));
      }
      (is_source ? chunk->source_ids : chunk->target_ids)[i] = *std::move(ids);
    }
  }
  return absl::OkStatus();
}

absl::Status encode_chunk(const Tokenizer& tokenizer, const EncodeSplitOptions& options,
                          Chunk* chunk) {
  const size_t pairs = chunk->source_text.size();
  chunk->source_ids.assign(pairs, {});
  chunk->target_ids.assign(pairs, {});
  const size_t workers = std::max<size_t>(1, std::min<size_t>(options.threads, pairs));
  std::vector<absl::Status> statuses(workers);
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) {
    threads.emplace_back([&, w] { statuses[w] = encode_stride(tokenizer, options, w, workers, chunk); });
  }
  statuses[0] = encode_stride(tokenizer, options, 0, workers, chunk);
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Filters and writes the encoded pairs of a chunk, counting into *stats.
absl::Status write_chunk(const EncodeSplitOptions& options, Chunk* chunk,
                         TokenCorpusWriter* writer, SplitStats* stats) {
  for (size_t i = 0; i < chunk->source_ids.size(); ++i) {
    std::vector<int32_t>& source = chunk->source_ids[i];
    const std::vector<int32_t>& target = chunk->target_ids[i];
    ++stats->input_pairs;
    switch (judge_pair(static_cast<int64_t>(source.size()), static_cast<int64_t>(target.size()),
                       options.limits)) {
      case PairVerdict::kEmpty: ++stats->dropped_empty; continue;
      case PairVerdict::kTooLong: ++stats->dropped_too_long; continue;
      case PairVerdict::kRatio: ++stats->dropped_ratio; continue;
      case PairVerdict::kKeep: break;
    }
    source.push_back(options.eos_id);
    absl::Status added = writer->add(source, target);
    if (!added.ok()) return added;
    ++stats->kept_pairs;
    stats->source_tokens += static_cast<int64_t>(source.size());
    stats->target_tokens += static_cast<int64_t>(target.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SplitStats> encode_split(const Tokenizer& tokenizer,
                                        const EncodeSplitOptions& options) {
  absl::StatusOr<ParallelTextReader> reader =
      ParallelTextReader::Open(options.source_path, options.target_path);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<TokenCorpusWriter> writer =
      TokenCorpusWriter::Create(options.directory, options.split, tokenizer.vocab_size());
  if (!writer.ok()) return writer.status();
  SplitStats stats;
  Chunk chunk;
  while (true) {
    absl::Status status = read_chunk(*reader, &chunk);
    if (status.ok() && chunk.source_text.empty()) break;
    if (status.ok()) status = encode_chunk(tokenizer, options, &chunk);
    if (status.ok()) status = write_chunk(options, &chunk, &*writer, &stats);
    if (!status.ok()) return status;
  }
  absl::Status finished = writer->finish();
  if (!finished.ok()) return finished;
  return stats;
}

}  // namespace xlate::trainer
