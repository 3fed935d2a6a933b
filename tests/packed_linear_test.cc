// Packed weights on the CPU: a float32 packed weight multiplies as the plain one does; compute
// type bfloat16: bfloat16 weights times bfloat16 copies of the input, summed in float32; compute
// type int8: the int8 linear op against the float product within the bound ops.h states, exact
// where quantisation loses nothing, and a whole model quantised at load against the same model
// in float32.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/model_directory.h"
#include "engine/ops/backend.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/ops.h"
#include "engine/transformer.h"
#include "tests/random_tensor.h"
#include "tests/smallest_model_config.h"

namespace xlate {
namespace {

// out[m, n] = sum_k x[m, k] w[n, k] (+ bias), in double.
std::vector<double> float_product(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t inputs = weight.dim(1), outputs = weight.dim(0), rows = x.numel() / inputs;
  std::vector<double> out;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < outputs; ++n) {
      double sum = bias.defined() ? bias.data<float>()[n] : 0.0;
      for (int64_t k = 0; k < inputs; ++k) {
        sum += double(x.data<float>()[m * inputs + k]) * weight.data<float>()[n * inputs + k];
      }
      out.push_back(sum);
    }
  }
  return out;
}

float row_max_abs(const Tensor& matrix, int64_t row) {
  const int64_t width = matrix.dim(-1);
  float largest = 0.f;
  for (int64_t k = 0; k < width; ++k) {
    largest = std::max(largest, std::fabs(matrix.data<float>()[row * width + k]));
  }
  return largest;
}

// A float32 packed weight gives linear_forward's products: rows below, at and above the
// 64 the layout is chosen for, inputs and outputs that are not multiples of a block, with and
// without bias and ReLU, and against the double product, so that both cannot be wrong alike.
TEST(PackedFloatLinear, MultipliesAsThePlainWeightDoes) {
  std::mt19937 generator(10);
  struct Shape {
    int64_t rows, inputs, outputs;
  };
  // Rows above kExactPlanRows (engine/ops/cpu/dnnl_context.h) multiply through a primitive
  // made for any row count.
  for (const Shape& shape : {Shape{1, 30, 67}, Shape{9, 256, 1024}, Shape{64, 100, 300},
                             Shape{130, 256, 2000}, Shape{257, 64, 96}, Shape{1000, 256, 512}}) {
    Tensor x = random_tensor({shape.rows, shape.inputs}, generator);
    Tensor weight = random_tensor({shape.outputs, shape.inputs}, generator);
    Tensor bias = random_tensor({shape.outputs}, generator);
    const PackedWeight packed = pack_linear_weight(weight, DType::kFloat32);
    ASSERT_EQ(packed.outputs, shape.outputs);
    ASSERT_EQ(packed.inputs, shape.inputs);
    ASSERT_FALSE(packed.quantized());
    const std::vector<double> expected = float_product(x, weight, bias);
    for (const Activation activation :
         {Activation::kNone, Activation::kRelu, Activation::kSwish, Activation::kGelu}) {
      for (const bool with_bias : {true, false}) {
        const Tensor used_bias = with_bias ? bias : Tensor();
        Tensor plain = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
        Tensor got = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
        linear_forward(plain, x, weight, used_bias, activation);
        packed_linear_forward(got, x, packed, used_bias, activation);
        for (int64_t i = 0; i < plain.numel(); ++i) {
          const float p = plain.data<float>()[i], g = got.data<float>()[i];
          ASSERT_NEAR(g, p, 1e-5f * (1.f + std::fabs(p)))
              << "flat index " << i << " of " << shape.rows << "x" << shape.inputs << "x"
              << shape.outputs;
          double reference = expected[i] - (with_bias ? 0.0 : bias.data<float>()[i % shape.outputs]);
          if (activation == Activation::kRelu) reference = std::max(0.0, reference);
          if (activation == Activation::kSwish) reference = reference / (1 + std::exp(-reference));
          if (activation == Activation::kGelu) {
            reference = 0.5 * reference * (1 + std::erf(reference / std::sqrt(2.0)));
          }
          ASSERT_NEAR(g, reference, 1e-4 * (1 + std::fabs(reference)));
        }
      }
    }
  }
}

