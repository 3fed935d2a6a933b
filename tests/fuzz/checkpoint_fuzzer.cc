// A training checkpoint from a stranger (or a damaged disk): the input replaces the
// trainer_state.json and optimizer.safetensors of a real checkpoint of a tiny model, whose
// config.json and model.safetensors stay valid (their readers have targets of their own).
//
//   byte 0        flags; bit 0: write the files' true CRC-32s into the JSON's "crc32" before
//                 reading, so that inputs get past the damage check to the fields and tensors
//   bytes 1..4    n, the JSON's length (little-endian; clipped to what follows)
//   n bytes       trainer_state.json
//   the rest      optimizer.safetensors
//
// read_checkpoint refuses it with an error, or what it returns is a state a run can resume
// from: step, data position and elapsed time not negative, and the optimizer's step count the
// checkpoint's. The seed is a real checkpoint packed this way (flag 0: its CRCs are its own).
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "engine/model_directory.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/smallest_model_config.h"
#include "trainer/checkpoint/checkpoint.h"

namespace {

using xlate::ModelConfig;
using xlate::smallest_model_config;
using xlate::trainer::Adam;
using xlate::trainer::FlatParameters;

// The checkpoint whose two files each input replaces, written once per process.
const std::string& checkpoint_directory() {
  static const std::string path = [] {
    const std::string run = xlate::fuzz::scratch_directory() + "/run";
    const ModelConfig config = smallest_model_config();
    FlatParameters parameters(config);
    parameters.copy_from(xlate::random_weights(config, 1), config);
    Adam optimizer(parameters, {});
    xlate::trainer::TrainerState state;
    state.step = 3;
    auto written = xlate::trainer::write_checkpoint(
        run, {config, parameters, optimizer.moments(), state, /*spm_model_path=*/""}, /*keep_last=*/1);
    if (!written.ok()) __builtin_trap();
    return *written;
  }();
  return path;
}

std::string crc32_hex(const uint8_t* data, size_t size) {
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), data, static_cast<uInt>(size));
  return absl::StrFormat("%08x", static_cast<uint32_t>(crc));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const bool fix_crcs = (data[0] & 1) != 0;
  uint32_t json_bytes = 0;
  std::memcpy(&json_bytes, data + 1, 4);
  data += 5;
  size -= 5;
  json_bytes = static_cast<uint32_t>(std::min<size_t>(json_bytes, size));
  const std::string& checkpoint = checkpoint_directory();
  const uint8_t* optimizer_bytes = data + json_bytes;
  const size_t optimizer_size = size - json_bytes;
  xlate::fuzz::write_bytes(checkpoint + "/optimizer.safetensors", optimizer_bytes, optimizer_size);

  std::string state_text(reinterpret_cast<const char*>(data), json_bytes);
  if (fix_crcs) {
    nlohmann::json json = nlohmann::json::parse(state_text, nullptr, false);
    if (json.is_object()) {
      static const std::string model_crc = [&] {
        std::ifstream in(checkpoint + "/model.safetensors", std::ios::binary);
        const std::string model((std::istreambuf_iterator<char>(in)), {});
        return crc32_hex(reinterpret_cast<const uint8_t*>(model.data()), model.size());
      }();
      json["crc32"]["model.safetensors"] = model_crc;
      json["crc32"]["optimizer.safetensors"] = crc32_hex(optimizer_bytes, optimizer_size);
      state_text = json.dump();
    }
  }
  xlate::fuzz::write_bytes(checkpoint + "/trainer_state.json",
                           reinterpret_cast<const uint8_t*>(state_text.data()), state_text.size());

  const ModelConfig config = smallest_model_config();
  FlatParameters parameters(config);
  Adam optimizer(parameters, {});
  auto state = xlate::trainer::read_checkpoint(checkpoint, config, parameters, optimizer);
  if (!state.ok()) return 0;
  if (state->step < 0 || state->data_epoch < 0 || state->data_batch < 0 ||
      !std::isfinite(state->elapsed_seconds) || state->elapsed_seconds < 0 ||
      optimizer.steps() != state->step) {
    __builtin_trap();
  }
  return 0;
}
