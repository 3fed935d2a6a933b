#include "trainer/layers/dropout.h"

#include <cstring>

#include "trainer/random/mix64.h"

namespace xlate::trainer {
namespace {

// Scales by 1/(1-p) where the element is kept, zero where dropped.
void apply_mask(float* out, const float* in, int64_t count, float p, uint64_t key) {
  // Keep when the top 24 bits of the hash, as a fraction of 2^24, are >= p.
  const uint32_t threshold = static_cast<uint32_t>(static_cast<double>(p) * (1 << 24));
  const float keep_scale = 1.f / (1.f - p);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t draw = static_cast<uint32_t>(mix64(key ^ mix64(static_cast<uint64_t>(i))) >> 40);
    out[i] = draw >= threshold ? in[i] * keep_scale : 0.f;
  }
}

}  // namespace

uint64_t dropout_key(uint64_t seed, int64_t step, int64_t micro_batch, int rank, int64_t site) {
  uint64_t key = mix64(seed);
  key = mix64(key ^ static_cast<uint64_t>(step));
  key = mix64(key ^ static_cast<uint64_t>(micro_batch));
  key = mix64(key ^ static_cast<uint64_t>(rank));
  return mix64(key ^ static_cast<uint64_t>(site));
}

void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key) {
  if (p <= 0.f) {
    if (out.raw_data() != inp.raw_data()) std::memcpy(out.raw_data(), inp.raw_data(), inp.nbytes());
    return;
  }
  apply_mask(out.data<float>(), inp.data<float>(), inp.numel(), p, key);
}

void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key) {
  dropout_forward(dinp, dout, p, key);
}

}  // namespace xlate::trainer
