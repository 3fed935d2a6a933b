// A contiguous range of elements of a flat buffer (the flat parameters or gradient of a
// training run): what the bucketed reduction cuts the gradient into and what a rank owns of it.
#pragma once

#include <cstdint>

namespace xlate {

// `count` elements of a flat buffer starting at element `offset`.
struct FlatRange {
  int64_t offset = 0;
  int64_t count = 0;
  int64_t end() const { return offset + count; }
  bool operator==(const FlatRange& other) const {
    return offset == other.offset && count == other.count;
  }
};

// Rank `rank`'s part of `count` elements shared by `world_size` ranks (offset relative to the
// first element): contiguous parts in rank order, the first count % world_size ranks one
// element longer than the rest. The partition of Communicator::reduce_scatter_sum.
inline FlatRange shard_of(int64_t count, int rank, int world_size) {
  const int64_t base = count / world_size, longer = count % world_size;
  return {rank * base + (rank < longer ? rank : longer), base + (rank < longer ? 1 : 0)};
}

}  // namespace xlate
