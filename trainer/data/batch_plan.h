// The batches a training run takes, written down (xlate-trainer train --batch_plan_out), so
// that another system can train on exactly the same ones: bench/compare_pytorch_training.py
// hands xlate's plan to the PyTorch baseline (its --plan_in reads this format).
//
// One line per micro-batch, in the order the run takes them: the corpus indices of the
// batch's pairs (all ranks' together, before sharding), fewest tokens first, separated by
// spaces. With update_freq F, optimizer step k (from 1) is lines (k-1)·F .. k·F - 1. A corpus
// prepared without dropping a pair (prepare's report says how many it dropped) numbers its
// pairs as the lines of its input files, from 0.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate::trainer {

class BatchPlanWriter {
 public:
  // Opens `path` for appending after its first `kept_batches` lines (the batches of the steps a
  // resumed run starts after; 0 for a fresh run): lines beyond them, written by steps done after
  // the last checkpoint, are removed, so that the file stays one line per batch taken. A file
  // with fewer lines than kept_batches, or that cannot be written, is an error naming it.
  static absl::StatusOr<BatchPlanWriter> Open(const std::string& path, int64_t kept_batches);

  // Appends one batch and flushes it (a run killed mid-way leaves whole lines).
  absl::Status Append(const std::vector<int64_t>& pairs);

 private:
  BatchPlanWriter(std::string path, std::ofstream out) : path_(std::move(path)), out_(std::move(out)) {}
  std::string path_;
  std::ofstream out_;
};

}  // namespace xlate::trainer
