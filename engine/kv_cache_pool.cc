#include "engine/kv_cache_pool.h"

#include <algorithm>
#include <functional>
#include <new>
#include <stdexcept>

namespace xlate {

namespace {

// The first storage, in blocks: a short sentence at beam 4 takes about 10.
constexpr int64_t kFirstCapacity = 32;

}  // namespace

int64_t KvCachePool::block_bytes(int64_t layers, int64_t width, DType dtype) {
  return kBlockPositions * (layers * width * static_cast<int64_t>(dtype_size(dtype)) +
                            static_cast<int64_t>(sizeof(int32_t)));
}

KvCachePool::KvCachePool(int64_t layers, int64_t width, DType dtype, Device device,
                         int64_t max_blocks, Growth growth)
    : width_(width),
      reserve_once_(growth == Growth::kReserveOnce ||
                    (growth == Growth::kForDevice && device == Device::kCPU)),
      dtype_(dtype),
      device_(device),
      max_blocks_(max_blocks),
      block_bytes_(block_bytes(layers, width, dtype)),
      layers_(static_cast<size_t>(layers)) {
  if (layers < 1 || width < 1 || max_blocks < 1 || max_blocks > kMaxBlocks) {
    throw std::invalid_argument("KvCachePool: layers, width and max_blocks must be >= 1 (and "
                                "max_blocks <= kMaxBlocks)");
  }
}

bool KvCachePool::reserve(int64_t blocks) {
  if (reserved_.load() + blocks > max_blocks_) return false;
  reserved_ += blocks;
  return true;
}

void KvCachePool::unreserve(int64_t blocks) { reserved_ -= blocks; }

int32_t KvCachePool::take() {
  if (free_.empty()) {
    const int64_t capacity = capacity_.load();
    if (capacity >= max_blocks_) throw std::bad_alloc();
    grow(reserve_once_ ? capacity + 1
                       : std::min(max_blocks_,
                                  std::max({kFirstCapacity, capacity + capacity / 2, capacity + 1})));
  }
  std::pop_heap(free_.begin(), free_.end(), std::greater<>());
  const int32_t block = free_.back();
  free_.pop_back();
  ++in_use_;
  return block;
}

void KvCachePool::give_back(const std::vector<int32_t>& blocks) {
  for (int32_t block : blocks) {
    free_.push_back(block);
    std::push_heap(free_.begin(), free_.end(), std::greater<>());
  }
  in_use_ -= static_cast<int64_t>(blocks.size());
}

void KvCachePool::grow(int64_t capacity) {
  if (reserve_once_ && fed_tokens_.defined()) {
    free_.push_back(static_cast<int32_t>(capacity_.load()));  // the only block, the lowest
    capacity_ = capacity;
    return;
  }
  const int64_t old_rows = capacity_.load() * kBlockPositions;
  int64_t rows = (reserve_once_ ? max_blocks_ : capacity) * kBlockPositions;
  // Everything is allocated before anything is replaced: running out leaves the pool as it was.
  std::vector<Tensor> layers;
  Tensor fed_tokens;
  try {
    for (size_t i = 0; i < layers_.size(); ++i) {
      layers.push_back(Tensor::empty({rows, width_}, dtype_, device_));
    }
    fed_tokens = Tensor::empty({rows, 1}, DType::kInt32, device_);
  } catch (const std::bad_alloc&) {
    // An address space the size of the cap may be refused (an overcommit policy, a ulimit)
    // where the blocks in use would fit: grow by copies instead.
    if (!reserve_once_) throw;
    reserve_once_ = false;
    grow(std::max(capacity, std::min(max_blocks_, kFirstCapacity)));
    return;
  }
  free_.reserve(static_cast<size_t>(capacity));
  if (old_rows > 0) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      layers[i].view(0, {old_rows, width_}).copy_from(layers_[i]);
    }
    fed_tokens.view(0, {old_rows, 1}).copy_from(fed_tokens_);
  }
  layers_ = std::move(layers);
  fed_tokens_ = std::move(fed_tokens);
  for (int64_t block = capacity_.load(); block < capacity; ++block) {
    free_.push_back(static_cast<int32_t>(block));
    std::push_heap(free_.begin(), free_.end(), std::greater<>());
  }
  capacity_ = capacity;
}

KvCachePool::Usage KvCachePool::usage() const {
  Usage usage;
  usage.blocks_in_use = in_use_.load();
  usage.blocks_in_pool = capacity_.load();
  usage.blocks_reserved = reserved_.load();
  usage.max_blocks = max_blocks_;
  usage.block_bytes = block_bytes_;
  return usage;
}

}  // namespace xlate
