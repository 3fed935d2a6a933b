// The smallest model the engine accepts (one layer each side, one head, d_model 4, vocabulary
// 6): a real checkpoint of it is a few KB, for tests and fuzz targets that need real files.
#pragma once

#include "engine/model_config.h"

namespace xlate {

inline ModelConfig smallest_model_config() {
  ModelConfig config;
  config.vocab_size = 6;
  config.d_model = 4;
  config.encoder_layers = config.decoder_layers = 1;
  config.encoder_heads = config.decoder_heads = 1;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 4;
  config.max_positions = 4;
  return config;
}

}  // namespace xlate
