#include "trainer/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <optional>

#include <sys/resource.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "engine/backend/cuda_backend.h"
#include "engine/model_directory.h"
#include "engine/ops/backend.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "evaluation/bleu.h"
#include "trainer/data/shard.h"
#include "trainer/data/training_batch.h"
#include "trainer/distributed/nccl_communicator.h"

namespace xlate::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// The batch's tensors (host) on the model's device.
ModelInputs model_inputs(const TrainingBatch& batch, Device device) {
  return {batch.source_tokens.on(device), batch.source_lengths.on(device),
          batch.target_input.on(device), batch.target_output.on(device),
          batch.target_lengths.on(device)};
}

// Longest source and decoder sequence of a corpus must fit the positional tables.
absl::Status check_lengths(const TokenCorpus& corpus, const ModelConfig& config,
                           const std::string& split) {
  for (int64_t i = 0; i < corpus.size(); ++i) {
    const int64_t longest = std::max(corpus.source(i).size, corpus.target(i).size + 1);
    if (longest > config.max_positions) {
      return absl::InvalidArgumentError(absl::StrCat(
          split, " pair ", i, " has ", longest, " tokens; the model's max_positions is ",
          config.max_positions, " (prepare the data with a smaller --max_length or raise "
          "--max_positions)"));
    }
  }
  return absl::OkStatus();
}

std::string precision_note(TrainingPrecision precision, int compute_capability,
                           DType activations) {
  if (precision == TrainingPrecision::kFloat32) return "";
  const char* type = precision == TrainingPrecision::kFloat16 ? "float16" : "bfloat16";
  return absl::StrCat(activations == DType::kFloat32
                          ? " (float32 weights, activations and gradients"
                          : absl::StrCat(" (float32 weights and gradients, activations stored in ",
                                         type),
                      "; matrix products with ", type,
                      compute_capability >= 70 ? " inputs on tensor cores)"
                      : activations == DType::kFloat32
                          ? " copies of their inputs at the float32 rate: no tensor cores)"
                          : " inputs at the float32 rate: no tensor cores)");
}

kernels::Float32Math float32_math(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::kFloat16: return kernels::Float32Math::kFloat16Inputs;
    case TrainingPrecision::kBFloat16: return kernels::Float32Math::kBFloat16Inputs;
    case TrainingPrecision::kFloat32: break;
  }
  return kernels::Float32Math::kExact;
}

// The training precision's products on this thread's CUDA worker for as long as it lives (the
// validation translator, on the same thread, computes exactly outside it).
class PrecisionScope {
 public:
  PrecisionScope(Device device, TrainingPrecision precision)
      : active_(device == Device::kCUDA && precision != TrainingPrecision::kFloat32) {
    if (!active_) return;
    previous_ = cuda_backend::float32_math();
    cuda_backend::set_float32_math(float32_math(precision));
  }
  ~PrecisionScope() {
    if (active_) cuda_backend::set_float32_math(previous_);
  }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  bool active_;
  kernels::Float32Math previous_ = kernels::Float32Math::kExact;
};

// A small linear layer (bias and ReLU) on zeros stored in `storage` on the GPU, forward, then
// backward when `backward` (the weight and bias gradients float32, as the trainer's), waited for.
void run_small_linear(DType storage, bool backward) {
  const Tensor inp = Tensor::zeros({16, 32}, storage, Device::kCUDA);
  const Tensor weight = Tensor::zeros({16, 32}, storage, Device::kCUDA);
  const Tensor bias = Tensor::zeros({16}, storage, Device::kCUDA);
  Tensor out = Tensor::empty({16, 16}, storage, Device::kCUDA);
  linear_forward(out, inp, weight, bias, Activation::kRelu);
  if (backward) {
    Tensor dinp = Tensor::empty({16, 32}, storage, Device::kCUDA);
    Tensor dweight = Tensor::zeros({16, 32}, DType::kFloat32, Device::kCUDA);
    Tensor dbias = Tensor::zeros({16}, DType::kFloat32, Device::kCUDA);
    linear_backward(dinp, dweight, dbias, out, inp, weight, GradientWrite::kAccumulate);
  }
  cuda_backend::synchronize();
}

