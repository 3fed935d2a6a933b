#include <iostream>

#include "absl/flags/flag.h"
#include "trainer/data/prepare.h"
#include "cli/trainer/commands.h"

ABSL_FLAG(std::string, train_source, "", "training text, source side (plain or .gz)");
ABSL_FLAG(std::string, train_target, "", "training text, target side, line-aligned");
ABSL_FLAG(std::string, valid_source, "", "optional validation text, source side");
ABSL_FLAG(std::string, valid_target, "", "optional validation text, target side");
ABSL_FLAG(int, vocab_size, 8000, "shared SentencePiece vocabulary size");
ABSL_FLAG(std::string, spm_type, "bpe", "SentencePiece model type: bpe or unigram");
ABSL_FLAG(std::string, spm_model, "", "reuse this spm.model instead of training one");
ABSL_FLAG(int, max_length, 256, "drop pairs with a side longer than this many tokens");
ABSL_FLAG(double, max_length_ratio, 3.0, "drop pairs whose length ratio exceeds this (0 = off)");
ABSL_FLAG(int, prepare_threads, 0, "encoding threads (0 = all cores)");

namespace xlate::trainer::tools {
namespace {

void print_split(const char* name, const SplitStats& stats) {
  std::cerr << "  " << name << ": " << stats.kept_pairs << " of " << stats.input_pairs
            << " pairs kept (dropped: " << stats.dropped_empty << " empty, "
            << stats.dropped_too_long << " too long, " << stats.dropped_ratio
            << " over the length ratio); " << stats.source_tokens << " source and "
            << stats.target_tokens << " target tokens\n";
}

}  // namespace

int run_prepare() {
  PrepareOptions options;
  options.train_source = absl::GetFlag(FLAGS_train_source);
  options.train_target = absl::GetFlag(FLAGS_train_target);
  options.valid_source = absl::GetFlag(FLAGS_valid_source);
  options.valid_target = absl::GetFlag(FLAGS_valid_target);
  options.output_directory = absl::GetFlag(FLAGS_output);
  options.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  options.model_type = absl::GetFlag(FLAGS_spm_type);
  options.spm_model = absl::GetFlag(FLAGS_spm_model);
  options.max_length = absl::GetFlag(FLAGS_max_length);
  options.max_length_ratio = absl::GetFlag(FLAGS_max_length_ratio);
  options.threads = absl::GetFlag(FLAGS_prepare_threads);
  absl::StatusOr<PrepareReport> report = prepare_corpus(options);
  if (!report.ok()) {
    std::cerr << "xlate-trainer prepare: " << report.status().message() << "\n";
    return 1;
  }
  std::cerr << "prepared " << options.output_directory << " (vocabulary " << report->vocab_size
            << ")\n";
  print_split("train", report->train);
  if (report->has_valid) print_split("valid", report->valid);
  return 0;
}

}  // namespace xlate::trainer::tools
