// The caching policy of device memory, over host memory standing in for the GPU.
#include "kernels/caching_allocator.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace xlate::kernels {
namespace {

// Host memory with a capacity, counting what it hands out. Several CountingMemory objects over
// one `used` count stand for one GPU that several threads' allocators draw on.
class CountingMemory : public BackingMemory {
 public:
  // `used` outlives the allocator that owns this object, so destruction can be checked.
  CountingMemory(size_t capacity, std::shared_ptr<size_t> used)
      : capacity_(capacity), used_(std::move(used)) {}
  void* allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(shared_count_mutex());
    if (*used_ + bytes > capacity_) return nullptr;
    *used_ += bytes;
    void* block = std::malloc(bytes);
    sizes_[block] = bytes;
    return block;
  }
  void release(void* block) override {
    std::lock_guard<std::mutex> lock(shared_count_mutex());
    *used_ -= sizes_.at(block);
    sizes_.erase(block);
    std::free(block);
  }
  size_t used() const {
    std::lock_guard<std::mutex> lock(shared_count_mutex());
    return *used_;
  }

 private:
  static std::mutex& shared_count_mutex() {
    static std::mutex mutex;
    return mutex;
  }

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

// The peak of what was in use at once, not of what is reserved: two steps that each hold
// 4 KiB then 2 KiB (classes of their own) reserve 6 KiB, but never used more than 4 KiB at once.
TEST(CachingAllocator, ThePeakInUseIsTheMostHeldAtOnceNotTheReserve) {
  Fixture f;
  for (int step = 0; step < 2; ++step) {
    void* big = f.allocator->allocate(4096);
    f.allocator->free(big);
    void* small = f.allocator->allocate(2048);
    f.allocator->free(small);
  }
  void* both[] = {f.allocator->allocate(1024), f.allocator->allocate(1024)};
  const AllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.bytes_reserved, 4096u + 2048u + 1024u + 1024u);
  EXPECT_EQ(stats.peak_bytes_in_use, 4096u);
  EXPECT_EQ(stats.bytes_in_use, 2048u);
  for (void* block : both) f.allocator->free(block);
  void* more = f.allocator->allocate(5000);  // 5,120-byte class: the peak rises with it
  EXPECT_EQ(f.allocator->stats().peak_bytes_in_use, 5120u);
  f.allocator->free(more);
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

// A training step's activations change size with every batch: a cached block up to 1/8 larger
// than the request's class serves it, so steps of varying sizes settle on the largest one's
// blocks instead of caching one block per size seen.
TEST(CachingAllocator, ABlockUpToAnEighthLargerServesARequest) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_EQ(CachingAllocator::reuse_limit(48 * kMiB), 54 * kMiB);
  Fixture f(size_t{256} << 20);
  void* largest = f.allocator->allocate(48 * kMiB);
  f.allocator->free(largest);
  for (size_t megabytes : {44, 46, 43, 48, 47, 45, 43}) {
    void* block = f.allocator->allocate(megabytes * kMiB);
    EXPECT_EQ(block, largest) << megabytes << " MiB";
    EXPECT_EQ(f.allocator->stats().bytes_in_use, 48 * kMiB);  // the block's own class
    f.allocator->free(block);
  }
  EXPECT_EQ(f.allocator->stats().backing_allocations, 1);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 48 * kMiB);

  void* smaller = f.allocator->allocate(40 * kMiB);  // 48 > 40 + 40/8: a block of its own
  EXPECT_NE(smaller, largest);
  EXPECT_EQ(f.allocator->allocate(43 * kMiB), largest);  // class 44, bound 49.5
  void* middle = f.allocator->allocate(44 * kMiB);       // the 48 is taken: a new block
  EXPECT_EQ(f.allocator->stats().backing_allocations, 3);
  for (void* block : {smaller, largest, middle}) f.allocator->free(block);
  // Best fit: with 40, 44 and 48 MiB cached, 39 MiB (class 40, bound 45) takes the 40 though
  // the 44 is within its bound, and 41 MiB (class 42, bound 47.25) the 44.
  EXPECT_EQ(f.allocator->allocate(39 * kMiB), smaller);
  EXPECT_EQ(f.allocator->allocate(41 * kMiB), middle);
  void* larger = f.allocator->allocate(50 * kMiB);  // larger than every cached block
  EXPECT_NE(larger, largest);
  EXPECT_EQ(f.allocator->stats().backing_allocations, 4);
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

