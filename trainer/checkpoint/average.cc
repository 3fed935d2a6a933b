#include "trainer/checkpoint/average.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/model_directory.h"

namespace xlate::trainer {

absl::Status average_checkpoints(const std::vector<std::string>& checkpoints,
                                 const AverageOutput& output) {
  if (checkpoints.empty()) return absl::InvalidArgumentError("average: no checkpoints given");
  absl::StatusOr<LoadedModel> first = load_model_directory(checkpoints[0]);
  if (!first.ok()) return first.status();
  const ModelConfig config = first->config;
  const std::string architecture = config.ToJson();
  std::vector<NamedParameter> sums = named_parameters(first->weights, config);
  for (size_t i = 1; i < checkpoints.size(); ++i) {
    absl::StatusOr<LoadedModel> next = load_model_directory(checkpoints[i]);
    if (!next.ok()) return next.status();
    if (next->config.ToJson() != architecture) {
      return absl::FailedPreconditionError(absl::StrCat(
          "average: ", checkpoints[i], " has another configuration than ", checkpoints[0],
          " (compare their config.json); only checkpoints of one run can be averaged"));
    }
    std::vector<NamedParameter> addends = named_parameters(next->weights, config);
    for (size_t p = 0; p < sums.size(); ++p) {
      float* sum = sums[p].tensor->data<float>();
      const float* addend = addends[p].tensor->data<float>();
      for (int64_t e = 0; e < sums[p].tensor->numel(); ++e) sum[e] += addend[e];
    }
  }
  const float inverse = 1.f / static_cast<float>(checkpoints.size());
  for (NamedParameter& parameter : sums) {
    float* values = parameter.tensor->data<float>();
    for (int64_t e = 0; e < parameter.tensor->numel(); ++e) values[e] *= inverse;
  }
  ModelConfig written = config;
  if (!output.source_lang.empty()) written.source_lang = output.source_lang;
  if (!output.target_lang.empty()) written.target_lang = output.target_lang;
  absl::Status status = save_model_directory(output.directory, written, first->weights, output.dtype);
  if (!status.ok()) return status;
  std::error_code error;
  const std::filesystem::path spm = std::filesystem::path(checkpoints[0]) / "spm.model";
  if (std::filesystem::exists(spm)) {
    std::filesystem::copy_file(spm, std::filesystem::path(output.directory) / "spm.model",
                               std::filesystem::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(
          absl::StrCat("average: cannot copy ", spm.string(), ": ", error.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace xlate::trainer
