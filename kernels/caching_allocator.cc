#include "kernels/caching_allocator.h"

#include <algorithm>
#include <new>

namespace xlate::kernels {
namespace {

constexpr size_t kSmallStep = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;
constexpr size_t kLargeStep = size_t{2} << 20;

size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

}  // namespace

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
                                   std::shared_ptr<AllocatorGroup> group)
    : backing_(std::move(backing)), group_(std::move(group)) {
  if (group_ != nullptr) group_->join(this);
}

CachingAllocator::~CachingAllocator() {
  if (group_ != nullptr) group_->leave(this);
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
  for (const auto& [block, size] : in_use_) backing_->release(block);
}

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) return kSmallStep;
  return bytes <= kLargeThreshold ? round_up(bytes, kSmallStep) : round_up(bytes, kLargeStep);
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
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

size_t CachingAllocator::reuse_limit(size_t size) { return size + size / 8; }

void* CachingAllocator::allocate_locked(size_t size) {
  void* block = nullptr;
  if (auto cached = cached_.lower_bound(size);
      cached != cached_.end() && cached->first <= reuse_limit(size)) {
    block = cached->second;
    size = cached->first;  // the block keeps its class: it returns to the cache as such
    cached_.erase(cached);
    ++stats_.cache_hits;
  } else {
    block = backing_->allocate(size);
    if (block == nullptr && !cached_.empty()) {
      release_cached_locked();
      block = backing_->allocate(size);
    }
    if (block == nullptr) return nullptr;
    stats_.bytes_reserved += size;
    ++stats_.backing_allocations;
  }
  in_use_.emplace(block, size);
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return block;
}

void CachingAllocator::free(void* block) {
  if (block == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = in_use_.find(block);
  if (found == in_use_.end()) return;  // not ours: a double free must not corrupt the cache
  cached_.emplace(found->second, block);
  stats_.bytes_in_use -= found->second;
  in_use_.erase(found);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (const auto& [size, block] : cached_) {
    backing_->release(block);
    stats_.bytes_reserved -= size;
  }
  cached_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace xlate::kernels
