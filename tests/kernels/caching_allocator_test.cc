// The caching policy of device memory, over host memory standing in for the GPU.
#include "kernels/runtime/caching_allocator.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
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

constexpr size_t kMiB = size_t{1} << 20;

TEST(CachingAllocator, RequestsRoundUpTo512Bytes) {
  EXPECT_EQ(CachingAllocator::rounded_size(0), 512u);
  EXPECT_EQ(CachingAllocator::rounded_size(1), 512u);
  EXPECT_EQ(CachingAllocator::rounded_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::rounded_size(5 * kMiB + 7), 5 * kMiB + 512);
}

TEST(CachingAllocator, SmallRequestsShareOne2MiBSegmentAndAFreedBlockServesTheNext) {
  Fixture f;
  char* first = static_cast<char*>(f.allocator->allocate(1000));
  char* second = static_cast<char*>(f.allocator->allocate(900));
  char* third = static_cast<char*>(f.allocator->allocate(3000));
  EXPECT_EQ(second, first + 1024);  // cut from the same segment, one after the other
  EXPECT_EQ(third, first + 2048);
  f.allocator->free(first);
  EXPECT_EQ(f.allocator->allocate(600), first);  // the best fit: the freed 1,024 bytes
  const AllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.backing_allocations, 1);
  EXPECT_EQ(stats.cache_hits, 3);  // second, third and the last came from cached blocks
  EXPECT_EQ(stats.bytes_in_use, 1024u + 1024u + 3072u);
  EXPECT_EQ(stats.bytes_reserved, 2 * kMiB);
}

// Neighbours freed in any order merge back into the whole segment, which then serves a request
// of its full size and is released by empty_cache.
TEST(CachingAllocator, FreedNeighboursMergeBackIntoTheirSegment) {
  Fixture f;
  for (const std::vector<int>& order : {std::vector<int>{0, 2, 1}, std::vector<int>{2, 1, 0},
                                        std::vector<int>{1, 0, 2}}) {
    void* blocks[3];
    for (void*& block : blocks) block = f.allocator->allocate(100 * 1024);
    for (int index : order) f.allocator->free(blocks[index]);
    EXPECT_EQ(f.allocator->allocate(kMiB), blocks[0]);  // no new segment: the merged one
    f.allocator->free(blocks[0]);
  }
  EXPECT_EQ(f.allocator->stats().backing_allocations, 1);
  f.allocator->empty_cache();
  EXPECT_EQ(f.memory->used(), 0u);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 0u);
}

// A training step's activations change size with every batch: a large free block serves a
// smaller request and keeps the rest free for another, so steps of varying sizes settle on the
// largest step's segments. A request of 10 MiB or more gets a segment an eighth larger.
TEST(CachingAllocator, ALargeBlockIsCutForSmallerRequestsAndMergedAfter) {
  Fixture f(256 * kMiB);
  char* largest = static_cast<char*>(f.allocator->allocate(48 * kMiB));
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 54 * kMiB);
  EXPECT_EQ(f.allocator->stats().bytes_in_use, 48 * kMiB);  // 6 MiB cut off, free
  f.allocator->free(largest);
  EXPECT_EQ(f.allocator->allocate(53 * kMiB), largest);  // a larger one of the next step fits
  f.allocator->free(largest);
  void* part = f.allocator->allocate(30 * kMiB);
  EXPECT_EQ(part, largest);
  void* rest = f.allocator->allocate(23 * kMiB);  // 24 MiB were left: within them
  EXPECT_EQ(rest, largest + 30 * kMiB);
  EXPECT_EQ(f.allocator->stats().bytes_in_use, 54 * kMiB);  // 1 MiB left over is not cut off
  f.allocator->free(part);
  f.allocator->free(rest);
  EXPECT_EQ(f.allocator->allocate(54 * kMiB), largest);
  EXPECT_EQ(f.allocator->stats().backing_allocations, 1);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 54 * kMiB);
}

