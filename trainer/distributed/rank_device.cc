#include "trainer/distributed/rank_device.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace xlate {

std::optional<int> launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    int rank = 0;
    if (value != nullptr && absl::SimpleAtoi(value, &rank) && rank >= 0) return rank;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> rank_visible_device(int local_rank, const std::string& devices,
                                                const std::optional<std::string>& visible) {
  const bool from_flag = !devices.empty();
  if (!from_flag && (!visible || visible->empty())) return std::to_string(local_rank);
  const std::string& list = from_flag ? devices : *visible;
  const char* source = from_flag ? "--devices" : "CUDA_VISIBLE_DEVICES";
  std::vector<std::string> entries = absl::StrSplit(list, ',');
  for (std::string& entry : entries) absl::StripAsciiWhitespace(&entry);
  // A launcher that binds one GPU to each process (Slurm's --gpus-per-task=1, --gpu-bind)
  // leaves every rank a one-entry list: that entry is the rank's, whatever its local rank.
  if (!from_flag && entries.size() == 1 && !entries[0].empty()) return entries[0];
  if (local_rank >= static_cast<int>(entries.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local rank ", local_rank, " has no GPU: ", source, " \"", list, "\" lists ",
        entries.size(), " (one GPU per rank on each node: start at most that many ranks per node "
        "or list more GPUs)"));
  }
  const std::string& entry = entries[static_cast<size_t>(local_rank)];
  if (entry.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, " \"", list, "\" has an empty entry ",
                                                   "for local rank ", local_rank));
  }
  return entry;
}

absl::StatusOr<std::optional<std::string>> select_rank_gpu(const std::string& devices) {
  const std::optional<int> local_rank = launcher_local_rank();
  if (!local_rank) return std::optional<std::string>();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  absl::StatusOr<std::string> device = rank_visible_device(
      *local_rank, devices, visible ? std::optional<std::string>(visible) : std::nullopt);
  if (!device.ok()) return device.status();
  setenv("CUDA_VISIBLE_DEVICES", device->c_str(), /*overwrite=*/1);
  return std::optional<std::string>(*device);
}

}  // namespace xlate