TEST(PackedFloatLinear, AModelOnTheCpuMultipliesByPackedWeights) {
  const ModelConfig config = smallest_model_config();
  const TransformerModel model(config, random_weights(config, 3));
  const LinearWeights& ffn = model.weights().decoder[0].ffn_inner;
  EXPECT_TRUE(ffn.packed.defined());
  EXPECT_FALSE(ffn.packed.quantized());
  EXPECT_FALSE(ffn.weight.defined()) << "the plain copy is dropped";
}

// Rows read back from a float32 packed weight are the plain weight's, bit for bit: shapes whose
// sides are and are not multiples of a block, and the first and last rows.
TEST(PackedFloatLinear, RowsReadBackAsThePlainWeightHadThem) {
  std::mt19937 generator(21);
  struct Shape {
    int64_t outputs, inputs;
  };
  for (const Shape& shape : {Shape{67, 30}, Shape{37, 19}, Shape{96, 64}, Shape{300, 100},
                             Shape{1024, 256}, Shape{10000, 256}, Shape{2000, 1024}}) {
    const Tensor weight = random_tensor({shape.outputs, shape.inputs}, generator);
    const PackedWeight packed = pack_linear_weight(weight, DType::kFloat32);
    std::uniform_int_distribution<int32_t> row(0, static_cast<int32_t>(shape.outputs - 1));
    std::vector<int32_t> tokens = {0, static_cast<int32_t>(shape.outputs - 1)};
    for (int i = 0; i < 40; ++i) tokens.push_back(row(generator));
    Tensor out = Tensor::empty({static_cast<int64_t>(tokens.size()), shape.inputs},
                               DType::kFloat32);
    packed_weight_rows(out, Tensor::from_vector(tokens, {static_cast<int64_t>(tokens.size())}),
                       packed);
    for (size_t i = 0; i < tokens.size(); ++i) {
      for (int64_t k = 0; k < shape.inputs; ++k) {
        ASSERT_EQ(out.data<float>()[i * shape.inputs + k],
                  weight.data<float>()[tokens[i] * shape.inputs + k])
            << shape.outputs << "x" << shape.inputs << " row " << tokens[i] << " column " << k;
      }
    }
  }
}

// Rows read back from an int8 packed weight are its quantised values: an integer number of the
// row's scale steps, within half a step of the float weight (a layout read wrong gives other
// rows' values, or padding).
TEST(PackedInt8Linear, RowsReadBackAsTheirQuantisedValues) {
  if (absl::Status available = int8_available(Device::kCPU); !available.ok()) {
    GTEST_SKIP() << available;
  }
  std::mt19937 generator(22);
  for (const auto& [outputs, inputs] :
       {std::pair<int64_t, int64_t>{67, 30}, {96, 64}, {300, 100}, {10000, 256}}) {
    const Tensor weight = random_tensor({outputs, inputs}, generator);
    const PackedWeight packed = pack_linear_weight(weight, DType::kInt8);
    ASSERT_TRUE(packed.quantized());
    std::vector<int32_t> tokens = {0, static_cast<int32_t>(outputs - 1), 5, 31, 66};
    Tensor out = Tensor::empty({static_cast<int64_t>(tokens.size()), inputs}, DType::kFloat32);
    packed_weight_rows(out, Tensor::from_vector(tokens, {static_cast<int64_t>(tokens.size())}),
                       packed);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const float scale = packed.scales.data<float>()[tokens[i]];
      for (int64_t k = 0; k < inputs; ++k) {
        const float got = out.data<float>()[i * inputs + k];
        const float plain = weight.data<float>()[tokens[i] * inputs + k];
        const float steps = got / scale;
        ASSERT_NEAR(steps, std::round(steps), 1e-3)
            << outputs << "x" << inputs << " row " << tokens[i] << " column " << k;
        ASSERT_LE(std::fabs(got - plain), 0.5f * scale * 1.001f)
            << outputs << "x" << inputs << " row " << tokens[i] << " column " << k;
      }
    }
  }
}

