#include <iostream>

#include "absl/flags/flag.h"
#include "trainer/distributed/communicator.h"
#include "trainer/distributed/rank_device.h"
#include "cli/trainer/commands.h"
#include "trainer/training/trainer.h"

ABSL_FLAG(std::string, data, "", "data directory written by `xlate-trainer prepare`");
ABSL_FLAG(std::string, device, "auto",
          "auto, cpu or cuda (auto: the GPU when this build has CUDA and one is visible)");
ABSL_FLAG(std::string, devices, "",
          "under mpirun: comma-separated GPU indices, the i-th for the node's i-th rank (default: "
          "rank i uses GPU i, or the i-th of CUDA_VISIBLE_DEVICES); one GPU per rank");
ABSL_FLAG(std::string, preset, "base", "architecture preset: tiny, base or big");
ABSL_FLAG(int, layers, 0, "N: layers in each stack (0 = the preset's)");
ABSL_FLAG(int, d_model, 0, "d_model (0 = the preset's)");
ABSL_FLAG(int, d_ff, 0, "d_ff, inner width of the feed-forward networks (0 = the preset's)");
ABSL_FLAG(int, heads, 0, "h, attention heads (0 = the preset's)");
ABSL_FLAG(int, d_k, 0, "per-head query/key width (0 = d_model / h)");
ABSL_FLAG(int, d_v, 0, "per-head value width (0 = d_model / h)");
ABSL_FLAG(double, dropout, -1, "P_drop on sub-layer outputs and embedding sums (-1 = preset)");
ABSL_FLAG(double, activation_dropout, -1, "dropout after the FFN's ReLU (-1 = preset)");
ABSL_FLAG(double, label_smoothing, -1, "epsilon_ls (-1 = the preset's 0.1)");
ABSL_FLAG(std::string, positional, "", "sinusoidal or learned (empty = the preset's)");
ABSL_FLAG(int, max_positions, 0, "rows of the positional tables (0 = the preset's)");
ABSL_FLAG(std::string, norm_position, "post",
          "post: the paper's LN(x + Sublayer(x)); pre: x + Sublayer(LN(x)) and a layer norm "
          "after each stack (M2M100's layout, robust at high learning rates and depth)");
ABSL_FLAG(int64_t, max_tokens, 50000,
          "padded source+target tokens per micro-batch, all ranks together (the paper: ~50000)");
ABSL_FLAG(int, max_sentences, 0, "sentence pairs per micro-batch, all ranks (0 = no limit)");
ABSL_FLAG(int, update_freq, 1, "micro-batches accumulated into one optimizer step");
ABSL_FLAG(double, bucket_mb, 4,
          "ranks > 1: all-reduce the gradient in buckets of this many MiB while the backward "
          "pass runs (0 = one all-reduce after it)");
ABSL_FLAG(int, zero_stage, 0,
          "ranks > 1: 1 shards Adam's moments over the ranks (ZeRO-1: the gradient is "
          "reduce-scattered, each rank updates its shard, the parameters are all-gathered); "
          "0 = every rank keeps all of them");
ABSL_FLAG(std::string, gradient_reduction, "auto",
          "auto (ranks > 1: NCCL between GPU ranks when built with it, else MPI through host "
          "memory), host (MPI through host memory) or nccl (NCCL or an error); host and nccl "
          "reduce even with one rank");
ABSL_FLAG(int64_t, max_steps, 100000, "optimizer steps to train for (the paper's base: 100000)");
ABSL_FLAG(int64_t, warmup_steps, 4000, "learning-rate warmup steps");
ABSL_FLAG(double, lr_scale, 1.0, "factor on the paper's learning-rate schedule");
ABSL_FLAG(double, adam_beta1, 0.9, "Adam beta1");
ABSL_FLAG(double, adam_beta2, 0.98, "Adam beta2");
ABSL_FLAG(double, adam_epsilon, 1e-9, "Adam epsilon");
ABSL_FLAG(double, clip_norm, 0, "clip the gradient's global L2 norm to this (0 = off)");
ABSL_FLAG(std::string, precision, "auto",
          "auto, fp32, fp16 or bf16: fp16/bf16 run the GPU's matrix products with float16 / "
          "bfloat16 inputs, on tensor cores where it has them (weights, activations, "
          "gradients stay float32 unless activations are stored in 16 bits, --activations); "
          "auto: bf16 from compute capability 8.0, fp16 from 6.0 (below 7.0 without tensor "
          "cores: the gain is the 16-bit activations' memory and traffic), fp32 on the CPU");
