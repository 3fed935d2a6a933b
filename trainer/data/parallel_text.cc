#include "trainer/data/parallel_text.h"

#include "absl/strings/str_cat.h"

namespace xlate::trainer {

absl::StatusOr<ParallelTextReader> ParallelTextReader::Open(const std::string& source_path,
                                                            const std::string& target_path) {
  absl::StatusOr<TextLineReader> source = TextLineReader::Open(source_path);
  if (!source.ok()) return source.status();
  absl::StatusOr<TextLineReader> target = TextLineReader::Open(target_path);
  if (!target.ok()) return target.status();
  return ParallelTextReader(*std::move(source), *std::move(target));
}

ParallelTextReader::ParallelTextReader(TextLineReader source, TextLineReader target)
    : source_(std::move(source)), target_(std::move(target)) {}

absl::StatusOr<bool> ParallelTextReader::next(std::string* source, std::string* target) {
  absl::StatusOr<bool> has_source = source_.next(source);
  if (!has_source.ok()) return has_source.status();
  absl::StatusOr<bool> has_target = target_.next(target);
  if (!has_target.ok()) return has_target.status();
  if (*has_source && !*has_target) return mismatch(source_, target_);
  if (!*has_source && *has_target) return mismatch(target_, source_);
  return *has_source;
}

absl::Status ParallelTextReader::mismatch(TextLineReader& longer, const TextLineReader& shorter) {
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = longer.next(&line);
    if (!more.ok()) return more.status();
    if (!*more) break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "parallel files differ in length: ", longer.path(), " has ", longer.line_number(),
      " lines but ", shorter.path(), " has ", shorter.line_number()));
}

}  // namespace xlate::trainer
