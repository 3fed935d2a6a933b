// Every training op (engine/ops/training_ops.h, and the statistics add_layer_norm_forward saves
// for them) on CUDA tensors against the CPU backend (the reference). The training ops are
// float32 on both backends. Outputs an op overwrites start as NaN on the GPU, so an element the
// kernel never writes shows as a mismatch; gradients an op accumulates into start from the same
// random values on both devices. Sizes are no multiples of 32 or 256, so every kernel runs a
// partial warp and a partial block. Skipped (GTEST_SKIP) on a machine without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/gpu_required.h"
#include "engine/backend/cuda_backend.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "kernels/runtime/gemm.h"
#include "tests/random_tensor.h"

namespace xlate {
namespace {

// Allowed |gpu - cpu| relative to max(1, |cpu|). Element-wise ops and reductions along one row
// differ by rounding only. GEMMs (cuBLASLt picks its own summation order) and sums over hundreds
// of rows get more, but still 10x less than TF32 inputs would cost (~1e-3): TF32 must fail.
constexpr double kTolerance = 1e-5;
constexpr double kSumTolerance = 1e-4;

Tensor on_gpu(const Tensor& host) { return host.to(Device::kCUDA); }

// A CUDA tensor (float32 unless `storage` says otherwise) full of NaN (converted and uploaded
// on the host, so it does not depend on any kernel under test).
Tensor nan_gpu(std::vector<int64_t> shape, DType storage = DType::kFloat32) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  const std::vector<float> nans(static_cast<size_t>(count),
                                std::numeric_limits<float>::quiet_NaN());
  return Tensor::from_vector(nans, std::move(shape)).to_dtype(storage).to(Device::kCUDA);
}

Tensor empty_cpu(std::vector<int64_t> shape) {
  return Tensor::empty(std::move(shape), DType::kFloat32);
}

// Ids drawn uniformly from [0, bound).
Tensor random_ids(std::vector<int64_t> shape, int32_t bound, std::mt19937& generator) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::uniform_int_distribution<int32_t> any_id(0, bound - 1);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int32_t& id : ids) id = any_id(generator);
  return Tensor::from_vector(ids, std::move(shape));
}

// x as a `storage` tensor holds it, in float32: the CPU reference's input for a GPU run on
// 16-bit activations (x itself for float32).
Tensor stored(const Tensor& x, DType storage) {
  return storage == DType::kFloat32 ? x : x.to_dtype(storage).to_float32();
}

// x uploaded in `storage`.
Tensor on_gpu_as(const Tensor& x, DType storage) {
  return x.to_dtype(storage).to(Device::kCUDA);
}

// |gpu - cpu| <= tolerance · max(1, |cpu|) for every element (a NaN always fails); reports at
// most 5 mismatches. A tolerance of 0 asks for equal values (0 and -0 count as equal). gpu may
// be 16-bit.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tolerance,
                  const std::string& what) {
  const Tensor actual = gpu.to(Device::kCPU).to_float32();
  ASSERT_EQ(actual.shape(), cpu.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double expected = cpu.data<float>()[i], got = actual.data<float>()[i];
    const double allowed = tolerance * std::max(1.0, std::fabs(expected));
    if (!(std::fabs(got - expected) <= allowed) && reported++ < 5) {
      ADD_FAILURE() << what << " at " << i << ": gpu " << got << " cpu " << expected;
    }
  }
}

// The same bits in every element; reports at most 5 mismatches.
void expect_identical(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  const Tensor actual = gpu.to(Device::kCPU).to_float32();
  ASSERT_EQ(actual.shape(), cpu.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const float expected = cpu.data<float>()[i], got = actual.data<float>()[i];
    if (std::memcmp(&expected, &got, sizeof(float)) != 0 && reported++ < 5) {
      ADD_FAILURE() << what << " at " << i << ": gpu " << got << " cpu " << expected;
    }
  }
}

class TrainingOpsCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
  }
};

// Every combination the trainer uses: dinp overwritten or accumulated, or not wanted (the
// first layer's input); no bias. M = 1 runs the GEMMs as a vector product.
TEST_F(TrainingOpsCuda, LinearBackward) {
  std::mt19937 generator(1);
  const int64_t outputs = 72, inputs = 40;
  struct Variant {
    const char* name;
    bool with_dinp, with_dbias;
    GradientWrite write;
  };
  const Variant variants[] = {{"overwrite", true, true, GradientWrite::kOverwrite},
                              {"accumulate", true, true, GradientWrite::kAccumulate},
                              {"no dinp", false, true, GradientWrite::kOverwrite},
                              {"no dbias", true, false, GradientWrite::kAccumulate}};
  for (int64_t rows : {300, 1}) {
    const Tensor dout = random_tensor({rows, outputs}, generator);
    const Tensor inp = random_tensor({rows, inputs}, generator);
    const Tensor weight = random_tensor({outputs, inputs}, generator, 0.5f);
    for (const Variant& variant : variants) {
      const std::string what =
          std::string("linear_backward M=") + std::to_string(rows) + " " + variant.name;
      const bool accumulate = variant.write == GradientWrite::kAccumulate;
      const Tensor dinp_start = random_tensor({rows, inputs}, generator);
      const Tensor dweight_start = random_tensor({outputs, inputs}, generator);
      const Tensor dbias_start = random_tensor({outputs}, generator);

      Tensor dinp, gpu_dinp;
      if (variant.with_dinp) {
        dinp = accumulate ? dinp_start.clone() : empty_cpu({rows, inputs});
        gpu_dinp = accumulate ? on_gpu(dinp_start) : nan_gpu({rows, inputs});
      }
      Tensor dbias, gpu_dbias;
      if (variant.with_dbias) {
        dbias = dbias_start.clone();
        gpu_dbias = on_gpu(dbias_start);
      }
      Tensor dweight = dweight_start.clone();
      Tensor gpu_dweight = on_gpu(dweight_start);
      linear_backward(dinp, dweight, dbias, dout, inp, weight, variant.write);
      linear_backward(gpu_dinp, gpu_dweight, gpu_dbias, on_gpu(dout), on_gpu(inp),
                      on_gpu(weight), variant.write);
      if (variant.with_dinp) expect_close(gpu_dinp, dinp, kSumTolerance, what + " dinp");
      expect_close(gpu_dweight, dweight, kSumTolerance, what + " dweight");
      if (variant.with_dbias) expect_close(gpu_dbias, dbias, kSumTolerance, what + " dbias");
    }
  }
}