ModelConfig small_model_config();

// The logits of two sentences' 6 target steps (token ids below 250).
Tensor tied_model_logits(const TransformerModel& model) {
  const int64_t sentences = 2, steps = 6;
  const Tensor source = Tensor::from_vector(
      std::vector<int32_t>{5, 9, 4, 7, 3, 2, 8, 6, 5, 3, 0, 0}, {sentences, steps});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{6, 4}, {sentences});
  const Tensor target = Tensor::from_vector(
      std::vector<int32_t>{2, 7, 4, 2, 9, 5, 6, 8, 2, 3, 4, 5}, {sentences, steps});
  DecoderState state =
      model.start_decoding(model.encode(source, lengths), lengths, sentences, steps);
  return model.decode(state, target);
}

// A tied output projection in float32 is packed once and is the embedding table too: the model
// drops the plain table, and its logits are those of a model that keeps a copy of the table as
// an untied output projection, exactly. With separate source and target tables (Marian's
// share_encoder_decoder_embeddings false) the decoder reads the target table's rows, not the
// source's.
TEST(PackedFloatLinear, ATiedModelHoldsItsEmbeddingTableOnce) {
  for (const bool shared : {true, false}) {
    ModelConfig tied = small_model_config();
    ASSERT_TRUE(tied.tie_output);
    tied.share_embeddings = shared;
    if (!shared) tied.decoder_vocab_size = 250;
    const TransformerWeights weights = random_weights(tied, 8);
    ModelConfig untied = tied;
    untied.tie_output = false;
    TransformerWeights with_copy = weights;
    with_copy.output_weight = weights.target_embedding().clone();
    const TransformerModel model(tied, weights);
    const TransformerWeights& held = model.weights();
    EXPECT_FALSE((shared ? held.shared_embedding : held.decoder_embedding).defined())
        << "the table is held once";
    EXPECT_EQ(held.shared_embedding.defined(), !shared) << "the source table stays";
    const TransformerModel twin(untied, with_copy);
    EXPECT_TRUE(twin.weights().target_embedding().defined());
    const Tensor expected = tied_model_logits(twin), got = tied_model_logits(model);
    ASSERT_EQ(got.shape(), expected.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
      ASSERT_EQ(got.data<float>()[i], expected.data<float>()[i])
          << (shared ? "shared" : "separate") << " tables, logit " << i;
    }
  }
}

// Compute type bfloat16 on the CPU: a weight packed in bfloat16 multiplies a bfloat16 copy of
// the float32 input, summed in float32: the product of the rounded values (against the double
// product of the rounded values, within float32 summation), with bias and each activation.
TEST(PackedBFloat16Linear, MultipliesTheRoundedValuesInFloat32) {
  if (absl::Status available = bfloat16_weights_available(Device::kCPU); !available.ok()) {
    GTEST_SKIP() << available;
  }
  std::mt19937 generator(12);
  const auto rounded = [](const Tensor& t) {
    return t.to_dtype(DType::kBFloat16).to_dtype(DType::kFloat32);
  };
  for (const int64_t rows : {int64_t{1}, int64_t{70}, int64_t{300}}) {
    const Tensor x = random_tensor({rows, 72}, generator);
    const Tensor weight = random_tensor({130, 72}, generator);
    const Tensor bias = random_tensor({130}, generator);
    const PackedWeight packed = pack_linear_weight(weight, DType::kBFloat16);
    ASSERT_EQ(packed.packed.dtype(), DType::kBFloat16);
    ASSERT_FALSE(packed.quantized());
    const std::vector<double> expected = float_product(rounded(x), rounded(weight), bias);
    for (const Activation activation : {Activation::kNone, Activation::kRelu}) {
      Tensor got = Tensor::empty({rows, 130}, DType::kFloat32);
      packed_linear_forward(got, x, packed, bias, activation);
      for (int64_t i = 0; i < got.numel(); ++i) {
        double reference = expected[static_cast<size_t>(i)];
        if (activation == Activation::kRelu) reference = std::max(0.0, reference);
        ASSERT_NEAR(got.data<float>()[i], reference, 1e-4 * (1 + std::fabs(reference)))
            << "rows " << rows << ", flat index " << i;
      }
    }
  }
}

