// Everything `xlate-trainer train` is told: data, model architecture (a preset plus any Table 3
// hyperparameter), batching, the optimiser, checkpoints, validation and logging.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "engine/tensor.h"
#include "trainer/optim/loss_scaler.h"

namespace xlate::trainer {

// Architecture overrides on top of the preset; 0 / negative = keep the preset's value.
struct ArchitectureOptions {
  std::string preset = "base";  // tiny | base | big
  int layers = 0;               // N, both stacks
  int d_model = 0;
  int d_ff = 0;
  int heads = 0;                // h
  int d_k = 0;
  int d_v = 0;
  float dropout = -1;           // P_drop
  float activation_dropout = -1;
  float label_smoothing = -1;   // ε_ls
  std::string positional;       // "" | sinusoidal | learned
  int max_positions = 0;
  // Where each sub-layer's layer norm sits: "post", the paper's LN(x + Sublayer(x)), or "pre",
  // x + Sublayer(LN(x)) with a layer norm after each stack (the layout of M2M100 and NLLB, which
  // trains at learning rates and depths where post-norm stalls).
  std::string norm_position = "post";
};

struct TrainingOptions {
  std::string data_directory;    // from `xlate-trainer prepare`
  std::string output_directory;  // checkpoints/, train_log.jsonl
  // Where rank 0 writes the batches the run takes (trainer/data/batch_plan.h); "" = nowhere.
  std::string batch_plan_path;
  // A model directory whose weights a new run starts from instead of random ones (fine-tuning,
  // or going on from an averaged model); its architecture and vocabulary must be the run's.
  // A run that resumes from a checkpoint ignores it. "" = random weights.
  std::string initialize_from;
  // auto | cpu | cuda (auto: the GPU when this build has CUDA and one is visible). Float32 on
  // both; the CPU run is the reference the GPU's is checked against.
  std::string device = "auto";
  // auto | fp32 | fp16 | bf16: how the GPU's matrix products compute (resolve_training_precision).
  std::string precision = "auto";
  // auto | fp32 | 16bit: how activations and their gradients are stored. 16bit (a GPU under fp16
  // or bf16) stores them in the precision's 16-bit type, and the forward and backward passes
  // read a 16-bit copy of the float32 master weights (trainer/model/flat_parameters.h,
  // ParameterCopy); gradients, Adam's moments and the master stay float32. auto: 16bit wherever
  // it can run (resolve_activation_dtype).
  std::string activations = "auto";
  ArchitectureOptions architecture;

  int64_t max_tokens = 50000;  // padded source+target tokens per micro-batch, all ranks together
  int max_sentences = 0;       // per micro-batch, all ranks; 0 = no limit
  int update_frequency = 1;    // micro-batches per optimizer step (gradient accumulation)
  int64_t max_steps = 100000;
  int64_t warmup_steps = 4000;
  double learning_rate_scale = 1.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.98, adam_epsilon = 1e-9;
  double clip_norm = 0;  // 0 = off
  // auto | none | dynamic (trainer/optim/loss_scaler.h): dynamic starts the backward pass from a
  // power-of-two scale, skips a step whose gradient is not finite and halves the scale; auto is
  // dynamic for fp16 (whose range small gradients fall below) and none otherwise.
  std::string loss_scale = "auto";
  LossScalerOptions loss_scaler;
  uint64_t seed = 1;
  // Data parallel: the gradient is all-reduced in buckets of at most this many MiB, each as soon
  // as the backward pass is done with it (overlapped); 0 = in one call after the backward pass.
  double bucket_mb = 4;
  // ZeRO stage: 0 = every rank keeps Adam's moments for every parameter; 1 = the gradient is
  // reduce-scattered bucket by bucket, each rank updates only its shard of each bucket (and keeps
  // only its moments: 1/N of them), then the updated parameters are all-gathered.
  int zero_stage = 0;
  // Where the gradient is reduced: auto = nowhere with one rank; between GPU ranks through NCCL
  // when the build has it (through host memory otherwise), between CPU ranks through the
  // launcher's MPI. host = the MPI path even for GPU ranks (one device-to-host copy each way);
  // nccl = NCCL or an error. host and nccl reduce even with one rank, so that the path a
  // multi-GPU job takes can be checked on one GPU (bit-identical to the plain run in fp32).
  std::string gradient_reduction = "auto";

