// Adam updates the owned ranges of the flat buffer as runs: ranges that meet in the buffer (and
// so in the packed moments) are joined into one adam_update call. The update is element-wise, so
// the joined runs must move weights and moments exactly as one call per range does.
#include <algorithm>
#include <cmath>
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

// Adam against its formula (Kingma & Ba, Algorithm 1), computed here in double, element by
// element, with gradient scaling and global-norm clipping as the trainer applies them:
//   g = s·c·grad (c = clip / ‖s·grad‖ when that norm is above clip, else 1)
//   m = β1 m + (1 - β1) g;  v = β2 v + (1 - β2) g²
//   w -= lr · (m / (1 - β1^t)) / (sqrt(v / (1 - β2^t)) + ε)
TEST(Adam, UpdatesFollowKingmaAndBa) {
  const ModelConfig config = smallest_model_config();
  std::mt19937 generator(5);
  FlatParameters parameters(config), gradients(config);
  parameters.flat().copy_from(random_tensor({parameters.size()}, generator));
  const int64_t count = parameters.size();
  std::vector<double> w(parameters.flat().data<float>(), parameters.flat().data<float>() + count);
  std::vector<double> m(count, 0.0), v(count, 0.0);
  AdamOptions options;
  options.beta1 = 0.9;
  options.beta2 = 0.98;
  options.epsilon = 1e-6;  // larger than the paper's, so that it matters at these gradients
  options.clip_norm = 3.0;
  Adam adam(parameters, options);
  const double scale = 0.5;
  int clipped_steps = 0;
  for (int t = 1; t <= 4; ++t) {
    // Steps 1 and 3 carry gradients large enough to be clipped.
    // Gradients on the trainable slices only: fixed tables and the alignment gaps between
    // slices get none (the norm runs over the whole buffer).
    const Tensor noise = random_tensor({count}, generator);
    const float magnitude = t % 2 == 1 ? 1.f : 1e-3f;
    std::fill_n(gradients.flat().data<float>(), count, 0.f);
    for (const ParameterSlice& slice : parameters.slices()) {
      if (!slice.trainable) continue;
      for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
        gradients.flat().data<float>()[i] = noise.data<float>()[i] * magnitude;
      }
    }
    double squares = 0;
    for (const ParameterSlice& slice : parameters.slices()) {
      if (!slice.trainable) continue;
      for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
        const double g = scale * gradients.flat().data<float>()[i];
        squares += g * g;
      }
    }
    const double norm = std::sqrt(squares);
    const double clip = norm > options.clip_norm ? options.clip_norm / norm : 1.0;
    clipped_steps += clip < 1.0;
    const double lr = 1e-3 * t;
    adam.update(parameters, gradients, lr, scale, Adam::gradient_norm(gradients, scale));
    for (const ParameterSlice& slice : parameters.slices()) {
      if (!slice.trainable) continue;
      for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
        const double g = scale * clip * gradients.flat().data<float>()[i];
        m[i] = options.beta1 * m[i] + (1 - options.beta1) * g;
        v[i] = options.beta2 * v[i] + (1 - options.beta2) * g * g;
        const double m_hat = m[i] / (1 - std::pow(options.beta1, t));
        const double v_hat = v[i] / (1 - std::pow(options.beta2, t));
        w[i] -= lr * m_hat / (std::sqrt(v_hat) + options.epsilon);
      }
    }
  }
  ASSERT_EQ(clipped_steps, 2);
  double worst = 0;
  for (int64_t i = 0; i < count; ++i) {
    // float32 moments and weights: each step's update is within a few ulps of its exact value,
    // so 4 steps stay within 1e-6 of the weights' magnitude (≈ 1); one rule mistaken (the
    // correction of the wrong moment, ε outside the square root, clipping skipped) moves
    // updates of ≈ 1e-3 by far more.
    worst = std::max(worst, std::abs(parameters.flat().data<float>()[i] - w[i]));
  }
  EXPECT_LT(worst, 2e-6);
}

}  // namespace
}  // namespace xlate::trainer
