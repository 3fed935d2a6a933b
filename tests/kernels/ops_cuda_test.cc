// Every op on CUDA tensors against the CPU backend (the reference), for float32, float16 and
// bfloat16 storage. Reduced-precision inputs are rounded to the dtype before the CPU computes
// its reference, so a test measures the kernel's error, not the input quantisation. Skipped
// (GTEST_SKIP) on a machine without a GPU; CI builds it and skips it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/gpu_required.h"
#include "engine/backend/cuda_backend.h"
#include "engine/ops/ops.h"
#include "kernels/runtime/gemm.h"
#include "tests/random_tensor.h"

namespace xlate {
namespace {

Tensor int_tensor(const std::vector<int32_t>& values, std::vector<int64_t> shape) {
  return Tensor::from_vector(values, std::move(shape));
}

class OpsCuda : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
  }
  DType dtype() const { return GetParam(); }
  // Allowed |gpu - cpu| relative to max(1, |cpu|), per storage dtype.
  double tolerance() const {
    switch (dtype()) {
      case DType::kFloat16: return 1e-2;
      case DType::kBFloat16: return 4e-2;
      default: return 1e-5;
    }
  }
  // The float32 values the GPU will see once `x` is stored in the dtype.
  Tensor rounded(const Tensor& x) const { return x.to_dtype(dtype()).to_float32(); }
  Tensor on_gpu(const Tensor& x) const {
    return x.dtype() == DType::kInt32 ? x.to(Device::kCUDA) : x.to_dtype(dtype()).to(Device::kCUDA);
  }
  Tensor empty_gpu(std::vector<int64_t> shape) const {
    return Tensor::empty(std::move(shape), dtype(), Device::kCUDA);
  }
  void expect_close(const Tensor& gpu, const Tensor& cpu, const std::string& what) const {
    const Tensor actual = gpu.to(Device::kCPU).to_float32();
    ASSERT_EQ(actual.numel(), cpu.numel()) << what;
    int reported = 0;
    for (int64_t i = 0; i < cpu.numel(); ++i) {
      const double expected = cpu.data<float>()[i], got = actual.data<float>()[i];
      const double allowed = tolerance() * std::max(1.0, std::fabs(expected));
      if (!(std::fabs(got - expected) <= allowed) && reported++ < 5) {
        ADD_FAILURE() << what << " at " << i << ": gpu " << got << " cpu " << expected;
      }
    }
  }
};

TEST_P(OpsCuda, EmbeddingScalesAndAddsPositions) {
  std::mt19937 generator(1);
  const Tensor table = rounded(random_tensor({40, 24}, generator));
  const Tensor positions = rounded(random_tensor({16, 24}, generator));
  const Tensor tokens = int_tensor({3, 0, 39, 7, 7, 12, 1, 2, 5, 8, 9, 10, 11, 30, 31}, {3, 5});
  Tensor expected = Tensor::empty({3, 5, 24}, DType::kFloat32);
  embedding_forward(expected, tokens, table, positions, std::sqrt(24.f), 2);
  Tensor out = empty_gpu({3, 5, 24});
  embedding_forward(out, on_gpu(tokens), on_gpu(table), on_gpu(positions), std::sqrt(24.f), 2);
  expect_close(out, expected, "embedding");
  // Rows at their own positions (the server's continuous decoding).
  const Tensor row_positions = int_tensor({7, 0, 4}, {3});
  embedding_forward(expected, tokens, table, positions, std::sqrt(24.f), 1, row_positions);
  embedding_forward(out, on_gpu(tokens), on_gpu(table), on_gpu(positions), std::sqrt(24.f), 1,
                    row_positions.to(Device::kCUDA));
  expect_close(out, expected, "embedding at row positions");
}