// One small product in `precision` on the GPU, and with 16-bit activations a linear layer's
// forward and backward in that storage: a cuBLASLt that has no algorithm for them on this GPU
// is refused at start, naming it, not mid-step.
absl::Status check_precision_runs(Device device, TrainingPrecision precision,
                                  DType activation_dtype) {
  if (device != Device::kCUDA || precision == TrainingPrecision::kFloat32) {
    return absl::OkStatus();
  }
  const char* inputs = precision == TrainingPrecision::kFloat16 ? "float16" : "bfloat16";
  const PrecisionScope scope(device, precision);
  try {
    run_small_linear(DType::kFloat32, /*backward=*/false);
  } catch (const std::exception& error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--precision ", precision_name(precision), ": this GPU (",
        cuda_backend::device_description(), ") cannot run float32 products with ", inputs,
        " inputs (", error.what(), "); use --precision fp32"));
  }
  if (activation_dtype == DType::kFloat32) return absl::OkStatus();
  try {
    run_small_linear(activation_dtype, /*backward=*/true);
  } catch (const std::exception& error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--activations 16bit: this GPU (", cuda_backend::device_description(),
        ") cannot run a linear layer on ", inputs, " activations (", error.what(),
        "); use --activations fp32"));
  }
  return absl::OkStatus();
}

// Tells the bucketed reduction which part of the flat gradient the backward pass has finished:
// a gradient tensor with the alignment gap after it (the ranges the buckets were cut from).
class ReduceWhenReady final : public GradientListener {
 public:
  ReduceWhenReady(BucketedAllReduce& reducer, const FlatParameters& gradients)
      : reducer_(reducer), flat_(gradients.flat().data<float>()) {
    for (const FlatRange& range : gradients.trainable_ranges()) {
      range_count_at_.emplace(range.offset, range.count);
    }
  }
  void tensor_ready(const Tensor& gradient) override {
    const int64_t offset = gradient.data<float>() - flat_;
    const auto range = range_count_at_.find(offset);
    reducer_.ready({offset, range != range_count_at_.end() ? range->second : gradient.numel()});
  }

 private:
  BucketedAllReduce& reducer_;
  const float* flat_;
  std::map<int64_t, int64_t> range_count_at_;  // by offset: the parameter's count and its gap
};

uint64_t run_fingerprint(const ModelConfig& config, const TrainingOptions& options,
                         const BatchIterator& batches, int world_size) {
  const std::string text = absl::StrCat(
      config.ToJson(), "|", options.max_tokens, "|", options.max_sentences, "|",
      options.update_frequency, "|", options.seed, "|", batches.fingerprint(), "|", world_size);
  return fingerprint_bytes(text.data(), static_cast<int64_t>(text.size()));
}