ABSL_FLAG(std::string, activations, "auto",
          "auto, fp32 or 16bit: 16bit (on a GPU under --precision fp16 or bf16) stores "
          "activations and their gradients in that 16-bit type and runs the passes on a 16-bit "
          "copy of the float32 master weights: about half the activation memory and traffic "
          "(gradients, Adam's state and the master weights stay float32); auto: 16bit where it "
          "runs (a GPU under fp16 or bf16), fp32 otherwise");
ABSL_FLAG(std::string, loss_scale, "auto",
          "auto, none or dynamic (auto: dynamic for fp16, none otherwise). dynamic: start the "
          "backward pass from a power-of-two scale, skip a step "
          "whose gradient or loss is not finite and halve the scale, double it after "
          "--loss_scale_window finite steps (exact in float32: the same weights until a step "
          "overflows)");
ABSL_FLAG(double, initial_loss_scale, 128, "first dynamic loss scale (a power of two)");
ABSL_FLAG(int64_t, loss_scale_window, 2000, "finite steps in a row before the scale doubles");
ABSL_FLAG(double, min_loss_scale, 1e-4,
          "a dynamic loss scale halved below this stops the run (it has diverged)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the initial weights, data order and dropout");
ABSL_FLAG(int64_t, checkpoint_every_steps, 1000, "checkpoint interval in steps (0 = off)");
ABSL_FLAG(double, checkpoint_every_minutes, 0, "checkpoint interval in minutes (0 = off)");
ABSL_FLAG(int, keep_checkpoints, 5, "checkpoints kept (0 = all)");
ABSL_FLAG(int64_t, validate_every_steps, 1000, "validation interval in steps (0 = at the end)");
ABSL_FLAG(int, bleu_sentences, 200, "dev sentences translated for validation BLEU (0 = none)");
ABSL_FLAG(int, bleu_beam_size, 4, "beam size of the validation translations");
ABSL_FLAG(int64_t, log_every_steps, 10, "progress line interval in steps");
ABSL_FLAG(int64_t, plateau_warning_steps, 1000,
          "warn when the training loss has stayed at the targets' unigram entropy (a model "
          "that ignores the source) for this many steps; 0 = never");
ABSL_FLAG(std::string, init_from, "",
          "model directory to start from instead of random weights (fine-tuning; its "
          "architecture and spm.model must be the run's: prepare with --spm_model DIR/spm.model)");
ABSL_FLAG(std::string, batch_plan_out, "",
          "write the pairs of every micro-batch taken here, one line each (corpus indices; "
          "for running another trainer on the same batches)");