TEST_P(OpsCuda, LinearWithEveryEpilogue) {
  std::mt19937 generator(2);
  const int64_t rows = 37, inputs = 64, outputs = 48;
  const Tensor x = rounded(random_tensor({rows, inputs}, generator, 0.5f));
  const Tensor weight = rounded(random_tensor({outputs, inputs}, generator, 0.5f));
  const Tensor bias = rounded(random_tensor({outputs}, generator));
  for (bool with_bias : {false, true}) {
    for (Activation activation :
         {Activation::kNone, Activation::kRelu, Activation::kSwish, Activation::kGelu}) {
      const Tensor b = with_bias ? bias : Tensor();
      Tensor expected = Tensor::empty({rows, outputs}, DType::kFloat32);
      linear_forward(expected, x, weight, b, activation);
      Tensor out = empty_gpu({rows, outputs});
      linear_forward(out, on_gpu(x), on_gpu(weight), with_bias ? on_gpu(bias) : Tensor(),
                     activation);
      expect_close(out, expected, std::string("linear bias=") + (with_bias ? "1" : "0") +
                                      " activation=" +
                                      std::to_string(static_cast<int>(activation)));
    }
  }
}

// Float32 storage with --precision fp16/bf16's math mode: cuBLASLt may round each product's
// inputs to the mode's 16-bit type (fp32 accumulation), and to that type only, so the product
// equals the CPU's on inputs rounded that way and differs from the CPU's on inputs rounded the
// other way (bfloat16's 8-bit mantissa against float16's 11: ~1e-2 apart here, 1e-4 allowed).
TEST(CudaFloat32Math, ProductsRoundTheirInputsToTheModesType) {
  XLATE_SKIP_WITHOUT_GPU();
  std::mt19937 generator(5);
  const int64_t rows = 64, inputs = 256, outputs = 96;
  const Tensor x = random_tensor({rows, inputs}, generator, 1.f);
  const Tensor weight = random_tensor({outputs, inputs}, generator, 1.f);
  const auto reference = [&](DType inputs_type) {
    Tensor out = Tensor::empty({rows, outputs}, DType::kFloat32);
    linear_forward(out, x.to_dtype(inputs_type).to_float32(),
                   weight.to_dtype(inputs_type).to_float32(), Tensor(), Activation::kNone);
    return out;
  };
  const auto largest_difference = [](const Tensor& gpu, const Tensor& cpu) {
    const Tensor actual = gpu.to(Device::kCPU);
    double worst = 0;
    for (int64_t i = 0; i < cpu.numel(); ++i) {
      worst = std::max(worst, std::fabs(double{actual.data<float>()[i]} - cpu.data<float>()[i]) /
                                  std::max(1.0, std::fabs(double{cpu.data<float>()[i]})));
    }
    return worst;
  };
  const Tensor exact = reference(DType::kFloat32), as_float16 = reference(DType::kFloat16),
               as_bfloat16 = reference(DType::kBFloat16);
  const kernels::Float32Math before = cuda_backend::float32_math();
  kernels::GemmContext& gemm = cuda_backend::gemm();
  const bool by_copies_before = gemm.float16_inputs_by_copies();
  // float16 inputs both ways: inside cuBLASLt (tensor cores) and by copies (a P100's way).
  const std::pair<kernels::Float32Math, bool> modes[] = {
      {kernels::Float32Math::kExact, false},
      {kernels::Float32Math::kFloat16Inputs, false},
      {kernels::Float32Math::kFloat16Inputs, true},
      {kernels::Float32Math::kBFloat16Inputs, false}};
  for (const auto& [math, by_copies] : modes) {
    cuda_backend::set_float32_math(math);
    gemm.set_float16_inputs_by_copies(by_copies);
    // By copies, float16 math multiplies float16 copies (a path of its own, not cuBLASLt's
    // fast-16F mode, which would pass the same checks).
    if (by_copies) {
      ASSERT_EQ(gemm.rounding_copy_type(), kernels::ElementType::kFloat16);
    }
    Tensor out = Tensor::empty({rows, outputs}, DType::kFloat32, Device::kCUDA);
    linear_forward(out, x.to(Device::kCUDA), weight.to(Device::kCUDA), Tensor(), Activation::kNone);
    const double to_exact = largest_difference(out, exact),
                 to_float16 = largest_difference(out, as_float16),
                 to_bfloat16 = largest_difference(out, as_bfloat16);
    const std::string report = "math mode " + std::to_string(static_cast<int>(math)) +
                               (by_copies ? " by copies" : "") +
                               ": largest difference to the exact product " +
                               std::to_string(to_exact) + ", to float16 inputs' " +
                               std::to_string(to_float16) + ", to bfloat16 inputs' " +
                               std::to_string(to_bfloat16);
    SCOPED_TRACE(report);
    std::printf("%s\n", report.c_str());
    switch (math) {
      case kernels::Float32Math::kExact:
        EXPECT_LE(to_exact, 5e-5);  // float32 sums in cuBLASLt's order against the CPU's
        break;
      case kernels::Float32Math::kFloat16Inputs:
        EXPECT_LE(to_float16, 1e-4);
        EXPECT_GT(to_bfloat16, 1e-3);
        break;
      case kernels::Float32Math::kBFloat16Inputs:
        EXPECT_LE(to_bfloat16, 1e-4);
        EXPECT_GT(to_float16, 1e-3);
        break;
    }
  }
  cuda_backend::set_float32_math(before);
  gemm.set_float16_inputs_by_copies(by_copies_before);
}

