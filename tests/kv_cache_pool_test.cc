// The KV-cache pool (engine/kv_cache_pool.h): blocks taken lowest first, given back and taken
// again; a storage that grows on demand with what it holds intact, and stops at its cap; and
// reservations against the cap.
#include "engine/kv_cache_pool.h"

#include <new>

#include <gtest/gtest.h>

namespace xlate {
namespace {

constexpr int64_t kBlock = KvCachePool::kBlockPositions;

TEST(KvCachePool, BlocksAreTakenGivenBackAndTakenAgainLowestFirst) {
  KvCachePool pool(/*layers=*/2, /*width=*/4, DType::kFloat32, Device::kCPU, /*max_blocks=*/100);
  EXPECT_EQ(pool.usage().blocks_in_pool, 0);  // nothing until a block is taken
  for (int32_t expected = 0; expected < 5; ++expected) EXPECT_EQ(pool.take(), expected);
  pool.give_back({3, 1});
  EXPECT_EQ(pool.usage().blocks_in_use, 3);
  EXPECT_EQ(pool.take(), 1);
  EXPECT_EQ(pool.take(), 3);
  EXPECT_EQ(pool.take(), 5);
  EXPECT_EQ(pool.usage().blocks_in_use, 6);
  EXPECT_EQ(pool.usage().block_bytes, kBlock * (2 * 4 * 4 + 4));
  EXPECT_EQ(pool.usage().pool_bytes(), pool.usage().blocks_in_pool * pool.usage().block_bytes);
}

// Both ways of growing (the CPU reserves once, a GPU copies into larger storages; both run here
// on the CPU): what the blocks hold survives every growth, and the cap stops it.
class KvCachePoolGrowth : public ::testing::TestWithParam<KvCachePool::Growth> {};

TEST_P(KvCachePoolGrowth, GrowingKeepsWhatTheBlocksHoldAndStopsAtTheCap) {
  KvCachePool pool(/*layers=*/2, /*width=*/3, DType::kFloat32, Device::kCPU, /*max_blocks=*/70,
                   GetParam());
  const int32_t first = pool.take();
  for (size_t layer = 0; layer < 2; ++layer) {
    for (int64_t i = 0; i < kBlock * 3; ++i) {
      pool.layer(layer).data<float>()[first * kBlock * 3 + i] = static_cast<float>(layer * 1000 + i);
    }
  }
  pool.fed_tokens().data<int32_t>()[first * kBlock + 5] = 77;
  int growths = 0;
  for (int taken = 1; taken < 70; ++taken) {
    const int64_t capacity = pool.usage().blocks_in_pool;
    pool.take();
    growths += pool.usage().blocks_in_pool > capacity;
    ASSERT_GE(pool.layer(1).dim(0), pool.usage().blocks_in_pool * kBlock);
    ASSERT_EQ(pool.layer(1).data<float>()[first * kBlock * 3 + 7], 1007.f) << taken;
  }
  EXPECT_GE(growths, 2);
  for (size_t layer = 0; layer < 2; ++layer) {
    for (int64_t i = 0; i < kBlock * 3; ++i) {
      ASSERT_EQ(pool.layer(layer).data<float>()[first * kBlock * 3 + i],
                static_cast<float>(layer * 1000 + i));
    }
  }
  EXPECT_EQ(pool.fed_tokens().data<int32_t>()[first * kBlock + 5], 77);
  EXPECT_EQ(pool.usage().blocks_in_pool, 70);
  EXPECT_THROW(pool.take(), std::bad_alloc);
  EXPECT_EQ(pool.usage().blocks_in_use, 70);  // the failed take changed nothing
  pool.give_back({42});
  EXPECT_EQ(pool.take(), 42);
}

INSTANTIATE_TEST_SUITE_P(Growth, KvCachePoolGrowth,
                         ::testing::Values(KvCachePool::Growth::kReserveOnce,
                                           KvCachePool::Growth::kCopy));

// Reserving once, the pool is exactly the blocks ever taken at once: its bytes are what the
// cache made resident, and blocks given back are reused before it grows.
TEST(KvCachePool, ReservingOnceHoldsThePeakOfBlocksTaken) {
  KvCachePool pool(/*layers=*/1, /*width=*/2, DType::kFloat32, Device::kCPU, /*max_blocks=*/50,
                   KvCachePool::Growth::kReserveOnce);
  for (int i = 0; i < 5; ++i) pool.take();
  pool.give_back({0, 3});
  pool.take();
  pool.take();
  EXPECT_EQ(pool.usage().blocks_in_pool, 5);
  pool.take();
  EXPECT_EQ(pool.usage().blocks_in_pool, 6);
}

// A cap whose address space cannot be reserved (128 TiB here: more than a process has) still
// serves the blocks that fit, growing by copies.
TEST(KvCachePool, AnAddressSpaceRefusedFallsBackToGrowingByCopies) {
  KvCachePool pool(/*layers=*/1, /*width=*/16384, DType::kFloat32, Device::kCPU,
                   KvCachePool::kMaxBlocks, KvCachePool::Growth::kReserveOnce);
  EXPECT_EQ(pool.take(), 0);
  pool.layer(0).data<float>()[5] = 3.f;
  while (pool.usage().blocks_in_use < 40) pool.take();  // past the first storage
  EXPECT_EQ(pool.layer(0).data<float>()[5], 3.f);
  EXPECT_LT(pool.usage().blocks_in_pool, 100);
}

TEST(KvCachePool, ReservationsStopAtTheCap) {
  KvCachePool pool(/*layers=*/1, /*width=*/2, DType::kFloat32, Device::kCPU, /*max_blocks=*/10);
  EXPECT_TRUE(pool.reserve(6));
  EXPECT_FALSE(pool.reserve(5));
  EXPECT_EQ(pool.free_to_reserve(), 4);
  EXPECT_TRUE(pool.reserve(4));
  pool.unreserve(6);
  EXPECT_EQ(pool.usage().blocks_reserved, 4);
  EXPECT_EQ(pool.usage().blocks_in_pool, 0);  // reserving takes no memory
}

TEST(KvCachePool, BlocksCoverPositionsInWholeBlocks) {
  EXPECT_EQ(KvCachePool::blocks_for(0), 0);
  EXPECT_EQ(KvCachePool::blocks_for(1), 1);
  EXPECT_EQ(KvCachePool::blocks_for(kBlock), 1);
  EXPECT_EQ(KvCachePool::blocks_for(kBlock + 1), 2);
  EXPECT_THROW(KvCachePool(1, 2, DType::kFloat32, Device::kCPU, 0), std::invalid_argument);
  EXPECT_THROW(KvCachePool(1, 2, DType::kFloat32, Device::kCPU, KvCachePool::kMaxBlocks + 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace xlate
