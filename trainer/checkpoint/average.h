// Checkpoint averaging (the paper's final models average the last 5 or 20 checkpoints): the
// element-wise mean of the weights of several model directories of one architecture, written
// as a model directory the engine loads.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/dtype.h"

namespace xlate::trainer {

// Averages `checkpoints` (model directories or training checkpoints) into `output` (config,
// weights in `dtype`, and the first checkpoint's spm.model). Different architectures are an
// error naming the two directories.
absl::Status average_checkpoints(const std::vector<std::string>& checkpoints,
                                 const std::string& output, DType dtype);

}  // namespace xlate::trainer