// The general product under bfloat16 math (and float16 math by copies, a P100's way) on views,
// as attention's backward pass makes them: rows wider than the matrix (one head's columns),
// matrices of a strided batch, a 4-byte offset, both transposes. Each operand is rounded into a
// packed copy first; the result must be the product of the rounded views, computed here in
// double.
void check_strided_products_of_rounded_views(kernels::Float32Math math, DType copies) {
  std::mt19937 generator(8);
  kernels::GemmContext gemm(cuda_backend::stream());
  gemm.set_float32_math(math);
  gemm.set_float16_inputs_by_copies(true);
  ASSERT_EQ(gemm.rounding_copy_type(), cuda_backend::element_type(copies));
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      kernels::MatmulShape s;
      s.transpose_a = transpose_a;
      s.transpose_b = transpose_b;
      s.m = 7, s.n = 5, s.k = 33, s.batch = 3;
      const int64_t rows_a = transpose_a ? s.k : s.m, cols_a = transpose_a ? s.m : s.k;
      const int64_t rows_b = transpose_b ? s.n : s.k, cols_b = transpose_b ? s.k : s.n;
      s.lda = cols_a + 3, s.ldb = cols_b + 5, s.ldc = s.n;
      s.stride_a = rows_a * s.lda + 1, s.stride_b = rows_b * s.ldb + 2, s.stride_c = s.m * s.n;
      // One float of offset before each operand: a view at a 4-byte boundary.
      const Tensor a = random_tensor({1 + s.batch * s.stride_a}, generator, 1.f);
      const Tensor b = random_tensor({1 + s.batch * s.stride_b}, generator, 1.f);
      const Tensor a_rounded = a.to_dtype(copies).to_float32();
      const Tensor b_rounded = b.to_dtype(copies).to_float32();
      const float* av = a_rounded.data<float>() + 1;
      const float* bv = b_rounded.data<float>() + 1;
      const Tensor a_gpu = a.to(Device::kCUDA), b_gpu = b.to(Device::kCUDA);
      Tensor c = Tensor::empty({s.batch * s.m * s.n}, DType::kFloat32, Device::kCUDA);
      gemm.matmul(c.raw_data(), a_gpu.data<float>() + 1, b_gpu.data<float>() + 1, s, 1.f, 0.f,
                  kernels::ElementType::kFloat32);
      const Tensor got = c.to(Device::kCPU);
      double worst = 0;
      for (int64_t matrix = 0; matrix < s.batch; ++matrix) {
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double expected = 0;
            for (int64_t l = 0; l < s.k; ++l) {
              const float x =
                  av[matrix * s.stride_a + (transpose_a ? l * s.lda + i : i * s.lda + l)];
              const float y =
                  bv[matrix * s.stride_b + (transpose_b ? j * s.ldb + l : l * s.ldb + j)];
              expected += double{x} * y;
            }
            const double actual = got.data<float>()[(matrix * s.m + i) * s.n + j];
            worst =
                std::max(worst, std::fabs(actual - expected) / std::max(1.0, std::fabs(expected)));
          }
        }
      }
      EXPECT_LE(worst, 1e-5) << dtype_name(copies) << " transpose_a " << transpose_a
                             << " transpose_b " << transpose_b;
    }
  }
}