// Requests of 1 to 10 MiB share 20 MiB segments; where the memory has no 20 MiB, a segment of
// the request's own size (rounded to 2 MiB) serves it.
TEST(CachingAllocator, MidSizedRequestsShareA20MiBSegmentOrTakeTheirOwn) {
  Fixture f(64 * kMiB);
  char* a = static_cast<char*>(f.allocator->allocate(3 * kMiB));
  char* b = static_cast<char*>(f.allocator->allocate(5 * kMiB));
  char* c = static_cast<char*>(f.allocator->allocate(6 * kMiB));
  EXPECT_EQ(b, a + 3 * kMiB);
  EXPECT_EQ(c, b + 5 * kMiB);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 20 * kMiB);

  Fixture small(8 * kMiB);
  small.allocator->allocate(5 * kMiB);
  EXPECT_EQ(small.allocator->stats().bytes_reserved, 6 * kMiB);
  EXPECT_EQ(small.allocator->stats().bytes_in_use, 6 * kMiB);  // the 1 MiB left stays with it
}

// The peak of what was in use at once, not of what is reserved.
TEST(CachingAllocator, ThePeakInUseIsTheMostHeldAtOnceNotTheReserve) {
  Fixture f(256 * kMiB);
  for (int step = 0; step < 2; ++step) {
    void* big = f.allocator->allocate(40 * kMiB);
    f.allocator->free(big);
    void* small = f.allocator->allocate(20 * kMiB);
    f.allocator->free(small);
  }
  void* both[] = {f.allocator->allocate(1024), f.allocator->allocate(1024)};
  const AllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.bytes_reserved, 46 * kMiB + 2 * kMiB);  // 40 MiB and an eighth; a small one
  EXPECT_EQ(stats.peak_bytes_in_use, 40 * kMiB);
  EXPECT_EQ(stats.bytes_in_use, 2048u);
  for (void* block : both) f.allocator->free(block);
  void* more = f.allocator->allocate(50 * kMiB);  // the peak rises with it
  EXPECT_EQ(f.allocator->stats().peak_bytes_in_use, 50 * kMiB);
  f.allocator->free(more);
}

TEST(CachingAllocator, RepeatedStepsReachTheBackingMemoryOnlyInTheFirst) {
  Fixture f;
  for (int step = 0; step < 50; ++step) {
    std::set<void*> live;
    for (size_t bytes : {4096u, 100u, 70000u, 4096u, 3000000u}) {
      live.insert(f.allocator->allocate(bytes));
    }
    EXPECT_EQ(live.size(), 5u);
    for (void* block : live) f.allocator->free(block);
  }
  EXPECT_EQ(f.allocator->stats().backing_allocations, 2);  // a small and a shared segment
  EXPECT_EQ(f.allocator->stats().bytes_in_use, 0u);
}

TEST(CachingAllocator, ExhaustionEmptiesTheCacheAndRetriesBeforeFailing) {
  Fixture f(8 * kMiB);
  void* small = f.allocator->allocate(5 * kMiB);  // a 6 MiB segment: 20 MiB do not fit
  f.allocator->free(small);
  void* big = f.allocator->allocate(7 * kMiB);  // 8 MiB: only fits after the release
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(f.memory->used(), 8 * kMiB);
  EXPECT_THROW(f.allocator->allocate(1), std::bad_alloc);
  f.allocator->free(big);
  f.allocator->empty_cache();
  EXPECT_EQ(f.memory->used(), 0u);
  EXPECT_EQ(f.allocator->stats().bytes_reserved, 0u);
}

// Best fit: with the segments of 40, 44 and 48 MiB requests free (46, 50 and 54 MiB), 39 MiB
// takes the first and 47 MiB the second.
TEST(CachingAllocator, TheSmallestFreeBlockThatHoldsARequestServesIt) {
  Fixture f(256 * kMiB);
  void* blocks[3];
  for (size_t i = 0; i < 3; ++i) blocks[i] = f.allocator->allocate((40 + 4 * i) * kMiB);
  for (void* block : blocks) f.allocator->free(block);
  EXPECT_EQ(f.allocator->allocate(39 * kMiB), blocks[0]);
  EXPECT_EQ(f.allocator->allocate(47 * kMiB), blocks[1]);
  EXPECT_NE(f.allocator->allocate(60 * kMiB), blocks[2]);  // none holds it: a new segment
  EXPECT_EQ(f.allocator->stats().backing_allocations, 4);
}

