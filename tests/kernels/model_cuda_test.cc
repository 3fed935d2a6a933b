// The whole model on the GPU against the CPU: float32 translations equal the CPU's (beam 4 and
// greedy, batched), float16/bfloat16 next-token logits stay within tolerance. Skipped without
// a GPU.
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/gpu_required.h"
#include "engine/backend/cuda_backend.h"
#include "engine/continuous_decoder.h"
#include "engine/translator.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

std::vector<std::string> sample_sentences(size_t count) {
  std::ifstream file(testing::sample_text());
  std::vector<std::string> lines;
  for (std::string line; lines.size() < count && std::getline(file, line);) lines.push_back(line);
  return lines;
}

class ModelCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
  }
  std::unique_ptr<Translator> load(const Placement& placement) {
    auto loaded = Translator::Load(testing::tiny_model_dir(), placement);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : nullptr;
  }
};

TEST_F(ModelCuda, Float32TranslationsEqualTheCpu) {
  auto cpu = load({Device::kCPU, DType::kFloat32});
  auto gpu = load({Device::kCUDA, DType::kFloat32});
  ASSERT_TRUE(cpu && gpu);
  const std::vector<std::string> sentences = sample_sentences(24);
  for (int beam : {1, 4}) {
    TranslationOptions options;
    options.beam_size = beam;
    options.n_best = beam;  // whole n-best lists: the GPU's device-resident search vs the host's
    options.max_batch_size = 8;
    auto expected = cpu->Translate(sentences, options);
    auto actual = gpu->Translate(sentences, options);
    ASSERT_TRUE(expected.ok() && actual.ok());
    for (size_t i = 0; i < sentences.size(); ++i) {
      EXPECT_EQ((*actual)[i].hypotheses, (*expected)[i].hypotheses) << "beam " << beam << " #" << i;
      EXPECT_NEAR((*actual)[i].scores[0], (*expected)[i].scores[0], 1e-3);
    }
  }
}

// Glossary constraints on the GPU (the constrained beam step's kernel, the rows' constraint
// state uploaded at every placement, the wanted tokens' scores): beam 4 n-best lists equal the
// CPU's, every hypothesis of a constrained sentence holds its terms, and the unconstrained
// sentences beside them translate as without.
TEST_F(ModelCuda, ConstrainedTranslationsEqualTheCpu) {
  auto cpu = load({Device::kCPU, DType::kFloat32});
  auto gpu = load({Device::kCUDA, DType::kFloat32});
  ASSERT_TRUE(cpu && gpu);
  const std::vector<std::string> sentences = sample_sentences(16);
  std::vector<Constraints> constraints(sentences.size());
  for (size_t i = 0; i < sentences.size(); i += 2) {
    for (const char* term : {"Hund", "Mann"}) {
      auto ids = cpu->tokenizer().encode_target(term);
      ASSERT_TRUE(ids.ok());
      constraints[i].push_back(*ids);
    }
  }
  TranslationOptions options;
  options.beam_size = 4;
  options.n_best = 4;
  options.max_batch_size = 8;
  auto expected = cpu->Translate(sentences, options, {}, constraints);
  auto actual = gpu->Translate(sentences, options, {}, constraints);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ((*actual)[i].hypotheses, (*expected)[i].hypotheses) << "#" << i;
    if (constraints[i].empty()) continue;
    for (const std::string& hypothesis : (*actual)[i].hypotheses) {
      EXPECT_NE(hypothesis.find("Hund"), std::string::npos) << hypothesis;
      EXPECT_NE(hypothesis.find("Mann"), std::string::npos) << hypothesis;
    }
  }
}

// Teacher-forced logits of a few sentences, reduced precision against the CPU's float32.
TEST_F(ModelCuda, ReducedPrecisionLogitsStayClose) {
  auto cpu = load({Device::kCPU, DType::kFloat32});
  ASSERT_TRUE(cpu);
  const std::vector<int32_t> source_ids = {5, 17, 42, 8, 99, 2};
  const Tensor source = Tensor::from_vector(source_ids, {1, 6});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{6}, {1});
  const Tensor prefix = Tensor::from_vector(std::vector<int32_t>{1, 30, 31, 32}, {1, 4});
  auto logits_of = [&](const TransformerModel& model) {
    DecoderState state = model.start_decoding(model.encode(source, lengths), lengths, 1, 8);
    return model.decode(state, prefix);
  };
  const Tensor expected = logits_of(cpu->model());
  // Absolute bounds on a logit: 16-bit storage rounds every layer's output, so the single ops'
  // tolerances (1e-2 fp16, 4e-2 bf16, relative) compound over the encoder and decoder stacks.
  for (auto [dtype, bound] : {std::pair{DType::kFloat16, 0.2}, {DType::kBFloat16, 0.8}}) {
    auto gpu = load({Device::kCUDA, dtype});
    ASSERT_TRUE(gpu);
    const Tensor actual = logits_of(gpu->model());
    ASSERT_EQ(actual.numel(), expected.numel());
    double worst = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const double difference = double(actual.data<float>()[i]) - expected.data<float>()[i];
      worst = std::max(worst, std::fabs(difference));
    }
    EXPECT_LE(worst, bound) << dtype_name(dtype) << " worst |Δlogit| " << worst;
  }
}