TEST(CudaFloat32Math, StridedBatchedProductsOfViewsRoundToBFloat16) {
  XLATE_SKIP_WITHOUT_GPU();
  check_strided_products_of_rounded_views(kernels::Float32Math::kBFloat16Inputs,
                                          DType::kBFloat16);
}

TEST(CudaFloat32Math, StridedBatchedProductsOfViewsRoundToFloat16ByCopies) {
  XLATE_SKIP_WITHOUT_GPU();
  check_strided_products_of_rounded_views(kernels::Float32Math::kFloat16Inputs, DType::kFloat16);
}

// A context with room for 3 plans meets 8 row counts (a training run's batches) and then the
// first again: it keeps at most 3 plans, and a shape whose plan was dropped plans anew and
// still computes the right product.
TEST_P(OpsCuda, GemmPlansStayBoundedAndADroppedShapePlansAgain) {
  std::mt19937 generator(21);
  const int64_t inputs = 64, outputs = 48;
  const Tensor weight = rounded(random_tensor({outputs, inputs}, generator, 0.5f));
  const Tensor bias = rounded(random_tensor({outputs}, generator));
  const Tensor weight_gpu = on_gpu(weight), bias_gpu = on_gpu(bias);
  kernels::GemmContext gemm(cuda_backend::stream(), size_t{4} << 20, /*plan_capacity=*/3);
  for (int64_t rows : {1, 2, 3, 5, 8, 13, 21, 34, 1}) {
    const Tensor x = rounded(random_tensor({rows, inputs}, generator, 0.5f));
    Tensor expected = Tensor::empty({rows, outputs}, DType::kFloat32);
    linear_forward(expected, x, weight, bias, Activation::kRelu);
    const Tensor x_gpu = on_gpu(x);
    Tensor out = empty_gpu({rows, outputs});
    gemm.linear_forward(out.raw_data(), x_gpu.raw_data(), weight_gpu.raw_data(),
                        bias_gpu.raw_data(), rows, outputs, inputs,
                        kernels::GemmEpilogue::kBiasRelu, cuda_backend::element_type(dtype()));
    expect_close(out, expected, "linear through a 3-plan context, rows=" + std::to_string(rows));
    EXPECT_LE(gemm.cached_plans(), 3u);
  }
  EXPECT_EQ(gemm.plan_counts().misses, 9u);
  EXPECT_EQ(gemm.plan_counts().evictions, 6u);
  EXPECT_EQ(gemm.plan_counts().hits, 0u);
}

TEST_P(OpsCuda, AddLayerNormIncludingInPlace) {
  std::mt19937 generator(3);
  for (int64_t channels : {40, 512, 1000}) {
    const Tensor a = rounded(random_tensor({9, channels}, generator, 2.f));
    const Tensor b = rounded(random_tensor({9, channels}, generator));
    const Tensor gamma = rounded(random_tensor({channels}, generator));
    const Tensor beta = rounded(random_tensor({channels}, generator));
    Tensor expected = Tensor::empty({9, channels}, DType::kFloat32);
    add_layer_norm_forward(expected, a, b, gamma, beta, 1e-6f);
    Tensor inp = on_gpu(a);
    add_layer_norm_forward(inp, inp, on_gpu(b), on_gpu(gamma), on_gpu(beta), 1e-6f);
    expect_close(inp, expected, "add_layer_norm C=" + std::to_string(channels));
  }
}

