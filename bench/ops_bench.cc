// Google Benchmark of the CPU ops at the shapes of a base model decoding step
// (beam 4 x batch 32 = 128 rows, d_model 512, d_ff 2048, vocabulary 32000).
#include <benchmark/benchmark.h>

#include <random>

#include "engine/ops/ops.h"

namespace xlate {
namespace {

Tensor filled(std::vector<int64_t> shape) {
  Tensor tensor = Tensor::empty(std::move(shape), DType::kFloat32);
  std::mt19937 generator(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(generator);
  return tensor;
}

// Times out = x·weightᵀ + bias with arguments rows M, outputs N, inputs K; `multiply` is given
// out, x, the float weight [N, K] and the bias.
template <typename Multiply>
void time_product(benchmark::State& state, Multiply multiply) {
  const int64_t rows = state.range(0), outputs = state.range(1), inputs = state.range(2);
  Tensor x = filled({rows, inputs}), weight = filled({outputs, inputs}), bias = filled({outputs});
  Tensor out = Tensor::empty({rows, outputs}, DType::kFloat32);
  multiply(out, x, weight, bias);  // first call outside the timing (packing, primitive creation)
  for (auto _ : state) {
    multiply(out, x, weight, bias);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * rows * outputs * inputs,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void BM_Linear(benchmark::State& state) {
  time_product(state, [](Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias) {
    linear_forward(out, x, weight, bias, Activation::kNone);
  });
}
BENCHMARK(BM_Linear)
    ->Args({128, 512, 512})
    ->Args({128, 2048, 512})
    ->Args({128, 512, 2048})
    ->Args({128, 32000, 512})
    ->Args({1024, 512, 512})
    ->Unit(benchmark::kMicrosecond);

// The shipped Multi30k model's decoder products (d_model 256, d_ff 1024, vocabulary 8000) with
// weights packed as at model load, at the row counts a decoding step meets as sentences finish.
void BM_PackedLinear(benchmark::State& state) {
  PackedWeight packed;
  time_product(state, [&packed](Tensor& out, const Tensor& x, const Tensor& weight,
                                const Tensor& bias) {
    if (!packed.defined()) packed = pack_linear_weight(weight, DType::kFloat32);
    packed_linear_forward(out, x, packed, bias, Activation::kNone);
  });
}
BENCHMARK(BM_PackedLinear)
    ->ArgsProduct({{128, 64, 16, 4}, {768}, {256}})
    // Tied output projections (the default model's 10,000 x 256, NLLB-200's 256,206 x 1,024),
    // which the model multiplies by as plain tables: BM_OutputTable.
    ->ArgsProduct({{64, 16, 4}, {10000}, {256}})
    ->ArgsProduct({{64, 16, 4}, {256206}, {1024}})
    ->ArgsProduct({{128, 64, 16, 4}, {256}, {256}})
    ->ArgsProduct({{128, 64, 16, 4}, {1024}, {256}})
    ->ArgsProduct({{128, 64, 16, 4}, {256}, {1024}})
    ->ArgsProduct({{128, 64, 16, 4}, {8000}, {256}})
    ->Unit(benchmark::kMicrosecond);

// A tied output projection read as the embedding table it is ([V, C], not packed).
void BM_OutputTable(benchmark::State& state) {
  time_product(state, [](Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias) {
    linear_forward(out, x, weight, bias, Activation::kNone);
  });
}
BENCHMARK(BM_OutputTable)
    ->ArgsProduct({{64, 16, 4}, {10000}, {256}})
    ->ArgsProduct({{64, 16, 4}, {256206}, {1024}})
    ->Unit(benchmark::kMicrosecond);

void BM_LogSoftmax(benchmark::State& state) {
  Tensor x = filled({128, 32000});
  for (auto _ : state) log_softmax_forward(x, x);
}
BENCHMARK(BM_LogSoftmax)->Unit(benchmark::kMicrosecond);

// Decoder self-attention of one step: 128 rows, 8 heads, S cached positions, time-major cache
// read through a key_rows table as in the model.
void BM_AttentionStep(benchmark::State& state) {
  const int64_t rows = 128, positions = state.range(0), channels = 512;
  Tensor query = filled({rows, 1, channels}), keys = filled({positions, rows, channels});
  Tensor values = filled({positions, rows, channels});
  std::vector<int32_t> table;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < positions; ++s) table.push_back(int32_t(s * rows + (r / 4) * 4));
  Tensor key_rows = Tensor::from_vector(table, {rows, positions});
  Tensor lengths = Tensor::from_vector(std::vector<int32_t>(rows, int32_t(positions)), {rows});
  Tensor out = Tensor::empty({rows, 1, channels}, DType::kFloat32);
  for (auto _ : state) attention_forward(out, query, keys, values, key_rows, lengths, 8, true);
}
BENCHMARK(BM_AttentionStep)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xlate

BENCHMARK_MAIN();
