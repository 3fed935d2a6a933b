#include "trainer/data/shard.h"

#include <stdexcept>
#include <string>

namespace xlate::trainer {

std::vector<int64_t> shard(const std::vector<int64_t>& batch, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument("shard: rank " + std::to_string(rank) + " is outside [0, " +
                                std::to_string(world_size) + ")");
  }
  std::vector<int64_t> rows;
  rows.reserve(batch.size() / static_cast<size_t>(world_size) + 1);
  const size_t ranks = static_cast<size_t>(world_size);
  for (size_t j = 0; j < batch.size(); ++j) {
    const size_t round = j / ranks, place = j % ranks;
    const size_t owner = round % 2 == 0 ? place : ranks - 1 - place;
    if (owner == static_cast<size_t>(rank)) rows.push_back(batch[j]);
  }
  return rows;
}

}  // namespace xlate::trainer
