// A model file from a stranger: read_safetensors either returns tensors whose data lie inside
// the file or an error, never a crash, a hang or an out-of-bounds read.
#include <cstdint>

#include "engine/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xlate::fuzz::scratch_directory() + "/model.safetensors";
  xlate::fuzz::write_bytes(path, data, size);
  auto tensors = xlate::read_safetensors(path);
  if (tensors.ok()) {
    for (const auto& [name, tensor] : *tensors) {
      if (tensor.numel() < 0) __builtin_trap();
    }
  }
  return 0;
}