class QuantizedLinear : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status available = int8_available(Device::kCPU); !available.ok()) {
      GTEST_SKIP() << available;
    }
  }
};

// Shapes with one row, inputs that are not a multiple of 4 (VNNI sums groups of 4), more outputs
// than a block, a zero input row and a row with an outlier; bias and ReLU.
TEST_F(QuantizedLinear, StaysWithinTheStatedBoundOfTheFloatProduct) {
  std::mt19937 generator(11);
  struct Shape {
    int64_t rows, inputs, outputs;
  };
  for (const Shape& shape : {Shape{1, 30, 67}, Shape{9, 256, 1024}, Shape{40, 100, 300},
                             Shape{700, 100, 300}}) {
    Tensor x = random_tensor({shape.rows, shape.inputs}, generator);
    Tensor weight = random_tensor({shape.outputs, shape.inputs}, generator);
    Tensor bias = random_tensor({shape.outputs}, generator);
    if (shape.rows > 2) {
      std::fill_n(x.data<float>(), shape.inputs, 0.f);
      x.data<float>()[shape.inputs + 3] = 40.f;
    }
    const PackedWeight quantized = pack_linear_weight(weight, DType::kInt8);
    const std::vector<double> expected = float_product(x, weight, bias);
    Tensor plain = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
    Tensor rectified = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
    packed_linear_forward(plain, x, quantized, bias, Activation::kNone);
    packed_linear_forward(rectified, x, quantized, bias, Activation::kRelu);
    Tensor swished = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
    Tensor gelued = Tensor::empty({shape.rows, shape.outputs}, DType::kFloat32);
    packed_linear_forward(swished, x, quantized, bias, Activation::kSwish);
    packed_linear_forward(gelued, x, quantized, bias, Activation::kGelu);
    double error_squares = 0, value_squares = 0;
    for (int64_t m = 0; m < shape.rows; ++m) {
      for (int64_t n = 0; n < shape.outputs; ++n) {
        const int64_t i = m * shape.outputs + n;
        const double bound = shape.inputs * double(row_max_abs(x, m)) *
                                 row_max_abs(weight, n) / 127.0 +
                             1e-5 * (1 + std::fabs(expected[i]));
        const double got = plain.data<float>()[i];
        ASSERT_LE(std::fabs(got - expected[i]), bound)
            << "row " << m << " output " << n << " of " << shape.rows << "x" << shape.inputs
            << "x" << shape.outputs;
        ASSERT_EQ(rectified.data<float>()[i], std::max(0.f, plain.data<float>()[i]));
        // The activations apply to the dequantised sum, as in the float product.
        const double v = plain.data<float>()[i];
        ASSERT_NEAR(swished.data<float>()[i], v / (1 + std::exp(-v)), 1e-5 * (1 + std::fabs(v)));
        ASSERT_NEAR(gelued.data<float>()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))),
                    1e-5 * (1 + std::fabs(v)));
        if (shape.rows > 2 && m == 1) continue;  // the outlier's row: coarse by design
        error_squares += (got - expected[i]) * (got - expected[i]);
        value_squares += expected[i] * expected[i];
      }
    }
    // The worst case above is far from the typical one: rounding errors mostly cancel (rows
    // without an outlier).
    EXPECT_LT(std::sqrt(error_squares / value_squares), 0.02)
        << shape.rows << "x" << shape.inputs << "x" << shape.outputs;
    // A zero input row quantises to zeros: exactly the bias.
    if (shape.rows > 2) {
      for (int64_t n = 0; n < shape.outputs; ++n) {
        ASSERT_EQ(plain.data<float>()[n], bias.data<float>()[n]);
      }
    }
  }
}

