#include "trainer/training/training_options.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"
#include "engine/placement_flags.h"
#include "engine/transformer.h"

namespace xlate::trainer {
namespace {

absl::Status out_of_range(const char* name, const std::string& value, const char* limit) {
  return absl::InvalidArgumentError(absl::StrCat("--", name, " is ", value, "; it must be ", limit));
}

}  // namespace

absl::Status TrainingOptions::Validate() const {
  if (data_directory.empty()) return absl::InvalidArgumentError("--data is required");
  if (output_directory.empty()) return absl::InvalidArgumentError("--output is required");
  if (max_tokens < 2) return out_of_range("max_tokens", std::to_string(max_tokens), ">= 2");
  if (max_sentences < 0) return out_of_range("max_sentences", std::to_string(max_sentences), ">= 0");
  if (update_frequency < 1 || update_frequency > 1024) {
    return out_of_range("update_freq", std::to_string(update_frequency), "in [1, 1024]");
  }
  if (max_steps < 1) return out_of_range("max_steps", std::to_string(max_steps), ">= 1");
  if (warmup_steps < 1) return out_of_range("warmup_steps", std::to_string(warmup_steps), ">= 1");
  if (!(learning_rate_scale > 0)) return out_of_range("lr_scale", std::to_string(learning_rate_scale), "> 0");
  if (!(adam_beta1 >= 0 && adam_beta1 < 1)) return out_of_range("adam_beta1", std::to_string(adam_beta1), "in [0, 1)");
  if (!(adam_beta2 >= 0 && adam_beta2 < 1)) return out_of_range("adam_beta2", std::to_string(adam_beta2), "in [0, 1)");
  if (!(adam_epsilon > 0)) return out_of_range("adam_epsilon", std::to_string(adam_epsilon), "> 0");
  if (!(bucket_mb >= 0 && bucket_mb <= 4096)) return out_of_range("bucket_mb", std::to_string(bucket_mb), "in [0, 4096]");
  if (zero_stage != 0 && zero_stage != 1) {
    return out_of_range("zero_stage", std::to_string(zero_stage), "0 or 1");
  }
  if (gradient_reduction != "auto" && gradient_reduction != "host" &&
      gradient_reduction != "nccl") {
    return out_of_range("gradient_reduction", "\"" + gradient_reduction + "\"",
                        "auto, host or nccl");
  }
  if (!(clip_norm >= 0)) return out_of_range("clip_norm", std::to_string(clip_norm), ">= 0");
  if (loss_scale != "auto" && loss_scale != "none" && loss_scale != "dynamic") {
    return out_of_range("loss_scale", "\"" + loss_scale + "\"", "auto, none or dynamic");
  }
  if (activations != "auto" && activations != "fp32" && activations != "16bit") {
    return out_of_range("activations", "\"" + activations + "\"", "auto, fp32 or 16bit");
  }
  if (precision != "auto" && precision != "fp32" && precision != "fp16" && precision != "bf16") {
    return out_of_range("precision", "\"" + precision + "\"", "auto, fp32, fp16 or bf16");
  }
  if (loss_scale != "none") {
    if (absl::Status status = check_loss_scaler_options(loss_scaler); !status.ok()) return status;
  }
  if (checkpoint_every_steps < 0) return out_of_range("checkpoint_every_steps", std::to_string(checkpoint_every_steps), ">= 0");
  if (!(checkpoint_every_minutes >= 0)) return out_of_range("checkpoint_every_minutes", std::to_string(checkpoint_every_minutes), ">= 0");
  if (keep_checkpoints < 0) return out_of_range("keep_checkpoints", std::to_string(keep_checkpoints), ">= 0");
  if (validate_every_steps < 0) return out_of_range("validate_every_steps", std::to_string(validate_every_steps), ">= 0");
  if (bleu_sentences < 0) return out_of_range("bleu_sentences", std::to_string(bleu_sentences), ">= 0");
  if (bleu_beam_size < 1 || bleu_beam_size > 64) return out_of_range("bleu_beam_size", std::to_string(bleu_beam_size), "in [1, 64]");
  if (log_every_steps < 1) return out_of_range("log_every_steps", std::to_string(log_every_steps), ">= 1");
  if (plateau_warning_steps < 0) {
    return out_of_range("plateau_warning_steps", std::to_string(plateau_warning_steps), ">= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<Device> resolve_training_device(const std::string& device, std::string* note) {
  if (device != "auto" && device != "cpu" && device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device is \"", device, "\"; it must be auto, cpu or cuda"));
  }
  if (device == "cuda") {
    if (absl::Status usable = check_placement({Device::kCUDA, DType::kFloat32}); !usable.ok()) {
      return absl::Status(usable.code(), absl::StrCat("--device cuda: ", usable.message()));
    }
  }
  absl::StatusOr<ResolvedPlacement> resolved = resolve_placement(device, "float32");
  if (!resolved.ok()) return resolved.status();
  if (note != nullptr) {
    *note = resolved->placement.device == Device::kCUDA
                ? absl::StrCat("training on ", op_backend(Device::kCUDA).device_description())
                : resolved->note;
  }
  return resolved->placement.device;
}

const char* precision_name(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::kFloat16: return "fp16";
    case TrainingPrecision::kBFloat16: return "bf16";
    case TrainingPrecision::kFloat32: break;
  }
  return "fp32";
}

