// The CPU's 16-bit storage (engine/ops/cpu/widened_op.h, bfloat16_matmul.h): float16 / bfloat16
// tensors computed in float32 and rounded once when stored, as the CUDA kernels do, so that a
// CPU run reproduces a GPU's 16-bit training. Each op on 16-bit tensors against the float32 op
// on the same (widened) values, its outputs rounded.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/ops/backend.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "tests/random_tensor.h"

namespace xlate {
namespace {

std::vector<float> floats(const Tensor& tensor) {
  const Tensor wide = tensor.to_float32();
  return std::vector<float>(wide.data<float>(), wide.data<float>() + wide.numel());
}

// A float32 tensor's values as `dtype` stores them (a 16-bit copy).
Tensor stored(const Tensor& values, DType dtype) { return values.to_dtype(dtype); }

// |actual - expected| within `relative` of the largest |expected|, element by element.
void expect_close(const Tensor& actual, const Tensor& expected, double relative,
                  const char* what) {
  const std::vector<float> a = floats(actual), e = floats(expected);
  ASSERT_EQ(a.size(), e.size()) << what;
  float largest = 1e-6f;
  for (float value : e) largest = std::max(largest, std::fabs(value));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::fabs(a[i] - e[i]), relative * largest) << what << " at " << i;
  }
}

void expect_equal(const Tensor& actual, const Tensor& expected, const char* what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const std::vector<float> a = floats(actual), e = floats(expected);
  ASSERT_EQ(a, e) << what;
}

class Cpu16BitOps : public ::testing::TestWithParam<DType> {};

TEST_P(Cpu16BitOps, TheCpuBackendStoresThem) {
  EXPECT_TRUE(op_backend(Device::kCPU).reduced_precision_storage);
}

// An element-wise op computes in float32 and rounds once: dropout in place (out aliases inp)
// equals the float32 dropout of the same values, rounded.
TEST_P(Cpu16BitOps, ElementWiseOpsRoundOnceWhenStored) {
  std::mt19937 generator(3);
  const Tensor values = stored(random_tensor({37, 19}, generator), GetParam());
  Tensor in_place = values.clone();
  dropout_forward(in_place, in_place, 0.3f, 77);
  Tensor expected = Tensor::empty({37, 19}, DType::kFloat32);
  dropout_forward(expected, values.to_float32(), 0.3f, 77);
  expect_equal(in_place, expected.to_dtype(GetParam()), "dropout");

  Tensor dinp = Tensor::empty({37, 19}, GetParam());
  relu_backward(dinp, values, in_place);
  Tensor relu_expected = Tensor::empty({37, 19}, DType::kFloat32);
  relu_backward(relu_expected, values.to_float32(), in_place.to_float32());
  expect_equal(dinp, relu_expected.to_dtype(GetParam()), "relu_backward");
}

// Training's layer norm keeps the sum rounded as stored, and normalises that stored sum: its
// mean and 1/std are the stored values' (what layer_norm_backward reads back), as on CUDA.
TEST_P(Cpu16BitOps, LayerNormNormalisesTheStoredSum) {
  std::mt19937 generator(5);
  const int64_t rows = 9, channels = 48;
  const Tensor inp = stored(random_tensor({rows, channels}, generator), GetParam());
  const Tensor residual = stored(random_tensor({rows, channels}, generator, 3.f), GetParam());
  const Tensor gamma = stored(random_tensor({channels}, generator), GetParam());
  const Tensor beta = stored(random_tensor({channels}, generator), GetParam());
  LayerNormTraining saved;
  saved.dropout = 0.2f;
  saved.dropout_key = 11;
  saved.sum = Tensor::empty({rows, channels}, GetParam());
  saved.mean = Tensor::empty({rows}, DType::kFloat32);
  saved.rstd = Tensor::empty({rows}, DType::kFloat32);
  Tensor out = Tensor::empty({rows, channels}, GetParam());
  add_layer_norm_forward(out, inp, residual, gamma, beta, 1e-5f, &saved);

  Tensor dropped = Tensor::empty({rows, channels}, DType::kFloat32);
  dropout_forward(dropped, inp.to_float32(), 0.2f, 11);
  const std::vector<float> d = floats(dropped), r = floats(residual);
  std::vector<float> sum(d.size());
  for (size_t i = 0; i < d.size(); ++i) sum[i] = d[i] + r[i];
  const Tensor expected_sum = Tensor::from_vector(sum, {rows, channels}).to_dtype(GetParam());
  expect_equal(saved.sum, expected_sum, "sum");
  const std::vector<float> kept = floats(saved.sum);
  for (int64_t row = 0; row < rows; ++row) {
    double mean = 0;
    for (int64_t c = 0; c < channels; ++c) mean += kept[row * channels + c];
    mean /= channels;
    EXPECT_NEAR(saved.mean.data<float>()[row], mean, 1e-5 * (1 + std::fabs(mean))) << row;
  }
  // The unrounded sum's means differ from the stored sum's by more than that tolerance, so a
  // layer norm normalising the unrounded sum fails the check above.
  Tensor unrounded = Tensor::empty({rows, channels}, DType::kFloat32);
  LayerNormTraining exact = saved;
  exact.sum = Tensor::empty({rows, channels}, DType::kFloat32);
  exact.mean = Tensor::empty({rows}, DType::kFloat32);
  exact.rstd = Tensor::empty({rows}, DType::kFloat32);
  add_layer_norm_forward(unrounded, inp.to_float32(), residual.to_float32(), gamma.to_float32(),
                         beta.to_float32(), 1e-5f, &exact);
  double largest_shift = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const float mean = exact.mean.data<float>()[row];
    largest_shift = std::max<double>(largest_shift, std::fabs(mean - saved.mean.data<float>()[row]) /
                                                        (1e-5 * (1 + std::fabs(mean))));
  }
  EXPECT_GT(largest_shift, 1.0);
  Tensor normalised_stored = Tensor::empty({rows, channels}, DType::kFloat32);
  add_layer_norm_forward(normalised_stored, saved.sum.to_float32(),
                         Tensor::zeros({rows, channels}, DType::kFloat32), gamma.to_float32(),
                         beta.to_float32(), 1e-5f);
  expect_equal(out, normalised_stored.to_dtype(GetParam()), "out");
}

