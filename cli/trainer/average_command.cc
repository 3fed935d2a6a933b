#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/dtype.h"
#include "trainer/checkpoint/average.h"
#include "trainer/checkpoint/checkpoint.h"
#include "cli/trainer/commands.h"

ABSL_FLAG(int, last, 5, "with a run directory: average its last N checkpoints (the paper: 5 "
          "for base, 20 for big)");
ABSL_FLAG(std::string, dtype, "F32", "stored weight type: F32, F16 or BF16");
ABSL_FLAG(std::string, source_lang, "",
          "source language code for the averaged model's config (default: the checkpoints')");
ABSL_FLAG(std::string, target_lang, "",
          "target language code for the averaged model's config (default: the checkpoints')");

namespace xlate::trainer::tools {
namespace {

// A run directory stands for its last --last checkpoints; other arguments are checkpoints.
absl::StatusOr<std::vector<std::string>> checkpoints_to_average() {
  std::vector<std::string> chosen;
  for (const std::string& argument : positional_arguments()) {
    absl::StatusOr<std::vector<std::string>> run = list_checkpoints(argument);
    if (!run.ok()) return run.status();
    if (run->empty()) {
      chosen.push_back(argument);
      continue;
    }
    const int last = absl::GetFlag(FLAGS_last);
    if (last < 1) return absl::InvalidArgumentError("--last must be >= 1");
    if (static_cast<int>(run->size()) < last) {
      return absl::FailedPreconditionError(absl::StrCat(argument, " has ", run->size(),
                                                        " checkpoints; --last asks for ", last));
    }
    chosen.insert(chosen.end(), run->end() - last, run->end());
  }
  if (chosen.empty()) {
    return absl::InvalidArgumentError("give a run directory or checkpoint directories to average");
  }
  return chosen;
}

}  // namespace

int run_average() {
  DType dtype;
  if (!dtype_from_name(absl::GetFlag(FLAGS_dtype), &dtype) || dtype == DType::kInt32) {
    std::cerr << "xlate-trainer average: --dtype is \"" << absl::GetFlag(FLAGS_dtype)
              << "\"; it must be F32, F16 or BF16\n";
    return 2;
  }
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output.empty()) {
    std::cerr << "xlate-trainer average: --output is required\n";
    return 2;
  }
  AverageOutput written{output, dtype, absl::GetFlag(FLAGS_source_lang),
                        absl::GetFlag(FLAGS_target_lang)};
  absl::StatusOr<std::vector<std::string>> checkpoints = checkpoints_to_average();
  absl::Status status =
      checkpoints.ok() ? average_checkpoints(*checkpoints, written) : checkpoints.status();
  if (!status.ok()) {
    std::cerr << "xlate-trainer average: " << status.message() << "\n";
    return 1;
  }
  std::cerr << "averaged " << checkpoints->size() << " checkpoints into " << output << "\n";
  return 0;
}

}  // namespace xlate::trainer::tools
