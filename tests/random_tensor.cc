#include "tests/random_tensor.h"

#include "engine/model_directory.h"

namespace xlate {

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& generator, float scale) {
  Tensor tensor = Tensor::empty(std::move(shape), DType::kFloat32);
  std::normal_distribution<float> normal(0.f, scale);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = normal(generator);
  return tensor;
}

Tensor side_by_side(const std::vector<Tensor>& parts) {
  std::vector<int64_t> shape = parts.front().shape();
  const int64_t rows = parts.front().numel() / shape.back();
  int64_t width = 0;
  for (const Tensor& part : parts) width += part.dim(-1);
  shape.back() = width;
  Tensor joined = Tensor::empty(shape, DType::kFloat32);
  int64_t first = 0;
  for (const Tensor& part : parts) {
    const int64_t part_width = part.dim(-1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < part_width; ++c) {
        joined.data<float>()[r * width + first + c] = part.data<float>()[r * part_width + c];
      }
    }
    first += part_width;
  }
  return joined;
}

std::shared_ptr<TransformerModel> tiny_random_model(int vocabulary, uint64_t seed,
                                                    float bias_scale) {
  ModelConfig config;
  config.vocab_size = vocabulary;
  config.d_model = 8;
  config.encoder_layers = config.decoder_layers = 1;
  config.encoder_heads = config.decoder_heads = 2;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 16;
  config.max_positions = 16;
  TransformerWeights weights = random_weights(config, seed);
  std::mt19937 generator(static_cast<unsigned>(seed));
  std::normal_distribution<float> normal(0.f, bias_scale);
  for (int v = 0; v < vocabulary; ++v) weights.logits_bias.data<float>()[v] = normal(generator);
  return std::make_shared<TransformerModel>(config, weights);
}

}  // namespace xlate