// Under bfloat16 math (--precision bf16), and float16 math by copies (--precision fp16 on a GPU
// without tensor cores), the two products read 16-bit copies of dout, inp and weight (dout
// rounded once for both): they equal the CPU's products of the rounded operands, and differ
// from the exact ones by more than the tolerance (so a path that ignored the mode fails). The
// bias gradient sums the float32 dout.
void check_linear_backward_reads_rounded_operands(kernels::Float32Math math, DType copies) {
  struct Restore {
    kernels::Float32Math math = cuda_backend::float32_math();
    bool by_copies = cuda_backend::gemm().float16_inputs_by_copies();
    ~Restore() {
      cuda_backend::set_float32_math(math);
      cuda_backend::gemm().set_float16_inputs_by_copies(by_copies);
    }
  } restore;
  const std::string what = dtype_name(copies);
  std::mt19937 generator(12);
  const int64_t rows = 300, outputs = 72, inputs = 40;
  const Tensor dout = random_tensor({rows, outputs}, generator);
  const Tensor inp = random_tensor({rows, inputs}, generator);
  const Tensor weight = random_tensor({outputs, inputs}, generator, 0.5f);
  const auto rounded = [copies](const Tensor& x) { return x.to_dtype(copies).to_float32(); };
  const Tensor dinp_start = random_tensor({rows, inputs}, generator);
  const Tensor dweight_start = random_tensor({outputs, inputs}, generator);
  const Tensor dbias_start = random_tensor({outputs}, generator);
  Tensor exact_dinp = dinp_start.clone(), exact_dweight = dweight_start.clone();
  Tensor exact_dbias = dbias_start.clone();
  linear_backward(exact_dinp, exact_dweight, exact_dbias, dout, inp, weight,
                  GradientWrite::kAccumulate);
  Tensor rounded_dinp = dinp_start.clone(), rounded_dweight = dweight_start.clone();
  Tensor unused_dbias;
  linear_backward(rounded_dinp, rounded_dweight, unused_dbias, rounded(dout), rounded(inp),
                  rounded(weight), GradientWrite::kAccumulate);

  cuda_backend::set_float32_math(math);
  cuda_backend::gemm().set_float16_inputs_by_copies(true);
  ASSERT_EQ(cuda_backend::gemm().rounding_copy_type(), cuda_backend::element_type(copies));
  Tensor gpu_dinp = on_gpu(dinp_start), gpu_dweight = on_gpu(dweight_start);
  Tensor gpu_dbias = on_gpu(dbias_start);
  linear_backward(gpu_dinp, gpu_dweight, gpu_dbias, on_gpu(dout), on_gpu(inp), on_gpu(weight),
                  GradientWrite::kAccumulate);
  expect_close(gpu_dinp, rounded_dinp, kSumTolerance, what + " dinp");
  expect_close(gpu_dweight, rounded_dweight, kSumTolerance, what + " dweight");
  expect_close(gpu_dbias, exact_dbias, kSumTolerance, what + " dbias (float32 dout)");
  double farthest_from_exact = 0;
  const Tensor got = gpu_dweight.to(Device::kCPU);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double difference =
        std::fabs(double{got.data<float>()[i]} - exact_dweight.data<float>()[i]);
    farthest_from_exact = std::max(farthest_from_exact, difference);
  }
  // float16's 11-bit mantissa against bfloat16's 8: the exact product is nearer.
  EXPECT_GT(farthest_from_exact, copies == DType::kBFloat16 ? 1e-2 : 1e-4)
      << what << ": dweight is the exact product's: operands not rounded";
}

TEST_F(TrainingOpsCuda, LinearBackwardUnderBFloat16MathReadsRoundedOperands) {
  if (cuda_backend::compute_capability() < 80) {
    GTEST_SKIP() << "bfloat16 products need compute capability 8.0";
  }
  check_linear_backward_reads_rounded_operands(kernels::Float32Math::kBFloat16Inputs,
                                               DType::kBFloat16);
}

TEST_F(TrainingOpsCuda, LinearBackwardUnderFloat16MathByCopiesReadsRoundedOperands) {
  check_linear_backward_reads_rounded_operands(kernels::Float32Math::kFloat16Inputs,
                                               DType::kFloat16);
}

// A selection without arithmetic: equal values. About half of ReLU's outputs are exactly 0.
// A bias gradient over more rows than the column sums' grid holds (65,535 blocks of 256 rows) is
// refused naming the limit, before any launch (which would fail with "invalid configuration").
TEST_F(TrainingOpsCuda, ColumnSumsBeyondTheirGridAreRefusedNamingTheLimit) {
  const int64_t rows = 65535 * 256 + 1;
  const Tensor dout = Tensor::zeros({rows, 1}, DType::kFloat32, Device::kCUDA);
  const Tensor inp = Tensor::zeros({rows, 1}, DType::kFloat32, Device::kCUDA);
  const Tensor weight = Tensor::zeros({1, 1}, DType::kFloat32, Device::kCUDA);
  Tensor dinp = Tensor::empty({rows, 1}, DType::kFloat32, Device::kCUDA);
  Tensor dweight = Tensor::zeros({1, 1}, DType::kFloat32, Device::kCUDA);
  Tensor dbias = Tensor::zeros({1}, DType::kFloat32, Device::kCUDA);
  try {
    linear_backward(dinp, dweight, dbias, dout, inp, weight, GradientWrite::kOverwrite);
    cuda_backend::synchronize();
    ADD_FAILURE() << "a bias gradient over " << rows << " rows was not refused";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("at most 16776960"), std::string::npos)
        << error.what();
  }
}