// Batch-major encoder self-attention with padding: row n's keys are rows n*S .. n*S+S-1.
TEST_P(OpsCuda, EncoderAttentionWithPadding) {
  std::mt19937 generator(4);
  const int64_t rows = 3, steps = 7;
  const int heads = 4, head_dim = 16;
  const Tensor query = rounded(random_tensor({rows, steps, heads * head_dim}, generator));
  const Tensor keys = rounded(random_tensor({rows, steps, heads * head_dim}, generator));
  const Tensor values = rounded(random_tensor({rows, steps, heads * head_dim}, generator));
  std::vector<int32_t> table;
  for (int64_t n = 0; n < rows; ++n)
    for (int32_t s = 0; s < steps; ++s) table.push_back(static_cast<int32_t>(n * steps + s));
  const Tensor key_rows = int_tensor(table, {rows, steps});
  const Tensor lengths = int_tensor({7, 4, 1}, {rows});
  Tensor expected = Tensor::empty({rows, steps, heads * head_dim}, DType::kFloat32);
  attention_forward(expected, query, keys, values, key_rows, lengths, heads, false);
  Tensor out = empty_gpu({rows, steps, heads * head_dim});
  attention_forward(out, on_gpu(query), on_gpu(keys), on_gpu(values), on_gpu(key_rows),
                    on_gpu(lengths), heads, false);
  expect_close(out, expected, "encoder attention");
}

// Decoder attention over a time-major cache whose rows are reached through a beam-reordering
// table, one query (a decoding step) and several (causal prefix), head dims for every
// dims-per-lane variant of the kernel (40 and 64: 2, 100: 4, 256: 8), lengths that end inside
// and past a round of keys (the kernel scores 16 keys per block at once).
TEST_P(OpsCuda, CausalAttentionThroughTheRowTable) {
  std::mt19937 generator(5);
  const int64_t rows = 4, table_width = 37, cache_rows = 90;
  for (int head_dim : {64, 40, 100, 256}) {
    for (int64_t steps : {1, 3}) {
      const int heads = 8;
      const Tensor query = rounded(random_tensor({rows, steps, heads * head_dim}, generator));
      const Tensor keys = rounded(random_tensor({cache_rows, heads * head_dim}, generator));
      const Tensor values = rounded(random_tensor({cache_rows, heads * head_dim}, generator));
      std::vector<int32_t> table;
      std::uniform_int_distribution<int32_t> any_row(0, cache_rows - 1);
      for (int64_t i = 0; i < rows * table_width; ++i) table.push_back(any_row(generator));
      const Tensor key_rows = int_tensor(table, {rows, table_width});
      const Tensor lengths = int_tensor({37, 3, 17, static_cast<int32_t>(steps)}, {rows});
      Tensor expected = Tensor::empty({rows, steps, heads * head_dim}, DType::kFloat32);
      Tensor expected_weights =
          Tensor::empty({rows, heads, steps, table_width}, DType::kFloat32);
      attention_forward(expected, query, keys, values, key_rows, lengths, heads, true,
                        &expected_weights);
      Tensor out = empty_gpu({rows, steps, heads * head_dim});
      attention_forward(out, on_gpu(query), on_gpu(keys), on_gpu(values), on_gpu(key_rows),
                        on_gpu(lengths), heads, true);
      const std::string what =
          "causal attention d=" + std::to_string(head_dim) + " T=" + std::to_string(steps);
      expect_close(out, expected, what);
      // The weights (alignments): the same output, and the probabilities that made it, 0 at
      // positions past each query's length (the buffer starts as NaN to show unwritten ones).
      Tensor weights = Tensor::from_vector(
                           std::vector<float>(size_t(rows * heads * steps * table_width), NAN),
                           {rows, heads, steps, table_width})
                           .to(Device::kCUDA);
      attention_forward(out, on_gpu(query), on_gpu(keys), on_gpu(values), on_gpu(key_rows),
                        on_gpu(lengths), heads, true, &weights);
      expect_close(out, expected, what + " (with weights)");
      expect_close(weights, expected_weights, what + " weights");
    }
  }
}

