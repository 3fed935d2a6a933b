#include "kernels/column_sums.cuh"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/layer_norm_backward.h"

namespace xlate::kernels {
namespace {

// One block per row: dresidual = rstd · (dxhat - mean(dxhat) - x̂ · mean(dxhat · x̂)),
// dxhat = dy · γ, and dinp = dresidual through inp's dropout; storage T, arithmetic float32.
// Each thread keeps its columns' x̂ and dxhat in the loop's registers only, so dresidual and
// dinp may alias dout (a thread reads dout[c] before it writes column c, and no other thread
// touches c). With accumulate_residual, dresidual's own value on entry is added first.
template <typename T>
__global__ void layer_norm_input_gradient_kernel(T* dresidual, T* dinp, const T* dout,
                                                 const T* sum, const float* mean,
                                                 const float* rstd, const T* gamma,
                                                 rules::DropoutMask dropout, int64_t channels,
                                                 bool accumulate_residual) {
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * channels;
  const float mu = mean[blockIdx.x], inverse = rstd[blockIdx.x];
  float sum_dxhat = 0.f, sum_dxhat_xhat = 0.f;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const float xhat = (to_float(sum[offset + c]) - mu) * inverse;
    const float dxhat = to_float(dout[offset + c]) * to_float(gamma[c]);
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
  }
  const float mean_dxhat = block_sum(sum_dxhat, scratch) / static_cast<float>(channels);
  const float mean_dxhat_xhat = block_sum(sum_dxhat_xhat, scratch) / static_cast<float>(channels);
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const float xhat = (to_float(sum[offset + c]) - mu) * inverse;
    const float dxhat = to_float(dout[offset + c]) * to_float(gamma[c]);
    const float gradient = inverse * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat) +
                           (accumulate_residual ? to_float(dresidual[offset + c]) : 0.f);
    dresidual[offset + c] = from_float<T>(gradient);
    dinp[offset + c] = from_float<T>(dropout.apply(gradient, offset + c));
  }
}

// dγ gets dout · x̂, dβ dout, from one read of each row.
template <typename T>
struct ParameterGradients {
  static constexpr int kOutputs = 2;
  const T *dout, *sum;
  const float *mean, *rstd;
  int64_t channels;
  __device__ void operator()(int64_t m, int64_t c, float (&values)[2]) const {
    const int64_t i = m * channels + c;
    const float dy = to_float(dout[i]);
    values[0] = dy * ((to_float(sum[i]) - mean[m]) * rstd[m]);
    values[1] = dy;
  }
};

}  // namespace

int64_t layer_norm_backward_workspace_floats(int64_t rows, int64_t channels) {
  return column_sums_partials_floats(rows, channels, ParameterGradients<float>::kOutputs);
}

void layer_norm_backward(void* dresidual, void* dinp, float* dgamma, float* dbeta,
                         const void* dout, const void* sum, const float* mean, const float* rstd,
                         const void* gamma, rules::DropoutMask dropout, int64_t rows,
                         int64_t channels, bool accumulate_residual, float* workspace,
                         ElementType type, Stream stream) {
  if (rows == 0) return;
  const int threads = channels >= 1024 ? 1024 : (channels >= 256 ? 256 : 64);
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    // The parameter gradients first: they read dout, which the input gradients may overwrite.
    add_column_sums_of({dgamma, dbeta}, rows, channels,
                       ParameterGradients<T>{static_cast<const T*>(dout),
                                             static_cast<const T*>(sum), mean, rstd, channels},
                       workspace, stream);
    layer_norm_input_gradient_kernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        static_cast<T*>(dresidual), static_cast<T*>(dinp), static_cast<const T*>(dout),
        static_cast<const T*>(sum), mean, rstd, static_cast<const T*>(gamma), dropout,
        channels, accumulate_residual);
  });
  check_last_launch("layer_norm_backward");
}

}  // namespace xlate::kernels
