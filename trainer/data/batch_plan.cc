#include "trainer/data/batch_plan.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xlate::trainer {

absl::StatusOr<BatchPlanWriter> BatchPlanWriter::Open(const std::string& path,
                                                      int64_t kept_batches) {
  std::string kept;
  int64_t lines = 0;
  if (kept_batches > 0) {
    std::ifstream in(path);
    std::string line;
    while (lines < kept_batches && std::getline(in, line)) {
      kept += line + "\n";
      ++lines;
    }
    if (lines < kept_batches) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--batch_plan_out ", path, " holds ", lines, " batches; the run resumes after ",
          kept_batches, " (give the plan file of this run, or a new path)"));
    }
  }
  // Rewritten whole under a temporary name, so that a failure leaves the old file as it was.
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << kept;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write the batch plan ", temporary));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot write the batch plan ", path, ": ", error.message()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot append to ", path));
  return BatchPlanWriter(path, std::move(out));
}

absl::Status BatchPlanWriter::Append(const std::vector<int64_t>& pairs) {
  out_ << absl::StrJoin(pairs, " ") << '\n';
  out_.flush();
  if (!out_) return absl::DataLossError(absl::StrCat("writing the batch plan ", path_, " failed"));
  return absl::OkStatus();
}

}  // namespace xlate::trainer