// What every rank of a data-parallel run must share beyond run_fingerprint: the options that
// decide the model, the collectives each step makes (bucket plan, steps, validation,
// checkpoints) or the update each rank applies. A rank started with other values would hang the
// others or drift from them. Every field is listed, in declaration order (the structured
// bindings name exactly as many as the structs have, so a field added to the options stops this
// from compiling until it is placed), and only those a rank may choose for itself are left out:
// its paths (the data's content is in run_fingerprint), its device string (the device it
// resolved to is compared instead), how many checkpoints it keeps and how often it logs.
uint64_t rank_agreement_fingerprint(const TrainingOptions& options, uint64_t run_fingerprint,
                                    Device device) {
  const auto& [data_directory, output_directory, batch_plan_path, device_name, precision, activations,
               architecture, max_tokens, max_sentences, update_frequency, max_steps,
               warmup_steps, learning_rate_scale, adam_beta1, adam_beta2, adam_epsilon,
               clip_norm, loss_scale, loss_scaler, seed, bucket_mb, zero_stage,
               gradient_reduction, checkpoint_every_steps, checkpoint_every_minutes,
               keep_checkpoints, validate_every_steps, bleu_sentences, bleu_beam_size,
               log_every_steps] = options;
  const auto& [preset, layers, d_model, d_ff, heads, d_k, d_v, dropout, activation_dropout,
               label_smoothing, positional, max_positions] = architecture;
  const auto& [initial_scale, growth_interval, minimum_scale] = loss_scaler;
  static_cast<void>(data_directory), static_cast<void>(output_directory);
  static_cast<void>(batch_plan_path);
  static_cast<void>(device_name), static_cast<void>(keep_checkpoints);
  static_cast<void>(log_every_steps);
  const std::string text = absl::StrJoin(
      std::make_tuple(run_fingerprint, device == Device::kCUDA ? "cuda" : "cpu", precision,
                      activations, preset, layers, d_model, d_ff, heads, d_k, d_v, dropout,
                      activation_dropout, label_smoothing, positional, max_positions, max_tokens,
                      max_sentences, update_frequency, max_steps, warmup_steps,
                      learning_rate_scale, adam_beta1, adam_beta2, adam_epsilon, clip_norm,
                      loss_scale, initial_scale, growth_interval, minimum_scale, seed, bucket_mb,
                      zero_stage, gradient_reduction, checkpoint_every_steps,
                      checkpoint_every_minutes, validate_every_steps, bleu_sentences,
                      bleu_beam_size),
      "|");
  return fingerprint_bytes(text.data(), static_cast<int64_t>(text.size()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainingOptions& options,
                                                         Communicator& communicator) {
  absl::Status status = options.Validate();
  if (!status.ok()) return status;
  std::string device_note;
  absl::StatusOr<Device> device = resolve_training_device(options.device, &device_note);
  if (!device.ok()) return device.status();
  absl::StatusOr<TokenCorpus> train = TokenCorpus::Open(options.data_directory, "train");
  if (!train.ok()) return train.status();
  std::optional<TokenCorpus> valid;
  if (std::filesystem::exists(options.data_directory + "/valid.tokens")) {
    absl::StatusOr<TokenCorpus> opened = TokenCorpus::Open(options.data_directory, "valid");
    if (!opened.ok()) return opened.status();
    valid.emplace(std::move(*opened));
  }
  absl::StatusOr<ModelConfig> config =
      build_model_config(options.architecture, train->vocab_size());
  if (!config.ok()) return config.status();
  if (!(status = check_model_fits_device(*config, *device)).ok()) return status;
  if (!(status = check_lengths(*train, *config, "train")).ok()) return status;
  if (valid && !(status = check_lengths(*valid, *config, "valid")).ok()) return status;
  const int compute_capability =
      *device == Device::kCUDA ? cuda_backend::compute_capability() : 0;
  absl::StatusOr<TrainingPrecision> precision =
      resolve_training_precision(options.precision, *device, compute_capability);
  if (!precision.ok()) return precision.status();
  absl::StatusOr<DType> activation_dtype =
      resolve_activation_dtype(options.activations, *device, *precision);
  if (!activation_dtype.ok()) return activation_dtype.status();
  if (!(status = check_precision_runs(*device, *precision, *activation_dtype)).ok()) return status;
  // The resolved choices, so that ranks compare what they run, not what they were asked
  // (auto on two GPU generations can differ).
  TrainingOptions resolved = options;
  resolved.loss_scale = resolve_loss_scale(options.loss_scale, *precision);
  resolved.precision = precision_name(*precision);
  resolved.activations = *activation_dtype == DType::kFloat32 ? "fp32" : "16bit";
  std::unique_ptr<Trainer> trainer;
  try {
    trainer.reset(new Trainer(resolved, communicator, std::move(*train), std::move(valid),
                              *config, *device));
    trainer->precision_ = *precision;
    trainer->activation_dtype_ = *activation_dtype;
    trainer->device_note_ = absl::StrCat(device_note, device_note.empty() ? "" : "; ",
                                         "precision ", precision_name(*precision),
                                         precision_note(*precision, compute_capability,
                                                        *activation_dtype),
                                         ", loss scaling ",
                                         resolved.loss_scale);
    if (!(status = trainer->initialise()).ok()) return status;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of ", *device == Device::kCUDA ? "GPU" : "host",
        " memory setting up the model: its parameters, gradients and Adam's two moments take "
        "16 bytes per parameter; train a smaller model (--preset, --d_model, --layers) or on ",
        *device == Device::kCUDA ? "a GPU with more memory" : "a machine with more memory"));
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("setting up the model failed: ", error.what()));
  }
  return trainer;
}

Trainer::Trainer(const TrainingOptions& options, Communicator& communicator, TokenCorpus train,
                 std::optional<TokenCorpus> valid, ModelConfig config, Device device)
    : options_(options),
      communicator_(communicator),
      train_(std::move(train)),
      valid_(std::move(valid)),
      config_(config),
      device_(device),
      parameters_(config_, device_),
      gradients_(config_, device_),
      schedule_{config_.d_model, options.warmup_steps, options.learning_rate_scale},
      model_(config_) {}

