// Splitting a global batch among data-parallel ranks.
#pragma once

#include <cstdint>
#include <vector>

namespace xlate::trainer {

// Rank `rank`'s rows of `batch`, for 0 <= rank < world_size (else std::invalid_argument: a
// programming error, not user input).
//
// `batch` must be ordered by row tokens, fewest first, as BatchIterator::next() returns it.
// Rows are dealt in a snake order (ranks 0, 1, .., W-1, then W-1, .., 0, then 0, 1, ..), so
// every rank gets rows of every length: shard sizes differ by at most one row, and token
// counts by at most the longest row plus the spread (longest - shortest row) of the batch,
// which length grouping keeps small. The shards of all ranks together are exactly `batch`;
// with world_size 1 the shard is the whole batch. A batch of fewer rows than ranks leaves some
// shards empty, and the trainer must accept an empty shard.
std::vector<int64_t> shard(const std::vector<int64_t>& batch, int rank, int world_size);

}  // namespace xlate::trainer
