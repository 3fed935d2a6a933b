// Layer normalisation over the last axis, forward saving what the backward needs.
// M rows of C channels; eps inside the square root (kLayerNormEps of engine/model_config.h).
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

// out[M, C] = (inp - mean) · rstd · gamma[C] + beta[C]; saves mean[M] and rstd[M].
void layer_norm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& inp,
                        const Tensor& gamma, const Tensor& beta, float eps);

// dinp[M, C] = ∂/∂inp; dgamma[C] += Σ dout · x̂; dbeta[C] += Σ dout. dinp may alias dout.
void layer_norm_backward(Tensor& dinp, Tensor& dgamma, Tensor& dbeta, const Tensor& dout,
                         const Tensor& inp, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gamma);

}  // namespace xlate::trainer
