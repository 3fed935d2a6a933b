#include "kernels/add_layer_norm.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "rules/dropout_mask.h"

namespace xlate::kernels {
namespace {

// One block per row. The summed row [C] is kept in shared memory (float32) so that the mean and
// the variance are two exact passes (no E[x²] - E[x]² cancellation) and `out` may alias inputs.
// With kTraining, inp is dropped out on its way in and the summed row is written to sum (which
// may alias inp: each thread writes the columns it read) in T, and normalised as written.
template <typename T, bool kTraining>
__global__ void add_layer_norm_forward_kernel(T* out, const T* inp, const T* residual,
                                              const T* gamma, const T* beta, int64_t channels,
                                              float eps, rules::DropoutMask dropout, T* saved_sum,
                                              float* saved_mean, float* saved_rstd) {
  extern __shared__ float row[];  // [C]
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * channels;
  float sum = 0.f;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    if constexpr (kTraining) {
      // The row normalised is the sum as stored (rounded once in 16 bits), the one the backward
      // pass reads: the statistics and the output are those of the values it differentiates.
      const T stored = from_float<T>(dropout.apply(to_float(inp[offset + c]), offset + c) +
                                     to_float(residual[offset + c]));
      saved_sum[offset + c] = stored;
      row[c] = to_float(stored);
    } else {
      row[c] = to_float(inp[offset + c]) + to_float(residual[offset + c]);
    }
    sum += row[c];
  }
  const float mean = block_sum(sum, scratch) / static_cast<float>(channels);
  float squares = 0.f;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const float centred = row[c] - mean;
    squares += centred * centred;
  }
  const float rstd = rsqrtf(block_sum(squares, scratch) / static_cast<float>(channels) + eps);
  if (kTraining && threadIdx.x == 0) {
    saved_mean[blockIdx.x] = mean;
    saved_rstd[blockIdx.x] = rstd;
  }
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    out[offset + c] =
        from_float<T>((row[c] - mean) * rstd * to_float(gamma[c]) + to_float(beta[c]));
  }
}

}  // namespace

void add_layer_norm_forward(void* out, const void* inp, const void* residual, const void* gamma,
                            const void* beta, int64_t rows, int64_t channels, float eps,
                            const AddLayerNormTraining* training, ElementType type,
                            Stream stream) {
  if (rows == 0) return;
  if (channels > kMaxLayerNormChannels) {
    throw std::logic_error("add_layer_norm_forward: width beyond kMaxLayerNormChannels");
  }
  const int threads = channels >= 1024 ? 1024 : (channels >= 256 ? 256 : 64);
  const size_t shared = static_cast<size_t>(channels) * sizeof(float);
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(rows));
    if (training == nullptr) {
      add_layer_norm_forward_kernel<T, false><<<grid, threads, shared, stream>>>(
          static_cast<T*>(out), static_cast<const T*>(inp), static_cast<const T*>(residual),
          static_cast<const T*>(gamma), static_cast<const T*>(beta), channels, eps,
          rules::DropoutMask{}, nullptr, nullptr, nullptr);
    } else {
      add_layer_norm_forward_kernel<T, true><<<grid, threads, shared, stream>>>(
          static_cast<T*>(out), static_cast<const T*>(inp), static_cast<const T*>(residual),
          static_cast<const T*>(gamma), static_cast<const T*>(beta), channels, eps,
          training->dropout, static_cast<T*>(training->sum), training->mean, training->rstd);
    }
  });
  check_last_launch("add_layer_norm_forward_kernel");
}

}  // namespace xlate::kernels
