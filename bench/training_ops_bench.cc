// Google Benchmark of the training ops (engine/ops/training_ops.h) at the shapes of one step of
// the paper's base model: XLATE_BENCH_TOKENS target tokens (default 25,000 on a GPU, 2,000 on
// the CPU) in sentences of 25, d_model 512, d_ff 2048, 8 heads, a 37,000-token vocabulary,
// 65M parameters. XLATE_BENCH_DEVICE=cpu|cuda (default: cuda when a GPU is visible).
// Each iteration waits for the device, so a time is the op's own plus one synchronisation.
// Counters: FLOP/s for the products, bytes/s (each input read once, each output written once)
// for the rest, to set against the device's two ceilings.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/backend.h"
#include "engine/ops/backend.h"
#include "engine/ops/training_ops.h"

namespace xlate {
namespace {

constexpr int64_t kSentenceLength = 25, kChannels = 512, kInner = 2048, kHeads = 8;
constexpr int64_t kVocabulary = 37000, kParameters = 65'000'000;

Device bench_device() {
  const char* name = std::getenv("XLATE_BENCH_DEVICE");
  if (name != nullptr) return std::string(name) == "cuda" ? Device::kCUDA : Device::kCPU;
  return device_count(Device::kCUDA) > 0 ? Device::kCUDA : Device::kCPU;
}

int64_t bench_tokens() {
  const char* tokens = std::getenv("XLATE_BENCH_TOKENS");
  if (tokens != nullptr) return std::atoll(tokens) / kSentenceLength * kSentenceLength;
  return bench_device() == Device::kCUDA ? 25'000 : 2'000;
}

// Uniform in [-scale, scale], on the bench's device.
Tensor filled(std::vector<int64_t> shape, float scale = 1.f) {
  Tensor tensor = Tensor::empty(std::move(shape), DType::kFloat32);
  std::mt19937 generator(1);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = uniform(generator);
  return tensor.to(bench_device());
}

Tensor ids(std::vector<int64_t> shape, int32_t bound) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::mt19937 generator(2);
  std::uniform_int_distribution<int32_t> any(0, bound - 1);
  std::vector<int32_t> values(static_cast<size_t>(count));
  for (int32_t& id : values) id = any(generator);
  return Tensor::from_vector(values, std::move(shape)).to(bench_device());
}

void wait() { op_backend(bench_device()).synchronize(); }

void set_rate(benchmark::State& state, double per_iteration, const char* name) {
  state.counters[name] = benchmark::Counter(per_iteration,
                                            benchmark::Counter::kIsIterationInvariantRate,
                                            benchmark::Counter::kIs1000);
}

// Arguments: outputs N, inputs K; M = the step's tokens.
void BM_LinearBackward(benchmark::State& state) {
  const int64_t rows = bench_tokens(), outputs = state.range(0), inputs = state.range(1);
  Tensor dout = filled({rows, outputs}), inp = filled({rows, inputs});
  Tensor weight = filled({outputs, inputs}), dweight = filled({outputs, inputs});
  Tensor dbias = filled({outputs}), dinp = filled({rows, inputs});
  for (auto _ : state) {
    linear_backward(dinp, dweight, dbias, dout, inp, weight, GradientWrite::kOverwrite);
    wait();
  }
  set_rate(state, 4.0 * rows * outputs * inputs, "FLOPS");
}
BENCHMARK(BM_LinearBackward)
    ->Args({kInner, kChannels})
    ->Args({kChannels, kInner})
    ->Args({kVocabulary, kChannels})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LayerNormBackward(benchmark::State& state) {
  const int64_t rows = bench_tokens();
  Tensor dout = filled({rows, kChannels}), dresidual = filled({rows, kChannels});
  Tensor dinp = filled({rows, kChannels}), gamma = filled({kChannels});
  const LayerNormTraining saved{0.1f, 7, filled({rows, kChannels}), filled({rows}),
                                filled({rows})};
  Tensor dgamma = filled({kChannels}), dbeta = filled({kChannels});
  for (auto _ : state) {
    layer_norm_backward(dresidual, dinp, dgamma, dbeta, dout, saved, gamma);
    wait();
  }
  // Read dout and the sum, write both input gradients: 4 tensors of [M, C] float32 at least.
  set_rate(state, 4.0 * 4 * rows * kChannels, "bytes");
}
BENCHMARK(BM_LayerNormBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AttentionBackward(benchmark::State& state) {
  const int64_t sentences = bench_tokens() / kSentenceLength, length = kSentenceLength;
  Tensor q = filled({sentences, length, kChannels}), k = filled({sentences, length, kChannels});
  Tensor v = filled({sentences, length, kChannels}), dout = filled({sentences, length, kChannels});
  Tensor probs = filled({sentences, kHeads, length, length}, 0.1f);
  Tensor dq = filled(q.shape()), dk = filled(k.shape()), dv = filled(v.shape());
  for (auto _ : state) {
    attention_backward(dq, dk, dv, dout, probs, q, k, v, kHeads);
    wait();
  }
  // Five products of 2·T·S·d per sentence and head.
  set_rate(state, 5.0 * 2 * sentences * kHeads * length * length * (kChannels / kHeads),
           "FLOPS");
}
BENCHMARK(BM_AttentionBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DropoutForward(benchmark::State& state) {
  Tensor x = filled({bench_tokens(), kInner});
  for (auto _ : state) {
    dropout_forward(x, x, 0.1f, 12345);
    wait();
  }
  set_rate(state, 8.0 * x.numel(), "bytes");
}
BENCHMARK(BM_DropoutForward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CrossEntropy(benchmark::State& state) {
  const int64_t rows = bench_tokens();
  Tensor logits = filled({rows, kVocabulary}, 3.f), targets = ids({rows}, kVocabulary);
  Tensor log_probs = filled({rows, kVocabulary});
  for (auto _ : state) {
    PendingCrossEntropySums sums = cross_entropy_forward(log_probs, logits, targets, 0.1f, -1);
    cross_entropy_backward(log_probs, log_probs, targets, 0.1f, -1, 1.f);
    benchmark::DoNotOptimize(sums.read());  // waits for the device
    wait();
  }
  // Forward: logits read twice (max, Σ exp; the third pass hits L2 only for small rows), log
  // probabilities written; backward: read and written.
  set_rate(state, 4.0 * 5 * rows * kVocabulary, "bytes");
}
BENCHMARK(BM_CrossEntropy)->Unit(benchmark::kMillisecond)->UseRealTime();

// What a training step runs: the gradient written in the forward's last pass.
void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  const int64_t rows = bench_tokens();
  Tensor logits = filled({rows, kVocabulary}, 3.f), targets = ids({rows}, kVocabulary);
  for (auto _ : state) {
    PendingCrossEntropySums sums =
        cross_entropy_forward_backward(logits, logits, targets, 0.1f, -1, 1.f);
    benchmark::DoNotOptimize(sums.read());  // waits for the device
    wait();
  }
  // The same bytes as BM_CrossEntropy's forward alone: logits read twice, gradient written.
  set_rate(state, 4.0 * 3 * rows * kVocabulary, "bytes");
}
BENCHMARK(BM_CrossEntropyForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EmbeddingBackward(benchmark::State& state) {
  const int64_t sentences = bench_tokens() / kSentenceLength;
  Tensor dtable = filled({kVocabulary, kChannels});
  Tensor dout = filled({sentences, kSentenceLength, kChannels});
  Tensor tokens = ids({sentences, kSentenceLength}, kVocabulary);
  Tensor no_positions;
  const float scale = std::sqrt(static_cast<float>(kChannels));
  for (auto _ : state) {
    embedding_backward(dtable, no_positions, dout, tokens, scale);
    wait();
  }
  set_rate(state, 4.0 * 3 * dout.numel(), "bytes");
}
BENCHMARK(BM_EmbeddingBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ClipAndAdam(benchmark::State& state) {
  Tensor weights = filled({kParameters}), m = filled({kParameters}, 0.01f);
  Tensor gradients = filled({kParameters}, 0.01f);
  Tensor v = Tensor::zeros({kParameters}, DType::kFloat32, bench_device());  // never negative
  const AdamStep step{0.9f, 0.98f, 1e-4f, 1.f, 1e-9f, 1.f};
  for (auto _ : state) {
    benchmark::DoNotOptimize(sum_of_squares(gradients));
    adam_update(weights, m, v, gradients, step);
    wait();
  }
  // Norm: g read; update: w, m, v, g read and w, m, v written.
  set_rate(state, 4.0 * 8 * kParameters, "bytes");
}
BENCHMARK(BM_ClipAndAdam)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace xlate

BENCHMARK_MAIN();