namespace xlate::trainer::tools {
namespace {

TrainingOptions options_from_flags() {
  TrainingOptions options;
  options.data_directory = absl::GetFlag(FLAGS_data);
  options.output_directory = absl::GetFlag(FLAGS_output);
  options.batch_plan_path = absl::GetFlag(FLAGS_batch_plan_out);
  options.initialize_from = absl::GetFlag(FLAGS_init_from);
  options.device = absl::GetFlag(FLAGS_device);
  options.precision = absl::GetFlag(FLAGS_precision);
  options.activations = absl::GetFlag(FLAGS_activations);
  ArchitectureOptions& a = options.architecture;
  a.preset = absl::GetFlag(FLAGS_preset);
  a.layers = absl::GetFlag(FLAGS_layers);
  a.d_model = absl::GetFlag(FLAGS_d_model);
  a.d_ff = absl::GetFlag(FLAGS_d_ff);
  a.heads = absl::GetFlag(FLAGS_heads);
  a.d_k = absl::GetFlag(FLAGS_d_k);
  a.d_v = absl::GetFlag(FLAGS_d_v);
  a.dropout = static_cast<float>(absl::GetFlag(FLAGS_dropout));
  a.activation_dropout = static_cast<float>(absl::GetFlag(FLAGS_activation_dropout));
  a.label_smoothing = static_cast<float>(absl::GetFlag(FLAGS_label_smoothing));
  a.positional = absl::GetFlag(FLAGS_positional);
  a.norm_position = absl::GetFlag(FLAGS_norm_position);
  a.max_positions = absl::GetFlag(FLAGS_max_positions);
  options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.max_sentences = absl::GetFlag(FLAGS_max_sentences);
  options.update_frequency = absl::GetFlag(FLAGS_update_freq);
  options.bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  options.zero_stage = absl::GetFlag(FLAGS_zero_stage);
  options.gradient_reduction = absl::GetFlag(FLAGS_gradient_reduction);
  options.max_steps = absl::GetFlag(FLAGS_max_steps);
  options.warmup_steps = absl::GetFlag(FLAGS_warmup_steps);
  options.learning_rate_scale = absl::GetFlag(FLAGS_lr_scale);
  options.adam_beta1 = absl::GetFlag(FLAGS_adam_beta1);
  options.adam_beta2 = absl::GetFlag(FLAGS_adam_beta2);
  options.adam_epsilon = absl::GetFlag(FLAGS_adam_epsilon);
  options.clip_norm = absl::GetFlag(FLAGS_clip_norm);
  options.loss_scale = absl::GetFlag(FLAGS_loss_scale);
  options.loss_scaler.initial_scale = absl::GetFlag(FLAGS_initial_loss_scale);
  options.loss_scaler.growth_interval = absl::GetFlag(FLAGS_loss_scale_window);
  options.loss_scaler.minimum_scale = absl::GetFlag(FLAGS_min_loss_scale);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.checkpoint_every_steps = absl::GetFlag(FLAGS_checkpoint_every_steps);
  options.checkpoint_every_minutes = absl::GetFlag(FLAGS_checkpoint_every_minutes);
  options.keep_checkpoints = absl::GetFlag(FLAGS_keep_checkpoints);
  options.validate_every_steps = absl::GetFlag(FLAGS_validate_every_steps);
  options.bleu_sentences = absl::GetFlag(FLAGS_bleu_sentences);
  options.bleu_beam_size = absl::GetFlag(FLAGS_bleu_beam_size);
  options.log_every_steps = absl::GetFlag(FLAGS_log_every_steps);
  options.plateau_warning_steps = absl::GetFlag(FLAGS_plateau_warning_steps);
  return options;
}

}  // namespace

int run_train() {
  // One GPU per rank, chosen before anything touches CUDA.
  if (absl::GetFlag(FLAGS_device) != "cpu") {
    absl::StatusOr<std::optional<std::string>> gpu = select_rank_gpu(absl::GetFlag(FLAGS_devices));
    if (!gpu.ok()) {
      std::cerr << "xlate-trainer train: " << gpu.status().message() << "\n";
      return 1;
    }
  }
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = create_communicator();
  if (!communicator.ok()) {
    std::cerr << "xlate-trainer train: " << communicator.status().message() << "\n";
    return 1;
  }
  const std::string prefix = (*communicator)->world_size() > 1
      ? "xlate-trainer train (rank " + std::to_string((*communicator)->rank()) + "): "
      : "xlate-trainer train: ";
  absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(options_from_flags(), **communicator);
  absl::Status status = trainer.ok() ? (*trainer)->Run() : trainer.status();
  if (!status.ok()) {
    std::cerr << prefix << status.message() << "\n";
    // The other ranks may be waiting in a collective: end the whole job.
    if ((*communicator)->world_size() > 1) (*communicator)->abort_job(1);
    return 1;
  }
  return 0;
}

}  // namespace xlate::trainer::tools