// Over 127, or 63 where the processor has no VNNI (cpu::int8_weight_levels; the ctest entry
// int8_on_avx2 runs these tests with oneDNN held to AVX2).
TEST_F(QuantizedLinear, ScalesAreEachRowsLargestMagnitudeOverTheWeightLevels) {
  std::mt19937 generator(12);
  Tensor weight = random_tensor({5, 40}, generator);
  std::fill_n(weight.data<float>() + 2 * 40, 40, 0.f);  // a zero row: scale 0
  const PackedWeight quantized = pack_linear_weight(weight, DType::kInt8);
  ASSERT_EQ(quantized.outputs, 5);
  ASSERT_EQ(quantized.inputs, 40);
  for (int64_t n = 0; n < 5; ++n) {
    EXPECT_FLOAT_EQ(quantized.scales.data<float>()[n],
                    row_max_abs(weight, n) / cpu::int8_weight_levels());
  }
}

// Integers in [-L, L] with L in every row quantise with scale 1 and no rounding (L = 127 for
// the activations, the weight levels for the weights): the int8 product must equal the float
// one exactly, so a wrong layout or sum, or a saturated one, cannot hide in a tolerance.
TEST_F(QuantizedLinear, IsExactWhereQuantisationLosesNothing) {
  std::mt19937 generator(13);
  const int64_t rows = 6, inputs = 70, outputs = 150;
  auto integers = [&](int64_t count, int64_t width, int largest) {
    std::uniform_int_distribution<int> value(-largest, largest);
    std::vector<float> values(count * width);
    for (float& v : values) v = static_cast<float>(value(generator));
    for (int64_t r = 0; r < count; ++r) values[r * width + r % width] = largest;
    return Tensor::from_vector(values, {count, width});
  };
  Tensor x = integers(rows, inputs, 127);
  Tensor weight = integers(outputs, inputs, static_cast<int>(cpu::int8_weight_levels()));
  Tensor out = Tensor::empty({rows, outputs}, DType::kFloat32);
  packed_linear_forward(out, x, pack_linear_weight(weight, DType::kInt8), Tensor(),
                        Activation::kNone);
  const std::vector<double> expected = float_product(x, weight, Tensor());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(out.data<float>()[i], expected[i]) << "at flat index " << i;
  }
}

TEST_F(QuantizedLinear, MismatchedInputsAreAProgrammingError) {
  std::mt19937 generator(14);
  const PackedWeight quantized =
      pack_linear_weight(random_tensor({8, 16}, generator), DType::kInt8);
  Tensor x = random_tensor({2, 12}, generator);
  Tensor out = Tensor::empty({2, 8}, DType::kFloat32);
  EXPECT_THROW(packed_linear_forward(out, x, quantized, Tensor(), Activation::kNone),
               std::logic_error);
}

// The same random model in float32 and quantised at load: teacher-forced logits close, the
// argmax mostly the same (a trained model's BLEU is checked in tests/models).
// A model of 300 tokens, d_model 64 and two layers a side, with random weights.
ModelConfig small_model_config() {
  ModelConfig config;
  config.vocab_size = 300;
  config.d_model = 64;
  config.encoder_layers = config.decoder_layers = 2;
  config.encoder_heads = config.decoder_heads = 4;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 128;
  config.max_positions = 32;
  return config;
}

struct LogitsAgreement {
  double relative_error;  // ‖got − float32‖ / ‖float32‖ over every logit
  int same_argmax;        // positions whose best token is the float32 model's
  int positions;
};

