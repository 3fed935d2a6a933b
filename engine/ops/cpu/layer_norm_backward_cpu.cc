#include <algorithm>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "rules/dropout_mask.h"

namespace xlate::cpu {

void layer_norm_backward(Tensor& dresidual, Tensor& dinp, Tensor& dgamma, Tensor& dbeta,
                         const Tensor& dout, const LayerNormTraining& saved, const Tensor& gamma,
                         GradientWrite residual_write) {
  const bool accumulate = residual_write == GradientWrite::kAccumulate;
  const int64_t channels = saved.sum.dim(-1), rows = saved.sum.numel() / channels;
  const rules::DropoutMask dropout = rules::DropoutMask::of(saved.dropout, saved.dropout_key);
  const float* g = gamma.data<float>();
  // Parameter gradients per fixed row block, summed in block order (thread-count independent).
  constexpr int64_t kBlockRows = 256;
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  std::vector<float> partial(static_cast<size_t>(blocks * 2 * channels), 0.f);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    float* block_dgamma = partial.data() + block * 2 * channels;
    float* block_dbeta = block_dgamma + channels;
    std::vector<float> normalized(static_cast<size_t>(channels));
    const int64_t end = std::min(rows, (block + 1) * kBlockRows);
    for (int64_t m = block * kBlockRows; m < end; ++m) {
      const float* x = saved.sum.data<float>() + m * channels;
      const float* dy = dout.data<float>() + m * channels;
      const float mu = saved.mean.data<float>()[m], inverse = saved.rstd.data<float>()[m];
      float mean_dxhat = 0.f, mean_dxhat_xhat = 0.f;
      for (int64_t c = 0; c < channels; ++c) {
        normalized[c] = (x[c] - mu) * inverse;
        const float dxhat = dy[c] * g[c];
        mean_dxhat += dxhat;
        mean_dxhat_xhat += dxhat * normalized[c];
        block_dgamma[c] += dy[c] * normalized[c];
        block_dbeta[c] += dy[c];
      }
      mean_dxhat /= static_cast<float>(channels);
      mean_dxhat_xhat /= static_cast<float>(channels);
      float* dx = dresidual.data<float>() + m * channels;
      float* dx_inp = dinp.data<float>() + m * channels;
      for (int64_t c = 0; c < channels; ++c) {
        // dy[c] is read before either write: both may alias dout (not when accumulating).
        const float gradient =
            inverse * (dy[c] * g[c] - mean_dxhat - normalized[c] * mean_dxhat_xhat) +
            (accumulate ? dx[c] : 0.f);
        dx[c] = gradient;
        dx_inp[c] = dropout.apply(gradient, m * channels + c);
      }
    }
  }
  for (int64_t block = 0; block < blocks; ++block) {
    const float* block_dgamma = partial.data() + block * 2 * channels;
    for (int64_t c = 0; c < channels; ++c) {
      dgamma.data<float>()[c] += block_dgamma[c];
      dbeta.data<float>()[c] += block_dgamma[channels + c];
    }
  }
}

}  // namespace xlate::cpu
