// config.json from a stranger: parsed and validated, or refused with an error.
#include <cstdint>
#include <string>

#include "engine/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = xlate::ModelConfig::FromJson(text, "fuzz/config.json");
  if (config.ok()) {
    // A config that parses must describe itself the same way again.
    auto again = xlate::ModelConfig::FromJson(config->ToJson(), "fuzz/again.json");
    if (!again.ok() || again->ToJson() != config->ToJson()) __builtin_trap();
  }
  return 0;
}