// Views at any float offset (4-byte aligned only): one head's columns, and the trainer's flat
// buffer before its parameters were aligned to 8 elements (a caller may still pass such views);
// cuBLASLt assumes 256 bytes unless told. Forward (bias and ReLU in the epilogue) and backward
// over such views.
TEST_F(TrainingOpsCuda, LinearOnViewsAtOddFloatOffsets) {
  std::mt19937 generator(11);
  const int64_t rows = 37, outputs = 72, inputs = 40;
  const Tensor weight = random_tensor({outputs, inputs}, generator, 0.5f);
  const Tensor bias = random_tensor({outputs}, generator);
  const Tensor inp = random_tensor({rows, inputs}, generator);
  const Tensor dout = random_tensor({rows, outputs}, generator);
  // One buffer, every operand 1 float past the previous one's end: offsets 1, 2882, 2955, ...
  Tensor flat = nan_gpu({3 * outputs * inputs + 2 * outputs + rows * (inputs + 2 * outputs) + 8});
  int64_t next = 1;
  const auto place = [&](const Tensor& host, std::vector<int64_t> shape) {
    Tensor view = flat.view(next, std::move(shape));
    if (host.defined()) view.copy_from(host);
    next += view.numel() + 1;
    return view;
  };
  const Tensor gpu_weight = place(weight, {outputs, inputs});
  const Tensor gpu_bias = place(bias, {outputs});
  const Tensor gpu_inp = place(inp, {rows, inputs});
  Tensor gpu_out = place(Tensor(), {rows, outputs});
  Tensor gpu_dinp = place(Tensor(), {rows, inputs});
  Tensor gpu_dweight = place(Tensor::zeros({outputs, inputs}, DType::kFloat32), {outputs, inputs});
  Tensor gpu_dbias = place(Tensor::zeros({outputs}, DType::kFloat32), {outputs});

  Tensor out = empty_cpu({rows, outputs});
  linear_forward(out, inp, weight, bias, Activation::kRelu);
  linear_forward(gpu_out, gpu_inp, gpu_weight, gpu_bias, Activation::kRelu);
  expect_close(gpu_out, out, kSumTolerance, "linear_forward on unaligned views");

  Tensor dinp = empty_cpu({rows, inputs});
  Tensor dweight = Tensor::zeros({outputs, inputs}, DType::kFloat32);
  Tensor dbias = Tensor::zeros({outputs}, DType::kFloat32);
  linear_backward(dinp, dweight, dbias, dout, inp, weight, GradientWrite::kOverwrite);
  linear_backward(gpu_dinp, gpu_dweight, gpu_dbias, on_gpu(dout), gpu_inp, gpu_weight,
                  GradientWrite::kOverwrite);
  expect_close(gpu_dinp, dinp, kSumTolerance, "dinp on unaligned views");
  expect_close(gpu_dweight, dweight, kSumTolerance, "dweight on unaligned views");
  expect_close(gpu_dbias, dbias, kSumTolerance, "dbias on unaligned views");
}

TEST_F(TrainingOpsCuda, ReluBackward) {
  std::mt19937 generator(2);
  const std::vector<int64_t> shape = {3, 37, 71};
  Tensor out = random_tensor(shape, generator);
  for (int64_t i = 0; i < out.numel(); ++i) {
    out.data<float>()[i] = std::max(0.f, out.data<float>()[i]);
  }
  const Tensor dout = random_tensor(shape, generator);
  Tensor expected = empty_cpu(shape);
  relu_backward(expected, dout, out);

  Tensor dinp = nan_gpu(shape);
  relu_backward(dinp, on_gpu(dout), on_gpu(out));
  expect_close(dinp, expected, 0.0, "relu_backward");
  Tensor in_place = on_gpu(dout);
  relu_backward(in_place, in_place, on_gpu(out));
  expect_close(in_place, expected, 0.0, "relu_backward in place");
}

// Random inputs of a residual LayerNorm LN(residual + Dropout(inp)) (drawn in member order)
// and their CPU forward.
struct LayerNormCase {
  LayerNormCase(int64_t rows, int64_t channels, float dropout, std::mt19937& generator)
      : inp(random_tensor({rows, channels}, generator, 2.f)),
        residual(random_tensor({rows, channels}, generator)),
        gamma(random_tensor({channels}, generator)),
        beta(random_tensor({channels}, generator)),
        out(empty_cpu({rows, channels})),
        saved{dropout, 0x5eedu, empty_cpu({rows, channels}), empty_cpu({rows}), empty_cpu({rows})} {
    add_layer_norm_forward(out, inp, residual, gamma, beta, 1e-6f, &saved);
  }
  Tensor inp, residual, gamma, beta, out;
  LayerNormTraining saved;
};

TEST_F(TrainingOpsCuda, AddLayerNormSavesStatistics) {
  std::mt19937 generator(3);
  const int64_t rows = 37;
  for (float dropout : {0.f, 0.1f}) {
    // 1024: the big model's width, where the kernel's blocks are 1,024 threads.
    for (int64_t channels : {520, 72, 1024}) {
      const std::string what = "add_layer_norm C=" + std::to_string(channels) +
                               " dropout=" + std::to_string(dropout);
      const LayerNormCase c(rows, channels, dropout, generator);
      const LayerNormTraining& saved = c.saved;
      for (bool in_place : {false, true}) {  // in place: the sum over inp, as the model runs
        const std::string variant = what + (in_place ? " in place" : "");
        const Tensor gpu_inp = on_gpu(c.inp);
        Tensor gpu_out = nan_gpu({rows, channels});
        LayerNormTraining gpu_saved{dropout, saved.dropout_key,
                                    in_place ? gpu_inp : nan_gpu({rows, channels}),
                                    nan_gpu({rows}), nan_gpu({rows})};
        add_layer_norm_forward(gpu_out, gpu_inp, on_gpu(c.residual), on_gpu(c.gamma),
                               on_gpu(c.beta), 1e-6f, &gpu_saved);
        expect_close(gpu_out, c.out, kTolerance, variant + " out");
        // The same mask and the same float sums: the same bits.
        expect_identical(gpu_saved.sum, saved.sum, variant + " sum");
        expect_close(gpu_saved.mean, saved.mean, kTolerance, variant + " mean");
        expect_close(gpu_saved.rstd, saved.rstd, kTolerance, variant + " rstd");
      }
    }
  }
}

// Both devices read the CPU forward's sum and statistics, so the test measures the backward
// alone. 300 rows: dgamma and dbeta sum over more than one block of rows.
TEST_F(TrainingOpsCuda, LayerNormBackward) {
  std::mt19937 generator(4);
  const int64_t rows = 300;
  for (float dropout : {0.f, 0.1f}) {
    for (int64_t channels : {72, 520, 1024}) {  // 1024: blocks of 1,024 threads
      const std::string what = "layer_norm_backward C=" + std::to_string(channels) +
                               " dropout=" + std::to_string(dropout);
      const LayerNormCase c(rows, channels, dropout, generator);
      const LayerNormTraining& saved = c.saved;
      const Tensor dout = random_tensor({rows, channels}, generator);
      const Tensor dgamma_start = random_tensor({channels}, generator);
      const Tensor dbeta_start = random_tensor({channels}, generator);

      Tensor dresidual = empty_cpu({rows, channels}), dinp = empty_cpu({rows, channels});
      Tensor dgamma = dgamma_start.clone(), dbeta = dbeta_start.clone();
      layer_norm_backward(dresidual, dinp, dgamma, dbeta, dout, saved, c.gamma);

      const LayerNormTraining gpu_saved{dropout, saved.dropout_key, on_gpu(saved.sum),
                                        on_gpu(saved.mean), on_gpu(saved.rstd)};
      const Tensor gpu_gamma = on_gpu(c.gamma);
      for (bool in_place : {false, true}) {  // in place: the residual's gradient over dout
        const std::string variant = what + (in_place ? " in place" : "");
        const Tensor gpu_dout = on_gpu(dout);
        Tensor gpu_dresidual = in_place ? gpu_dout : nan_gpu({rows, channels});
        Tensor gpu_dinp = nan_gpu({rows, channels});
        Tensor gpu_dgamma = on_gpu(dgamma_start), gpu_dbeta = on_gpu(dbeta_start);
        layer_norm_backward(gpu_dresidual, gpu_dinp, gpu_dgamma, gpu_dbeta, gpu_dout, gpu_saved,
                            gpu_gamma);
        expect_close(gpu_dresidual, dresidual, kTolerance, variant + " dresidual");
        expect_close(gpu_dinp, dinp, kTolerance, variant + " dinp");
        expect_close(gpu_dgamma, dgamma, kSumTolerance, variant + " dgamma");
        expect_close(gpu_dbeta, dbeta, kSumTolerance, variant + " dbeta");
      }
    }
  }
}

