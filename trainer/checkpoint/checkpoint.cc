#include "trainer/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "engine/json_fields.h"
#include "engine/model_directory.h"
#include "engine/safetensors.h"

namespace xlate::trainer {
namespace {

namespace fs = std::filesystem;
constexpr int kFormatVersion = 1;
constexpr char kPrefix[] = "step-";

absl::StatusOr<uint32_t> file_crc32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()),
                static_cast<uInt>(in.gcount()));
  }
  return static_cast<uint32_t>(crc);
}

absl::Status sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open directory ", path));
  const int result = ::fsync(fd);
  ::close(fd);
  if (result != 0) return absl::InternalError(absl::StrCat("cannot fsync directory ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string checkpoint_name(int64_t step) { return absl::StrFormat("%s%08d", kPrefix, step); }

// "d_model: 512 vs 256, ..." for the keys whose values differ.
std::string config_difference(const ModelConfig& a, const ModelConfig& b) {
  const nlohmann::json left = nlohmann::json::parse(a.ToJson());
  const nlohmann::json right = nlohmann::json::parse(b.ToJson());
  std::string differences;
  for (auto it = left.begin(); it != left.end(); ++it) {
    const auto other = right.find(it.key());
    const std::string theirs = other == right.end() ? "(absent)" : other->dump();
    if (theirs != it->dump()) {
      absl::StrAppend(&differences, differences.empty() ? "" : ", ", it.key(), ": ", it->dump(),
                      " vs ", theirs);
    }
  }
  return differences;
}

absl::Status write_state(const std::string& directory, const TrainerState& state) {
  nlohmann::json json;
  json["format_version"] = kFormatVersion;
  json["step"] = state.step;
  json["data_epoch"] = state.data_epoch;
  json["data_batch"] = state.data_batch;
  json["seed"] = state.seed;
  json["run_fingerprint"] = absl::StrFormat("%016x", state.run_fingerprint);
  json["elapsed_seconds"] = state.elapsed_seconds;
  if (state.loss_scaler) {
    json["loss_scale"] = state.loss_scaler->scale;
    json["loss_scale_finite_steps"] = state.loss_scaler->finite_steps;
    json["skipped_steps"] = state.loss_scaler->skipped_steps;
  }
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    absl::StatusOr<uint32_t> crc = file_crc32(directory + "/" + file);
    if (!crc.ok()) return crc.status();
    json["crc32"][file] = absl::StrFormat("%08x", *crc);
  }
  return write_file_atomically(directory + "/trainer_state.json", json.dump(2) + "\n");
}

absl::StatusOr<TrainerState> read_state(const std::string& directory) {
  const std::string path = directory + "/trainer_state.json";
  absl::StatusOr<std::string> text = read_text(path);
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::DataLossError(absl::StrCat(path, " is not valid JSON"));
  }
  // Every field is checked before use: a damaged or hand-edited file is refused naming the
  // field, never converted with undefined behaviour or resumed at a negative step.
  const auto damaged = [](const absl::Status& status) {
    return absl::DataLossError(status.message());
  };
  constexpr int64_t kMaximum = std::numeric_limits<int64_t>::max();
  int64_t format_version = 0;
  absl::Status status = read_json_integer(json, "format_version", kFormatVersion, kFormatVersion,
                                          "the supported format version 1", JsonField::kRequired,
                                          path, &format_version);
  if (!status.ok()) return absl::FailedPreconditionError(status.message());
  TrainerState state;
  std::string fingerprint;
  for (const auto& [key, value] : {std::pair<const char*, int64_t*>{"step", &state.step},
                                   {"data_epoch", &state.data_epoch},
                                   {"data_batch", &state.data_batch}}) {
    status = read_json_integer(json, key, 0, kMaximum, "an integer >= 0", JsonField::kRequired,
                               path, value);
    if (!status.ok()) return damaged(status);
  }
  status = read_json_unsigned(json, "seed", JsonField::kRequired, path, &state.seed);
  if (status.ok()) {
    status = read_json_number(json, "elapsed_seconds", 0, std::numeric_limits<double>::max(),
                              "a number of seconds >= 0", JsonField::kRequired, path,
                              &state.elapsed_seconds);
  }
  if (status.ok()) {
    status = read_json_string(json, "run_fingerprint", JsonField::kRequired, path, &fingerprint);
  }
  // Only a run that scales its loss writes the scaler's state, all three keys.
  if (status.ok() && json.contains("loss_scale")) {
    LossScalerState& scaler = state.loss_scaler.emplace();
    status = read_json_number(json, "loss_scale", std::ldexp(1.0, -126), std::ldexp(1.0, 127),
                              "a loss scale in [2^-126, 2^127]", JsonField::kRequired, path,
                              &scaler.scale);
    for (const auto& [key, value] :
         {std::pair<const char*, int64_t*>{"loss_scale_finite_steps", &scaler.finite_steps},
          {"skipped_steps", &scaler.skipped_steps}}) {
      if (!status.ok()) break;
      status = read_json_integer(json, key, 0, kMaximum, "an integer >= 0", JsonField::kRequired,
                                 path, value);
    }
  }
  if (!status.ok()) return damaged(status);
  if (fingerprint.empty() || fingerprint.size() > 16 ||
      !absl::SimpleHexAtoi(fingerprint, &state.run_fingerprint)) {
    return absl::DataLossError(absl::StrCat(path, ": key \"run_fingerprint\" = \"", fingerprint,
                                            "\" is not 1 to 16 hexadecimal digits"));
  }
  const auto crcs = json.find("crc32");
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    std::string expected;
    status = crcs == json.end() || !crcs->is_object()
                 ? absl::InvalidArgumentError(
                       absl::StrCat(path, ": key \"crc32\" is missing or not an object"))
                 : read_json_string(*crcs, file, JsonField::kRequired, path + " crc32", &expected);
    if (!status.ok()) return damaged(status);
    absl::StatusOr<uint32_t> crc = file_crc32(directory + "/" + file);
    if (!crc.ok()) return crc.status();
    if (absl::StrFormat("%08x", *crc) != expected) {
      return absl::DataLossError(absl::StrCat(directory, "/", file, " is damaged: CRC-32 ",
                                              absl::StrFormat("%08x", *crc), " but ", expected,
                                              " was recorded when it was written"));
    }
  }
  return state;
}

