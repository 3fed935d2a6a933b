#include "trainer/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <optional>

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "engine/model_directory.h"
#include "engine/ops/backend.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "trainer/data/shard.h"
#include "trainer/data/training_batch.h"
#include "trainer/distributed/nccl_communicator.h"
#include "trainer/training/precision_setup.h"
#include "trainer/training/run_fingerprints.h"

namespace xlate::trainer {
namespace {


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
  const int compute_capability = op_backend(*device).compute_capability();
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
                                                        *activation_dtype, *device),
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
    const double entropy = unigram_entropy(train_, config_.eos_id);
    plateau_.emplace(entropy, options_.plateau_warning_steps);
    log_->message(absl::StrFormat(
        "the unigram entropy of the training targets is %.3f nats per token: a loss that stays "
        "there is a model that ignores the source", entropy));
  }
  state_.seed = options_.seed;
  state_.run_fingerprint = run_fingerprint(config_, options_, *batches_, communicator_.world_size());
  absl::Status agreed = check_same_on_all_ranks(
      communicator_, rank_agreement_fingerprint(options_, state_.run_fingerprint, device_),
      "the model, the training data, the training options and the device (give every rank "
      "the same command line and data, and a GPU each or none)");
  if (!agreed.ok()) return agreed;
  if (absl::Status started = initial_weights(); !started.ok()) return started;
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
  // A step the log reports: its activations and how far it moves each parameter group.
  const bool reported = log_ != nullptr && ((state_.step + 1) % options_.log_every_steps == 0 ||
                                            state_.step + 1 == options_.max_steps);
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
        gradients_.weights(), pass_weights(), inputs_of(batch), dropout,
        static_cast<float>(loss_scale), listener));
    sums[3] += static_cast<double>(batch.source_token_count);
  }
  if (reported && !losses.empty()) report->activation_maxima = model_.activation_maxima();
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
  const Tensor before_update = reported ? parameters_.flat().to(Device::kCPU) : Tensor();
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
  if (reported) {
    const Tensor after_update = parameters_.flat().on(Device::kCPU);
    report->update_ratios = update_ratios(parameters_.slices(), before_update.data<float>(),
                                          after_update.data<float>());
  }
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

absl::Status Trainer::initial_weights() {
  // A run with checkpoints resumes from the latest (initialise() reads it over these weights).
  const absl::StatusOr<std::vector<std::string>> checkpoints =
      list_checkpoints(options_.output_directory);
  if (options_.initialize_from.empty() || !checkpoints.ok() || !checkpoints->empty()) {
    parameters_.copy_from(random_weights(config_, options_.seed), config_);
    return absl::OkStatus();
  }
  const std::string& directory = options_.initialize_from;
  absl::StatusOr<LoadedModel> loaded = load_model_directory(directory);
  if (!loaded.ok()) return loaded.status();
  // The languages are the directory's own; everything else must be the run's architecture.
  ModelConfig expected = config_;
  expected.source_lang = loaded->config.source_lang;
  expected.target_lang = loaded->config.target_lang;
  if (expected.ToJson() != loaded->config.ToJson()) {
    const nlohmann::json theirs = nlohmann::json::parse(loaded->config.ToJson());
    const nlohmann::json ours = nlohmann::json::parse(expected.ToJson());
    std::vector<std::string> differences;
    for (const auto& [key, value] : ours.items()) {
      const std::string their_value = theirs.contains(key) ? theirs[key].dump() : "(none)";
      if (their_value != value.dump()) {
        differences.push_back(absl::StrCat(key, " ", their_value, " there, ", value.dump(),
                                           " in this run"));
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--init_from ", directory, ": its model is not this run's: ",
        absl::StrJoin(differences, "; "), " (give the same architecture options)"));
  }
  const auto bytes_of = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string vocabulary = bytes_of(directory + "/spm.model");
  if (vocabulary.empty() || vocabulary != bytes_of(options_.data_directory + "/spm.model")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--init_from ", directory, ": its spm.model is not the data's (prepare the data with "
        "--spm_model ", directory, "/spm.model)"));
  }
  parameters_.copy_from(loaded->weights, config_);
  if (log_) log_->message(absl::StrCat("starting from the weights of ", directory));
  return absl::OkStatus();
}

ModelInputs Trainer::inputs_of(const TrainingBatch& batch) const {
  return {batch.source_tokens.on(device_), batch.source_lengths.on(device_),
          batch.target_input.on(device_), batch.target_output.on(device_),
          batch.target_lengths.on(device_)};
}

const TransformerWeights& Trainer::pass_weights() const {
  return parameter_copy_ ? parameter_copy_->weights() : parameters_.weights();
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
  if (device_ == Device::kCPU) return "";
  constexpr double kMiB = 1024.0 * 1024.0;
  const DeviceMemory memory = op_backend(device_).memory();
  return absl::StrFormat(" (this process holds %.0f MiB of GPU memory; %.0f MiB are free)",
                         static_cast<double>(memory.reserved) / kMiB,
                         static_cast<double>(memory.free) / kMiB);
}

absl::Status Trainer::train_until_done() {
  StepReport report;
  double report_started = elapsed_seconds();
  const auto device_waits = [&] { return op_backend(device_).wait_seconds(); };
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
      if (device_ != Device::kCPU) {
        const DeviceMemory memory = op_backend(device_).memory();
        report.gpu_memory_bytes = static_cast<int64_t>(memory.reserved);
        report.gpu_memory_peak_in_use_bytes = static_cast<int64_t>(memory.peak_in_use);
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
      if (std::optional<std::string> warning =
              plateau_ ? plateau_->observe(state_.step, report.nll) : std::nullopt) {
        log_->message(*warning);
      }
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
