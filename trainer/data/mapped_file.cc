#include "trainer/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace xlate::trainer {

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat info;
  if (::fstat(descriptor, &info) != 0) {
    const int error = errno;
    ::close(descriptor);
    return absl::InternalError(absl::StrCat(path, ": cannot stat: ", std::strerror(error)));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {  // mmap refuses empty files; an empty mapping needs no memory
    ::close(descriptor);
    return MappedFile(path, nullptr, 0);
  }
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, descriptor, 0);
  const int error = errno;
  ::close(descriptor);  // the mapping keeps the file alive
  if (address == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": mmap failed: ", std::strerror(error)));
  }
  return MappedFile(path, static_cast<const unsigned char*>(address), size);
}

MappedFile::MappedFile(std::string path, const unsigned char* data, size_t size)
    : path_(std::move(path)), data_(data), size_(size) {}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace xlate::trainer