// Many queries per row, as the encoder and training run it: the kernel that stages each row's
// keys and values in shared memory. Rows longer than a warp's 32 lanes (S = 45 and 70), padded
// rows, a row with no key (its queries get zeros), causal and not, the probabilities asked for;
// key and value widths that differ. Then a table too wide for any GPU's shared memory
// (S = 3,000 with d = 256, 6 MB), which goes to the kernel of one query per block.
TEST_P(OpsCuda, ManyQueriesPerRowAttention) {
  std::mt19937 generator(21);
  struct Case {
    int64_t steps, table_width;
    int key_dim, value_dim;
    bool causal;
    std::vector<int32_t> lengths;
  };
  const Case cases[] = {{45, 45, 64, 64, false, {45, 17, 0, 33}},
                        {45, 45, 64, 64, true, {45, 45, 45, 45}},
                        {12, 70, 40, 24, false, {70, 1, 69, 32}},
                        {2, 3000, 256, 256, false, {3000, 2999, 5, 1000}}};
  for (const Case& c : cases) {
    const int64_t rows = 4;
    const int heads = 2;
    const Tensor query = rounded(random_tensor({rows, c.steps, heads * c.key_dim}, generator));
    const Tensor keys =
        rounded(random_tensor({rows * c.table_width, heads * c.key_dim}, generator));
    const Tensor values =
        rounded(random_tensor({rows * c.table_width, heads * c.value_dim}, generator));
    std::vector<int32_t> table;
    for (int64_t i = 0; i < rows * c.table_width; ++i) table.push_back(static_cast<int32_t>(i));
    std::shuffle(table.begin(), table.end(), generator);  // rows reached through the table
    const Tensor key_rows = int_tensor(table, {rows, c.table_width});
    const Tensor lengths = int_tensor(c.lengths, {rows});
    Tensor expected = Tensor::empty({rows, c.steps, heads * c.value_dim}, DType::kFloat32);
    Tensor expected_weights =
        Tensor::empty({rows, heads, c.steps, c.table_width}, DType::kFloat32);
    attention_forward(expected, query, keys, values, key_rows, lengths, heads, c.causal,
                      &expected_weights);
    Tensor out = empty_gpu({rows, c.steps, heads * c.value_dim});
    Tensor weights =
        Tensor::from_vector(std::vector<float>(size_t(expected_weights.numel()), NAN),
                            expected_weights.shape())
            .to(Device::kCUDA);
    attention_forward(out, on_gpu(query), on_gpu(keys), on_gpu(values), on_gpu(key_rows),
                      on_gpu(lengths), heads, c.causal, &weights);
    const std::string what = "T=" + std::to_string(c.steps) + " S=" +
                             std::to_string(c.table_width) + (c.causal ? " causal" : "");
    expect_close(out, expected, what);
    expect_close(weights, expected_weights, what + " weights");
  }
}

