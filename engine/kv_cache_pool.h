// The KV-cache memory of a model on its device: blocks of kBlockPositions cache rows, taken as
// decoding reaches them and given back when their sentence leaves. A cache row holds one
// position's keys and values of every decoder layer (one [rows, h·d_k + h·d_v] tensor per
// layer, the same row index in each) and the token fed there (the repetition guards' history).
// Self-attention positions and cross-attention (source) positions come from the same blocks.
//
// The pool grows on demand up to a cap and keeps what it took: the memory plateaus at the peak
// working set and does not grow after warm-up. Blocks are taken lowest-numbered first, so the
// rows in use stay at the front. How it grows depends on the memory (Growth): host memory is
// reserved once as address space for the whole cap and a block's pages are committed when it
// is first written (no copy, nothing freed, nothing fragmented; the pool's bytes are the rows
// ever taken; where that much address space is refused, it grows as device memory does), device
// memory, which is committed when allocated, in larger storages (half as
// large again, the rows copied over, the old one freed). Admission (ContinuousDecoder) reserves,
// per sentence, the blocks it may come to hold against the cap, so a sentence once admitted
// never lacks cache.
//
// One thread uses a pool (the scheduler's thread for a served model's decoders, which step one
// after the other; the caller's for a one-call decode); usage() may be read from any thread.
//
// Legend: B = kBlockPositions, W = h·d_k + h·d_v of the decoder's heads, L decoder layers.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

class KvCachePool {
 public:
  static constexpr int64_t kBlockPositions = 16;
  // The blocks that hold `positions` positions of one row.
  static int64_t blocks_for(int64_t positions) {
    return (positions + kBlockPositions - 1) / kBlockPositions;
  }
  // Bytes of one block: B rows of L layers of W elements of `dtype`, and B fed tokens (int32).
  static int64_t block_bytes(int64_t layers, int64_t width, DType dtype);
  // The most blocks a pool may hold (row indices are int32).
  static constexpr int64_t kMaxBlocks = (int64_t{1} << 31) / kBlockPositions - 1;

  enum class Growth {
    kForDevice,       // kReserveOnce on the CPU, kCopy on a GPU
    kReserveOnce,     // one storage of the cap, its pages committed as blocks are first taken
    kCopy,            // storages half as large again, the blocks copied over
  };
  // An empty pool (no storage yet) of up to max_blocks (1 .. kMaxBlocks) blocks.
  KvCachePool(int64_t layers, int64_t width, DType dtype, Device device, int64_t max_blocks,
              Growth growth = Growth::kForDevice);
  KvCachePool(const KvCachePool&) = delete;
  KvCachePool& operator=(const KvCachePool&) = delete;

  // Admission: reserves `blocks` against the cap; false (nothing reserved) when the reserved
  // blocks would pass it.
  bool reserve(int64_t blocks);
  void unreserve(int64_t blocks);

  // A free block, the lowest-numbered (the rows touched stay few); grows the pool when none is
  // free. Throws std::bad_alloc when the pool is at its cap or the device's memory runs out
  // (the pool is unchanged then).
  int32_t take();
  // Blocks taken and no longer read: they may be taken again at once.
  void give_back(const std::vector<int32_t>& blocks);

  // Layer i's keys and values, [>= capacity·B, W]; the fed tokens, int32 [>= capacity·B, 1].
  // Taking a block may replace them (a larger storage): fetch them again after take().
  Tensor& layer(size_t i) { return layers_[i]; }
  Tensor& fed_tokens() { return fed_tokens_; }
  size_t layer_count() const { return layers_.size(); }
  Device device() const { return device_; }

  struct Usage {
    int64_t blocks_in_use = 0;    // taken
    int64_t blocks_in_pool = 0;   // the pool's capacity: blocks held, in use or free
    int64_t blocks_reserved = 0;  // by admitted sentences
    int64_t max_blocks = 0;       // the cap
    int64_t block_bytes = 0;
    int64_t pool_bytes() const { return blocks_in_pool * block_bytes; }
  };
  Usage usage() const;
  int64_t max_blocks() const { return max_blocks_; }
  int64_t free_to_reserve() const { return max_blocks_ - reserved_.load(); }

 private:
  // Makes the pool `capacity` blocks (more than now): a larger storage with the current rows
  // copied over, or, reserving once, more of the storage reserved.
  void grow(int64_t capacity);

  const int64_t width_;
  bool reserve_once_;  // until reserving the cap's address space fails
  const DType dtype_;
  const Device device_;
  const int64_t max_blocks_;
  const int64_t block_bytes_;
  std::vector<Tensor> layers_;
  Tensor fed_tokens_;
  std::vector<int32_t> free_;  // a min-heap of free block ids below capacity
  std::atomic<int64_t> capacity_{0}, in_use_{0}, reserved_{0};
};

}  // namespace xlate