// The teacher-forced logits of `weights` loaded with `placement` against the same weights in
// float32, on three random sentence pairs.
LogitsAgreement logits_against_float32(const ModelConfig& config,
                                       const TransformerWeights& weights,
                                       const Placement& placement) {
  const TransformerModel float_model(config, weights);
  const TransformerModel model(config, weights, placement);
  const int64_t sentences = 3, source_steps = 9, target_steps = 7;
  std::mt19937 generator(15);
  std::uniform_int_distribution<int32_t> token(4, config.vocab_size - 1);
  std::vector<int32_t> source(sentences * source_steps), target(sentences * target_steps);
  for (int32_t& t : source) t = token(generator);
  for (int32_t& t : target) t = token(generator);
  const Tensor source_tensor = Tensor::from_vector(source, {sentences, source_steps});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{9, 5, 7}, {sentences});
  const Tensor target_tensor = Tensor::from_vector(target, {sentences, target_steps});
  auto logits_of = [&](const TransformerModel& m) {
    DecoderState state = m.start_decoding(m.encode(source_tensor, lengths), lengths, sentences,
                                          target_steps);
    return m.decode(state, target_tensor);
  };
  const Tensor expected = logits_of(float_model), got = logits_of(model);
  EXPECT_EQ(got.shape(), expected.shape());
  double error_squares = 0, value_squares = 0;
  LogitsAgreement agreement{0, 0, static_cast<int>(sentences * target_steps)};
  const int64_t vocabulary = config.vocab_size;
  for (int64_t p = 0; p < agreement.positions; ++p) {
    const float* e = expected.data<float>() + p * vocabulary;
    const float* g = got.data<float>() + p * vocabulary;
    for (int64_t v = 0; v < vocabulary; ++v) {
      error_squares += double(g[v] - e[v]) * (g[v] - e[v]);
      value_squares += double(e[v]) * e[v];
    }
    agreement.same_argmax +=
        std::max_element(e, e + vocabulary) - e == std::max_element(g, g + vocabulary) - g;
  }
  agreement.relative_error = std::sqrt(error_squares / value_squares);
  return agreement;
}

TEST_F(QuantizedLinear, AModelQuantisedAtLoadKeepsItsLogits) {
  Placement int8_placement;
  int8_placement.weights = DType::kInt8;
  const LogitsAgreement agreement =
      logits_against_float32(small_model_config(), random_weights(small_model_config(), 5),
                             int8_placement);
  EXPECT_LT(agreement.relative_error, 0.05);
  EXPECT_GE(agreement.same_argmax, agreement.positions * 8 / 10)
      << agreement.same_argmax << " of " << agreement.positions;
}

// Compute type bfloat16 on the CPU: the logits stay within a few bfloat16 steps (2^-8) of the
// float32 model's, and are not float32's; the linear weights are held in 16 bits.
TEST(PackedBFloat16Linear, AModelWithBFloat16WeightsKeepsItsLogits) {
  if (absl::Status available = bfloat16_weights_available(Device::kCPU); !available.ok()) {
    GTEST_SKIP() << available;
  }
  Placement placement;
  placement.weights = DType::kBFloat16;
  ASSERT_TRUE(check_placement(placement).ok());
  const ModelConfig config = small_model_config();
  const TransformerWeights weights = random_weights(config, 6);
  EXPECT_EQ(TransformerModel(config, weights, placement)
                .weights()
                .decoder[0]
                .ffn_inner.packed.packed.dtype(),
            DType::kBFloat16);
  const LogitsAgreement agreement = logits_against_float32(config, weights, placement);
  EXPECT_LT(agreement.relative_error, 0.02);
  EXPECT_GT(agreement.relative_error, 1e-5);
  EXPECT_GE(agreement.same_argmax, agreement.positions * 9 / 10)
      << agreement.same_argmax << " of " << agreement.positions;
}

}  // namespace
}  // namespace xlate