// Two threads' allocators over one 8 MiB memory, as two workers on one GPU.
struct SharedMemory {
  explicit SharedMemory(std::shared_ptr<AllocatorGroup> group)
      : loader(std::make_unique<CountingMemory>(kCapacity, used), group),
        decoder(std::make_unique<CountingMemory>(kCapacity, used), group) {}
  static constexpr size_t kCapacity = size_t{8} << 20;
  std::shared_ptr<size_t> used = std::make_shared<size_t>(0);
  CachingAllocator loader;
  CachingAllocator decoder;
};

TEST(AllocatorGroup, ARefusedMemberEmptiesTheOtherMembersCachesAndRetries) {
  SharedMemory gpu(std::make_shared<AllocatorGroup>());
  // A retired model's weights, freed into the cache of the thread that loaded them.
  gpu.loader.free(gpu.loader.allocate(size_t{5} << 20));
  EXPECT_EQ(gpu.loader.stats().bytes_reserved, size_t{6} << 20);

  void* block = gpu.decoder.allocate(size_t{7} << 20);
  EXPECT_NE(block, nullptr);
  EXPECT_EQ(gpu.loader.stats().bytes_reserved, 0u);
  EXPECT_EQ(gpu.decoder.stats().bytes_reserved, size_t{8} << 20);
  EXPECT_EQ(*gpu.used, size_t{8} << 20);
  gpu.decoder.free(block);
}

TEST(AllocatorGroup, WithoutAGroupAnotherThreadsCacheKeepsTheRoom) {
  SharedMemory gpu(nullptr);
  gpu.loader.free(gpu.loader.allocate(size_t{5} << 20));
  EXPECT_THROW(gpu.decoder.allocate(size_t{7} << 20), std::bad_alloc);
  EXPECT_EQ(gpu.loader.stats().bytes_reserved, size_t{6} << 20);
}

TEST(AllocatorGroup, BlocksInUseByAnotherMemberAreNeverReleased) {
  SharedMemory gpu(std::make_shared<AllocatorGroup>());
  void* weights = gpu.loader.allocate(size_t{5} << 20);
  gpu.loader.free(gpu.loader.allocate(1000));  // cached: released for the decoder's attempt
  EXPECT_THROW(gpu.decoder.allocate(size_t{7} << 20), std::bad_alloc);
  EXPECT_EQ(gpu.loader.stats().bytes_in_use, size_t{6} << 20);
  EXPECT_EQ(gpu.loader.stats().bytes_reserved, size_t{6} << 20);
  gpu.loader.free(weights);
  EXPECT_NE(gpu.decoder.allocate(size_t{1} << 20), nullptr);
}

TEST(AllocatorGroup, ADestroyedMemberHasLeftTheGroup) {
  auto group = std::make_shared<AllocatorGroup>();
  auto used = std::make_shared<size_t>(0);
  CachingAllocator decoder(std::make_unique<CountingMemory>(size_t{8} << 20, used), group);
  {
    CachingAllocator loader(std::make_unique<CountingMemory>(size_t{8} << 20, used), group);
    loader.free(loader.allocate(100));
  }
  EXPECT_EQ(*used, 0u);
  // Exhaustion asks the group again; a member left behind would be a dangling pointer here
  // (AddressSanitizer's sanitized_units run reports the use).
  EXPECT_THROW(decoder.allocate(size_t{9} << 20), std::bad_alloc);
}

// Two workers exhausting the memory at once each empty the other's cache: no deadlock (the
// group's lock is never taken under a member's), no lost or doubly released block.
TEST(AllocatorGroup, WorkersRunningOutTogetherNeitherDeadlockNorLoseBlocks) {
  SharedMemory gpu(std::make_shared<AllocatorGroup>());
  auto work = [](CachingAllocator& allocator, size_t first_class) {
    for (int round = 0; round < 300; ++round) {
      std::vector<void*> blocks;
      for (size_t megabytes : {first_class, first_class + 2, size_t{1}}) {
        try {
          blocks.push_back(allocator.allocate(megabytes << 20));
        } catch (const std::bad_alloc&) {
        }
      }
      for (void* block : blocks) allocator.free(block);
    }
  };
  std::thread loader_thread(work, std::ref(gpu.loader), size_t{2});
  std::thread decoder_thread(work, std::ref(gpu.decoder), size_t{3});
  loader_thread.join();
  decoder_thread.join();
  EXPECT_EQ(gpu.loader.stats().bytes_in_use + gpu.decoder.stats().bytes_in_use, 0u);
  EXPECT_EQ(*gpu.used,
            gpu.loader.stats().bytes_reserved + gpu.decoder.stats().bytes_reserved);
  EXPECT_LE(*gpu.used, SharedMemory::kCapacity);
}

}  // namespace
}  // namespace xlate::kernels
