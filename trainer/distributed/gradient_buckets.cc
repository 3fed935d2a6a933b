#include "trainer/distributed/gradient_buckets.h"

#include <algorithm>

namespace xlate {

std::vector<FlatRange> plan_gradient_buckets(const std::vector<FlatRange>& ranges,
                                             int64_t max_bucket_elements) {
  const int64_t limit = max_bucket_elements > 0 ? max_bucket_elements : INT64_MAX;
  std::vector<FlatRange> buckets;
  bool open = false;  // buckets.back() may still grow
  for (const FlatRange& range : ranges) {
    if (range.count <= 0) continue;
    if (range.count > limit) {
      // Cut in memory order; the pieces of one parameter are finished together.
      for (int64_t start = range.offset; start < range.end(); start += limit) {
        buckets.push_back({start, std::min(limit, range.end() - start)});
      }
      open = buckets.back().count < limit;
      continue;
    }
    if (open) {
      FlatRange& bucket = buckets.back();
      const bool fits = bucket.count + range.count <= limit;
      if (fits && range.end() == bucket.offset) {
        bucket = {range.offset, bucket.count + range.count};
        continue;
      }
      if (fits && range.offset == bucket.end()) {
        bucket.count += range.count;
        continue;
      }
    }
    buckets.push_back(range);
    open = true;
  }
  return buckets;
}

}  // namespace xlate