// Pre-norm's residual stream: dresidual holds the stream's gradient from above on entry and gets
// the layer norm's part added; dinp is the total through the dropout.
TEST_F(TrainingOpsCuda, LayerNormBackwardAccumulatesTheResidualStream) {
  std::mt19937 generator(8);
  const int64_t rows = 70, channels = 520;
  const LayerNormCase c(rows, channels, 0.1f, generator);
  const Tensor dout = random_tensor({rows, channels}, generator);
  const Tensor from_above = random_tensor({rows, channels}, generator);
  Tensor dresidual = from_above.clone(), dinp = empty_cpu({rows, channels});
  Tensor dgamma = Tensor::zeros({channels}, DType::kFloat32);
  Tensor dbeta = Tensor::zeros({channels}, DType::kFloat32);
  layer_norm_backward(dresidual, dinp, dgamma, dbeta, dout, c.saved, c.gamma,
                      GradientWrite::kAccumulate);

  const LayerNormTraining gpu_saved{0.1f, c.saved.dropout_key, on_gpu(c.saved.sum),
                                    on_gpu(c.saved.mean), on_gpu(c.saved.rstd)};
  Tensor gpu_dresidual = on_gpu(from_above), gpu_dinp = nan_gpu({rows, channels});
  Tensor gpu_dgamma = on_gpu(Tensor::zeros({channels}, DType::kFloat32));
  Tensor gpu_dbeta = on_gpu(Tensor::zeros({channels}, DType::kFloat32));
  layer_norm_backward(gpu_dresidual, gpu_dinp, gpu_dgamma, gpu_dbeta, on_gpu(dout), gpu_saved,
                      on_gpu(c.gamma), GradientWrite::kAccumulate);
  expect_close(gpu_dresidual, dresidual, kTolerance, "accumulated dresidual");
  expect_close(gpu_dinp, dinp, kTolerance, "dinp of the total");
  expect_close(gpu_dgamma, dgamma, kSumTolerance, "dgamma");
  expect_close(gpu_dbeta, dbeta, kSumTolerance, "dbeta");
}

// The probabilities come from the engine's CPU attention_forward (a real softmax, exactly 0 at
// masked positions) over batch-major keys: key position s of sentence n is row n·S + s.
// Activations (q, k, v, dout and the gradients) in `storage`, compared within `tolerance`.
void check_attention_backward(DType storage, double tolerance) {
  struct Case {
    const char* name;
    int64_t sentences, queries, keys;
    int heads, head_k, head_v;
    bool causal;
    std::vector<int32_t> key_lengths;
  };
  // The first four fit a block's shared memory (one kernel per call); the last, 667 KB a head,
  // fits no GPU's and runs the per-head products.
  const Case cases[] = {{"cross-attention with padding", 3, 7, 9, 4, 8, 8, false, {9, 5, 2}},
                        {"causal self-attention", 3, 11, 11, 4, 8, 8, true, {11, 11, 11}},
                        {"over a warp of keys, d_k != d_v", 2, 45, 40, 2, 64, 24, false, {40, 13}},
                        {"heads of 100 and 72 dims", 2, 9, 10, 2, 100, 72, false, {10, 3}},
                        {"too long for shared memory", 2, 300, 300, 2, 64, 64, true, {300, 300}}};
  std::mt19937 generator(5);
  for (const Case& c : cases) {
    const int64_t width_k = c.heads * c.head_k, width_v = c.heads * c.head_v;
    const Tensor q = stored(random_tensor({c.sentences, c.queries, width_k}, generator), storage);
    const Tensor k = stored(random_tensor({c.sentences, c.keys, width_k}, generator), storage);
    const Tensor v = stored(random_tensor({c.sentences, c.keys, width_v}, generator), storage);
    std::vector<int32_t> table;
    for (int64_t n = 0; n < c.sentences; ++n) {
      for (int64_t s = 0; s < c.keys; ++s) table.push_back(static_cast<int32_t>(n * c.keys + s));
    }
    const Tensor key_rows = Tensor::from_vector(table, {c.sentences, c.keys});
    const Tensor key_lengths = Tensor::from_vector(c.key_lengths, {c.sentences});
    Tensor out = empty_cpu({c.sentences, c.queries, width_v});
    Tensor probs = empty_cpu({c.sentences, c.heads, c.queries, c.keys});
    attention_forward(out, q, k.reshape({c.sentences * c.keys, width_k}),
                      v.reshape({c.sentences * c.keys, width_v}), key_rows, key_lengths,
                      c.heads, c.causal, &probs);
    const Tensor dout =
        stored(random_tensor({c.sentences, c.queries, width_v}, generator), storage);

    Tensor dq = empty_cpu(q.shape()), dk = empty_cpu(k.shape()), dv = empty_cpu(v.shape());
    attention_backward(dq, dk, dv, dout, probs, q, k, v, c.heads);
    Tensor gpu_dq = nan_gpu(q.shape(), storage), gpu_dk = nan_gpu(k.shape(), storage);
    Tensor gpu_dv = nan_gpu(v.shape(), storage);
    attention_backward(gpu_dq, gpu_dk, gpu_dv, on_gpu_as(dout, storage), on_gpu(probs),
                       on_gpu_as(q, storage), on_gpu_as(k, storage), on_gpu_as(v, storage),
                       c.heads);
    const std::string what =
        std::string("attention_backward ") + dtype_name(storage) + ", " + c.name;
    expect_close(gpu_dq, dq, tolerance, what + " dq");
    expect_close(gpu_dk, dk, tolerance, what + " dk");
    expect_close(gpu_dv, dv, tolerance, what + " dv");
  }
}

TEST_F(TrainingOpsCuda, AttentionBackward) {
  check_attention_backward(DType::kFloat32, kSumTolerance);
}