  int64_t checkpoint_every_steps = 1000;   // 0 = off
  double checkpoint_every_minutes = 0;     // 0 = off
  int keep_checkpoints = 5;                // 0 = keep all

  int64_t validate_every_steps = 1000;  // 0 = only at the end
  int bleu_sentences = 200;             // dev sentences translated for BLEU; 0 = no BLEU
  int bleu_beam_size = 4;
  int64_t log_every_steps = 10;
  // Warn when the training loss has sat at the targets' unigram entropy for this many steps
  // (training_health.h); 0 = never.
  int64_t plateau_warning_steps = 1000;

  // Names the option and its limit when out of range.
  absl::Status Validate() const;
};

// Where `device` (TrainingOptions::device) trains on this build and machine; `note` (may be
// null) receives a line for the log: the GPU's name, or why auto chose the CPU. An unknown name
// or a GPU that is not there is an error naming --device and the reason.
absl::StatusOr<Device> resolve_training_device(const std::string& device, std::string* note);

// Mixed precision as this trainer does it: weights, activations (unless --activations 16bit),
// gradients and Adam's state stay float32; fp16 and bf16 run every matrix product of the training step with its inputs
// rounded to float16 / bfloat16 on the fly, with float32 sums (kernels::Float32Math): on
// tensor cores from compute capability 7.0; a GPU without them (a P100) multiplies float16
// copies of the operands at its float32 rate. fp16 needs loss scaling (its smallest normal is
// 6e-5); bf16 has float32's range.
enum class TrainingPrecision { kFloat32, kFloat16, kBFloat16 };

const char* precision_name(TrainingPrecision precision);  // "fp32", "fp16", "bf16"

// `precision` (TrainingOptions::precision) on `device`, whose compute capability is
// `compute_capability` (10 · major + minor; ignored on the CPU). auto: bf16 from 8.0 (Ampere),
// fp16 from 6.0 (Volta's tensor cores from 7.0; on a P100, 6.0, the products run at the float32
// rate, and what fp16 gains there is activations stored in 16 bits: half the memory and the
// traffic of every element-wise kernel), fp32 below 6.0 and on the CPU. bf16 below 8.0 is
// refused naming the compute capability. On the CPU fp16 and bf16 run the same numerics as a
// GPU's (16-bit storage, float32 arithmetic, products of rounded inputs).
absl::StatusOr<TrainingPrecision> resolve_training_precision(const std::string& precision,
                                                             Device device,
                                                             int compute_capability);

// --loss_scale auto resolved for `precision`: "dynamic" or "none".
// The dtype activations are stored in: float32, or for --activations 16bit the precision's
// 16-bit type; 16bit under fp32 is refused naming what it needs. auto: the precision's 16-bit
// type under fp16 or bf16, on a GPU (1.6-1.7x the tokens/s of float32 activations at half the
// memory on an H100, docs/cuda-backend.md) and on the CPU alike, float32 otherwise.
absl::StatusOr<DType> resolve_activation_dtype(const std::string& activations, Device device,
                                               TrainingPrecision precision);

std::string resolve_loss_scale(const std::string& loss_scale, TrainingPrecision precision);

// The preset with the overrides applied, for a vocabulary of `vocab_size` pieces; validated.
absl::StatusOr<ModelConfig> build_model_config(const ArchitectureOptions& options, int vocab_size);

// OK when `device`'s backend runs every op of `config`'s model, else INVALID_ARGUMENT naming the
// options to change: the CUDA attention kernel takes heads of at most 256 dimensions, so Table
// 3's h = 1 (d_k = d_v = 512) trains on the CPU only. Checked at start, not at the first step.
absl::Status check_model_fits_device(const ModelConfig& config, Device device);

}  // namespace xlate::trainer
