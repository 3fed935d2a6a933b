// The training loop: length-grouped batches from a prepared corpus, each rank's shard through
// the model's forward and backward passes, gradients summed over micro-batches and ranks and
// divided by the step's target tokens, Adam with the paper's schedule, periodic validation
// (loss and BLEU through the engine), checkpoints, and an exact resume from the latest one.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "engine/translator.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/batch_iterator.h"
#include "trainer/data/batch_plan.h"
#include "trainer/data/training_batch.h"
#include "trainer/data/token_corpus.h"
#include "trainer/distributed/bucketed_all_reduce.h"
#include "trainer/distributed/communicator.h"
#include "trainer/model/flat_parameters.h"
#include "trainer/model/transformer_training.h"
#include "trainer/optim/adam.h"
#include "trainer/optim/learning_rate.h"
#include "trainer/optim/loss_scaler.h"
#include "trainer/training/training_health.h"
#include "trainer/training/training_log.h"
#include "trainer/training/training_options.h"

namespace xlate::trainer {

class Trainer {
 public:
  using Clock = std::chrono::steady_clock;

  // Opens the data, builds (or resumes) the model; `communicator` must outlive the trainer.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainingOptions& options,
                                                         Communicator& communicator);
  // Trains until options.max_steps, validating and checkpointing on the way. A step that
  // throws ends the run with a status instead (RESOURCE_EXHAUSTED for std::bad_alloc: the
  // host's memory or the GPU caching allocator's; INTERNAL for a CUDA or cuBLASLt error) that
  // names the steps done and what to change; the checkpoints so far are kept for a rerun.
  absl::Status Run();

  int64_t step() const { return state_.step; }
  const ModelConfig& config() const { return config_; }

 private:
  Trainer(const TrainingOptions& options, Communicator& communicator, TokenCorpus train,
          std::optional<TokenCorpus> valid, ModelConfig config, Device device);
  absl::Status initialise();
  // Run() without its translation of exceptions.
  absl::Status train_until_done();
  // " (this process holds 1,234 MiB of GPU memory; 56 MiB are free)" on a GPU, else "".
  std::string device_memory_text() const;
  // The device communicator (NCCL) for GPU ranks, and the overlapped gradient reduction when
  // the gradient is reduced (reduces_gradients()) and --bucket_mb > 0 or --zero_stage 1.
  absl::Status create_reducer();
  // Several ranks, or one rank told to reduce anyway (--gradient_reduction host or nccl).
  bool reduces_gradients() const;
  bool sharded() const { return options_.zero_stage == 1 && reducer_ != nullptr; }
  // The global gradient norm (times gradient_scale) on every rank: of the whole reduced
  // gradient, or with ZeRO-1 of every rank's shards together.
  absl::StatusOr<double> gradient_norm(double gradient_scale);
  // One optimizer step over update_frequency micro-batches; false when loss scaling skipped it
  // (the gradient was not finite: nothing was applied, the batches were consumed).
  absl::StatusOr<bool> train_step(StepReport* report);
  // Sums the flat gradient over the ranks in one call (the path without a reducer).
  absl::Status all_reduce_gradients(StepReport* report);
  absl::Status validate();
  // translator_ over a model of the current parameters.
  absl::Status load_translator();
  absl::StatusOr<double> validation_bleu();
  // The weights the forward and backward passes read: the float32 master, or its 16-bit copy.
  const TransformerWeights& pass_weights() const;
  // The weights a new run starts from: random (--seed), or --init_from's, checked against the
  // run's architecture and vocabulary.
  absl::Status initial_weights();
  // The batch's tensors (host) on the model's device.
  ModelInputs inputs_of(const TrainingBatch& batch) const;
  absl::Status checkpoint();
  bool checkpoint_due();
  double elapsed_seconds() const;
  bool is_leader() const { return communicator_.rank() == 0; }

  TrainingOptions options_;
  Communicator& communicator_;
  TokenCorpus train_;
  std::optional<TokenCorpus> valid_;
  ModelConfig config_;
  Device device_;  // where the parameters, gradients, Adam's moments and activations live
  TrainingPrecision precision_ = TrainingPrecision::kFloat32;
  DType activation_dtype_ = DType::kFloat32;
  std::string device_note_;  // for the log
  FlatParameters parameters_;
  FlatParameters gradients_;
  // --activations 16bit: the weights the passes read, refreshed after every update.
  std::unique_ptr<ParameterCopy> parameter_copy_;
  std::optional<Adam> optimizer_;  // made once the reducer says which parameters this rank updates
  std::optional<DynamicLossScaler> loss_scaler_;  // --loss_scale dynamic
  LearningRateSchedule schedule_;
  TransformerTraining model_;
  std::optional<BatchIterator> batches_;
  std::optional<BatchPlanWriter> batch_plan_;  // rank 0, with --batch_plan_out
  // GPU ranks: NCCL between the GPUs, for the gradient (device memory); null on CPU ranks and in
  // builds without NCCL, where the gradient is reduced by communicator_ (through host memory).
  std::unique_ptr<Communicator> device_communicator_;
  std::unique_ptr<BucketedAllReduce> reducer_;  // null: one all-reduce after the backward pass
  // With reducer_: tells it which gradients the last micro-batch's backward pass has finished.
  std::unique_ptr<GradientListener> reduce_when_ready_;
  std::unique_ptr<TrainingLog> log_;             // rank 0 only
  std::optional<PlateauWatch> plateau_;          // rank 0 only
  std::unique_ptr<Translator> translator_;       // rank 0 only, for validation BLEU
  TrainerState state_;
  std::chrono::steady_clock::time_point started_;
  double elapsed_before_ = 0;  // seconds trained before this process (resume)
  std::chrono::steady_clock::time_point last_checkpoint_;
};

}  // namespace xlate::trainer