// Steps like a training run's: per step a token count drawn from a range, activations of sizes
// proportional to it allocated through the forward and freed through the backward (with
// temporaries between), over weights that live throughout. Every block handed out is written
// with its own pattern and checked before it is freed (no two live blocks overlap), and the
// reserve stays near the most the steps held at once.
TEST(CachingAllocator, StepsOfVaryingSizeKeepTheReserveNearThePeak) {
  Fixture f(size_t{2} << 30);
  std::mt19937 random(5);
  struct Live {
    unsigned char* data;
    size_t bytes;
    unsigned char pattern;
  };
  unsigned char next_pattern = 0;
  const auto take = [&](size_t bytes) {
    Live block{static_cast<unsigned char*>(f.allocator->allocate(bytes)), bytes, ++next_pattern};
    std::memset(block.data, block.pattern, bytes);
    return block;
  };
  const auto give_back = [&](const Live& block) {
    for (size_t i = 0; i < block.bytes; i += 97) ASSERT_EQ(block.data[i], block.pattern);
    ASSERT_EQ(block.data[block.bytes - 1], block.pattern);
    f.allocator->free(block.data);
  };
  std::vector<Live> weights;
  for (size_t bytes : {3 * kMiB, 700 * kMiB / 1024, 12 * kMiB, size_t{40000}}) {
    weights.push_back(take(bytes));
  }
  std::uniform_int_distribution<size_t> tokens_of_step(500, 1250);
  for (int step = 0; step < 40; ++step) {
    const size_t tokens = tokens_of_step(random);
    std::vector<Live> saved;
    for (int layer = 0; layer < 6; ++layer) {
      for (size_t width : {256u, 256u, 1024u, 256u}) saved.push_back(take(tokens * width * 4));
      const Live temporary = take(tokens * 512 * 4);
      give_back(temporary);
      saved.push_back(take(tokens * 24));  // statistics
    }
    const Live logits = take(tokens * 4000 * 4);
    give_back(logits);
    while (!saved.empty()) {
      const Live gradient = take(saved.back().bytes);
      give_back(saved.back());
      saved.pop_back();
      give_back(gradient);
    }
  }
  for (const Live& block : weights) give_back(block);
  const AllocatorStats stats = f.allocator->stats();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  // (The former allocator, a block per 2 MiB size class reused up to 1/8 larger: 4x.)
  EXPECT_LE(static_cast<double>(stats.bytes_reserved),
            1.4 * static_cast<double>(stats.peak_bytes_in_use))
      << "reserved " << stats.bytes_reserved << ", peak in use " << stats.peak_bytes_in_use;
}

// Without caching (XLATE_CUDA_MEMORY_CACHING=0, for compute-sanitizer) every block is an
// allocation of its own and of the request's size (not rounded: the sanitizer sees the byte
// after it), returned when freed.
TEST(CachingAllocator, WithoutCachingEveryBlockIsABackingAllocationOfItsOwn) {
  auto used = std::make_shared<size_t>(0);
  CachingAllocator allocator(std::make_unique<CountingMemory>(64 * kMiB, used), nullptr,
                             /*cache=*/false);
  void* a = allocator.allocate(1000);
  void* b = allocator.allocate(30 * kMiB + 2);
  EXPECT_EQ(*used, 1000 + 30 * kMiB + 2);
  EXPECT_EQ(allocator.stats().bytes_in_use, 1000 + 30 * kMiB + 2);
  allocator.free(a);
  EXPECT_EQ(*used, 30 * kMiB + 2);
  allocator.free(allocator.allocate(1000));
  allocator.free(allocator.allocate(0));  // a block of its own all the same
  EXPECT_EQ(allocator.stats().backing_allocations, 4);
  EXPECT_EQ(allocator.stats().cache_hits, 0);
  allocator.free(b);
  EXPECT_EQ(*used, 0u);
  EXPECT_EQ(allocator.stats().bytes_reserved, 0u);
  EXPECT_EQ(allocator.stats().bytes_in_use, 0u);
  EXPECT_EQ(allocator.stats().peak_bytes_in_use, 1000 + 30 * kMiB + 2);
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

TEST(CachingAllocator, DestructionReturnsEverySegment) {
  auto used = std::make_shared<size_t>(0);
  {
    CachingAllocator allocator(std::make_unique<CountingMemory>(size_t{64} << 20, used));
    allocator.free(allocator.allocate(10));
    allocator.allocate(5000);  // still in use at destruction
    allocator.allocate(30 * kMiB);
    EXPECT_EQ(*used, 2 * kMiB + 34 * kMiB);
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
