// Reading and writing the safetensors format (docs/model-format.md): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte range, raw data.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "engine/tensor.h"

namespace xlate {

using TensorMap = std::map<std::string, Tensor>;

// Every tensor of the file, in its stored dtype. Errors name the file and the tensor.
absl::StatusOr<TensorMap> read_safetensors(const std::string& path);

// Writes atomically: a temporary file in the same directory, fsync, then rename.
absl::Status write_safetensors(const std::string& path, const TensorMap& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// Writes `contents` to `path` atomically (temporary file, fsync, rename).
absl::Status write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace xlate
