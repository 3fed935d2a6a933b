// Data-parallel gradient reduction overlapped with the backward pass: the flat gradient is cut
// into buckets (gradient_buckets.h), and a bucket is all-reduced as soon as the backward pass has
// finished every parameter in it, on a thread of its own, while the backward pass goes on with
// the layers before. Every rank reduces the buckets in the plan's order, whatever order its
// backward pass reports them in, so the ranks' collectives always match.
//
// One reduction: begin(gradient) before the backward pass, ready(range) from the backward pass
// as each parameter's gradient becomes final, finish() after it (which reduces what was never
// reported and waits for everything). With gradient accumulation, only the last micro-batch's
// backward pass runs between begin() and finish().
//
// With optimizer state sharded over the ranks (ZeRO-1), each bucket is reduce-scattered
// instead (Reduction::kReduceScatter): each rank receives the summed gradient of its own shard
// of every bucket (shards()), updates only those parameters, and all_gather() then gives every
// rank the updated parameters of every shard, bucket by bucket. The same volume crosses the
// wire as with the all-reduce, and each rank keeps Adam's moments for 1/N of the parameters.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/distributed/communicator.h"
#include "trainer/distributed/gradient_buckets.h"

namespace xlate {

class BucketedAllReduce {
 public:
  // Where the all-reduce calls run. kBackgroundThread overlaps them with the caller's backward
  // pass and needs a communicator whose collectives may come from another thread
  // (Communicator::allows_collectives_from_any_thread); kCallingThread runs each inside the
  // ready() or finish() call that completes its bucket.
  enum class Threading { kBackgroundThread, kCallingThread };

  // What each bucket's collective gives this rank: the whole bucket's sum, or only its shard's.
  enum class Reduction { kAllReduce, kReduceScatter };

  // How the last reduction went.
  struct Timing {
    double reduce_seconds = 0;   // inside the all-reduce calls, all buckets together
    double exposed_seconds = 0;  // finish() waiting: the part the backward pass did not hide
    int64_t buckets = 0;
  };

  // `ranges`: the parameters to reduce, disjoint, in the order the backward pass finishes them;
  // cut into buckets of at most `max_bucket_elements` (0: one bucket per contiguous run).
  // INVALID_ARGUMENT for overlapping or negative ranges, a negative bucket size, or
  // kBackgroundThread with a communicator that does not allow it. `communicator` must outlive
  // the returned object and must not be used by the caller between begin() and finish().
  static absl::StatusOr<std::unique_ptr<BucketedAllReduce>> Create(
      Communicator& communicator, std::vector<FlatRange> ranges, int64_t max_bucket_elements,
      Threading threading, Reduction reduction = Reduction::kAllReduce);
  ~BucketedAllReduce();
  BucketedAllReduce(const BucketedAllReduce&) = delete;
  BucketedAllReduce& operator=(const BucketedAllReduce&) = delete;

  // Starts reducing the flat gradient at `data` (every range's elements in it): all buckets
  // pending. A reduction that is still running is finished first.
  void begin(float* data);
  // `range`, one of the ranges given to Create, holds its final value for this reduction: no
  // later part of the backward pass writes it. Starts every bucket that is now complete, in plan
  // order. A repeated report is ignored; a range that is not one of the given ones is an error
  // that finish() returns (its bucket is then reduced by finish()).
  void ready(FlatRange range);
  // Reduces every bucket not yet started and waits for all of them. OK, or the first error (a
  // bad report, or a failed all-reduce; after a failed one the later buckets are not reduced).
  absl::Status finish();

  // kReduceScatter: this rank's part of every bucket (shard_of, in plan order, empty parts left
  // out): where finish() leaves a summed gradient and where this rank updates the parameters.
  std::vector<FlatRange> shards() const;
  // kReduceScatter, after finish() and the update of shards(): every bucket's shards of `data`
  // (the flat parameters, laid out as the gradient) gathered from their ranks, in place, in plan
  // order, on the calling thread. OK, or the first failed collective's error naming its bucket.
  absl::Status all_gather(float* data);

  const std::vector<FlatRange>& buckets() const { return buckets_; }
  Timing last_timing() const { return timing_; }

 private:
  BucketedAllReduce(Communicator& communicator, std::vector<FlatRange> ranges,
                    std::vector<FlatRange> buckets, Threading threading, Reduction reduction);
  void start_complete_buckets();
  void start(size_t bucket);
  // Runs one bucket's all-reduce (none once an earlier one failed); records its time and the
  // first error.
  void reduce(size_t bucket);
  void thread_loop();

  Communicator& communicator_;
  const std::vector<FlatRange> ranges_;   // sorted by offset
  const std::vector<FlatRange> buckets_;  // plan order
  std::vector<size_t> by_offset_;         // bucket indices sorted by offset
  const Threading threading_;
  const Reduction reduction_;

  // Caller's side of one reduction.
  float* data_ = nullptr;
  bool active_ = false;
  std::vector<char> reported_;      // per range
  std::vector<int64_t> pending_;    // per bucket: elements not yet reported
  size_t next_to_start_ = 0;
  absl::Status report_error_;
  Timing timing_;

  // Shared with the thread (guarded by mutex_).
  std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  std::deque<size_t> queue_;
  size_t reduced_ = 0;   // buckets whose all-reduce returned, this reduction
  double reduce_seconds_ = 0;
  absl::Status reduce_error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace xlate
