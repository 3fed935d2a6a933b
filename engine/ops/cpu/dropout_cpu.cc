#include <cstring>

#include "engine/ops/cpu/cpu_ops.h"
#include "rules/dropout_mask.h"

namespace xlate::cpu {

void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key) {
  if (p <= 0.f) {
    if (out.raw_data() != inp.raw_data()) std::memcpy(out.raw_data(), inp.raw_data(), inp.nbytes());
    return;
  }
  const rules::DropoutMask mask = rules::DropoutMask::of(p, key);
  const int64_t count = inp.numel();
  const float* in = inp.data<float>();
  float* result = out.data<float>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) result[i] = mask.apply(in[i], i);
}

void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key) {
  cpu::dropout_forward(dinp, dout, p, key);
}

// The two ops in turn: the reference the fused CUDA kernel is held to.
void dropout_relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& relu_out, float p,
                           uint64_t key) {
  cpu::dropout_backward(dinp, dout, p, key);
  cpu::relu_backward(dinp, dinp, relu_out);
}

}  // namespace xlate::cpu