INSTANTIATE_TEST_SUITE_P(Types, Cpu16BitOps, ::testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return dtype_name(info.param);
                         });

// A linear layer of bfloat16 tensors (oneDNN's bf16 matmul where the processor has it) equals
// the float32 layer on the same values, its output rounded: the sums are float32 on both, so
// they differ by summation order, far below one bfloat16 step (2^-8). More rows than one
// product plan takes (kMaxPlanRows), so the chunks are covered; accumulated input gradients too.
TEST(Cpu16BitProducts, BFloat16LinearLayersSumInFloat32) {
  std::mt19937 generator(9);
  const int64_t rows = 300, inputs = 40, outputs = 24;
  const Tensor inp = stored(random_tensor({rows, inputs}, generator), DType::kBFloat16);
  const Tensor weight = stored(random_tensor({outputs, inputs}, generator), DType::kBFloat16);
  const Tensor bias = stored(random_tensor({outputs}, generator), DType::kBFloat16);
  Tensor out = Tensor::empty({rows, outputs}, DType::kBFloat16);
  linear_forward(out, inp, weight, bias, Activation::kRelu);
  Tensor expected = Tensor::empty({rows, outputs}, DType::kFloat32);
  linear_forward(expected, inp.to_float32(), weight.to_float32(), bias.to_float32(),
                 Activation::kRelu);
  expect_close(out, expected, 1.0 / 256, "forward");

  const Tensor dout = stored(random_tensor({rows, outputs}, generator), DType::kBFloat16);
  const Tensor earlier = stored(random_tensor({rows, inputs}, generator), DType::kBFloat16);
  Tensor dinp = earlier.clone();
  Tensor dweight = Tensor::zeros({outputs, inputs}, DType::kFloat32);
  Tensor dbias = Tensor::zeros({outputs}, DType::kFloat32);
  linear_backward(dinp, dweight, dbias, dout, inp, weight, GradientWrite::kAccumulate);
  Tensor dinp_expected = earlier.to_float32();
  Tensor dweight_expected = Tensor::zeros({outputs, inputs}, DType::kFloat32);
  Tensor dbias_expected = Tensor::zeros({outputs}, DType::kFloat32);
  linear_backward(dinp_expected, dweight_expected, dbias_expected, dout.to_float32(),
                  inp.to_float32(), weight.to_float32(), GradientWrite::kAccumulate);
  expect_close(dinp, dinp_expected, 1.0 / 256, "dinp");
  expect_close(dweight, dweight_expected, 1e-5, "dweight");
  expect_close(dbias, dbias_expected, 1e-5, "dbias");
}

// Float32 tensors under kBFloat16Inputs (training with float32 activations in bf16): each
// product is that of its operands rounded to bfloat16, summed in float32; exact again after.
TEST(Cpu16BitProducts, Float32ProductsReadRoundedInputsWhenAsked) {
  std::mt19937 generator(13);
  const Tensor inp = random_tensor({20, 33}, generator);
  const Tensor weight = random_tensor({7, 33}, generator);
  const OpBackend& cpu = op_backend(Device::kCPU);
  Tensor rounded_out = Tensor::empty({20, 7}, DType::kFloat32);
  cpu.set_float32_math(kernels::Float32Math::kBFloat16Inputs);
  EXPECT_EQ(cpu.float32_math(), kernels::Float32Math::kBFloat16Inputs);
  linear_forward(rounded_out, inp, weight, Tensor(), Activation::kNone);
  cpu.set_float32_math(kernels::Float32Math::kExact);
  Tensor expected = Tensor::empty({20, 7}, DType::kFloat32);
  linear_forward(expected, stored(inp, DType::kBFloat16).to_float32(),
                 stored(weight, DType::kBFloat16).to_float32(), Tensor(), Activation::kNone);
  expect_close(rounded_out, expected, 1e-6, "rounded inputs");
  Tensor exact = Tensor::empty({20, 7}, DType::kFloat32);
  linear_forward(exact, inp, weight, Tensor(), Activation::kNone);
  // Rounding the inputs moves the products by far more than float32's summation order does.
  double largest_change = 0;
  for (int64_t i = 0; i < exact.numel(); ++i) {
    largest_change = std::max<double>(
        largest_change, std::fabs(exact.data<float>()[i] - rounded_out.data<float>()[i]));
  }
  EXPECT_GT(largest_change, 1e-3);
}

}  // namespace
}  // namespace xlate
