// The caching policy of device memory, over host memory standing in for the GPU.
#include "kernels/caching_allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <set>

#include <gtest/gtest.h>

namespace xlate::kernels {
namespace {

// Host memory with a capacity, counting what it hands out.
class CountingMemory : public BackingMemory {
 public:
  // `used` outlives the allocator that owns this object, so destruction can be checked.
  CountingMemory(size_t capacity, std::shared_ptr<size_t> used)
      : capacity_(capacity), used_(std::move(used)) {}
  void* allocate(size_t bytes) override {
    if (*used_ + bytes > capacity_) return nullptr;
    *used_ += bytes;
    void* block = std::malloc(bytes);
    sizes_[block] = bytes;
    return block;
  }
  void release(void* block) override {
    *used_ -= sizes_.at(block);
    sizes_.erase(block);
    std::free(block);
  }
  size_t used() const { return *used_; }

 private:
  size_t capacity_;
  std::shared_ptr<size_t> used_;
  std::map<void*, size_t> sizes_;
};

struct Fixture {
  explicit Fixture(size_t capacity = size_t{64} << 20) {
    auto backing = std::make_unique<CountingMemory>(capacity, std::make_shared<size_t>(0));
    memory = backing.get();
    allocator = std::make_unique<CachingAllocator>(std::move(backing));
  }
  CountingMemory* memory;
  std::unique_ptr<CachingAllocator> allocator;
};

TEST(CachingAllocator, SizeClassesRoundSmallTo512BytesAndLargeTo2MiB) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::size_class((size_t{1} << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::size_class((size_t{5} << 20) + 7), size_t{6} << 20);
}

TEST(CachingAllocator, AFreedBlockServesTheNextRequestOfItsClass) {
  Fixture f;
  void* first = f.allocator->allocate(1000);
  f.allocator->free(first);
  void* second = f.allocator->allocate(900);  // same 1024-byte class
  EXPECT_EQ(second, first);
  void* third = f.allocator->allocate(3000);  // another class: a new block
  EXPECT_NE(third, first);
  const AllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.backing_allocations, 2);
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(stats.bytes_in_use, 1024u + 3072u);
  EXPECT_EQ(stats.bytes_reserved, 1024u + 3072u);
}

TEST(CachingAllocator, RepeatedStepsReachTheBackingMemoryOnlyOnce) {
  Fixture f;
  for (int step = 0; step < 50; ++step) {
    std::set<void*> live;
    for (size_t bytes : {4096u, 100u, 70000u, 4096u}) live.insert(f.allocator->allocate(bytes));
    EXPECT_EQ(live.size(), 4u);
    for (void* block : live) f.allocator->free(block);
  }
  EXPECT_EQ(f.allocator->stats().backing_allocations, 4);
  EXPECT_EQ(f.allocator->stats().bytes_in_use, 0u);
}

TEST(CachingAllocator, ExhaustionEmptiesTheCacheAndRetriesBeforeFailing) {
  Fixture f(size_t{8} << 20);
  void* small = f.allocator->allocate(size_t{5} << 20);  // 6 MiB class
  f.allocator->free(small);
  void* big = f.allocator->allocate(size_t{7} << 20);  // 8 MiB class: only fits after release
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(f.memory->used(), size_t{8} << 20);
  EXPECT_THROW(f.allocator->allocate(1), std::bad_alloc);
  f.allocator->free(big);
  f.allocator->empty_cache();
  EXPECT_EQ(f.memory->used(), 0u);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 0u);
}

TEST(CachingAllocator, ForeignPointersAndDoubleFreesLeaveTheCacheIntact) {
  Fixture f;
  void* block = f.allocator->allocate(100);
  f.allocator->free(block);
  f.allocator->free(block);
  int unrelated = 0;
  f.allocator->free(&unrelated);
  f.allocator->free(nullptr);
  void* a = f.allocator->allocate(100);
  void* b = f.allocator->allocate(100);
  EXPECT_EQ(a, block);
  EXPECT_NE(b, block);  // the block was cached once, not twice
}

TEST(CachingAllocator, DestructionReturnsEveryBlock) {
  auto used = std::make_shared<size_t>(0);
  {
    CachingAllocator allocator(std::make_unique<CountingMemory>(size_t{64} << 20, used));
    allocator.free(allocator.allocate(10));
    allocator.allocate(5000);  // still in use at destruction
    EXPECT_EQ(*used, 512u + 5120u);
  }
  EXPECT_EQ(*used, 0u);
}

}  // namespace
}  // namespace xlate::kernels