// The search's step on the GPU: the k best tokens selected on the device (k up to the kernel's
// 32) equal the CPU's for the same rows and running scores.
TEST_F(ModelCuda, DecoderTopKStepEqualsTheCpu) {
  auto cpu = load({Device::kCPU, DType::kFloat32});
  auto gpu = load({Device::kCUDA, DType::kFloat32});
  ASSERT_TRUE(cpu && gpu);
  const Tensor source = Tensor::from_vector(std::vector<int32_t>{5, 17, 42, 8, 99, 3, 11, 3},
                                            {2, 4});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{4, 3}, {2});
  const Tensor tokens = Tensor::from_vector(std::vector<int32_t>{2, 2}, {2});
  const Tensor row_scores = Tensor::from_vector(std::vector<float>{-1.5f, -0.25f}, {2});
  for (int k : {9, kMaxDeviceTopK}) {
    DecoderState cpu_state = cpu->model().start_decoding(cpu->model().encode(source, lengths),
                                                         lengths, 2, 4);
    DecoderState gpu_state = gpu->model().start_decoding(gpu->model().encode(source, lengths),
                                                         lengths, 2, 4);
    const TopK expected =
        cpu->model().decode_top_k_on_device(cpu_state, tokens, row_scores, k);
    const TopK on_gpu = gpu->model().decode_top_k_on_device(
        gpu_state, tokens.on(Device::kCUDA), row_scores.on(Device::kCUDA), k);
    ASSERT_EQ(on_gpu.values.device(), Device::kCUDA);
    const TopK actual{on_gpu.values.on(Device::kCPU), on_gpu.indices.on(Device::kCPU)};
    ASSERT_EQ(actual.indices.numel(), 2 * k);
    for (int64_t i = 0; i < 2 * k; ++i) {
      EXPECT_EQ(actual.indices.data<int32_t>()[i], expected.indices.data<int32_t>()[i])
          << "k " << k << " #" << i;
      EXPECT_NEAR(actual.values.data<float>()[i], expected.values.data<float>()[i], 1e-4);
    }
  }
}

// The continuous decoder (sentences joining and leaving between steps, the search's state on
// the device) on the GPU in float32 gives the CPU's hypotheses.
TEST_F(ModelCuda, ContinuousDecodingEqualsTheCpu) {
  auto cpu = load({Device::kCPU, DType::kFloat32});
  auto gpu = load({Device::kCUDA, DType::kFloat32});
  ASSERT_TRUE(cpu && gpu);
  std::vector<std::vector<int32_t>> sources;
  for (const std::string& sentence : sample_sentences(10)) {
    sources.push_back(*cpu->tokenizer().encode(sentence));
  }
  auto decode_all = [&](const TransformerModel& model) {
    ContinuousDecoderOptions decoder_options;
    decoder_options.max_sentences = 6;
    ContinuousDecoder decoder(model, decoder_options);
    TranslationOptions options;
    options.n_best = 2;
    std::map<int64_t, std::vector<Hypothesis>> results;
    size_t next = 0;
    // Four now, the rest as slots free up: sentences join a decode already under way.
    auto admitted = decoder.Admit({sources.begin(), sources.begin() + 4}, options);
    EXPECT_TRUE(admitted.ok()) << admitted.status();
    next = 4;
    while (decoder.live_sentences() > 0) {
      for (auto& finished : decoder.Step()) results[finished.handle] = finished.hypotheses;
      if (next < sources.size() && decoder.free_slots() > 0) {
        EXPECT_TRUE(decoder.Admit({sources[next]}, options).ok());
        ++next;
      }
    }
    EXPECT_EQ(results.size(), sources.size());
    return results;
  };
  const auto expected = decode_all(cpu->model());
  const auto actual = decode_all(gpu->model());
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [handle, hypotheses] : expected) {
    const auto& got = actual.at(handle);
    ASSERT_EQ(got.size(), hypotheses.size()) << "sentence " << handle;
    for (size_t j = 0; j < hypotheses.size(); ++j) {
      EXPECT_EQ(got[j].tokens, hypotheses[j].tokens) << "sentence " << handle << " #" << j;
      EXPECT_NEAR(got[j].score, hypotheses[j].score, 1e-3);
    }
  }
}

}  // namespace
}  // namespace xlate