absl::StatusOr<TrainingPrecision> resolve_training_precision(const std::string& precision,
                                                             Device device,
                                                             int compute_capability) {
  const std::string capability =
      absl::StrCat(compute_capability / 10, ".", compute_capability % 10);
  if (device == Device::kCPU) {
    // auto stays fp32 on the CPU (its float32 products are its fastest but for bf16's); fp16 and
    // bf16 run the GPU's numerics here (check_precision_runs probes that they do).
    if (precision == "fp16") return TrainingPrecision::kFloat16;
    if (precision == "bf16") return TrainingPrecision::kBFloat16;
    return TrainingPrecision::kFloat32;
  }
  if (precision == "auto") {
    if (compute_capability >= 80) return TrainingPrecision::kBFloat16;
    if (compute_capability >= 60) return TrainingPrecision::kFloat16;
    return TrainingPrecision::kFloat32;
  }
  if (precision == "fp16") return TrainingPrecision::kFloat16;
  if (precision == "bf16") {
    if (compute_capability < 80) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--precision bf16 needs compute capability 8.0 or newer (Ampere); this GPU has ",
          capability, compute_capability >= 70 ? ": use --precision fp16" : ": use --precision fp32"));
    }
    return TrainingPrecision::kBFloat16;
  }
  return TrainingPrecision::kFloat32;
}

absl::StatusOr<DType> resolve_activation_dtype(const std::string& activations, Device device,
                                               TrainingPrecision precision) {
  const bool sixteen_bit_runs = precision != TrainingPrecision::kFloat32;
  if (activations == "fp32" || (activations == "auto" && !sixteen_bit_runs)) {
    return DType::kFloat32;
  }
  if (!sixteen_bit_runs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--activations 16bit needs --precision fp16 or bf16 (the 16-bit type is the "
        "precision's); this run is ", device == Device::kCUDA ? "on the GPU" : "on the CPU",
        " in ", precision_name(precision)));
  }
  return precision == TrainingPrecision::kFloat16 ? DType::kFloat16 : DType::kBFloat16;
}

std::string resolve_loss_scale(const std::string& loss_scale, TrainingPrecision precision) {
  if (loss_scale != "auto") return loss_scale;
  return precision == TrainingPrecision::kFloat16 ? "dynamic" : "none";
}

absl::StatusOr<ModelConfig> build_model_config(const ArchitectureOptions& options, int vocab_size) {
  absl::StatusOr<ModelConfig> preset = ModelConfig::Preset(options.preset);
  if (!preset.ok()) return preset.status();
  ModelConfig config = *preset;
  config.vocab_size = vocab_size;
  if (options.layers > 0) config.encoder_layers = config.decoder_layers = options.layers;
  if (options.d_model > 0) config.d_model = options.d_model;
  if (options.d_ff > 0) config.encoder_ffn_dim = config.decoder_ffn_dim = options.d_ff;
  if (options.heads > 0) config.encoder_heads = config.decoder_heads = options.heads;
  if (options.d_k > 0) config.d_k = options.d_k;
  if (options.d_v > 0) config.d_v = options.d_v;
  if (options.dropout >= 0) config.dropout = options.dropout;
  if (options.activation_dropout >= 0) config.activation_dropout = options.activation_dropout;
  if (options.label_smoothing >= 0) config.label_smoothing = options.label_smoothing;
  if (options.max_positions > 0) config.max_positions = options.max_positions;
  if (options.norm_position == "pre") {
    config.pre_norm = true;
  } else if (options.norm_position != "post") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--norm_position is \"", options.norm_position, "\"; it must be post or pre"));
  }
  if (options.positional == "learned") {
    config.positional = PositionalEncoding::kLearned;
  } else if (options.positional == "sinusoidal") {
    config.positional = PositionalEncoding::kSinusoidal;
  } else if (!options.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--positional is \"", options.positional,
                                                   "\"; it must be sinusoidal or learned"));
  }
  if (config.dropout >= 1 || config.activation_dropout >= 1) {
    return absl::InvalidArgumentError("--dropout and --activation_dropout must be < 1");
  }
  if (config.attention_dropout > 0) {
    return absl::InvalidArgumentError("attention dropout is not supported by the trainer");
  }
  absl::Status valid = config.Validate();
  if (!valid.ok()) return valid;
  return config;
}

absl::Status check_model_fits_device(const ModelConfig& config, Device device) {
  const OpBackend* backend = find_op_backend(device);
  // A build without the device's backend: resolve_training_device has refused the device.
  if (backend == nullptr) return absl::OkStatus();
  const int limit = backend->max_attention_head_dim;
  for (const auto& [stack, heads] : {std::pair<const char*, int>{"encoder", config.encoder_heads},
                                     {"decoder", config.decoder_heads}}) {
    const int d_k = config.head_dim_k(heads), d_v = config.head_dim_v(heads);
    if (d_k > limit || d_v > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", stack, "'s attention heads are ", d_k, " (d_k) and ", d_v,
          " (d_v) wide; the ", backend->name, " backend's attention takes at most ", limit,
          ": raise --heads, lower --d_k / --d_v, or train with --device cpu"));
    }
  }
  return absl::OkStatus();
}

}  // namespace xlate::trainer
