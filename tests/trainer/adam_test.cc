// Adam updates the owned ranges of the flat buffer as runs: ranges that meet in the buffer (and
// so in the packed moments) are joined into one adam_update call. The update is element-wise, so
// the joined runs must move weights and moments exactly as one call per range does.
#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/smallest_model_config.h"
#include "tests/trainer/gradient_check.h"
#include "trainer/optim/adam.h"

namespace xlate::trainer {
namespace {

using testing::random_tensor;

void expect_identical(const Tensor& got, const Tensor& expected, const char* what) {
  ASSERT_EQ(got.numel(), expected.numel()) << what;
  for (int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_EQ(got.data<float>()[i], expected.data<float>()[i]) << what << " at " << i;
  }
}

TEST(AdamRuns, JoinedRangesUpdateAsOneCallPerRange) {
  const ModelConfig config = smallest_model_config();  // sinusoidal: fixed position tables
  std::mt19937 generator(3);
  FlatParameters joined(config), separate(config), gradients(config);
  const Tensor start = random_tensor({joined.size()}, generator);
  joined.flat().copy_from(start);
  separate.flat().copy_from(start);
  const std::vector<FlatRange> ranges = joined.trainable_ranges();
  ASSERT_GT(ranges.size(), 3u);

  // The default joins every trainable neighbour: the fixed tables split the buffer into a few
  // runs, far fewer than its parameter tensors.
  Adam adam(joined, {});
  EXPECT_LT(adam.update_runs(), ranges.size());
  EXPECT_LE(adam.update_runs(), 3u);
  // The same ranges in reverse order never meet: one call per range, the reference.
  std::vector<FlatRange> reversed = ranges;
  std::reverse(reversed.begin(), reversed.end());
  Adam one_per_range(separate, {}, reversed);
  ASSERT_EQ(one_per_range.update_runs(), ranges.size());

  for (int step = 1; step <= 3; ++step) {
    gradients.flat().copy_from(random_tensor({gradients.size()}, generator));
    const double norm = Adam::gradient_norm(gradients, 0.5);
    adam.update(joined, gradients, 1e-3 * step, 0.5, norm);
    one_per_range.update(separate, gradients, 1e-3 * step, 0.5, norm);
  }
  expect_identical(joined.flat(), separate.flat(), "weights");
  const AdamMoments a = adam.moments(), b = one_per_range.moments();
  expect_identical(a.first, b.first, "first moment");
  expect_identical(a.second, b.second, "second moment");
  // Fixed tables are owned by neither: untouched.
  for (const ParameterSlice& slice : joined.slices()) {
    if (slice.trainable) continue;
    expect_identical(joined.flat().view(slice.offset, {slice.count}),
                     start.view(slice.offset, {slice.count}), "a fixed table");
  }
}

}  // namespace
}  // namespace xlate::trainer
