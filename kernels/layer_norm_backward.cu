#include "kernels/column_sums.cuh"
#include "kernels/cuda_runtime.h"
#include "kernels/layer_norm_backward.h"

namespace xlate::kernels {
namespace {

// One block per row: dsum = rstd · (dxhat - mean(dxhat) - x̂ · mean(dxhat · x̂)), dxhat = dy · γ.
// Each thread keeps its columns' x̂ and dxhat in the loop's registers only, so dsum may alias
// dout (a thread reads dout[c] before it writes dsum[c], and no other thread touches c).
__global__ void layer_norm_input_gradient_kernel(float* dsum, const float* dout,
                                                 const float* inp, const float* residual,
                                                 const float* mean, const float* rstd,
                                                 const float* gamma, int64_t channels) {
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * channels;
  const float mu = mean[blockIdx.x], inverse = rstd[blockIdx.x];
  float sum_dxhat = 0.f, sum_dxhat_xhat = 0.f;
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const float xhat = (inp[offset + c] + residual[offset + c] - mu) * inverse;
    const float dxhat = dout[offset + c] * gamma[c];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
  }
  const float mean_dxhat = block_sum(sum_dxhat, scratch) / static_cast<float>(channels);
  const float mean_dxhat_xhat = block_sum(sum_dxhat_xhat, scratch) / static_cast<float>(channels);
  for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const float xhat = (inp[offset + c] + residual[offset + c] - mu) * inverse;
    const float dxhat = dout[offset + c] * gamma[c];
    dsum[offset + c] = inverse * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
  }
}

struct GammaGradient {
  const float *dout, *inp, *residual, *mean, *rstd;
  int64_t channels;
  __device__ float operator()(int64_t m, int64_t c) const {
    const int64_t i = m * channels + c;
    return dout[i] * ((inp[i] + residual[i] - mean[m]) * rstd[m]);
  }
};

struct BetaGradient {
  const float* dout;
  int64_t channels;
  __device__ float operator()(int64_t m, int64_t c) const { return dout[m * channels + c]; }
};

}  // namespace

int64_t layer_norm_backward_workspace_floats(int64_t rows, int64_t channels) {
  return column_sum_blocks(rows) * channels;
}

void layer_norm_backward(float* dsum, float* dgamma, float* dbeta, const float* dout,
                         const float* inp, const float* residual, const float* mean,
                         const float* rstd, const float* gamma, int64_t rows, int64_t channels,
                         float* workspace, Stream stream) {
  if (rows == 0) return;
  // The parameter gradients first: they read dout, which dsum may overwrite.
  add_column_sums_of(dgamma, rows, channels,
                     GammaGradient{dout, inp, residual, mean, rstd, channels}, workspace, stream);
  add_column_sums_of(dbeta, rows, channels, BetaGradient{dout, channels}, workspace, stream);
  const int threads = channels >= 1024 ? 1024 : (channels >= 256 ? 256 : 64);
  layer_norm_input_gradient_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(
      dsum, dout, inp, residual, mean, rstd, gamma, channels);
  check_last_launch("layer_norm_backward");
}

}  // namespace xlate::kernels
