#include "tests/random_tensor.h"

namespace xlate {

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& generator, float scale) {
  Tensor tensor = Tensor::empty(std::move(shape), DType::kFloat32);
  std::normal_distribution<float> normal(0.f, scale);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = normal(generator);
  return tensor;
}

}  // namespace xlate
