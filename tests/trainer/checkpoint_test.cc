// A checkpoint's trainer_state.json as written reads back as it was; one damaged or edited by
// hand is refused naming the key, never resumed from (found by tests/fuzz/checkpoint_fuzzer: a
// negative step was accepted, and "format_version": 1e300 was converted to int with undefined
// behaviour).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/model_directory.h"
#include "engine/safetensors.h"
#include "tests/smallest_model_config.h"
#include "trainer/checkpoint/checkpoint.h"

namespace xlate::trainer {
namespace {

class CheckpointStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = ::testing::TempDir() + "/checkpoint_state_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(run_);
    FlatParameters parameters(config_);
    parameters.copy_from(random_weights(config_, 7), config_);
    Adam optimizer(parameters, {});
    TrainerState state;
    state.step = 12;
    state.data_epoch = 2;
    state.data_batch = 5;
    state.seed = 0xfedcba9876543210ull;  // above int64's range
    state.run_fingerprint = 0x0123456789abcdefull;
    state.elapsed_seconds = 4.5;
    state.loss_scaler = {/*scale=*/0.25, /*finite_steps=*/7, /*skipped_steps=*/3};
    auto written = write_checkpoint(run_, {config_, parameters, optimizer.moments(), state, ""}, 1);
    ASSERT_TRUE(written.ok()) << written.status();
    checkpoint_ = *written;
    std::ifstream in(checkpoint_ + "/trainer_state.json");
    std::stringstream text;
    text << in.rdbuf();
    state_text_ = text.str();
  }

  // Reads the checkpoint after replacing `from` with `to` in its trainer_state.json.
  absl::StatusOr<TrainerState> read_edited(const std::string& from, const std::string& to) {
    std::string text = state_text_;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from << " in " << text;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    std::ofstream(checkpoint_ + "/trainer_state.json", std::ios::trunc) << text;
    FlatParameters parameters(config_);
    Adam optimizer(parameters, {});
    return read_checkpoint(checkpoint_, config_, parameters, optimizer);
  }

  ModelConfig config_ = smallest_model_config();
  std::string run_, checkpoint_, state_text_;
};

TEST_F(CheckpointStateTest, ReadsBackWhatWasWritten) {
  FlatParameters parameters(config_);
  Adam optimizer(parameters, {});
  auto state = read_checkpoint(checkpoint_, config_, parameters, optimizer);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 12);
  EXPECT_EQ(state->data_epoch, 2);
  EXPECT_EQ(state->data_batch, 5);
  EXPECT_EQ(state->seed, 0xfedcba9876543210ull);
  EXPECT_EQ(state->run_fingerprint, 0x0123456789abcdefull);
  EXPECT_DOUBLE_EQ(state->elapsed_seconds, 4.5);
  ASSERT_TRUE(state->loss_scaler.has_value());
  EXPECT_EQ(state->loss_scaler->scale, 0.25);
  EXPECT_EQ(state->loss_scaler->finite_steps, 7);
  EXPECT_EQ(state->loss_scaler->skipped_steps, 3);
  EXPECT_EQ(optimizer.steps(), 12);
}