// Copies the first `count` floats of `from` into `into` after checking the size.
absl::Status take_vector(const TensorMap& tensors, const std::string& name, Tensor& into,
                         const std::string& file) {
  const auto it = tensors.find(name);
  if (it == tensors.end()) return absl::DataLossError(absl::StrCat(file, " lacks tensor ", name));
  if (it->second.dtype() != DType::kFloat32 || it->second.numel() != into.numel()) {
    return absl::FailedPreconditionError(
        absl::StrCat(file, ": tensor ", name, " has ", it->second.numel(), " ",
                     dtype_name(it->second.dtype()), " values; this model needs ", into.numel(),
                     " F32"));
  }
  std::memcpy(into.raw_data(), it->second.raw_data(), into.nbytes());
  return absl::OkStatus();
}

absl::Status remove_old_checkpoints(const std::string& run_directory, int keep_last) {
  if (keep_last <= 0) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> all = list_checkpoints(run_directory);
  if (!all.ok()) return all.status();
  const size_t excess = all->size() > static_cast<size_t>(keep_last)
                            ? all->size() - static_cast<size_t>(keep_last) : 0;
  for (size_t i = 0; i < excess; ++i) {
    std::error_code error;
    fs::remove_all((*all)[i], error);
    if (error) return absl::InternalError(absl::StrCat("cannot delete ", (*all)[i], ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> write_checkpoint(const std::string& run_directory,
                                             const CheckpointContents& contents, int keep_last) {
  const std::string parent = run_directory + "/checkpoints";
  const std::string final_path = parent + "/" + checkpoint_name(contents.state.step);
  const std::string temporary = parent + "/." + checkpoint_name(contents.state.step) + ".partial";
  std::error_code error;
  fs::remove_all(temporary, error);
  fs::create_directories(temporary, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create checkpoint directory ", temporary, ": ", error.message()));
  }
  // A GPU run's state is written from host copies (the files are the same either way).
  absl::Status status = save_model_directory(
      temporary, contents.config,
      contents.parameters.views_of(contents.parameters.flat().on(Device::kCPU)), DType::kFloat32);
  if (!status.ok()) return status;
  // The moments without the layout's alignment gaps: the file does not depend on them.
  const TensorMap moments{
      {"adam.first_moment", contents.parameters.without_gaps(contents.moments.first)},
      {"adam.second_moment", contents.parameters.without_gaps(contents.moments.second)}};
  status = write_safetensors(temporary + "/optimizer.safetensors", moments,
                             {{"adam_steps", std::to_string(contents.moments.steps)}});
  if (!status.ok()) return status;
  if (!contents.spm_model_path.empty()) {
    absl::StatusOr<std::string> spm = read_text(contents.spm_model_path);
    if (!spm.ok()) return spm.status();
    status = write_file_atomically(temporary + "/spm.model", *spm);
    if (!status.ok()) return status;
  }
  status = write_state(temporary, contents.state);
  if (!status.ok()) return status;
  if (!(status = sync_directory(temporary)).ok()) return status;
  fs::remove_all(final_path, error);
  fs::rename(temporary, final_path, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot rename ", temporary, " to ", final_path, ": ",
                                            error.message()));
  }
  if (!(status = sync_directory(parent)).ok()) return status;
  if (!(status = remove_old_checkpoints(run_directory, keep_last)).ok()) return status;
  return final_path;
}

absl::StatusOr<std::vector<std::string>> list_checkpoints(const std::string& run_directory) {
  const fs::path parent = fs::path(run_directory) / "checkpoints";
  std::vector<std::string> found;
  std::error_code error;
  if (!fs::exists(parent, error)) return found;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    // Partial checkpoints (".step-....partial") of an interrupted write are ignored.
    if (entry.is_directory() && name.rfind(kPrefix, 0) == 0) found.push_back(entry.path().string());
  }
  if (error) return absl::InternalError(absl::StrCat("cannot list ", parent.string(), ": ", error.message()));
  std::sort(found.begin(), found.end());  // zero-padded step numbers sort by step
  return found;
}

absl::StatusOr<ModelConfig> read_checkpoint_config(const std::string& checkpoint) {
  const std::string path = checkpoint + "/config.json";
  absl::StatusOr<std::string> text = read_text(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(checkpoint, " is not a checkpoint: no config.json"));
  return ModelConfig::FromJson(*text, path);
}

absl::StatusOr<TrainerState> read_checkpoint(const std::string& checkpoint,
                                             const ModelConfig& config,
                                             FlatParameters& parameters, Adam& optimizer) {
  absl::StatusOr<ModelConfig> stored = read_checkpoint_config(checkpoint);
  if (!stored.ok()) return stored.status();
  const std::string difference = config_difference(*stored, config);
  if (!difference.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", checkpoint, " was trained with another configuration (checkpoint vs "
        "this run): ", difference));
  }
  absl::StatusOr<TrainerState> state = read_state(checkpoint);
  if (!state.ok()) return state.status();
  absl::StatusOr<LoadedModel> model = load_model_directory(checkpoint);
  if (!model.ok()) return model.status();
  parameters.copy_from(model->weights, config);
  const std::string optimizer_file = checkpoint + "/optimizer.safetensors";
  absl::StatusOr<TensorMap> moments = read_safetensors(optimizer_file);
  if (!moments.ok()) return moments.status();
  Tensor stored_m = Tensor::empty({parameters.size_without_gaps()}, DType::kFloat32);
  Tensor stored_v = Tensor::empty({parameters.size_without_gaps()}, DType::kFloat32);
  absl::Status status = take_vector(*moments, "adam.first_moment", stored_m, optimizer_file);
  if (status.ok()) status = take_vector(*moments, "adam.second_moment", stored_v, optimizer_file);
  if (!status.ok()) return status;
  Tensor m = Tensor::empty({parameters.size()}, DType::kFloat32);
  Tensor v = Tensor::empty({parameters.size()}, DType::kFloat32);
  parameters.fill_from_without_gaps(m, stored_m);
  parameters.fill_from_without_gaps(v, stored_v);
  optimizer.restore(m, v, state->step);
  return state;
}

}  // namespace xlate::trainer
