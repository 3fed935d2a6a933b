#include "kernels/runtime/caching_allocator.h"

#include <algorithm>
#include <new>
#include <vector>

namespace xlate::kernels {
namespace {

constexpr size_t kGranule = 512;                     // requests round up to this
constexpr size_t kLargestSmall = size_t{1} << 20;    // small pool: requests up to 1 MiB
constexpr size_t kSmallSegment = size_t{2} << 20;
constexpr size_t kLargeStep = size_t{2} << 20;       // large segments are multiples of this
constexpr size_t kSharedSegment = size_t{20} << 20;  // for large requests under kShareBelow
constexpr size_t kShareBelow = size_t{10} << 20;
// Larger requests get a segment an eighth larger than they are: a later step's request of the
// same tensor, a little larger, then still fits it (the eighth is cut off for others meanwhile).
// On steps of varying token counts this kept the reserve at 1.1-1.5x the peak in use, against
// 1.4-2.2x for segments of the request's own size (and 4-7x for the former block per size
// class).
constexpr size_t kHeadroomDivisor = 8;

size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

}  // namespace

// A piece of a segment; `previous` and `next` are its neighbours in the segment (nullptr at the
// segment's ends: a block with neither is a whole segment).
struct CachingAllocator::Block {
  char* address;
  size_t size;
  bool small;  // of a small-pool segment
  bool free;
  Block* previous;
  Block* next;
};

bool CachingAllocator::BySizeThenAddress::operator()(const Block* a, const Block* b) const {
  return a->size != b->size ? a->size < b->size : a->address < b->address;
}

void AllocatorGroup::join(CachingAllocator* member) {
  std::lock_guard<std::mutex> lock(mutex_);
  members_.push_back(member);
}

void AllocatorGroup::leave(CachingAllocator* member) {
  std::lock_guard<std::mutex> lock(mutex_);
  members_.erase(std::remove(members_.begin(), members_.end(), member), members_.end());
}

void AllocatorGroup::empty_caches_except(const CachingAllocator* asking) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (CachingAllocator* member : members_) {
    if (member != asking) member->empty_cache();
  }
}

CachingAllocator::CachingAllocator(std::unique_ptr<BackingMemory> backing,
                                   std::shared_ptr<AllocatorGroup> group, bool cache)
    : backing_(std::move(backing)), group_(std::move(group)), cache_(cache) {
  if (group_ != nullptr) group_->join(this);
}

CachingAllocator::~CachingAllocator() {
  if (group_ != nullptr) group_->leave(this);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Block*> blocks(small_free_.begin(), small_free_.end());
  blocks.insert(blocks.end(), large_free_.begin(), large_free_.end());
  for (const auto& [address, block] : in_use_) blocks.push_back(block);
  for (Block* block : blocks) {
    if (block->previous == nullptr) backing_->release(block->address);  // a segment's start
  }
  for (Block* block : blocks) delete block;
}

size_t CachingAllocator::rounded_size(size_t bytes) {
  return bytes == 0 ? kGranule : round_up(bytes, kGranule);
}

void* CachingAllocator::allocate(size_t bytes) {
  // Without caching, the request's own size: compute-sanitizer then sees an access one byte
  // past it (a rounded block would hide up to 511).
  const size_t size = cache_ ? rounded_size(bytes) : std::max<size_t>(bytes, 1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (void* block = allocate_locked(size)) return block;
  }
  if (group_ != nullptr) {
    group_->empty_caches_except(this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (void* block = allocate_locked(size)) return block;
  }
  throw std::bad_alloc();
}

void* CachingAllocator::allocate_locked(size_t size) {
  const bool small = size <= kLargestSmall;
  FreeBlocks& pool = small ? small_free_ : large_free_;
  Block probe{nullptr, size, small, true, nullptr, nullptr};  // before every block of `size`
  Block* block = nullptr;
  if (!cache_) {
    void* memory = backing_->allocate(size);
    if (memory == nullptr) return nullptr;
    block = new Block{static_cast<char*>(memory), size, small, false, nullptr, nullptr};
    stats_.bytes_reserved += size;
    ++stats_.backing_allocations;
  } else if (auto best = pool.lower_bound(&probe); best != pool.end()) {
    block = *best;
    pool.erase(best);
    ++stats_.cache_hits;
  } else {
    block = new_segment_locked(size, small);
    if (block == nullptr && !(small_free_.empty() && large_free_.empty())) {
      release_free_segments_locked();
      block = new_segment_locked(size, small);
    }
    if (block == nullptr) return nullptr;
  }
  // Cut off what the request does not need where the rest can serve another of the pool's.
  const size_t rest = block->size - size;
  if (small ? rest >= kGranule : rest > kLargestSmall) {
    Block* remainder = new Block{block->address + size, rest, small, true, block, block->next};
    if (block->next != nullptr) block->next->previous = remainder;
    block->next = remainder;
    block->size = size;
    pool.insert(remainder);
  }
  block->free = false;
  in_use_.emplace(block->address, block);
  stats_.bytes_in_use += block->size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return block->address;
}

CachingAllocator::Block* CachingAllocator::new_segment_locked(size_t size, bool small) {
  // The preferred segment, then (when the memory refuses that) one of the request's own size.
  const size_t own = small ? size : round_up(size, kLargeStep);
  const size_t preferred =
      small ? kSmallSegment
            : (size < kShareBelow ? kSharedSegment
                                  : round_up(size + size / kHeadroomDivisor, kLargeStep));
  for (const size_t segment : {preferred, own}) {
    if (void* memory = backing_->allocate(segment)) {
      stats_.bytes_reserved += segment;
      ++stats_.backing_allocations;
      return new Block{static_cast<char*>(memory), segment, small, true, nullptr, nullptr};
    }
    if (segment == own) break;
  }
  return nullptr;
}

void CachingAllocator::free(void* address) {
  if (address == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = in_use_.find(address);
  if (found == in_use_.end()) return;  // not ours: a double free must not corrupt the cache
  Block* block = found->second;
  in_use_.erase(found);
  stats_.bytes_in_use -= block->size;
  if (!cache_) {
    backing_->release(block->address);
    stats_.bytes_reserved -= block->size;
    delete block;
    return;
  }
  block->free = true;
  FreeBlocks& pool = block->small ? small_free_ : large_free_;
  // `first` takes in `second`, the free block after it in their segment.
  const auto merge = [&pool](Block* first, Block* second) {
    pool.erase(first);
    pool.erase(second);
    first->size += second->size;
    first->next = second->next;
    if (first->next != nullptr) first->next->previous = first;
    delete second;
  };
  if (block->next != nullptr && block->next->free) merge(block, block->next);
  if (block->previous != nullptr && block->previous->free) {
    block = block->previous;
    merge(block, block->next);
  }
  pool.insert(block);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_free_segments_locked();
}

void CachingAllocator::release_free_segments_locked() {
  for (FreeBlocks* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->previous != nullptr || block->next != nullptr) {
        ++it;  // part of a segment something still uses
        continue;
      }
      backing_->release(block->address);
      stats_.bytes_reserved -= block->size;
      it = pool->erase(it);
      delete block;
    }
  }
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace xlate::kernels