// The mask is a pure function of (key, index) shared by both backends and the scale is the
// same float, so the GPU must reproduce the CPU's bits, with ReLU's backward fused in too. The
// key has high bits set: a kernel that dropped them would draw another mask.
TEST_F(TrainingOpsCuda, DropoutDrawsTheCpuMask) {
  std::mt19937 generator(6);
  const std::vector<int64_t> shape = {300, 520};
  const uint64_t key = 0xD1B54A32D192ED03ull;
  const Tensor inp = random_tensor(shape, generator);
  const Tensor dout = random_tensor(shape, generator);
  for (float p : {0.1f, 0.3f, 0.f}) {
    const std::string what = "dropout p=" + std::to_string(p);
    Tensor out = empty_cpu(shape);
    dropout_forward(out, inp, p, key);
    Tensor dinp = empty_cpu(shape);
    dropout_backward(dinp, dout, p, key);
    if (p == 0.f) {
      expect_identical(out, inp, what + " CPU copies");
    } else {
      // A sanity check of the reference itself: about p·n dropped (5 standard deviations).
      const double count = static_cast<double>(out.numel());
      const double dropped = static_cast<double>(
          std::count(out.data<float>(), out.data<float>() + out.numel(), 0.f));
      EXPECT_NEAR(dropped, p * count, 5 * std::sqrt(count * p * (1 - p))) << what;
    }

    Tensor gpu_out = nan_gpu(shape);
    dropout_forward(gpu_out, on_gpu(inp), p, key);
    expect_identical(gpu_out, out, what + " forward");
    Tensor gpu_in_place = on_gpu(inp);
    dropout_forward(gpu_in_place, gpu_in_place, p, key);
    expect_identical(gpu_in_place, out, what + " forward in place");
    Tensor gpu_dinp = nan_gpu(shape);
    dropout_backward(gpu_dinp, on_gpu(dout), p, key);
    expect_identical(gpu_dinp, dinp, what + " backward");
    Tensor gpu_dinp_in_place = on_gpu(dout);
    dropout_backward(gpu_dinp_in_place, gpu_dinp_in_place, p, key);
    expect_identical(gpu_dinp_in_place, dinp, what + " backward in place");

    // With ReLU's backward fused in (`inp` as ReLU's output: about half of it is <= 0).
    Tensor relu_dinp = empty_cpu(shape);
    dropout_relu_backward(relu_dinp, dout, inp, p, key);
    Tensor gpu_relu_dinp = on_gpu(dout);
    dropout_relu_backward(gpu_relu_dinp, gpu_relu_dinp, on_gpu(inp), p, key);
    expect_identical(gpu_relu_dinp, relu_dinp, what + " with ReLU's backward, in place");
  }
}

void expect_same_sums(const CrossEntropySums& gpu, const CrossEntropySums& cpu,
                      const std::string& what) {
  EXPECT_NEAR(gpu.loss, cpu.loss, kSumTolerance * std::max(1.0, std::fabs(cpu.loss))) << what;
  EXPECT_NEAR(gpu.nll, cpu.nll, kSumTolerance * std::max(1.0, std::fabs(cpu.nll))) << what;
  EXPECT_EQ(gpu.tokens, cpu.tokens) << what;
}

// Rows of `gpu` whose target is `ignore_id` hold exact zeros.
void expect_ignored_rows_zero(const Tensor& gpu, const std::vector<int32_t>& targets,
                              int ignore_id, const std::string& what) {
  const Tensor actual = gpu.to(Device::kCPU);
  const int64_t classes = actual.dim(-1);
  for (size_t m = 0; m < targets.size(); ++m) {
    if (targets[m] != ignore_id) continue;
    const float* row = actual.data<float>() + static_cast<int64_t>(m) * classes;
    EXPECT_TRUE(std::all_of(row, row + classes, [](float x) { return x == 0.f; }))
        << what << ": ignored row " << m << " is not 0";
  }
}

// Forward and backward of the label-smoothed loss over [rows, classes], out of place and in
// place, with and without smoothing. Every 4th row (from row 3) is padding.
void check_cross_entropy(int64_t rows, int64_t classes, std::mt19937& generator) {
  constexpr int kPad = 1;
  constexpr float kDloss = 0.37f;
  const Tensor logits = random_tensor({rows, classes}, generator, 3.f);
  std::uniform_int_distribution<int32_t> any_class(0, static_cast<int32_t>(classes) - 1);
  std::vector<int32_t> target_ids(static_cast<size_t>(rows));
  for (size_t m = 0; m < target_ids.size(); ++m) {
    target_ids[m] = m % 4 == 3 ? kPad : any_class(generator);
  }
  const Tensor targets = Tensor::from_vector(target_ids, {rows});
  const Tensor gpu_targets = on_gpu(targets), gpu_logits = on_gpu(logits);
  // Ignored rows are left as they are: both devices start from the same contents, and
  // comparing whole tensors also catches a counted row the GPU never wrote.
  const Tensor initial = random_tensor({rows, classes}, generator);
  for (float smoothing : {0.1f, 0.f}) {
    const std::string what = "cross_entropy V=" + std::to_string(classes) +
                             " smoothing=" + std::to_string(smoothing);
    Tensor log_probs = initial.clone();
    const CrossEntropySums sums =
        cross_entropy_forward(log_probs, logits, targets, smoothing, kPad).read();
    Tensor gpu_log_probs = on_gpu(initial);
    expect_same_sums(
        cross_entropy_forward(gpu_log_probs, gpu_logits, gpu_targets, smoothing, kPad).read(),
        sums, what + " sums");
    expect_close(gpu_log_probs, log_probs, kTolerance, what + " log_probs");

    Tensor in_place = logits.clone();
    const CrossEntropySums in_place_sums =
        cross_entropy_forward(in_place, in_place, targets, smoothing, kPad).read();
    Tensor gpu_in_place = on_gpu(logits);
    PendingCrossEntropySums gpu_in_place_sums =
        cross_entropy_forward(gpu_in_place, gpu_in_place, gpu_targets, smoothing, kPad);
    expect_close(gpu_in_place, in_place, kTolerance, what + " log_probs in place");
    // The sums are read after the log-probabilities were overwritten, as a training step does.
    cross_entropy_backward(gpu_in_place, gpu_in_place, gpu_targets, smoothing, kPad, kDloss);
    expect_same_sums(gpu_in_place_sums.read(), in_place_sums, what + " in place sums");

    // The backward reads the CPU's log_probs on both devices.
    Tensor dlogits = empty_cpu({rows, classes});
    cross_entropy_backward(dlogits, log_probs, targets, smoothing, kPad, kDloss);
    Tensor gpu_dlogits = nan_gpu({rows, classes});
    cross_entropy_backward(gpu_dlogits, on_gpu(log_probs), gpu_targets, smoothing, kPad,
                           kDloss);
    expect_close(gpu_dlogits, dlogits, kTolerance, what + " dlogits");
    expect_ignored_rows_zero(gpu_dlogits, target_ids, kPad, what + " dlogits");
    Tensor gpu_over_log_probs = on_gpu(log_probs);
    cross_entropy_backward(gpu_over_log_probs, gpu_over_log_probs, gpu_targets, smoothing, kPad,
                           kDloss);
    expect_close(gpu_over_log_probs, dlogits, kTolerance, what + " dlogits in place");
    expect_ignored_rows_zero(gpu_over_log_probs, target_ids, kPad, what + " dlogits in place");

    // Both in one pass, out of place (over rows it must zero) and over the logits.
    Tensor fused = initial.clone();
    const CrossEntropySums fused_sums =
        cross_entropy_forward_backward(fused, logits, targets, smoothing, kPad, kDloss).read();
    expect_same_sums(fused_sums, sums, what + " forward_backward sums (CPU)");
    expect_identical(fused, dlogits, what + " forward_backward (CPU) is the two ops");
    for (bool in_place : {false, true}) {
      const std::string variant = what + " forward_backward" + (in_place ? " in place" : "");
      Tensor gpu_fused_logits = on_gpu(logits);
      Tensor gpu_fused = in_place ? gpu_fused_logits : nan_gpu({rows, classes});
      PendingCrossEntropySums gpu_fused_sums = cross_entropy_forward_backward(
          gpu_fused, gpu_fused_logits, gpu_targets, smoothing, kPad, kDloss);
      expect_close(gpu_fused, dlogits, kTolerance, variant + " dlogits");
      expect_ignored_rows_zero(gpu_fused, target_ids, kPad, variant + " dlogits");
      expect_same_sums(gpu_fused_sums.read(), sums, variant + " sums");
    }
  }
}