// Query, keys and values as column blocks of one [rows, q | k | v] tensor (key width 64, value
// width 32, 2 heads), and a scatter of its k | v block into cache rows, as the decoder runs them.
TEST_P(OpsCuda, AttentionAndScatterReadColumnBlocks) {
  std::mt19937 generator(13);
  const int64_t rows = 3, steps = 5, key_width = 64, value_width = 32;
  const int64_t width = 2 * key_width + value_width;
  const int heads = 2;
  const Tensor fused = rounded(random_tensor({rows, steps, width}, generator));
  std::vector<int32_t> table;
  for (int32_t i = rows * steps - 1; i >= 0; --i) table.push_back(i);  // reversed rows
  const Tensor key_rows = int_tensor(table, {rows, steps});
  const Tensor lengths = int_tensor({5, 1, 3}, {rows});
  const Columns query(fused, 0, key_width), keys(fused, key_width, key_width);
  const Columns values(fused, 2 * key_width, value_width);
  Tensor expected = Tensor::empty({rows, steps, value_width}, DType::kFloat32);
  attention_forward(expected, query, keys, values, key_rows, lengths, heads, false);
  const Tensor device_fused = on_gpu(fused);
  Tensor out = empty_gpu({rows, steps, value_width});
  attention_forward(out, Columns(device_fused, 0, key_width),
                    Columns(device_fused, key_width, key_width),
                    Columns(device_fused, 2 * key_width, value_width), on_gpu(key_rows),
                    on_gpu(lengths), heads, false);
  expect_close(out, expected, "attention over column blocks");

  const Tensor indices = int_tensor({14, 0, 7, 3, 11, 1, 2, 9, 4, 5, 6, 8, 10, 12, 13}, {15});
  Tensor cache = Tensor::zeros({15, width - key_width}, dtype()).to_float32();
  scatter_rows(cache, Columns(fused, key_width, width - key_width), indices);
  Tensor device_cache = on_gpu(Tensor::zeros({15, width - key_width}, DType::kFloat32));
  scatter_rows(device_cache, Columns(device_fused, key_width, width - key_width),
               indices.to(Device::kCUDA));
  expect_close(device_cache, cache, "scatter of a column block");
}

TEST_P(OpsCuda, LogSoftmax) {
  std::mt19937 generator(6);
  const Tensor logits = rounded(random_tensor({5, 1000}, generator, 4.f));
  Tensor expected = Tensor::empty({5, 1000}, DType::kFloat32);
  log_softmax_forward(expected, logits);
  Tensor out = on_gpu(logits);
  log_softmax_forward(out, out);
  expect_close(out, expected, "log_softmax");
}

// The ids must equal the CPU's exactly (both rank the same rounded logits, ties by id) and the
// values must be close, over vocabularies of 1 to 33 parts of the kernel (the last with the
// 32-part cap), k in every register-list size, and rows with many tied logits.
TEST_P(OpsCuda, LogSoftmaxTopKForBeamSearch) {
  struct Case {
    int64_t rows, vocabulary;
    int k;
  };
  const Case cases[] = {{6, 8000, 8}, {130, 16000, 9}, {5, 37, 12}, {4, 3001, 16},
                        {3, 70001, 32}, {2, 100, 1}, {7, 2048, 17}};
  std::mt19937 generator(7);
  for (const Case& c : cases) {
    const std::string what = "V " + std::to_string(c.vocabulary) + " k " + std::to_string(c.k);
    Tensor logits = random_tensor({c.rows, c.vocabulary}, generator, 3.f);
    for (int64_t i = 0; i < logits.numel(); i += 2) {  // ties: every other logit in steps of 1/4
      logits.data<float>()[i] = std::round(logits.data<float>()[i] * 4.f) / 4.f;
    }
    logits = rounded(logits);
    const Tensor offsets = random_tensor({c.rows}, generator, 5.f);
    Tensor expected_values = Tensor::empty({c.rows, c.k}, DType::kFloat32);
    Tensor expected_ids = Tensor::empty({c.rows, c.k}, DType::kInt32);
    log_softmax_top_k(expected_values, expected_ids, logits, offsets, c.k);

    Tensor values = Tensor::empty({c.rows, c.k}, DType::kFloat32, Device::kCUDA);
    Tensor ids = Tensor::empty({c.rows, c.k}, DType::kInt32, Device::kCUDA);
    log_softmax_top_k(values, ids, on_gpu(logits), offsets.to(Device::kCUDA), c.k);
    expect_close(values, expected_values, "top-k values, " + what);
    const Tensor host_ids = ids.to(Device::kCPU);
    EXPECT_EQ(std::memcmp(host_ids.raw_data(), expected_ids.raw_data(), host_ids.nbytes()), 0)
        << "top-k ids, " << what;
  }
}

