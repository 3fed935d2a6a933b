// When the trainer writes a checkpoint (every --checkpoint_every_steps or
// --checkpoint_every_minutes, and at the end), and the writing of one.
#include "absl/strings/str_cat.h"
#include "trainer/training/trainer.h"

namespace xlate::trainer {

bool Trainer::checkpoint_due() {
  int64_t due = 0;
  if (options_.checkpoint_every_steps > 0 && state_.step % options_.checkpoint_every_steps == 0) due = 1;
  if (options_.checkpoint_every_minutes > 0 &&
      std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >=
          60 * options_.checkpoint_every_minutes) {
    due = 1;
  }
  // Clocks differ between ranks: rank 0 decides for everyone.
  if (!communicator_.broadcast(&due, sizeof(due), 0).ok()) return false;
  return due != 0;
}

absl::Status Trainer::checkpoint() {
  last_checkpoint_ = Clock::now();
  state_.elapsed_seconds = elapsed_seconds();
  std::optional<AdamMoments> moments;
  if (sharded()) {
    // The file holds every moment: every rank gathers the others' shards (a collective), where
    // the parameters live (on GPU ranks NCCL's collectives take device memory).
    moments = optimizer_->moments(device_);
    for (Tensor* moment : {&moments->first, &moments->second}) {
      if (absl::Status status = reducer_->all_gather(moment->data<float>()); !status.ok()) {
        return status;
      }
    }
  }
  if (!is_leader()) return communicator_.barrier();
  if (!moments) moments = optimizer_->moments();
  const CheckpointContents contents{config_, parameters_, *moments, state_,
                                    options_.data_directory + "/spm.model"};
  absl::StatusOr<std::string> path =
      write_checkpoint(options_.output_directory, contents, options_.keep_checkpoints);
  absl::Status barrier = communicator_.barrier();
  if (!path.ok()) return path.status();
  log_->message(absl::StrCat("checkpoint ", *path));
  return barrier;
}

}  // namespace xlate::trainer