TEST_F(TrainingOpsCuda, CrossEntropy) {
  std::mt19937 generator(7);
  check_cross_entropy(37, 1000, generator);
  check_cross_entropy(5, 37000, generator);  // the real vocabulary size
}

// dout in `storage` (the tables' gradients float32).
void check_embedding_backward(int64_t sentences, int64_t steps, int64_t channels, int ids,
                              DType storage = DType::kFloat32) {
  std::mt19937 generator(8);
  const int64_t vocabulary = 50, positions = steps + 7;
  const float scale = std::sqrt(static_cast<float>(channels));
  const Tensor tokens = random_ids({sentences, steps}, ids, generator);
  const Tensor dout = stored(random_tensor({sentences, steps, channels}, generator), storage);
  const Tensor dtable_start = random_tensor({vocabulary, channels}, generator);
  const Tensor dpositions_start = random_tensor({positions, channels}, generator);
  const Tensor gpu_tokens = on_gpu(tokens), gpu_dout = on_gpu_as(dout, storage);
  for (bool with_positions : {true, false}) {
    const std::string what =
        "embedding_backward " + dtype_name(storage) + " C=" + std::to_string(channels) +
        " ids " + std::to_string(ids) + (with_positions ? "" : " without positions");
    Tensor dtable = dtable_start.clone();
    Tensor dpositions = with_positions ? dpositions_start.clone() : Tensor();
    embedding_backward(dtable, dpositions, dout, tokens, scale);

    Tensor gpu_dtable[2], gpu_dpositions[2];
    for (int run = 0; run < 2; ++run) {
      gpu_dtable[run] = on_gpu(dtable_start);
      if (with_positions) gpu_dpositions[run] = on_gpu(dpositions_start);
      embedding_backward(gpu_dtable[run], gpu_dpositions[run], gpu_dout, gpu_tokens, scale);
    }
    expect_close(gpu_dtable[0], dtable, kTolerance, what + " dtable");
    expect_identical(gpu_dtable[1], gpu_dtable[0].to(Device::kCPU), what + " dtable rerun");
    if (with_positions) {
      expect_close(gpu_dpositions[0], dpositions, kTolerance, what + " dpositions");
      expect_identical(gpu_dpositions[1], gpu_dpositions[0].to(Device::kCPU),
                       what + " dpositions rerun");
    }
  }
}

// Ids 0..9 only, so each gradient row gathers many dout rows: the GPU must sum them in a fixed
// order (two runs give the same bits) and agree with the CPU's order up to rounding. Then ids
// 0..1 over 1,200 tokens and 300 channels: runs of ~600 rows, over the kernel's 256-row chunks,
// and channels over one block's 256.
TEST_F(TrainingOpsCuda, EmbeddingBackward) {
  check_embedding_backward(/*sentences=*/4, /*steps=*/33, /*channels=*/72, /*ids=*/10);
  check_embedding_backward(/*sentences=*/30, /*steps=*/40, /*channels=*/300, /*ids=*/2);
}

// Both devices add float squares (exact in double) in double; only the order of the additions
// differs, which for positive terms at these counts moves the sum far less than 1e-12.
TEST_F(TrainingOpsCuda, SumOfSquares) {
  std::mt19937 generator(9);
  for (int64_t count : {1, 65537, 300000}) {
    const Tensor x = random_tensor({count}, generator);
    const double expected = sum_of_squares(x);
    EXPECT_NEAR(sum_of_squares(on_gpu(x)), expected, 1e-12 * expected)
        << "sum_of_squares of " << count;
  }
}

// Two consecutive steps (t = 1, 2) with their bias corrections and a clipping factor.
TEST_F(TrainingOpsCuda, AdamUpdate) {
  std::mt19937 generator(10);
  const int64_t count = 100003;
  Tensor weights = random_tensor({count}, generator);
  Tensor first_moment = random_tensor({count}, generator, 0.1f);
  Tensor second_moment = random_tensor({count}, generator, 0.1f);
  for (int64_t i = 0; i < count; ++i) {  // a second moment is never negative
    second_moment.data<float>()[i] *= second_moment.data<float>()[i];
  }
  Tensor gpu_weights = on_gpu(weights), gpu_first_moment = on_gpu(first_moment);
  Tensor gpu_second_moment = on_gpu(second_moment);
  const float beta1 = 0.9f, beta2 = 0.98f, learning_rate = 1e-3f;
  for (int t = 1; t <= 2; ++t) {
    const AdamStep step{beta1,
                        beta2,
                        learning_rate / (1.f - std::pow(beta1, static_cast<float>(t))),
                        1.f / std::sqrt(1.f - std::pow(beta2, static_cast<float>(t))),
                        1e-9f,
                        0.5f};
    const Tensor gradients = random_tensor({count}, generator);
    adam_update(weights, first_moment, second_moment, gradients, step);
    adam_update(gpu_weights, gpu_first_moment, gpu_second_moment, on_gpu(gradients), step);
    const std::string what = "adam step " + std::to_string(t);
    expect_close(gpu_weights, weights, 1e-6, what + " weights");
    expect_close(gpu_first_moment, first_moment, 1e-6, what + " first moment");
    expect_close(gpu_second_moment, second_moment, 1e-6, what + " second moment");
  }
}

