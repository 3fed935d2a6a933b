// A read-only memory mapping of a whole file; unmapped when the owner goes away. Move-only.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace xlate::trainer {

class MappedFile {
 public:
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const unsigned char* data, size_t size);
  void unmap();

  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace xlate::trainer