absl::Status Trainer::initialise() {
  absl::StatusOr<BatchIterator> batches = BatchIterator::Create(
      train_, {options_.max_tokens, options_.max_sentences, options_.seed, true});
  if (!batches.ok()) return batches.status();
  batches_.emplace(std::move(*batches));
  std::error_code error;
  std::filesystem::create_directories(options_.output_directory, error);
  if (error || !std::filesystem::is_directory(options_.output_directory)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create the output directory ", options_.output_directory, ": ", error.message()));
  }
  if (is_leader()) {
    absl::StatusOr<std::unique_ptr<TrainingLog>> log =
        TrainingLog::Open(options_.output_directory + "/train_log.jsonl");
    if (!log.ok()) return log.status();
    log_ = std::move(*log);
    if (!device_note_.empty()) log_->message(device_note_);
  }
  state_.seed = options_.seed;
  state_.run_fingerprint = run_fingerprint(config_, options_, *batches_, communicator_.world_size());
  absl::Status agreed = check_same_on_all_ranks(
      communicator_, rank_agreement_fingerprint(options_, state_.run_fingerprint, device_),
      "the model, the training data, the training options and the device (give every rank "
      "the same command line and data, and a GPU each or none)");
  if (!agreed.ok()) return agreed;
  parameters_.copy_from(random_weights(config_, options_.seed), config_);
  if (options_.loss_scale == "dynamic") loss_scaler_.emplace(options_.loss_scaler);
  if (absl::Status reducer = create_reducer(); !reducer.ok()) return reducer;
  const AdamOptions adam{options_.adam_beta1, options_.adam_beta2, options_.adam_epsilon,
                         options_.clip_norm};
  if (sharded()) {
    optimizer_.emplace(parameters_, adam, reducer_->shards());
  } else {
    optimizer_.emplace(parameters_, adam);
  }

  absl::StatusOr<std::vector<std::string>> checkpoints = list_checkpoints(options_.output_directory);
  if (!checkpoints.ok()) return checkpoints.status();
  if (!checkpoints->empty()) {
    absl::StatusOr<TrainerState> resumed =
        read_checkpoint(checkpoints->back(), config_, parameters_, *optimizer_);
    if (!resumed.ok()) return resumed.status();
    if (resumed->run_fingerprint != state_.run_fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot resume from ", checkpoints->back(), ": it was written by a run with other "
          "batching options, seed, data or number of ranks; use a new --output directory"));
    }
    state_ = *resumed;
    // A run may resume with other loss scaling (on another device or precision): a scaler
    // continues from the checkpoint's state when it has one and starts afresh otherwise.
    if (loss_scaler_ && state_.loss_scaler) loss_scaler_->restore(*state_.loss_scaler);
    absl::Status seek = batches_->seek({state_.data_epoch, state_.data_batch});
    if (!seek.ok()) return seek;
    elapsed_before_ = state_.elapsed_seconds;
    if (log_) log_->message(absl::StrCat("resumed from ", checkpoints->back(), " at step ", state_.step));
  }
  if (is_leader() && !options_.batch_plan_path.empty()) {
    const BatchPosition at = batches_->position();
    absl::StatusOr<BatchPlanWriter> plan = BatchPlanWriter::Open(
        options_.batch_plan_path, at.epoch * batches_->batches_per_epoch() + at.batch);
    if (!plan.ok()) return plan.status();
    batch_plan_.emplace(std::move(*plan));
  }
  state_.loss_scaler.reset();
  if (loss_scaler_) state_.loss_scaler = loss_scaler_->state();
  if (activation_dtype_ != DType::kFloat32) {
    parameter_copy_ = std::make_unique<ParameterCopy>(parameters_, activation_dtype_);
  }
  const Tensor start_weights = parameters_.flat().on(Device::kCPU);
  absl::Status same = check_same_on_all_ranks(
      communicator_,
      fingerprint_bytes(start_weights.raw_data(), static_cast<int64_t>(start_weights.nbytes())),
      "the model weights at the start of training");
  if (!same.ok()) return same;
  if (is_leader() && valid_ && options_.bleu_sentences > 0) {
    absl::Status loaded = load_translator();
    if (!loaded.ok()) return loaded;
  }
  started_ = last_checkpoint_ = Clock::now();
  return absl::OkStatus();
}

double Trainer::elapsed_seconds() const {
  return elapsed_before_ + std::chrono::duration<double>(Clock::now() - started_).count();
}