TEST_F(CheckpointStateTest, ARunWithoutLossScalingHasNoScalerState) {
  // As an unscaled run (or one from before loss scaling existed) writes it: none of the keys.
  std::string text = state_text_;
  for (const char* key : {"loss_scale", "loss_scale_finite_steps", "skipped_steps"}) {
    const size_t at = text.find(std::string("\"") + key + "\"");
    ASSERT_NE(at, std::string::npos) << key;
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  std::ofstream(checkpoint_ + "/trainer_state.json", std::ios::trunc) << text;
  FlatParameters parameters(config_);
  Adam optimizer(parameters, {});
  auto state = read_checkpoint(checkpoint_, config_, parameters, optimizer);
  ASSERT_TRUE(state.ok()) << state.status() << "\n" << text;
  EXPECT_FALSE(state->loss_scaler.has_value());
  EXPECT_EQ(state->step, 12);
}

TEST_F(CheckpointStateTest, RefusesFieldsARunCannotResumeFrom) {
  struct Case {
    std::string from, to, expected;
  };
  const Case cases[] = {
      {"\"step\": 12", "\"step\": -3", "key \"step\" = -3 is out of range (expected an integer >= 0)"},
      {"\"step\": 12", "\"step\": 1e300", "key \"step\" has the wrong type: 1e+300"},
      {"\"step\": 12", "\"step\": 18446744073709551615", "key \"step\" = 18446744073709551615 is out of range"},
      {"\"data_batch\": 5", "\"data_batch\": \"5\"", "key \"data_batch\" has the wrong type: \"5\""},
      {"\"data_epoch\": 2", "\"data_epochs\": 2", "key \"data_epoch\" is missing"},
      {"\"format_version\": 1", "\"format_version\": 1e300", "key \"format_version\" has the wrong type"},
      {"\"format_version\": 1", "\"format_version\": 2", "= 2 is out of range (expected the supported format version 1)"},
      {"\"seed\": 18364758544493064720", "\"seed\": -1", "key \"seed\" has the wrong type: -1"},
      {"\"elapsed_seconds\": 4.5", "\"elapsed_seconds\": -4.5", "key \"elapsed_seconds\" = -4.5 is out of range"},
      {"\"run_fingerprint\": \"0123456789abcdef\"", "\"run_fingerprint\": \"0123456789abcdefg\"",
       "\"run_fingerprint\" = \"0123456789abcdefg\" is not 1 to 16 hexadecimal digits"},
      {"\"crc32\"", "\"crc\"", "key \"crc32\" is missing or not an object"},
      {"\"loss_scale\": 0.25", "\"loss_scale\": 0", "key \"loss_scale\" = 0 is out of range"},
      {"\"skipped_steps\": 3", "\"skipped_steps\": -3", "key \"skipped_steps\" = -3"},
      {"\"skipped_steps\": 3", "\"skipped\": 3", "key \"skipped_steps\" is missing"},
  };
  for (const Case& c : cases) {
    auto state = read_edited(c.from, c.to);
    ASSERT_FALSE(state.ok()) << c.to;
    EXPECT_NE(state.status().message().find(c.expected), std::string::npos)
        << c.to << ": " << state.status();
    EXPECT_NE(state.status().message().find("trainer_state.json"), std::string::npos)
        << state.status();
  }
}

// Every parameter starts at a multiple of kParameterAlignment elements (the smallest model's are
// 4 and 6 long: gaps after most of them), and the gaps stay out of the checkpoint: its moments
// are the parameters back to back, as before the gaps, and read back into the aligned layout.
TEST(FlatParametersLayout, AlignedParametersAndCheckpointMomentsWithoutTheGaps) {
  const ModelConfig config = smallest_model_config();
  FlatParameters parameters(config), gradients(config);
  int64_t counts = 0;
  for (const ParameterSlice& slice : parameters.slices()) {
    EXPECT_EQ(slice.offset % kParameterAlignment, 0) << slice.name;
    counts += slice.count;
  }
  EXPECT_EQ(parameters.size_without_gaps(), counts);
  ASSERT_GT(parameters.size(), counts);  // this config has gaps

  parameters.copy_from(random_weights(config, 9), config);
  for (const ParameterSlice& slice : gradients.slices()) {  // the gaps stay zero, as in training
    for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
      gradients.flat().data<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
    }
  }
  Adam optimizer(parameters, {});
  optimizer.update(parameters, gradients, 1e-3, 1.0, Adam::gradient_norm(gradients, 1.0));
  TrainerState state;
  state.step = 1;
  const std::string run = ::testing::TempDir() + "/checkpoint_layout";
  std::filesystem::remove_all(run);
  const AdamMoments moments = optimizer.moments();
  auto written = write_checkpoint(run, {config, parameters, moments, state, ""}, 1);
  ASSERT_TRUE(written.ok()) << written.status();

  absl::StatusOr<TensorMap> file = read_safetensors(*written + "/optimizer.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->at("adam.first_moment").numel(), counts);
  EXPECT_EQ(file->at("adam.second_moment").numel(), counts);

  FlatParameters restored(config);
  Adam restored_optimizer(restored, {});
  ASSERT_TRUE(read_checkpoint(*written, config, restored, restored_optimizer).ok());
  const AdamMoments again = restored_optimizer.moments();
  for (int64_t i = 0; i < parameters.size(); ++i) {
    ASSERT_EQ(again.first.data<float>()[i], moments.first.data<float>()[i]) << i;
    ASSERT_EQ(again.second.data<float>()[i], moments.second.data<float>()[i]) << i;
    ASSERT_EQ(restored.flat().data<float>()[i], parameters.flat().data<float>()[i]) << i;
  }
  double squares = 0;
  for (int64_t i = 0; i < moments.second.numel(); ++i) squares += moments.second.data<float>()[i];
  EXPECT_GT(squares, 0);  // the update moved the moments: the comparison above compared values
}

}  // namespace
}  // namespace xlate::trainer
