// How the flat gradient is cut into the buckets that data-parallel training all-reduces while the
// backward pass is still running. A bucket is a contiguous range of the flat buffer (one
// in-place all-reduce, no staging copy); buckets are listed in the order the backward pass is
// expected to finish them, which is the order every rank reduces them in.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/distributed/flat_range.h"

namespace xlate {

// Cuts `ranges` (the reduced parameters, disjoint, listed in the order the backward pass
// finishes them) into buckets of at most `max_bucket_elements` elements (0: no limit). Walking
// the ranges in order, a range joins the current bucket when it is adjacent to it in memory (on
// either side) and the bucket stays within the limit; otherwise a new bucket starts. A range
// larger than the limit is cut into limit-sized pieces. Empty ranges are skipped. Every element
// of every range is in exactly one bucket; no bucket holds an element outside the ranges.
std::vector<FlatRange> plan_gradient_buckets(const std::vector<FlatRange>& ranges,
                                             int64_t max_bucket_elements);

}  // namespace xlate
