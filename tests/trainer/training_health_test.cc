// The trainer's health figures (trainer/training/training_health.h): parameter groups, the
// update/parameter ratio per group, and the warning for a loss that sits at the unigram entropy.
#include "trainer/training/training_health.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace xlate::trainer {
namespace {

TEST(TrainingHealth, GroupsDropTheLayerIndexAndTheLastComponent) {
  EXPECT_EQ(parameter_group("model.encoder.layers.3.self_attn.q_proj.weight"),
            "encoder.self_attn.q_proj");
  EXPECT_EQ(parameter_group("model.decoder.layers.12.fc1.bias"), "decoder.fc1");
  EXPECT_EQ(parameter_group("model.shared.weight"), "shared");
  EXPECT_EQ(parameter_group("final_logits_bias"), "final_logits_bias");
}

TEST(TrainingHealth, UpdateRatiosAreTheGroupsRelativeChange) {
  // Two layers of one group, a second group, and a fixed table left out.
  const std::vector<ParameterSlice> slices{
      {"model.encoder.layers.0.fc1.weight", 0, 2, true},
      {"model.encoder.layers.1.fc1.weight", 2, 2, true},
      {"model.shared.weight", 4, 1, true},
      {"model.encoder.embed_positions.weight", 5, 1, false}};
  const std::vector<float> before{3, 0, 0, 4, 2, 7};
  const std::vector<float> after{3, 0.3f, 0.4f, 4, 2, 9};
  const auto ratios = update_ratios(slices, before.data(), after.data());
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_EQ(ratios[0].first, "encoder.fc1");
  EXPECT_NEAR(ratios[0].second, 0.5 / 5, 1e-6);  // ‖(0, .3, .4, 0)‖ / ‖(3, 0, 0, 4)‖
  EXPECT_EQ(ratios[1].first, "shared");
  EXPECT_DOUBLE_EQ(ratios[1].second, 0.0);
}

TEST(TrainingHealth, ThePlateauWarningComesOnceAfterItsSteps) {
  PlateauWatch watch(7.2, 100);
  EXPECT_FALSE(watch.observe(50, 9.0));   // still falling towards it
  EXPECT_FALSE(watch.observe(100, 7.4));  // at it from step 100
  EXPECT_FALSE(watch.observe(150, 7.0));
  const std::optional<std::string> warning = watch.observe(200, 7.3);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("unigram entropy of the targets (7.200 nats"), std::string::npos);
  EXPECT_NE(warning->find("since step 100"), std::string::npos);
  EXPECT_FALSE(watch.observe(250, 7.2));  // once per plateau
  EXPECT_FALSE(watch.observe(300, 6.0));  // learning again
  EXPECT_FALSE(watch.observe(350, 7.1));
  EXPECT_TRUE(watch.observe(450, 7.1).has_value());  // a second plateau warns again
  PlateauWatch off(7.2, 0);
  EXPECT_FALSE(off.observe(10000, 7.2));
}

}  // namespace
}  // namespace xlate::trainer
