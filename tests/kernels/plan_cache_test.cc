// The bounded per-shape plan cache shared by the CUDA gemm context and the CPU backend's oneDNN
// primitives: recency order, the bound, counts, and a plan maker that fails.
#include "kernels/runtime/plan_cache.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

namespace xlate::kernels {
namespace {

TEST(PlanCacheTest, MakesEachShapeOnceAndCountsHitsAndMisses) {
  PlanCache<std::string, int> cache(8);
  int made = 0;
  auto make = [&] { return ++made; };
  EXPECT_EQ(cache.get_or_make("64x512x512", make), 1);
  EXPECT_EQ(cache.get_or_make("64x512x512", make), 1);
  EXPECT_EQ(cache.get_or_make("63x512x512", make), 2);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.counts().hits, 1u);
  EXPECT_EQ(cache.counts().misses, 2u);
  EXPECT_EQ(cache.counts().evictions, 0u);
}

// The host time of making plans: what their makers report, and get_or_make's own timing of a
// miss (a hit adds nothing).
TEST(PlanCacheTest, CountsTheSecondsPlansTookToMake) {
  PlanCache<int, int> cache(8);
  cache.insert(1, 10, 0.25);
  cache.insert(2, 20, 0.5);
  EXPECT_DOUBLE_EQ(cache.counts().making_seconds, 0.75);
  const Stopwatch outside;
  double inside = 0;
  cache.get_or_make(3, [&] {
    const Stopwatch stopwatch;
    while (stopwatch.seconds() <= 0) {
    }
    inside = stopwatch.seconds();
    return 30;
  });
  const double made = cache.counts().making_seconds - 0.75;
  EXPECT_GE(made, inside);
  EXPECT_LE(made, outside.seconds());
  cache.get_or_make(3, [] { return 0; });
  EXPECT_DOUBLE_EQ(cache.counts().making_seconds - 0.75, made);
  EXPECT_EQ(cache.counts().misses, 3u);
}

TEST(PlanCacheTest, DropsTheLeastRecentlyUsedPlanAtCapacity) {
  PlanCache<int, std::string> cache(3);
  for (int m : {1, 2, 3}) cache.insert(m, "plan " + std::to_string(m));
  ASSERT_NE(cache.find(1), nullptr);  // 1 is now the most recent; 2 the least
  cache.insert(4, "plan 4");
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.find(2), nullptr);
  ASSERT_NE(cache.find(1), nullptr);
  EXPECT_EQ(*cache.find(1), "plan 1");
  EXPECT_EQ(*cache.find(3), "plan 3");
  EXPECT_EQ(*cache.find(4), "plan 4");
  EXPECT_EQ(cache.counts().evictions, 1u);
}

TEST(PlanCacheTest, StaysBoundedOverARunOfEverNewShapes) {
  // A training run: the row count changes every step, the other dimensions repeat.
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  PlanCache<Key, std::unique_ptr<int>> cache(16);
  for (int64_t rows = 1; rows <= 1000; ++rows) {
    for (int64_t columns : {512, 2048}) {
      cache.get_or_make(Key{rows, columns, 512}, [&] { return std::make_unique<int>(rows); });
      ASSERT_LE(cache.size(), 16u);
    }
  }
  EXPECT_EQ(cache.counts().misses, 2000u);
  EXPECT_EQ(cache.counts().evictions, 2000u - 16u);
  // The most recent shapes are still there, with their own plans.
  std::unique_ptr<int>* last = cache.find(Key{1000, 2048, 512});
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(**last, 1000);
  EXPECT_EQ(cache.find(Key{1, 512, 512}), nullptr);
}

TEST(PlanCacheTest, InsertingAnExistingKeyReplacesItsPlanWithoutGrowing) {
  // Two threads of the CPU backend may both miss a key and both insert (they make the plan
  // outside the lock).
  PlanCache<int, int> cache(2);
  cache.insert(7, 1);
  cache.insert(8, 2);
  cache.insert(7, 3);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.find(7), 3);
  EXPECT_EQ(*cache.find(8), 2);
  EXPECT_EQ(cache.counts().evictions, 0u);
}

TEST(PlanCacheTest, AFailedPlanLeavesTheCacheUnchanged) {
  PlanCache<int, int> cache(1);
  cache.insert(1, 10);
  EXPECT_THROW(cache.get_or_make(2, []() -> int { throw std::runtime_error("no algorithm"); }),
               std::runtime_error);
  EXPECT_EQ(cache.size(), 1u);
  ASSERT_NE(cache.find(1), nullptr);
  EXPECT_EQ(*cache.find(1), 10);
  EXPECT_EQ(cache.counts().evictions, 0u);
}

TEST(PlanCacheTest, ClearEmptiesAndAZeroCapacityIsRefused) {
  PlanCache<int, int> cache(4);
  cache.insert(1, 1);
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_THROW((PlanCache<int, int>(0)), std::invalid_argument);
}

}  // namespace
}  // namespace xlate::kernels
