// Checkpoint averaging (the paper's final models average the last 5 or 20 checkpoints): the
// element-wise mean of the weights of several model directories of one architecture, written
// as a model directory the engine loads.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/dtype.h"

namespace xlate::trainer {

// What the averaged model directory is written as.
struct AverageOutput {
  std::string directory;
  DType dtype = DType::kFloat32;
  // Language codes for its config.json (what the server matches requests against); empty
  // keeps the checkpoints' codes.
  std::string source_lang, target_lang;
};

// Averages `checkpoints` (model directories or training checkpoints) into `output` (config,
// weights, and the first checkpoint's spm.model). Different architectures are an error naming
// the two directories.
absl::Status average_checkpoints(const std::vector<std::string>& checkpoints,
                                 const AverageOutput& output);

}  // namespace xlate::trainer
