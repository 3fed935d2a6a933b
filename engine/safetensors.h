// Reading and writing the safetensors format (docs/model-format.md): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte range, raw data.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tensor.h"

namespace xlate {

using TensorMap = std::map<std::string, Tensor>;

class OpenFile;

// A safetensors file opened for reading one tensor at a time: Open reads and checks the header
// (every entry's dtype, shape and byte range), Read the bytes of the tensor asked for, so that a
// loader holds one tensor's staging at a time instead of the whole file.
class SafetensorsReader {
 public:
  // Errors name the file and, for a bad entry, the tensor.
  static absl::StatusOr<std::unique_ptr<SafetensorsReader>> Open(const std::string& path);
  ~SafetensorsReader();

  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  // The stored dtype and shape of a tensor the file contains.
  DType dtype(const std::string& name) const { return entries_.at(name).dtype; }
  const std::vector<int64_t>& shape(const std::string& name) const {
    return entries_.at(name).shape;
  }
  // The tensor, in its stored dtype; an error for a short read or a name the file lacks.
  absl::StatusOr<Tensor> Read(const std::string& name) const;
  // OK when the path still names the file opened, unchanged: what was read is then the file as
  // it was. Call it after the last Read.
  absl::Status CheckUnchanged() const;

 private:
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // bytes from the start of the file
  };
  SafetensorsReader(std::string path, std::unique_ptr<OpenFile> file);

  const std::string path_;
  const std::unique_ptr<OpenFile> file_;
  std::map<std::string, Entry> entries_;
};

// Every tensor of the file, in its stored dtype. Errors name the file and the tensor.
absl::StatusOr<TensorMap> read_safetensors(const std::string& path);

// Writes atomically: a temporary file in the same directory, fsync, then rename.
absl::Status write_safetensors(const std::string& path, const TensorMap& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// Writes `contents` to `path` atomically (temporary file, fsync, rename).
absl::Status write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace xlate
