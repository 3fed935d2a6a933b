// Model directories: save/load round trips in every dtype, and one clear error per kind of
// broken file, naming the file, the tensor and what was expected.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "engine/model_directory.h"
#include "engine/safetensors.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {
namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void write_all(const fs::path& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << contents;
}

class BrokenModelDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::path(testing::scratch_dir()) /
                 ("broken_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    for (const char* name : {"config.json", "model.safetensors"}) {
      fs::copy_file(fs::path(testing::golden_model_dir()) / name, directory_ / name);
    }
  }
  std::string load_error() {
    auto loaded = load_model_directory(directory_.string());
    EXPECT_FALSE(loaded.ok());
    return loaded.ok() ? "" : std::string(loaded.status().message());
  }
  fs::path weights() const { return directory_ / "model.safetensors"; }
  fs::path directory_;
};

TEST_F(BrokenModelDirectory, IntactCopyLoads) {
  auto loaded = load_model_directory(directory_.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.vocab_size, 40);
  EXPECT_EQ(loaded->weights.encoder.size(), 2u);
}

TEST_F(BrokenModelDirectory, MissingConfig) {
  fs::remove(directory_ / "config.json");
  EXPECT_NE(load_error().find("config.json"), std::string::npos);
}

TEST_F(BrokenModelDirectory, ConfigNotJson) {
  write_all(directory_ / "config.json", "{ not json");
  const std::string error = load_error();
  EXPECT_NE(error.find("config.json"), std::string::npos) << error;
  EXPECT_NE(error.find("JSON"), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, ConfigHeadsDoNotDivideModelWidth) {
  std::string config = read_all(directory_ / "config.json");
  const size_t at = config.find("\"encoder_attention_heads\": 4");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 28, "\"encoder_attention_heads\": 5");
  write_all(directory_ / "config.json", config);
  const std::string error = load_error();
  EXPECT_NE(error.find("encoder_attention_heads"), std::string::npos) << error;
  EXPECT_NE(error.find("divisor of d_model"), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, MissingWeightsFile) {
  fs::remove(weights());
  EXPECT_NE(load_error().find("model.safetensors"), std::string::npos);
}

TEST_F(BrokenModelDirectory, MissingTensor) {
  auto tensors = read_safetensors(weights().string());
  ASSERT_TRUE(tensors.ok());
  tensors->erase("model.decoder.layers.1.fc2.weight");
  ASSERT_TRUE(write_safetensors(weights().string(), *tensors).ok());
  const std::string error = load_error();
  EXPECT_NE(error.find("model.decoder.layers.1.fc2.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  EXPECT_NE(error.find("[16, 32]"), std::string::npos) << error;
}

// The QA round: weights of NaN, infinities or zeros loaded, and every translation was "".
TEST_F(BrokenModelDirectory, WeightsNoModelCouldHaveAreRefusedByName) {
  const auto original = read_safetensors(weights().string());
  ASSERT_TRUE(original.ok());
  const std::string name = "model.encoder.layers.0.fc1.weight";
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    auto tensors = *original;
    Tensor changed = tensors[name].to_float32().clone();  // not the original's storage
    changed.data<float>()[37] = bad;
    tensors[name] = std::move(changed);
    ASSERT_TRUE(write_safetensors(weights().string(), tensors).ok());
    const std::string error = load_error();
    EXPECT_NE(error.find("tensor \"" + name + "\" holds"), std::string::npos) << error;
    EXPECT_NE(error.find("at element 37: weights must be finite"), std::string::npos) << error;
  }
  auto zeros = *original;
  zeros[name] = Tensor::zeros(zeros[name].shape(), DType::kFloat32);
  ASSERT_TRUE(write_safetensors(weights().string(), zeros).ok());
  const std::string error = load_error();
  EXPECT_NE(error.find(name + "\" is all zeros"), std::string::npos) << error;
  // A bias of zeros is a bias a model may have.
  auto zero_bias = *original;
  const std::string bias = "model.encoder.layers.0.fc1.bias";
  zero_bias[bias] = Tensor::zeros(zero_bias[bias].shape(), DType::kFloat32);
  ASSERT_TRUE(write_safetensors(weights().string(), zero_bias).ok());
  const auto loaded = load_model_directory(directory_.string());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
}

TEST_F(BrokenModelDirectory, MisShapedTensor) {
  auto tensors = read_safetensors(weights().string());
  ASSERT_TRUE(tensors.ok());
  (*tensors)["model.encoder.layers.0.fc1.weight"] = Tensor::zeros({31, 16}, DType::kFloat32);
  ASSERT_TRUE(write_safetensors(weights().string(), *tensors).ok());
  const std::string error = load_error();
  EXPECT_NE(error.find("model.encoder.layers.0.fc1.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("[31, 16]"), std::string::npos) << error;
  EXPECT_NE(error.find("[32, 16]"), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, UnknownDtype) {
  std::string bytes = read_all(weights());
  const size_t at = bytes.find("\"F32\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "\"F64\"");
  write_all(weights(), bytes);
  const std::string error = load_error();
  EXPECT_NE(error.find("unsupported dtype \"F64\""), std::string::npos) << error;
  EXPECT_NE(error.find("model.safetensors"), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, TruncatedFile) {
  std::string bytes = read_all(weights());
  write_all(weights(), bytes.substr(0, bytes.size() - 100));
  const std::string error = load_error();
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_NE(error.find("tensor \""), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, ShorterThanHeaderLength) {
  write_all(weights(), "abc");
  EXPECT_NE(load_error().find("shorter than the 8-byte header length"), std::string::npos);
}

TEST_F(BrokenModelDirectory, HeaderLengthBeyondFile) {
  std::string bytes = read_all(weights());
  bytes[5] = '\x7f';  // header length ~ 2^46
  write_all(weights(), bytes);
  EXPECT_NE(load_error().find("header length"), std::string::npos);
}

TEST_F(BrokenModelDirectory, HeaderNotJson) {
  std::string bytes = read_all(weights());
  bytes[8] = '[';
  bytes[9] = '[';
  write_all(weights(), bytes);
  EXPECT_NE(load_error().find("header is not a JSON object"), std::string::npos);
}

TEST_F(BrokenModelDirectory, WrongDataSizeForShape) {
  std::string bytes = read_all(weights());
  const size_t at = bytes.find("\"shape\":[40,16]");
  ASSERT_NE(at, std::string::npos) << "writer layout changed";
  bytes.replace(at, 15, "\"shape\":[40,15]");
  write_all(weights(), bytes);
  const std::string error = load_error();
  EXPECT_NE(error.find("bytes stored"), std::string::npos) << error;
}

TEST_F(BrokenModelDirectory, Int8TensorIsRefusedNamingIt) {
  // Quantised weights are made at load (compute type int8), never read from a file.
  auto read = read_safetensors(weights().string());
  ASSERT_TRUE(read.ok()) << read.status();
  TensorMap tensors = *std::move(read);
  Tensor& fc1 = tensors.at("model.encoder.layers.0.fc1.weight");
  fc1 = Tensor::zeros(fc1.shape(), DType::kInt8);
  ASSERT_TRUE(write_safetensors(weights().string(), tensors).ok());
  const std::string error = load_error();
  EXPECT_NE(error.find("model.encoder.layers.0.fc1.weight\" is I8"), std::string::npos) << error;
}

// A loader that packs each tensor as it comes (TransformerModel::Load) holds the model once only if
// the reader keeps no tensor of its own: each comes alone, and once taken is gone.
TEST_F(BrokenModelDirectory, EachTensorIsHandedOverAloneAndMayBeTaken) {
  auto config = read_model_config(directory_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  TransformerWeights read_into;
  size_t handed = 0;
  absl::Status read = read_model_weights(
      directory_.string(), *config, read_into, [&handed](const NamedParameter& parameter) {
        ASSERT_TRUE(parameter.tensor->defined());
        EXPECT_FALSE(parameter.tensor->storage_shared()) << parameter.name;
        *parameter.tensor = Tensor();
        ++handed;
      });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(handed, named_parameters(read_into, *config).size());
  EXPECT_FALSE(read_into.shared_embedding.defined());
}

// The tensors are read as the loader asks for them, so a deploy writing over the file in the
// meantime is caught: nothing of a mixed model is used.
TEST_F(BrokenModelDirectory, FileReplacedWhileReadIsRefused) {
  auto config = read_model_config(directory_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  TransformerWeights read_into;
  bool replaced = false;
  absl::Status read =
      read_model_weights(directory_.string(), *config, read_into, [&](const NamedParameter&) {
        if (replaced) return;
        const fs::path copy = directory_ / "model.safetensors.new";
        fs::copy_file(weights(), copy);
        fs::rename(copy, weights());
        replaced = true;
      });
  ASSERT_FALSE(read.ok());
  EXPECT_NE(std::string(read.message()).find("changed while it was read"), std::string::npos)
      << read;
}

TEST_F(BrokenModelDirectory, FileTruncatedWhileReadIsRefused) {
  auto config = read_model_config(directory_.string());
  ASSERT_TRUE(config.ok()) << config.status();
  TransformerWeights read_into;
  absl::Status read = read_model_weights(
      directory_.string(), *config, read_into,
      [&](const NamedParameter&) { fs::resize_file(weights(), fs::file_size(weights()) / 2); });
  ASSERT_FALSE(read.ok());
  EXPECT_NE(std::string(read.message()).find("truncated or replaced while being read"),
            std::string::npos)
      << read;
}

// The reader drops each tensor's file pages once it has copied them; tensors listed out of file
// order, or sharing bytes, still read what the file holds.
TEST(Safetensors, TensorsSharingBytesReadTheSameValues) {
  const fs::path path = fs::path(testing::scratch_dir()) / "shared_bytes.safetensors";
  std::vector<float> values(3000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  const std::string header =
      R"({"z":{"dtype":"F32","shape":[3000],"data_offsets":[0,12000]},)"
      R"("a":{"dtype":"F32","shape":[1000],"data_offsets":[8000,12000]},)"
      R"("m":{"dtype":"F32","shape":[3000],"data_offsets":[0,12000]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  write_all(path, bytes);
  auto tensors = read_safetensors(path.string());
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  for (const char* name : {"z", "m"}) {
    const Tensor& tensor = tensors->at(name);
    for (int64_t i = 0; i < 3000; ++i) ASSERT_EQ(tensor.data<float>()[i], values[i]) << name;
  }
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(tensors->at("a").data<float>()[i], values[2000 + i]);
}

class SaveAndLoad : public ::testing::TestWithParam<DType> {};

TEST_P(SaveAndLoad, RoundTripKeepsWeightsWithinDtypePrecision) {
  auto original = load_model_directory(testing::golden_model_dir());
  ASSERT_TRUE(original.ok());
  const fs::path directory = fs::path(testing::scratch_dir()) / ("saved_" + dtype_name(GetParam()));
  ASSERT_TRUE(save_model_directory(directory.string(), original->config, original->weights,
                                   GetParam()).ok());
  auto reloaded = load_model_directory(directory.string());
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  auto stored = read_safetensors((directory / "model.safetensors").string());
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->at("model.shared.weight").dtype(), GetParam());
  const float tolerance = GetParam() == DType::kFloat32 ? 0.f : GetParam() == DType::kFloat16 ? 2e-3f : 2e-2f;
  const Tensor& before = original->weights.decoder[1].cross_attention.value.weight;
  const Tensor& after = reloaded->weights.decoder[1].cross_attention.value.weight;
  ASSERT_EQ(before.shape(), after.shape());
  for (int64_t i = 0; i < before.numel(); ++i) {
    EXPECT_NEAR(after.data<float>()[i], before.data<float>()[i],
                tolerance * std::max(1.f, std::fabs(before.data<float>()[i])));
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, SaveAndLoad,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return dtype_name(info.param);
                         });

}  // namespace
}  // namespace xlate