TEST_P(OpsCuda, GatherScatterAndDeviceCopiesAreExact) {
  std::mt19937 generator(8);
  const Tensor cache = random_tensor({6, 2, 10}, generator).to_dtype(dtype());
  const Tensor indices = int_tensor({5, 0, 0, 3}, {4});
  Tensor expected = Tensor::empty({4, 2, 10}, dtype());
  gather_rows(expected, cache, indices);
  Tensor out = Tensor::empty({4, 2, 10}, dtype(), Device::kCUDA);
  gather_rows(out, cache.to(Device::kCUDA), indices.to(Device::kCUDA));
  const Tensor back = out.to(Device::kCPU);
  ASSERT_EQ(back.nbytes(), expected.nbytes());
  EXPECT_EQ(std::memcmp(back.raw_data(), expected.raw_data(), back.nbytes()), 0);
  // Through page-locked host memory, both ways.
  Tensor pinned = Tensor::staging({4, 2, 10}, dtype(), Device::kCUDA);
  pinned.copy_from(out);
  EXPECT_EQ(std::memcmp(pinned.raw_data(), expected.raw_data(), pinned.nbytes()), 0);
  EXPECT_EQ(std::memcmp(pinned.to(Device::kCUDA).to(Device::kCPU).raw_data(), expected.raw_data(),
                        expected.nbytes()), 0);
  Tensor scattered = cache.clone(), scattered_gpu = cache.to(Device::kCUDA);
  const Tensor fresh = random_tensor({2, 2, 10}, generator).to_dtype(dtype());
  const Tensor targets = int_tensor({4, 1}, {2});
  scatter_rows(scattered, fresh, targets);
  scatter_rows(scattered_gpu, fresh.to(Device::kCUDA), targets.to(Device::kCUDA));
  EXPECT_EQ(std::memcmp(scattered_gpu.to(Device::kCPU).raw_data(), scattered.raw_data(),
                        scattered.nbytes()), 0);
  // Conversion on the device rounds exactly like the host conversion.
  const Tensor wide = random_tensor({1000}, generator, 100.f);
  const Tensor host_converted = wide.to_dtype(dtype());
  const Tensor device_converted = wide.to(Device::kCUDA).to_dtype(dtype()).to(Device::kCPU);
  EXPECT_EQ(std::memcmp(host_converted.raw_data(), device_converted.raw_data(),
                        host_converted.nbytes()), 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OpsCuda,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return dtype_name(info.param);
                         });

// A thread that only moves data (a model loader, an admin RPC) gets a stream and an allocator,
// not a cuBLASLt context: the 32 MiB workspace comes with the thread's first product.
TEST(CudaWorkers, TheCublasWorkspaceComesWithTheFirstProductNotTheFirstCopy) {
  XLATE_SKIP_WITHOUT_GPU();
  const Tensor host = Tensor::from_vector(std::vector<float>(256, 1.f), {16, 16});
  // The process's CUDA context (hundreds of MiB) exists before anything is measured.
  Tensor on_main_thread = host.to(Device::kCUDA);
  cuda_backend::synchronize();
  size_t before = 0, after_copy = 0, after_product = 0;
  std::thread mover([&] {
    before = cuda_backend::device_memory_free();
    const Tensor copied = host.to(Device::kCUDA);
    cuda_backend::synchronize();
    after_copy = cuda_backend::device_memory_free();
    cuda_backend::gemm();
    after_product = cuda_backend::device_memory_free();
  });
  mover.join();
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_LT(before - std::min(before, after_copy), 16 * kMiB)
      << "a copy-only thread took " << (before - after_copy) / kMiB << " MiB";
  EXPECT_GE(after_copy - std::min(after_copy, after_product), 32 * kMiB)
      << "the first product took " << (after_copy - after_product) / kMiB << " MiB";
}

}  // namespace
}  // namespace xlate
