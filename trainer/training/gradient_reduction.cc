// The trainer's gradient reduction: which reduction a run makes (none with one rank; NCCL
// between GPU ranks, MPI through host memory otherwise; bucketed and overlapped with the
// backward pass, or one all-reduce after it), and the gradient's global norm over the ranks.
#include <map>

#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"
#include "trainer/distributed/nccl_communicator.h"
#include "trainer/training/trainer.h"

namespace xlate::trainer {
namespace {

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

}  // namespace

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

}  // namespace xlate::trainer
