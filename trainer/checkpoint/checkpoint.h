// Training checkpoints, the same files whichever device trained: a model directory (config.json,
// model.safetensors in float32, spm.model — loadable by the engine as it is) plus
// optimizer.safetensors (Adam's moments) and trainer_state.json (step, data position, seed, run
// fingerprint, and a CRC-32 of each tensor file so that a damaged checkpoint is refused).
//
//   RUN/checkpoints/step-00001000/...
//
// A checkpoint is written into a temporary sibling directory, every file fsync'ed, and then
// renamed into place (and the parent directory fsync'ed): a kill at any moment leaves either
// the previous latest checkpoint or the new one, never a partial one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "trainer/model/flat_parameters.h"
#include "trainer/optim/adam.h"
#include "trainer/optim/loss_scaler.h"

namespace xlate::trainer {

struct TrainerState {
  int64_t step = 0;  // optimizer updates done
  int64_t data_epoch = 0;  // the batch stream's position after the last step
  int64_t data_batch = 0;
  uint64_t seed = 0;
  // Hash of what must not change across a resume (architecture, batching, ranks, ...).
  uint64_t run_fingerprint = 0;
  double elapsed_seconds = 0;  // training wall time before this checkpoint
  std::optional<LossScalerState> loss_scaler;  // runs that scale their loss
};

struct CheckpointContents {
  const ModelConfig& config;
  const FlatParameters& parameters;
  const AdamMoments& moments;  // every rank's moments (Adam::moments(), gathered under ZeRO-1)
  const TrainerState& state;
  std::string spm_model_path;  // copied into the checkpoint (may be empty)
};

// Writes RUN/checkpoints/step-<step>/ atomically and then deletes all but the newest
// `keep_last` checkpoints (0 keeps all). Returns the checkpoint's path.
absl::StatusOr<std::string> write_checkpoint(const std::string& run_directory,
                                             const CheckpointContents& contents, int keep_last);

// Checkpoint directories of a run, oldest first (empty when there are none).
absl::StatusOr<std::vector<std::string>> list_checkpoints(const std::string& run_directory);

// Reads a checkpoint into `parameters` and `optimizer` (built for `config`, on any device: a
// checkpoint written on the GPU resumes on the CPU and the other way round) and returns its
// state. A different architecture, missing files, damaged tensors (CRC-32 mismatch) or sizes
// that do not fit are errors naming the checkpoint and what is wrong.
absl::StatusOr<TrainerState> read_checkpoint(const std::string& checkpoint,
                                             const ModelConfig& config,
                                             FlatParameters& parameters, Adam& optimizer);

// The architecture stored in a checkpoint (its config.json).
absl::StatusOr<ModelConfig> read_checkpoint_config(const std::string& checkpoint);

}  // namespace xlate::trainer
