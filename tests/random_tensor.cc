#include "tests/random_tensor.h"

#include "engine/model_directory.h"

namespace xlate {

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& generator, float scale) {
  Tensor tensor = Tensor::empty(std::move(shape), DType::kFloat32);
  std::normal_distribution<float> normal(0.f, scale);
  for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = normal(generator);
  return tensor;
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