absl::Status Trainer::create_reducer() {
  const bool wants_nccl = options_.gradient_reduction == "nccl";
  if (wants_nccl && device_ == Device::kCPU) {
    return absl::InvalidArgumentError(
        "--gradient_reduction nccl reduces device memory and needs GPU ranks (--device cuda); "
        "CPU ranks reduce through MPI (--gradient_reduction auto or host)");
  }
  if (!reduces_gradients()) {
    if (options_.zero_stage == 1 && log_) {
      log_->message("--zero_stage 1 with one rank: nothing to shard, every moment stays here");
    }
    return absl::OkStatus();
  }
  if (device_ != Device::kCPU) {
    // A GPU's gradient is reduced in device memory by NCCL, or else copied to the host whole
    // after the backward pass and reduced there by MPI (no buckets: MPI takes host memory).
    const auto through_host = [&](absl::string_view why) {
      if (log_) {
        log_->message(absl::StrCat(
            "gradient all-reduce: through host memory after the backward pass (", why, ")"));
      }
      return absl::OkStatus();
    };
    // ZeRO-1's reduce-scatter and gathers are bucketed collectives on the gradient's memory:
    // on a GPU, NCCL's.
    const auto zero_needs_nccl = [&](absl::string_view why) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--zero_stage 1 on GPU ranks reduce-scatters and gathers in device memory through "
          "NCCL, but ", why, "; use --zero_stage 0, or NCCL (--gradient_reduction auto or "
          "nccl)"));
    };
    if (options_.gradient_reduction == "host") {
      if (options_.zero_stage == 1) return zero_needs_nccl("--gradient_reduction is host");
      return through_host("--gradient_reduction host");
    }
    absl::StatusOr<std::unique_ptr<Communicator>> nccl = create_nccl_communicator(communicator_);
    if (!nccl.ok()) {
      if (wants_nccl) {
        return absl::FailedPreconditionError(
            absl::StrCat("--gradient_reduction nccl: ", nccl.status().message()));
      }
      if (nccl.status().code() == absl::StatusCode::kUnimplemented ||
          nccl.status().code() == absl::StatusCode::kUnavailable) {
        if (options_.zero_stage == 1) return zero_needs_nccl(nccl.status().message());
        return through_host(nccl.status().message());
      }
      return nccl.status();
    }
    device_communicator_ = std::move(*nccl);
    if (log_) {
      log_->message(absl::StrCat("gradient all-reduce: NCCL between the GPUs of the ",
                                 communicator_.world_size(), " ranks"));
    }
  }
  if (options_.bucket_mb == 0 && options_.zero_stage == 0) return absl::OkStatus();
  Communicator& gradient_communicator =
      device_communicator_ ? *device_communicator_ : communicator_;
  // The parameters are laid out in forward order (embedding, encoder, decoder), so the backward
  // pass finishes them from the end of the buffer towards its start; the fixed sinusoidal tables
  // get no gradient and are not reduced.
  std::vector<FlatRange> ranges = gradients_.trainable_ranges();
  std::reverse(ranges.begin(), ranges.end());
  const auto bucket_elements = static_cast<int64_t>(
      std::max(1.0, options_.bucket_mb * 1024 * 1024 / sizeof(float)));
  const BucketedAllReduce::Threading threading =
      gradient_communicator.allows_collectives_from_any_thread()
          ? BucketedAllReduce::Threading::kBackgroundThread
          : BucketedAllReduce::Threading::kCallingThread;
  // --bucket_mb 0 with ZeRO-1: one bucket per contiguous run of parameters.
  const int64_t limit = options_.bucket_mb == 0 ? 0 : bucket_elements;
  const BucketedAllReduce::Reduction reduction =
      options_.zero_stage == 1 ? BucketedAllReduce::Reduction::kReduceScatter
                               : BucketedAllReduce::Reduction::kAllReduce;
  absl::StatusOr<std::unique_ptr<BucketedAllReduce>> reducer =
      BucketedAllReduce::Create(gradient_communicator, std::move(ranges), limit, threading,
                                reduction);
  if (!reducer.ok()) return reducer.status();
  reducer_ = std::move(*reducer);
  reduce_when_ready_ = std::make_unique<ReduceWhenReady>(*reducer_, gradients_);
  if (log_) {
    log_->message(absl::StrCat(
        options_.zero_stage == 1
            ? "ZeRO-1: Adam's moments sharded over the ranks; gradient reduce-scatter: "
            : "gradient all-reduce: ",
        reducer_->buckets().size(), " buckets of at most ", options_.bucket_mb, " MiB, ",
        threading == BucketedAllReduce::Threading::kBackgroundThread
            ? "overlapped with the backward pass"
            : "in the training thread (MPI allows no other thread)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Trainer::train_step(StepReport* report) {
  const PrecisionScope precision(device_, precision_);
  gradients_.set_zero();
  // The backward pass starts from the loss scale (exact: a power of two); the update divides it
  // out again through gradient_scale below.
  const double loss_scale = loss_scaler_ ? loss_scaler_->scale() : 1.0;
  // loss, nll, target tokens, source tokens: this rank's sums, then all ranks'.
  double sums[4] = {0, 0, 0, 0};
  // Read once every micro-batch's backward pass is queued: on a GPU, reading waits for it.
  std::vector<PendingCrossEntropySums> losses;
  GradientListener* listener = nullptr;
  for (int micro = 0; micro < options_.update_frequency; ++micro) {
    // Only the last micro-batch's backward pass reduces (the earlier ones only accumulate).
    if (reducer_ && micro + 1 == options_.update_frequency) {
      reducer_->begin(gradients_.flat().data<float>());
      listener = reduce_when_ready_.get();
    }
    const std::vector<int64_t> global_batch = batches_->next();
    if (batch_plan_) {
      if (absl::Status written = batch_plan_->Append(global_batch); !written.ok()) return written;
    }
    const std::vector<int64_t> pairs =
        shard(global_batch, communicator_.rank(), communicator_.world_size());
    if (pairs.empty()) continue;
    const TrainingBatch batch = make_training_batch(train_, pairs, config_);
    const DropoutSettings dropout{config_.dropout, config_.activation_dropout, state_.seed,
                                  state_.step, micro, communicator_.rank()};
    losses.push_back(model_.forward_backward(
        gradients_.weights(), pass_weights(), model_inputs(batch, device_), dropout,
        static_cast<float>(loss_scale), listener));
    sums[3] += static_cast<double>(batch.source_token_count);
  }
  model_.release_activations();  // free for the next step's different shapes
  for (PendingCrossEntropySums& pending : losses) {  // in micro-batch order
    const CrossEntropySums& loss = pending.read();
    sums[0] += loss.loss;
    sums[1] += loss.nll;
    sums[2] += static_cast<double>(loss.tokens);
  }
  absl::Status status;
  if (reducer_) {
    status = reducer_->finish();
    report->reduce_seconds += reducer_->last_timing().reduce_seconds;
    report->exposed_reduce_seconds += reducer_->last_timing().exposed_seconds;
  } else {
    status = all_reduce_gradients(report);
  }
  if (status.ok()) status = communicator_.all_reduce_sum(sums, 4);
  if (!status.ok()) return status;
  // With loss scaling, a loss that is not finite (a float16 activation past 65504) is an
  // overflow like the gradient's: the step is skipped. Without, the run has diverged.
  const bool loss_finite = std::isfinite(sums[0]);
  if (!loss_finite && !loss_scaler_) {
    return absl::InternalError(absl::StrCat("the training loss is not finite at step ", state_.step + 1,
                                            "; lower --lr_scale or set --clip_norm"));
  }
  const double gradient_scale = (sums[2] > 0 ? 1.0 / sums[2] : 0.0) / loss_scale;
  // Every rank gets the same norm, so every rank decides the same.
  const absl::StatusOr<double> global_norm = gradient_norm(gradient_scale);
  if (!global_norm.ok()) return global_norm.status();
  const double norm = *global_norm;
  const BatchPosition position = batches_->position();
  state_.data_epoch = position.epoch;  // a skipped step's batches are consumed too
  state_.data_batch = position.batch;
  if (loss_scaler_) {
    absl::StatusOr<DynamicLossScaler::Outcome> outcome =
        loss_scaler_->record(loss_finite && std::isfinite(norm), state_.step);
    if (!outcome.ok()) return outcome.status();
    state_.loss_scaler = loss_scaler_->state();
    report->loss_scale = loss_scaler_->scale();
    if (*outcome == DynamicLossScaler::Outcome::kSkip) {
      ++report->skipped_steps;
      if (log_) {
        log_->message(absl::StrCat("step ", state_.step + 1, ": the ",
                                   loss_finite ? "gradient" : "loss", " is not finite at loss "
                                   "scale ", loss_scale, "; step skipped, loss scale halved to ",
                                   loss_scaler_->scale()));
      }
      return false;
    }
    if (*outcome == DynamicLossScaler::Outcome::kApplyAndGrow && log_) {
      log_->message(absl::StrCat("step ", state_.step + 1, ": ",
                                 options_.loss_scaler.growth_interval,
                                 " finite steps in a row; loss scale doubled to ",
                                 loss_scaler_->scale()));
    }
  } else if (!std::isfinite(norm)) {
    return absl::InternalError(absl::StrCat(
        "the gradient is not finite at step ", state_.step + 1, "; lower --lr_scale, set "
        "--clip_norm, or train with --loss_scale dynamic (skips such steps)"));
  }
  const double learning_rate = schedule_.at(state_.step + 1);
  optimizer_->update(parameters_, gradients_, learning_rate, gradient_scale, norm);
  if (sharded()) {
    // Every rank updated its shards only: gather the others' (all of it waited for).
    const Clock::time_point started = Clock::now();
    if (absl::Status gathered = reducer_->all_gather(parameters_.flat().data<float>());
        !gathered.ok()) {
      return gathered;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    report->reduce_seconds += seconds;
    report->exposed_reduce_seconds += seconds;
  }
  if (parameter_copy_) parameter_copy_->refresh(parameters_);
  report->gradient_norm = norm;
  ++state_.step;
  report->step = state_.step;
  report->epoch = position.epoch;
  report->learning_rate = learning_rate;
  report->loss += sums[0];
  report->nll += sums[1];
  report->target_tokens += static_cast<int64_t>(sums[2]);
  report->source_tokens += static_cast<int64_t>(sums[3]);
  return true;
}

absl::StatusOr<double> Trainer::gradient_norm(double gradient_scale) {
  if (!sharded()) return Adam::gradient_norm(gradients_, gradient_scale);
  // Each rank holds the reduced gradient of its own shards only.
  double sum_of_squares = optimizer_->owned_sum_of_squares(gradients_);
  absl::Status status = communicator_.all_reduce_sum(&sum_of_squares, 1);
  if (!status.ok()) return status;
  return std::sqrt(sum_of_squares) * gradient_scale;
}

bool Trainer::reduces_gradients() const {
  return communicator_.world_size() > 1 || options_.gradient_reduction != "auto";
}

absl::Status Trainer::all_reduce_gradients(StepReport* report) {
  if (!reduces_gradients()) return absl::OkStatus();
  const Clock::time_point started = Clock::now();
  absl::Status status;
  if (device_communicator_) {
    status = device_communicator_->all_reduce_sum(gradients_.flat().data<float>(), gradients_.size());
  } else {
    Tensor host = gradients_.flat().on(Device::kCPU);
    status = communicator_.all_reduce_sum(host.data<float>(), gradients_.size());
    if (status.ok() && device_ != Device::kCPU) gradients_.flat().copy_from(host);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  report->reduce_seconds += seconds;  // all of it exposed: nothing runs beside it
  report->exposed_reduce_seconds += seconds;
  return status;
}

const TransformerWeights& Trainer::pass_weights() const {
  return parameter_copy_ ? parameter_copy_->weights() : parameters_.weights();
}

absl::Status Trainer::load_translator() {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::Load(options_.data_directory + "/spm.model");
  if (!tokenizer.ok()) return tokenizer.status();
  // On the GPU the model reads the live float32 parameters where they are (no copy).
  translator_ = std::make_unique<Translator>(
      std::make_shared<TransformerModel>(config_, parameters_.weights(),
                                         Placement{device_, DType::kFloat32}),
      std::move(*tokenizer));
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::validation_bleu() {
  // The model copies the attention projections (and on the CPU packs every linear layer's
  // weight) when it is made: a new one sees this step's weights (the rest are views of the live
  // parameters).
  absl::Status loaded = load_translator();
  if (!loaded.ok()) return loaded;
  std::vector<std::vector<int32_t>> sources;
  std::vector<std::string> references;
  const int64_t count = std::min<int64_t>(options_.bleu_sentences, valid_->size());
  for (int64_t i = 0; i < count; ++i) {
    const TokenSpan source = valid_->source(i), target = valid_->target(i);
    sources.emplace_back(source.begin(), source.end() - 1);  // without the stored eos
    absl::StatusOr<std::string> text =
        translator_->tokenizer().decode(std::vector<int32_t>(target.begin(), target.end()));
    if (!text.ok()) return text.status();
    references.push_back(*text);
  }
  TranslationOptions options;
  options.beam_size = options_.bleu_beam_size;
  absl::StatusOr<std::vector<std::vector<Hypothesis>>> translated =
      translator_->TranslateTokens(sources, options);
  if (!translated.ok()) return translated.status();
  std::vector<std::string> hypotheses;
  for (const std::vector<Hypothesis>& best : *translated) {
    absl::StatusOr<std::string> text = translator_->tokenizer().decode(best.front().tokens);
    if (!text.ok()) return text.status();
    hypotheses.push_back(*text);
  }
  absl::StatusOr<evaluation::BleuScore> bleu =
      evaluation::corpus_bleu(hypotheses, references, evaluation::BleuOptions::sacrebleu());
  if (!bleu.ok()) return bleu.status();
  return bleu->score;
}

absl::Status Trainer::validate() {
  if (!valid_) return absl::OkStatus();
  std::optional<PrecisionScope> precision(std::in_place, device_, precision_);  // the loss only
  const Clock::time_point start = Clock::now();
  absl::StatusOr<BatchIterator> batches =
      BatchIterator::Create(*valid_, {options_.max_tokens, options_.max_sentences, 1, false});
  if (!batches.ok()) return batches.status();
  double sums[3] = {0, 0, 0};
  std::vector<PendingCrossEntropySums> losses;  // read after the last batch is queued
  for (int64_t b = 0; b < batches->batches_per_epoch(); ++b) {
    const std::vector<int64_t> pairs =
        shard(batches->next(), communicator_.rank(), communicator_.world_size());
    if (pairs.empty()) continue;
    const TrainingBatch batch = make_training_batch(*valid_, pairs, config_);
    losses.push_back(model_.forward(pass_weights(), model_inputs(batch, device_), {}));
  }
  model_.release_activations();  // before the translations of validation BLEU
  for (PendingCrossEntropySums& pending : losses) {
    const CrossEntropySums& loss = pending.read();
    sums[0] += loss.loss;
    sums[1] += loss.nll;
    sums[2] += static_cast<double>(loss.tokens);
  }
  absl::Status status = communicator_.all_reduce_sum(sums, 3);
  if (!status.ok()) return status;
  ValidationReport report;
  report.step = state_.step;
  report.target_tokens = static_cast<int64_t>(sums[2]);
  report.loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  report.nll = sums[2] > 0 ? sums[1] / sums[2] : 0;
  precision.reset();  // the translations compute exactly, as the server will
  if (translator_) {
    absl::StatusOr<double> bleu = validation_bleu();
    if (!bleu.ok()) return bleu.status();
    report.bleu = *bleu;
    report.bleu_sentences = static_cast<int>(std::min<int64_t>(options_.bleu_sentences, valid_->size()));
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (log_) log_->validation(report);
  return absl::OkStatus();
}

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

absl::Status Trainer::Run() {
  const auto kept = [this] {
    return absl::StrCat("; the checkpoints written so far are kept and a rerun resumes from the "
                        "latest (", state_.step, " of ", options_.max_steps, " steps done)");
  };
  try {
    return train_until_done();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of ", device_ == Device::kCUDA ? "GPU" : "host", " memory",
        device_memory_text(), ": lower --max_tokens (", options_.max_tokens,
        " tokens per micro-batch now) and raise --update_freq to keep the tokens per step",
        kept()));
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("training failed: ", error.what(), kept()));
  }
}

std::string Trainer::device_memory_text() const {
  if (device_ != Device::kCUDA) return "";
  constexpr double kMiB = 1024.0 * 1024.0;
  return absl::StrFormat(" (this process holds %.0f MiB of GPU memory; %.0f MiB are free)",
                         static_cast<double>(cuda_backend::bytes_reserved()) / kMiB,
                         static_cast<double>(cuda_backend::device_memory_free()) / kMiB);
}

absl::Status Trainer::train_until_done() {
  StepReport report;
  double report_started = elapsed_seconds();
  const auto device_waits = [&] {
    return device_ == Device::kCUDA ? cuda_backend::wait_seconds() : 0.0;
  };
  double waits_before = device_waits();
  const auto plan_counts = [&] { return op_backend(device_).plan_counts(); };
  kernels::PlanCacheCounts plans_before = plan_counts();
  const int64_t first_step = state_.step;
  bool validated = false, saved = false;
  while (state_.step < options_.max_steps) {
    absl::StatusOr<bool> applied = train_step(&report);
    if (!applied.ok()) return applied.status();
    if (!*applied) continue;  // skipped (loss scaling): the same step again on the next batch
    absl::Status status;
    validated = saved = false;
    const bool last = state_.step == options_.max_steps;
    if (state_.step % options_.log_every_steps == 0 || last) {
      const double now = elapsed_seconds();
      report.max_steps = options_.max_steps;
      report.loss /= std::max<int64_t>(report.target_tokens, 1);
      report.nll /= std::max<int64_t>(report.target_tokens, 1);
      report.tokens_per_second =
          static_cast<double>(report.source_tokens + report.target_tokens) / std::max(now - report_started, 1e-9);
      report.elapsed_seconds = now;
      if (device_ == Device::kCUDA) {
        report.gpu_memory_bytes = static_cast<int64_t>(cuda_backend::bytes_reserved());
        report.gpu_memory_peak_in_use_bytes =
            static_cast<int64_t>(cuda_backend::peak_bytes_in_use());
        report.device_wait_seconds = device_waits() - waits_before;
        report.interval_seconds = now - report_started;
      }
      const kernels::PlanCacheCounts plans = plan_counts();
      report.plans_made = static_cast<int64_t>(plans.misses - plans_before.misses);
      report.plan_seconds = plans.making_seconds - plans_before.making_seconds;
      rusage usage{};
      if (getrusage(RUSAGE_SELF, &usage) == 0) {
        report.peak_host_memory_bytes = int64_t{usage.ru_maxrss} * 1024;  // Linux: KiB
      }
      report.eta_seconds = (now - elapsed_before_) / static_cast<double>(state_.step - first_step) *
                           static_cast<double>(options_.max_steps - state_.step);
      if (log_) log_->step(report);
      report = StepReport();
      report_started = now;
      waits_before = device_waits();
      plans_before = plans;
    }
    if (options_.validate_every_steps > 0 && state_.step % options_.validate_every_steps == 0) {
      if (!(status = validate()).ok()) return status;
      validated = true;
    }
    if (checkpoint_due()) {
      if (!(status = checkpoint()).ok()) return status;
      saved = true;
    }
  }
  absl::Status status;
  if (!validated && state_.step > first_step && !(status = validate()).ok()) return status;
  if (!saved && state_.step > first_step && !(status = checkpoint()).ok()) return status;
  return absl::OkStatus();
}

}  // namespace xlate::trainer
