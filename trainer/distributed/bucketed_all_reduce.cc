#include "trainer/distributed/bucketed_all_reduce.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<BucketedAllReduce>> BucketedAllReduce::Create(
    Communicator& communicator, std::vector<FlatRange> ranges, int64_t max_bucket_elements,
    Threading threading, Reduction reduction) {
  if (max_bucket_elements < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the gradient bucket size must be >= 0 elements (0: no limit), got ",
        max_bucket_elements));
  }
  if (threading == Threading::kBackgroundThread &&
      !communicator.allows_collectives_from_any_thread()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", communicator.name(), " communicator does not allow collectives from another "
        "thread, so the gradient reduction cannot overlap the backward pass"));
  }
  std::vector<FlatRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(),
            [](const FlatRange& a, const FlatRange& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i].offset < 0 || sorted[i].count < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient range [", sorted[i].offset, ", +", sorted[i].count, ") is negative"));
    }
    if (i > 0 && sorted[i].offset < sorted[i - 1].end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient ranges [", sorted[i - 1].offset, ", ", sorted[i - 1].end(), ") and [",
          sorted[i].offset, ", ", sorted[i].end(), ") overlap"));
    }
  }
  std::vector<FlatRange> buckets = plan_gradient_buckets(ranges, max_bucket_elements);
  return std::unique_ptr<BucketedAllReduce>(new BucketedAllReduce(
      communicator, std::move(sorted), std::move(buckets), threading, reduction));
}

BucketedAllReduce::BucketedAllReduce(Communicator& communicator, std::vector<FlatRange> ranges,
                                     std::vector<FlatRange> buckets, Threading threading,
                                     Reduction reduction)
    : communicator_(communicator),
      ranges_(std::move(ranges)),
      buckets_(std::move(buckets)),
      threading_(threading),
      reduction_(reduction),
      reported_(ranges_.size(), 0),
      pending_(buckets_.size(), 0) {
  by_offset_.resize(buckets_.size());
  std::iota(by_offset_.begin(), by_offset_.end(), size_t{0});
  std::sort(by_offset_.begin(), by_offset_.end(),
            [this](size_t a, size_t b) { return buckets_[a].offset < buckets_[b].offset; });
  if (threading_ == Threading::kBackgroundThread) thread_ = std::thread([this] { thread_loop(); });
}

BucketedAllReduce::~BucketedAllReduce() {
  if (active_) finish().IgnoreError();
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_one();
    thread_.join();
  }
}

void BucketedAllReduce::begin(float* data) {
  if (active_) finish().IgnoreError();
  data_ = data;
  active_ = true;
  std::fill(reported_.begin(), reported_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].count;
  next_to_start_ = 0;
  report_error_ = absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reduced_ = 0;
    reduce_seconds_ = 0;
    reduce_error_ = absl::OkStatus();
  }
}

void BucketedAllReduce::ready(FlatRange range) {
  if (!active_) return;
  const auto found = std::lower_bound(
      ranges_.begin(), ranges_.end(), range,
      [](const FlatRange& a, const FlatRange& b) { return a.offset < b.offset; });
  if (found == ranges_.end() || !(*found == range)) {
    if (report_error_.ok()) {
      report_error_ = absl::InternalError(absl::StrCat(
          "the backward pass reported the gradient range [", range.offset, ", ", range.end(),
          "), which is not one of the ", ranges_.size(), " parameters being reduced"));
    }
    return;
  }
  char& reported = reported_[static_cast<size_t>(found - ranges_.begin())];
  if (reported) return;
  reported = 1;
  // The buckets overlapping the range: from the last one starting at or before its offset.
  auto it = std::upper_bound(by_offset_.begin(), by_offset_.end(), range.offset,
                             [this](int64_t offset, size_t b) { return offset < buckets_[b].offset; });
  if (it != by_offset_.begin()) --it;
  for (; it != by_offset_.end() && buckets_[*it].offset < range.end(); ++it) {
    const FlatRange& bucket = buckets_[*it];
    const int64_t overlap =
        std::min(bucket.end(), range.end()) - std::max(bucket.offset, range.offset);
    if (overlap > 0) pending_[*it] -= overlap;
  }
  start_complete_buckets();
}

void BucketedAllReduce::start_complete_buckets() {
  while (next_to_start_ < buckets_.size() && pending_[next_to_start_] == 0) {
    start(next_to_start_++);
  }
}

void BucketedAllReduce::start(size_t bucket) {
  if (threading_ == Threading::kCallingThread) {
    reduce(bucket);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(bucket);
  }
  work_ready_.notify_one();
}

void BucketedAllReduce::reduce(size_t bucket) {
  bool skip = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    skip = !reduce_error_.ok();  // the collectives are out of step already: do not add one
  }
  const FlatRange& range = buckets_[bucket];
  absl::Status status;
  double seconds = 0;
  if (!skip) {
    const Clock::time_point started = Clock::now();
    status = reduction_ == Reduction::kAllReduce
                 ? communicator_.all_reduce_sum(data_ + range.offset, range.count)
                 : communicator_.reduce_scatter_sum(data_ + range.offset, range.count);
    seconds = seconds_since(started);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reduce_seconds_ += seconds;
    if (!status.ok() && reduce_error_.ok()) {
      reduce_error_ = absl::Status(status.code(), absl::StrCat(
          reduction_ == Reduction::kAllReduce ? "all-reducing" : "reduce-scattering",
          " gradient bucket ", bucket + 1, " of ", buckets_.size(), " (elements [",
          range.offset, ", ", range.end(), ")): ", status.message()));
    }
    ++reduced_;
  }
  work_done_.notify_all();
}

void BucketedAllReduce::thread_loop() {
  for (;;) {
    size_t bucket = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      bucket = queue_.front();
      queue_.pop_front();
    }
    reduce(bucket);
  }
}

absl::Status BucketedAllReduce::finish() {
  if (!active_) return absl::OkStatus();
  const Clock::time_point started = Clock::now();
  std::fill(pending_.begin(), pending_.end(), 0);
  start_complete_buckets();
  absl::Status status;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [this] { return reduced_ == buckets_.size(); });
    timing_ = {reduce_seconds_, 0, static_cast<int64_t>(buckets_.size())};
    status = reduce_error_;
  }
  timing_.exposed_seconds = seconds_since(started);
  active_ = false;
  return status.ok() ? report_error_ : status;
}

std::vector<FlatRange> BucketedAllReduce::shards() const {
  std::vector<FlatRange> shards;
  for (const FlatRange& bucket : buckets_) {
    const FlatRange part =
        shard_of(bucket.count, communicator_.rank(), communicator_.world_size());
    if (part.count > 0) shards.push_back({bucket.offset + part.offset, part.count});
  }
  return shards;
}

absl::Status BucketedAllReduce::all_gather(float* data) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const FlatRange& bucket = buckets_[b];
    absl::Status status = communicator_.all_gather_shards(data + bucket.offset, bucket.count);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat(
          "gathering the updated parameters of bucket ", b + 1, " of ", buckets_.size(),
          " (elements [", bucket.offset, ", ", bucket.end(), ")): ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace xlate