// The training ops that take 16-bit activations on the GPU (the steps toward 16-bit storage in
// training; docs/cuda-backend.md, "Next: 16-bit activations"), against the CPU's float32 body
// on the values the 16-bit storage holds.
class TrainingOps16BitCuda : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
    // The trainer refuses bf16 below 8.0: cuBLASLt has no bfloat16 products there.
    if (dtype() == DType::kBFloat16 && cuda_backend::compute_capability() < 80) {
      GTEST_SKIP() << "bfloat16 needs compute capability 8.0";
    }
  }
  DType dtype() const { return GetParam(); }
  // |gpu - cpu| relative to max(1, |cpu|): one rounding to the storage type, as in
  // ops_cuda_test.cc.
  double tolerance() const { return dtype() == DType::kFloat16 ? 1e-2 : 4e-2; }
  // What the storage holds of x, as float32 (the CPU reference's input).
  Tensor rounded(const Tensor& x) const { return x.to_dtype(dtype()).to_float32(); }
  Tensor on_gpu_stored(const Tensor& x) const { return x.to_dtype(dtype()).to(Device::kCUDA); }
  Tensor empty_gpu(std::vector<int64_t> shape) const {
    return Tensor::empty(std::move(shape), dtype(), Device::kCUDA);
  }
};

// Each kept element's product is the same float on both devices and is rounded once: the GPU's
// result is the CPU's rounded to the storage type, to the bit.
TEST_P(TrainingOps16BitCuda, DropoutDrawsTheCpuMask) {
  std::mt19937 generator(16);
  const std::vector<int64_t> shape = {300, 520};
  const uint64_t key = 0xD1B54A32D192ED03ull;
  const Tensor inp = rounded(random_tensor(shape, generator));
  const Tensor relu_out = rounded(random_tensor(shape, generator));
  for (float p : {0.1f, 0.f}) {
    const std::string what = dtype_name(dtype()) + " dropout p=" + std::to_string(p);
    Tensor out = empty_cpu(shape);
    dropout_forward(out, inp, p, key);
    Tensor gpu_out = empty_gpu(shape);
    dropout_forward(gpu_out, on_gpu_stored(inp), p, key);
    expect_identical(gpu_out, rounded(out), what);
    Tensor gpu_in_place = on_gpu_stored(inp);
    dropout_backward(gpu_in_place, gpu_in_place, p, key);
    expect_identical(gpu_in_place, rounded(out), what + " backward in place");

    Tensor relu_dinp = empty_cpu(shape);
    dropout_relu_backward(relu_dinp, inp, relu_out, p, key);
    Tensor gpu_relu_dinp = empty_gpu(shape);
    dropout_relu_backward(gpu_relu_dinp, on_gpu_stored(inp), on_gpu_stored(relu_out), p, key);
    expect_identical(gpu_relu_dinp, rounded(relu_dinp), what + " with ReLU's");
  }
}

// LN(residual + Dropout(inp)) forward (the sum kept in the storage type) and backward, every
// activation stored in 16 bits, the statistics and parameter gradients in float32.
TEST_P(TrainingOps16BitCuda, ResidualLayerNorm) {
  std::mt19937 generator(17);
  const int64_t rows = 300, channels = 520;
  const float dropout = 0.1f;
  const uint64_t key = 0x5eedu;
  const Tensor inp = rounded(random_tensor({rows, channels}, generator, 2.f));
  const Tensor residual = rounded(random_tensor({rows, channels}, generator));
  const Tensor gamma = rounded(random_tensor({channels}, generator));
  const Tensor beta = rounded(random_tensor({channels}, generator));
  const Tensor dout = rounded(random_tensor({rows, channels}, generator));
  const std::string what = dtype_name(dtype()) + " residual layer norm";

  Tensor out = empty_cpu({rows, channels});
  LayerNormTraining saved{dropout, key, empty_cpu({rows, channels}), empty_cpu({rows}),
                          empty_cpu({rows})};
  add_layer_norm_forward(out, inp, residual, gamma, beta, 1e-6f, &saved);
  Tensor gpu_out = empty_gpu({rows, channels});
  LayerNormTraining gpu_saved{dropout, key, on_gpu_stored(inp), nan_gpu({rows}),
                              nan_gpu({rows})};  // the sum over inp, as the model runs it
  add_layer_norm_forward(gpu_out, gpu_saved.sum, on_gpu_stored(residual), on_gpu_stored(gamma),
                         on_gpu_stored(beta), 1e-6f, &gpu_saved);
  // The sum is one float addition of the same two values, rounded once ...
  expect_identical(gpu_saved.sum, rounded(saved.sum), what + " sum");
  // ... and what is normalised is that stored sum (the values the backward pass reads): the
  // CPU's layer norm of the rounded sum, nothing added.
  Tensor stored_out = empty_cpu({rows, channels});
  LayerNormTraining stored_statistics{0.f, key, empty_cpu({rows, channels}), empty_cpu({rows}),
                                      empty_cpu({rows})};
  add_layer_norm_forward(stored_out, rounded(saved.sum),
                         Tensor::zeros({rows, channels}, DType::kFloat32), gamma, beta, 1e-6f,
                         &stored_statistics);
  expect_close(gpu_out, stored_out, tolerance(), what + " out");
  expect_close(gpu_saved.mean, stored_statistics.mean, kTolerance, what + " mean");
  expect_close(gpu_saved.rstd, stored_statistics.rstd, 1e-4, what + " rstd");

  // The backward from the sum as stored, with its statistics: the CPU reads the same values.
  const LayerNormTraining stored{dropout, key, rounded(saved.sum), stored_statistics.mean,
                                 stored_statistics.rstd};
  const Tensor dgamma_start = random_tensor({channels}, generator);
  const Tensor dbeta_start = random_tensor({channels}, generator);
  Tensor dresidual = empty_cpu({rows, channels}), dinp = empty_cpu({rows, channels});
  Tensor dgamma = dgamma_start.clone(), dbeta = dbeta_start.clone();
  layer_norm_backward(dresidual, dinp, dgamma, dbeta, dout, stored, gamma);
  const LayerNormTraining gpu_stored{dropout, key, on_gpu_stored(saved.sum),
                                     on_gpu(stored_statistics.mean),
                                     on_gpu(stored_statistics.rstd)};
  Tensor gpu_dout = on_gpu_stored(dout), gpu_dinp = empty_gpu({rows, channels});
  Tensor gpu_dgamma = on_gpu(dgamma_start), gpu_dbeta = on_gpu(dbeta_start);
  layer_norm_backward(gpu_dout, gpu_dinp, gpu_dgamma, gpu_dbeta, gpu_dout, gpu_stored,
                      on_gpu_stored(gamma));  // the residual's gradient over dout
  expect_close(gpu_dout, dresidual, tolerance(), what + " dresidual");
  expect_close(gpu_dinp, dinp, tolerance(), what + " dinp");
  expect_close(gpu_dgamma, dgamma, kSumTolerance, what + " dgamma");
  expect_close(gpu_dbeta, dbeta, kSumTolerance, what + " dbeta");
}

TEST_P(TrainingOps16BitCuda, AttentionBackward) {
  check_attention_backward(dtype(), tolerance());  // the long case through float32 copies too
}

// The same gathered sums, of the values the storage holds: the CPU's tolerance.
TEST_P(TrainingOps16BitCuda, EmbeddingBackward) {
  check_embedding_backward(/*sentences=*/4, /*steps=*/33, /*channels=*/72, /*ids=*/10, dtype());
}

// dout, inp and weight stored in 16 bits: dinp in their type, dweight and dbias float32 sums of
// the stored values (summed in float32 on both devices); ReLU's backward in the storage type.
TEST_P(TrainingOps16BitCuda, LinearAndReluBackward) {
  std::mt19937 generator(18);
  const int64_t rows = 300, outputs = 72, inputs = 40;
  const Tensor dout = rounded(random_tensor({rows, outputs}, generator));
  const Tensor inp = rounded(random_tensor({rows, inputs}, generator));
  const Tensor weight = rounded(random_tensor({outputs, inputs}, generator, 0.5f));
  const Tensor dinp_start = rounded(random_tensor({rows, inputs}, generator));
  const Tensor dweight_start = random_tensor({outputs, inputs}, generator);
  const Tensor dbias_start = random_tensor({outputs}, generator);
  const std::string what = dtype_name(dtype()) + " linear_backward";
  for (GradientWrite write : {GradientWrite::kOverwrite, GradientWrite::kAccumulate}) {
    Tensor dinp = dinp_start.clone(), dweight = dweight_start.clone();
    Tensor dbias = dbias_start.clone();
    linear_backward(dinp, dweight, dbias, dout, inp, weight, write);
    Tensor gpu_dinp = on_gpu_stored(dinp_start), gpu_dweight = on_gpu(dweight_start);
    Tensor gpu_dbias = on_gpu(dbias_start);
    linear_backward(gpu_dinp, gpu_dweight, gpu_dbias, on_gpu_stored(dout), on_gpu_stored(inp),
                    on_gpu_stored(weight), write);
    expect_close(gpu_dinp, dinp, tolerance(), what + " dinp");
    expect_close(gpu_dweight, dweight, kSumTolerance, what + " dweight");
    expect_close(gpu_dbias, dbias, kSumTolerance, what + " dbias");
  }
  // A selection without arithmetic: the stored values themselves, in place over dout.
  const Tensor relu_out = rounded(random_tensor({rows, outputs}, generator));
  Tensor relu_dinp = empty_cpu({rows, outputs});
  relu_backward(relu_dinp, dout, relu_out);
  Tensor gpu_relu_dinp = on_gpu_stored(dout);
  relu_backward(gpu_relu_dinp, gpu_relu_dinp, on_gpu_stored(relu_out));
  expect_identical(gpu_relu_dinp, relu_dinp, dtype_name(dtype()) + " relu_backward");
}

// Logits stored in 16 bits: the log-probabilities and the loss's gradient written in their
// type, the sums from the same values (in double on both devices).
TEST_P(TrainingOps16BitCuda, CrossEntropy) {
  std::mt19937 generator(19);
  constexpr int kPad = 1;
  const int64_t rows = 37, classes = 1000;
  const Tensor logits = rounded(random_tensor({rows, classes}, generator, 3.f));
  std::uniform_int_distribution<int32_t> any_class(0, static_cast<int32_t>(classes) - 1);
  std::vector<int32_t> target_ids(static_cast<size_t>(rows));
  for (size_t m = 0; m < target_ids.size(); ++m) {
    target_ids[m] = m % 4 == 3 ? kPad : any_class(generator);
  }
  const Tensor targets = Tensor::from_vector(target_ids, {rows});
  const Tensor gpu_targets = on_gpu(targets);
  const std::string what = dtype_name(dtype()) + " cross entropy";
  Tensor log_probs = logits.clone();
  const CrossEntropySums sums =
      cross_entropy_forward(log_probs, log_probs, targets, 0.1f, kPad).read();
  Tensor dlogits = empty_cpu({rows, classes});
  cross_entropy_backward(dlogits, log_probs, targets, 0.1f, kPad, 0.37f);

  Tensor gpu_log_probs = on_gpu_stored(logits);
  expect_same_sums(
      cross_entropy_forward(gpu_log_probs, gpu_log_probs, gpu_targets, 0.1f, kPad).read(), sums,
      what + " sums");
  expect_close(gpu_log_probs, log_probs, tolerance(), what + " log_probs");
  Tensor gpu_dlogits = empty_gpu({rows, classes});
  cross_entropy_backward(gpu_dlogits, gpu_log_probs, gpu_targets, 0.1f, kPad, 0.37f);
  expect_close(gpu_dlogits, dlogits, tolerance(), what + " dlogits");
  Tensor gpu_fused = on_gpu_stored(logits);
  const CrossEntropySums fused_sums =
      cross_entropy_forward_backward(gpu_fused, gpu_fused, gpu_targets, 0.1f, kPad, 0.37f)
          .read();
  expect_same_sums(fused_sums, sums, what + " forward_backward sums");
  expect_close(gpu_fused, dlogits, tolerance(), what + " forward_backward dlogits");
}

INSTANTIATE_TEST_SUITE_P(Storage, TrainingOps16BitCuda,
                         ::testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return dtype_name(info.param);
                         });

// The argument checks run before any backend, so this one needs no GPU.
TEST(TrainingOpsArguments, DropoutRejectsAProbabilityOfOne) {
  const Tensor inp = Tensor::zeros({4, 3}, DType::kFloat32);
  Tensor out = empty_cpu({4, 3});
  EXPECT_THROW(dropout_forward(out, inp, 1.f, 7), std::logic_error);
  EXPECT_THROW(dropout_backward(out, inp, 1.f, 7), std::logic_error);
}

}  // namespace
}  // namespace xlate
